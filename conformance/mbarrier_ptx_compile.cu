/* mbarrier_ptx_compile.cu: kernels that call fast/mbarrier.cuh's functions, named
 * mbarrier_ptx_<name>, each initialising a barrier and then running one instruction form.
 *  - nvcc for sm_90: test_mbarrier_ptx.sh compiles it to PTX (nvcc -ptx), reads each kernel's
 *    mbarrier and cp.async.bulk instructions, and assembles the PTX with ptxas for sm_90.
 *  - the CPU layer (mbarrier_ptx_table.cpp includes this file): each kernel runs on one thread
 *    and the layer lists the instructions it executed (fast/cuda_cpu/mbarrier.h, mbarrier_trace).
 * The counts, sizes and parities come from the kernel's parameters, so nvcc keeps them in
 * registers. Only a GPU can execute the PTX. */
#include <stdint.h>

#include "fast/mbarrier.cuh"

#if VRL_CUDA_CPU
#define MBARRIER_PTX_SMEM ((char *)cuda_cpu::dynamic_shared())
#else
extern __shared__ __align__(128) char mbarrier_ptx_smem[];
#define MBARRIER_PTX_SMEM mbarrier_ptx_smem
#endif

/* the launch's shared memory: the barrier at 0, a 64-byte destination at 64 */
#define MBARRIER_PTX_SMEM_BYTES 128

/* out [1]: the instruction's result; n: the init count (1); x: a byte count (16) or parity (0) */
extern "C" __global__ void mbarrier_ptx_init(uint32_t n) { mbarrier_init((uint64_t *)MBARRIER_PTX_SMEM, n); }
extern "C" __global__ void mbarrier_ptx_arrive(uint64_t *out, uint32_t n) {
    uint64_t *bar = (uint64_t *)MBARRIER_PTX_SMEM;
    mbarrier_init(bar, n);
    out[0] = mbarrier_arrive(bar);
}
extern "C" __global__ void mbarrier_ptx_arrive_expect_tx(uint64_t *out, uint32_t n, uint32_t x) {
    uint64_t *bar = (uint64_t *)MBARRIER_PTX_SMEM;
    mbarrier_init(bar, n);
    out[0] = mbarrier_arrive_expect_tx(bar, x);
}
extern "C" __global__ void mbarrier_ptx_try_wait(uint64_t *out, uint32_t n, uint32_t x) {
    uint64_t *bar = (uint64_t *)MBARRIER_PTX_SMEM;
    mbarrier_init(bar, n);
    out[0] = (uint64_t)mbarrier_try_wait_parity(bar, x ^ 1u);
}
extern "C" __global__ void mbarrier_ptx_test_wait(uint64_t *out, uint32_t n, uint32_t x) {
    uint64_t *bar = (uint64_t *)MBARRIER_PTX_SMEM;
    mbarrier_init(bar, n);
    out[0] = (uint64_t)mbarrier_test_wait_parity(bar, x ^ 1u);
}
extern "C" __global__ void mbarrier_ptx_bulk_copy(const float *src, uint32_t n, uint32_t x) {
    uint64_t *bar = (uint64_t *)MBARRIER_PTX_SMEM;
    mbarrier_init(bar, n);
    bulk_copy_g2s(MBARRIER_PTX_SMEM + 64, src, x, bar);
}
