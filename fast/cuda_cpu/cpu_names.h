/* cpu_names.h: the CPU build's names for fast/'s C interface (fast.h, model.h, zero.h).
 *
 * The CPU build compiles fast/'s unchanged sources a second time; this header is
 * force-included (-include) into every file of that build, C and C++, so its extern "C"
 * functions and its Backend table get a _cpu suffix and one program can link both
 * builds. (Its C++ symbols are in namespace fast_cpu: fast/common.cuh.) A C file that
 * wants the CPU build's table without being part of it includes fast/cuda_cpu/fast_cpu.h. */
#ifndef VRL_CUDA_CPU_NAMES_H
#define VRL_CUDA_CPU_NAMES_H

#define fast_backend_cuda fast_backend_cuda_cpu
#define fast_device_check fast_device_check_cpu
#define fast_capabilities fast_capabilities_cpu
#define fast_set_attention fast_set_attention_cpu
#define fast_attention_kind fast_attention_kind_cpu
#define fast_set_gemm fast_set_gemm_cpu
#define fast_gemm_kind fast_gemm_kind_cpu
#define fast_model_device_bytes fast_model_device_bytes_cpu
#define fast_bench_peak_bf16 fast_bench_peak_bf16_cpu
#define fast_bench_kernels fast_bench_kernels_cpu
#define fast_model_create fast_model_create_cpu
#define fast_model_destroy fast_model_destroy_cpu
#define fast_model_forward fast_model_forward_cpu
#define fast_model_zero_grad fast_model_zero_grad_cpu
#define fast_model_step fast_model_step_cpu
#define fast_model_micro_losses fast_model_micro_losses_cpu
#define fast_model_get_state fast_model_get_state_cpu
#define fast_model_set_state fast_model_set_state_cpu
#define fast_model_get_logits fast_model_get_logits_cpu
#define fast_model_token_logprobs fast_model_token_logprobs_cpu
#define fast_shard_open fast_shard_open_cpu
#define fast_reduce_next fast_reduce_next_cpu
#define fast_shard_close fast_shard_close_cpu
#define fast_register_backends fast_register_backends_cpu
#define fast_kv_create fast_kv_create_cpu
#define fast_kv_free fast_kv_free_cpu
#define fast_decode fast_decode_cpu
#define fast_decode_missing fast_decode_missing_cpu

#endif
