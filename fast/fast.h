/* fast.h: the CUDA backend's C interface (fast/, docs/fast.md).
 *
 * Everything the host C code needs from fast/: the Backend table, a device check that
 * turns "no GPU" into one error line, the value-path plan, and the hooks the
 * conformance test and the benchmark use. The CUDA sources implement these with
 * extern "C" linkage, so C11 code links against them unchanged. */
#ifndef VRL_FAST_H
#define VRL_FAST_H

#include <stddef.h>
#include <stdio.h>

#include "common/model/backend.h"
#include "common/model/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bf16 parameters and activations, fp32 master weights, gradients and AdamW moments;
 * the host view (get_state / set_state / get_logits) is DT_F32. */
extern const Backend fast_backend_cuda;

/* Register fast_backend_cuda as --device cuda (common/model/backends.h). */
void fast_register_backends(void);

/* 0 if at least one CUDA device is usable; else -1 with
 * vrl_error("no CUDA device (cudaGetDeviceCount: <reason>)"). */
int fast_device_check(void);

/* Which attention kernels the models created from now on run (`--attention`, docs/fast.md
 * "Attention through cuDNN", "Attention on tensor cores"): mma (our tensor-core forward and
 * backward, fast/attention_mma_forward.cu and attention_mma_backward.cu; the default), flash
 * (fast/attention.cu, CUDA cores; the default of the fp32-storage CPU build, which cannot run
 * mma) or cuDNN's fused SDPA on tensor cores (fast/attention_cudnn.cpp). */
enum { FAST_ATTENTION_FLASH = 0, FAST_ATTENTION_CUDNN = 1, FAST_ATTENTION_MMA = 2, FAST_ATTENTION_WGMMA = 3 };
/* FAST_ATTENTION_WGMMA (`--attention wgmma`): the llama layers' forward on Hopper's wgmma
 * (fast/attention_wgmma_forward.cu; hd 64 and 128, others on mma's forward) with mma's backward;
 * RoPE by its own passes; GPT-2 runs mma. A compute capability 9.0 GPU or the CPU layer
 * (fast_model_create refuses another GPU). */
/* "flash", "mma", "wgmma" or "cudnn": 0; -1 with vrl_error when the name is none of them, or it
 * cannot run here: cudnn on the CPU layer (cuDNN needs a GPU) or in a build without the cuDNN
 * path (VRL_CUDNN); mma and wgmma in the fp32-storage CPU build (VRL_CUDA_CPU_FP32: no packed
 * bf16). */
int fast_set_attention(const char *name);
/* FAST_ATTENTION_FLASH, _MMA, _WGMMA or _CUDNN, as last set (unset: mma; flash in the fp32-storage build). */
int fast_attention_kind(void);

/* Which GEMMs the llama layers' forward products run (`--gemm`, docs/fast.md "Options"): cuBLASLt
 * (the default) or fast/'s own wgmma GEMM (fast/gemm_wgmma.cu: TMA, wgmma, the SwiGLU epilogue;
 * compute capability 9.0 or the CPU layer; not yet run on a GPU). VRL_FAST_GEMM=wgmma in the
 * environment sets the initial kind (the tests' hook, as VRL_FAST_RECOMPUTE). */
enum { FAST_GEMM_CUBLASLT = 0, FAST_GEMM_WGMMA = 1 };
/* "cublaslt" or "wgmma": 0; -1 with vrl_error for another name, or wgmma in the fp32-storage
 * CPU build (no packed bf16 for wgmma). */
int fast_set_gemm(const char *name);
/* FAST_GEMM_CUBLASLT or _WGMMA, as last set (unset: VRL_FAST_GEMM, else cublaslt); -1 with
 * vrl_error when VRL_FAST_GEMM names neither. */
int fast_gemm_kind(void);

/* Upper bound on layers the value-path tables and kernel arguments hold. */
#define FAST_MAX_LAYERS 64

/* What the CUDA backend does for spec (fast_backend_cuda.capabilities, fast/capabilities.c):
 * BACKEND_CAN_TRAIN for the llama block with the ValuePlan's Q/K/V mixing (constant or
 * trainable value coefficients) and output corrections (baseline, ResFormer in every mode,
 * SVFormer, NeuTRENO, identity mapping, CLA, query/key residuals, shared Q/K, the hidden
 * residual), the attention-matrix residual and Eq. 2 cross-layer attention, any residual
 * stream (plain, DenseFormer, AttnRes, HC, mHC), and the GPT-2 baseline without dropout
 * (fast/gpt2.cu), at most FAST_MAX_LAYERS layers and head_dim 8..128 (a power of two), and
 * BACKEND_CAN_SCORE for the same specs, and BACKEND_CAN_GENERATE where fast/decode.cu decodes
 * them (fast_decode_missing, fast/decode.h); else 0 and `why` names the first thing missing. No
 * analysis views. */
unsigned fast_capabilities(const ModelSpec *spec, char *why, size_t why_len);

/* Benchmark hooks. Bytes of device memory the model holds (arena + workspaces). */
size_t fast_model_device_bytes(void *model);
/* Measured dense bf16 GEMM rate in TFLOP/s (cuBLASLt, bf16 in, fp32 accumulate,
 * n x n x n), the ceiling MFU is computed against; < 0 with vrl_error on failure. */
double fast_bench_peak_bf16(int n);
/* Time every kernel of one training step of this model at [batch, seq] and print one
 * line per kernel: name, µs, bytes moved, FLOPs, GB/s, TFLOP/s. 0 or -1. */
int fast_bench_kernels(void *model, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
