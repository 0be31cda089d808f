/* common.cuh: what every fast/ CUDA source shares: bf16, error checks, sizes.
 *
 * Library code never exits: a failing CUDA or cuBLASLt call becomes vrl_error("fast:
 * ...") and the caller returns -1 (or NaN for a loss), as everywhere in vrl. */
#ifndef VRL_FAST_COMMON_CUH
#define VRL_FAST_COMMON_CUH

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include "common/base/error.h"
}

typedef __nv_bfloat16 bf16;

/* Return -1 with a one-line error when a CUDA runtime call fails. */
#define CUDA_CHECK(call)                                                                                     \
    do {                                                                                                     \
        cudaError_t err_ = (call);                                                                           \
        if (err_ != cudaSuccess)                                                                             \
            return vrl_error("fast: %s (%s:%d)", cudaGetErrorString(err_), __FILE__, __LINE__);             \
    } while (0)
/* After a kernel launch: a bad configuration shows up here. */
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())
#define CUBLAS_CHECK(call)                                                                                   \
    do {                                                                                                     \
        cublasStatus_t st_ = (call);                                                                         \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                                    \
            return vrl_error("fast: cuBLASLt status %d (%s:%d)", (int)st_, __FILE__, __LINE__);              \
    } while (0)

/* A kernel launch, written LAUNCH(kernel, grid, block, shared_bytes, stream)(args...): under
 * nvcc it is kernel<<<grid, block, shared_bytes, stream>>>(args...); in the CPU build
 * (fast/cuda_cpu/, VRL_CUDA_CPU) the layer's scheduler runs it there and then. The CPU
 * build also wraps fast/'s C++ symbols in namespace fast_cpu (FAST_NS_BEGIN/END), so one
 * program can link both builds (docs/design/cuda-on-cpu.md, "CUDA on the CPU"). */
#if VRL_CUDA_CPU
#define LAUNCH CUDA_CPU_LAUNCH
#define FAST_NS_BEGIN namespace fast_cpu {
#define FAST_NS_END }
#else
#define LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#define FAST_NS_BEGIN
#define FAST_NS_END
#endif

/* The launch's dynamic shared memory as `unsigned char *name`: CUDA's extern __shared__ array
 * under nvcc, the layer's block buffer in the CPU build (where __shared__ is a static). */
#if VRL_CUDA_CPU
#define DYNAMIC_SHARED(name) unsigned char *name = (unsigned char *)cuda_cpu::dynamic_shared()
#else
#define DYNAMIC_SHARED(name)                                                                                 \
    extern __shared__ __align__(128) unsigned char name##_array_[];                                          \
    unsigned char *name = name##_array_
#endif

static inline unsigned cdiv(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

/* FAST_MAX_LAYERS: fast/fast.h (the capability check reads it too). */
extern "C" {
#include "fast/fast.h"
}

#endif
