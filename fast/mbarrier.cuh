/* mbarrier.cuh: Hopper's transaction barriers and the non-tensor bulk copy (sm_90), one device
 * function each, for warp-specialised producer/consumer kernels. fast/gemm_wgmma.cu uses them.
 *
 *   mbarrier_init(bar, count)              mbarrier.init.shared.b64 [bar], count: phase 0, count
 *                                          arrivals expected per phase (1 .. 2^20 - 1); a
 *                                          __syncthreads() must follow before other threads use it
 *   mbarrier_arrive(bar)                   mbarrier.arrive.shared.b64: one arrival; the state token
 *   mbarrier_arrive_expect_tx(bar, bytes)  mbarrier.arrive.expect_tx.shared.b64: the phase also
 *                                          waits for `bytes` transaction bytes, then one arrival
 *   mbarrier_try_wait_parity(bar, p)       mbarrier.try_wait.parity.shared.b64: 1 once the phase
 *                                          of parity p has completed (may return 0 on a GPU after
 *                                          a time limit: loop, or use mbarrier_wait_parity)
 *   mbarrier_test_wait_parity(bar, p)      mbarrier.test_wait.parity.shared.b64: the same test,
 *                                          never blocking (so spin with try_wait: on the CPU
 *                                          layer a test_wait loop cannot end and is an error)
 *   mbarrier_wait_parity(bar, p)           try_wait.parity until it returns 1
 *   bulk_copy_g2s(dst, src, bytes, bar)    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes:
 *                                          `bytes` (a positive multiple of 16; dst and src 16-byte
 *                                          aligned) from global to shared memory, completing
 *                                          `bytes` transaction bytes on bar when written
 *
 * Phases (PTX ISA §9.7.13.15.4-.6): a phase completes when all its arrivals came and its
 * tx-count is back to 0; the bulk copies it tracks are then visible to every thread that waits
 * for it. Waiting uses the phase's parity: phase k of a barrier is complete for waiters of
 * parity k & 1 once phase k + 1 is in progress, and right after init parity 1 counts as complete
 * (so a producer's first wait on an "empty" barrier passes).
 *
 * Under nvcc: inline PTX for sm_90 and later. In the CPU build (VRL_CUDA_CPU):
 * fast/cuda_cpu/mbarrier.h, where a wait that is not yet satisfied lets the other warps of the
 * block run, a copy lands when its phase completes, and misuse or a deadlock is one launch error
 * naming the kernel (docs/design/cuda-on-cpu.md, "mbarrier and bulk copies on the CPU"). */
#ifndef VRL_FAST_MBARRIER_CUH
#define VRL_FAST_MBARRIER_CUH

#include <stdint.h>

#if VRL_CUDA_CPU
#include "fast/cuda_cpu/mbarrier.h"

/* the call site names the instruction in the layer's errors */
#define VRL_MBAR_SITE const char *site_file = __builtin_FILE(), int site_line = __builtin_LINE()

static inline void mbarrier_init(uint64_t *bar, uint32_t count, VRL_MBAR_SITE) {
    cuda_cpu::mbarrier_init(bar, count, site_file, site_line);
}
static inline uint64_t mbarrier_arrive(uint64_t *bar, VRL_MBAR_SITE) {
    return cuda_cpu::mbarrier_arrive(bar, 0, 0, site_file, site_line);
}
static inline uint64_t mbarrier_arrive_expect_tx(uint64_t *bar, uint32_t bytes, VRL_MBAR_SITE) {
    return cuda_cpu::mbarrier_arrive(bar, 1, bytes, site_file, site_line);
}
static inline int mbarrier_try_wait_parity(uint64_t *bar, uint32_t parity, VRL_MBAR_SITE) {
    return cuda_cpu::mbarrier_wait(bar, parity, 1, site_file, site_line);
}
static inline int mbarrier_test_wait_parity(uint64_t *bar, uint32_t parity, VRL_MBAR_SITE) {
    return cuda_cpu::mbarrier_wait(bar, parity, 0, site_file, site_line);
}
static inline void mbarrier_wait_parity(uint64_t *bar, uint32_t parity, VRL_MBAR_SITE) {
    while (!cuda_cpu::mbarrier_wait(bar, parity, 1, site_file, site_line)) {
    }
}
static inline void bulk_copy_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *bar, VRL_MBAR_SITE) {
    cuda_cpu::bulk_copy_global_to_shared(dst, src, bytes, bar, site_file, site_line);
}
#undef VRL_MBAR_SITE

#else /* nvcc */
#include <cuda_runtime.h>

static __device__ __forceinline__ uint32_t mbarrier_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* "memory": the barrier orders the plain loads and stores around it */
static __device__ __forceinline__ void mbarrier_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(mbarrier_smem(bar)), "r"(count) : "memory");
}
static __device__ __forceinline__ uint64_t mbarrier_arrive(uint64_t *bar) {
    uint64_t state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];\n" : "=l"(state) : "r"(mbarrier_smem(bar)) : "memory");
    return state;
}
static __device__ __forceinline__ uint64_t mbarrier_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
    uint64_t state;
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 %0, [%1], %2;\n"
                 : "=l"(state)
                 : "r"(mbarrier_smem(bar)), "r"(bytes)
                 : "memory");
    return state;
}
static __device__ __forceinline__ int mbarrier_try_wait_parity(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(mbarrier_smem(bar)), "r"(parity)
                 : "memory");
    return (int)done;
}
static __device__ __forceinline__ int mbarrier_test_wait_parity(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(mbarrier_smem(bar)), "r"(parity)
                 : "memory");
    return (int)done;
}
static __device__ __forceinline__ void mbarrier_wait_parity(uint64_t *bar, uint32_t parity) {
    while (!mbarrier_try_wait_parity(bar, parity)) {
    }
}
static __device__ __forceinline__ void bulk_copy_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     mbarrier_smem(dst)),
                 "l"(src), "r"(bytes), "r"(mbarrier_smem(bar))
                 : "memory");
}
#endif

#endif
