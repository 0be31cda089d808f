/* mma_ptx_compile.cu: one kernel per function of fast/mma.cuh, named mma_ptx_<function>, each
 * calling that function once and nothing else of mma.cuh.
 *  - nvcc (an object library, fast/fast.cmake): the inline PTX through ptxas for the build's
 *    architectures, so a typo in an instruction string fails the build wherever nvcc exists;
 *    and test_mma_ptx compiles it to PTX (nvcc -ptx) and reads each kernel's instruction.
 *  - the CPU layer (mma_ptx_table.cpp includes this file): each kernel runs on one warp and
 *    the layer names the instruction it executed (tensor_core_ptx; ptx_last for ex2 and cp.async).
 * test_mma_ptx.sh compares the two, kernel by kernel. Only a GPU can execute the PTX. */
#include <stdint.h>

#include "fast/mma.cuh"

/* in [32][8] b16 (16 bytes a row), out [32 lanes][4]: the lane's registers. Lane L names row L
 * of the staged tile (lanes past 8·num: their address is ignored, as on sm_80 and later). */
#define VRL_LDMATRIX_KERNEL(fn, num)                                                                  \
    extern "C" __global__ void mma_ptx_##fn(uint32_t *out, const uint16_t *in) {                     \
        __shared__ __align__(16) uint16_t tile[32 * 8]; /* [32 rows][8 b16] */                       \
        for (int i = threadIdx.x; i < 32 * 8; i += blockDim.x) tile[i] = in[i];                      \
        __syncthreads();                                                                             \
        uint32_t r[num];                                                                             \
        fn(r, &tile[(threadIdx.x % 32) * 8]);                                                        \
        for (int m = 0; m < num; m++) out[(threadIdx.x % 32) * 4 + m] = r[m];                        \
    }
VRL_LDMATRIX_KERNEL(ldmatrix_x1, 1)
VRL_LDMATRIX_KERNEL(ldmatrix_x2, 2)
VRL_LDMATRIX_KERNEL(ldmatrix_x4, 4)
VRL_LDMATRIX_KERNEL(ldmatrix_x1_trans, 1)
VRL_LDMATRIX_KERNEL(ldmatrix_x2_trans, 2)
VRL_LDMATRIX_KERNEL(ldmatrix_x4_trans, 4)
#undef VRL_LDMATRIX_KERNEL

/* frag [32 lanes][6]: a[4], b[2] of each lane; c, d [32 lanes][4] */
extern "C" __global__ void mma_ptx_mma_m16n8k16_bf16(float *d, const uint32_t *frag, const float *c) {
    const int lane = threadIdx.x % 32;
    uint32_t a[4], b[2];
    float cl[4], dl[4];
    for (int i = 0; i < 4; i++) a[i] = frag[lane * 6 + i], cl[i] = c[lane * 4 + i];
    for (int i = 0; i < 2; i++) b[i] = frag[lane * 6 + 4 + i];
    mma_m16n8k16_bf16(dl, a, b, cl);
    for (int i = 0; i < 4; i++) d[lane * 4 + i] = dl[i];
}

/* in, out [32]: out[lane] = 2^in[lane] */
extern "C" __global__ void mma_ptx_ex2_approx_ftz(float *out, const float *in) {
    out[threadIdx.x % 32] = ex2_approx_ftz(in[threadIdx.x % 32]);
}

/* The cp.async kernels: src [32][8] b16 in global memory, each lane's row into a shared tile.
 * Each calls one of the three and nothing else of mma.cuh (the copy is left to land at the
 * thread's exit, the commit and the wait have nothing in flight). */
extern "C" __global__ void mma_ptx_cp_async_16(const uint16_t *src) {
    __shared__ __align__(16) uint16_t tile[32 * 8]; /* [32 rows][8 b16] */
    cp_async_16(&tile[(threadIdx.x % 32) * 8], src + (threadIdx.x % 32) * 8, 16);
}
extern "C" __global__ void mma_ptx_cp_async_commit(const uint16_t *) { cp_async_commit(); }
extern "C" __global__ void mma_ptx_cp_async_wait(const uint16_t *) { cp_async_wait<1>(); }
