/* fast_cpu.h: the CUDA backend's code run on the CPU (fast/cuda_cpu/, docs/design/cuda-on-cpu.md), for
 * host C code such as the CLI: the same Backend as fast_backend_cuda (fast/fast.h), named
 * "cuda-cpu-bf16", built by default. */
#ifndef VRL_FAST_CPU_H
#define VRL_FAST_CPU_H

#include "common/model/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const Backend fast_backend_cuda_cpu;

/* 0, or -1 with vrl_error (a VRL_CUDA_CPU_ORDER the layer cannot parse). */
int fast_device_check_cpu(void);

/* The order grid blocks run in from now on (VRL_CUDA_CPU_BLOCKS' syntax: forward, reverse,
 * random[:SEED]), for tests that compare two block orders in one process; 0, or -1 if spec
 * does not parse (nothing changes). */
int fast_cpu_set_block_order(const char *spec);

/* Register it as --device cuda-cpu (common/model/backends.h). */
void fast_register_backends_cpu(void);

#ifdef __cplusplus
}
#endif

#endif
