/* wgmma_ptx_compile.cu: kernels that call fast/wgmma.cuh's functions, named wgmma_ptx_<name>,
 * each running fence, one instruction form, commit and wait_group (or one of the three alone).
 *  - nvcc for sm_90a: test_wgmma_ptx.sh compiles it to PTX (nvcc -ptx), reads each kernel's
 *    wgmma instructions, and assembles the PTX with ptxas for sm_90a.
 *  - the CPU layer (wgmma_ptx_table.cpp includes this file): each kernel runs on one warpgroup
 *    and the layer lists the instructions it completed (fast/cuda_cpu/wgmma.h, wgmma_trace).
 * Every N of wgmma.cuh's nvcc half appears once, with each transpose form. Only a GPU can
 * execute the PTX. */
#include <stdint.h>

#include "fast/wgmma.cuh"

#if VRL_CUDA_CPU
#define WGMMA_PTX_SMEM ((char *)cuda_cpu::dynamic_shared())
#else
extern __shared__ __align__(1024) char wgmma_ptx_smem[];
#define WGMMA_PTX_SMEM wgmma_ptx_smem
#endif

/* the launch's shared memory: 12 KiB; A (64 x 16, 2 KiB) at 0, B (N x 16, up to 8 KiB) at 2 KiB,
 * both in core matrices of 128 bytes, no swizzle: LBO 128, SBO 256 */
#define WGMMA_PTX_SMEM_BYTES 12288

extern "C" __global__ void wgmma_ptx_fence(void) { wgmma_fence(); }
extern "C" __global__ void wgmma_ptx_commit(void) { wgmma_commit(); }
extern "C" __global__ void wgmma_ptx_wait(void) { wgmma_wait<1>(); }

/* out [128 threads][N/2]: each thread's accumulators after D = A·B + D from zero */
#define WGMMA_PTX_SS(n, ta, tb)                                                                         \
    extern "C" __global__ void wgmma_ptx_ss_n##n##_##ta##tb(float *out) {                               \
        for (int i = threadIdx.x; i < WGMMA_PTX_SMEM_BYTES; i += blockDim.x) WGMMA_PTX_SMEM[i] = 0;     \
        __syncthreads();                                                                               \
        float acc[n / 2];                                                                              \
        for (int i = 0; i < n / 2; i++) acc[i] = 0.0f;                                                 \
        const uint64_t da = wgmma_desc(WGMMA_PTX_SMEM, 128, 256, WGMMA_SWIZZLE_NONE);                  \
        const uint64_t db = wgmma_desc(WGMMA_PTX_SMEM + 2048, 128, 256, WGMMA_SWIZZLE_NONE);           \
        wgmma_fence();                                                                                 \
        wgmma_bf16_ss<n, ta, tb>(acc, da, db, 1);                                                      \
        wgmma_commit();                                                                                \
        wgmma_wait<0>();                                                                               \
        for (int i = 0; i < n / 2; i++) out[threadIdx.x * (n / 2) + i] = acc[i];                       \
    }
#define WGMMA_PTX_RS(n, tb)                                                                             \
    extern "C" __global__ void wgmma_ptx_rs_n##n##_##tb(float *out) {                                   \
        for (int i = threadIdx.x; i < WGMMA_PTX_SMEM_BYTES; i += blockDim.x) WGMMA_PTX_SMEM[i] = 0;     \
        __syncthreads();                                                                               \
        float acc[n / 2];                                                                              \
        for (int i = 0; i < n / 2; i++) acc[i] = 0.0f;                                                 \
        const uint32_t a[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u}; /* bf16 ones */    \
        const uint64_t db = wgmma_desc(WGMMA_PTX_SMEM + 2048, 128, 256, WGMMA_SWIZZLE_NONE);           \
        wgmma_fence();                                                                                 \
        wgmma_bf16_rs<n, tb>(acc, a, db, 0);                                                           \
        wgmma_commit();                                                                                \
        wgmma_wait<0>();                                                                               \
        for (int i = 0; i < n / 2; i++) out[threadIdx.x * (n / 2) + i] = acc[i];                       \
    }
WGMMA_PTX_SS(8, 0, 0)
WGMMA_PTX_SS(32, 1, 1)
WGMMA_PTX_SS(64, 0, 1)
WGMMA_PTX_SS(128, 1, 0)
WGMMA_PTX_SS(256, 0, 0)
WGMMA_PTX_RS(16, 0)
WGMMA_PTX_RS(96, 1)
WGMMA_PTX_RS(192, 0)
#undef WGMMA_PTX_SS
#undef WGMMA_PTX_RS
