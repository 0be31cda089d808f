/* mma_ptx_compile.cu: fast/mma.cuh's inline PTX through nvcc and ptxas for the build's
 * architectures (sm_90), so a typo in an instruction string fails the build wherever nvcc
 * exists. Compiled only (an object library, fast/fast.cmake); nothing runs it: the CPU
 * layer's test_cuda_cpu_mma checks the layouts, and only a GPU can execute this. */
#include <stdint.h>

#include "fast/mma.cuh"

/* out[32 threads][4]: one warp, every function of mma.cuh once. */
__global__ void mma_ptx_compile_kernel(float *out, const uint16_t *in /* [32][8] */) {
    __shared__ __align__(16) uint16_t tile[32 * 8]; /* [32 rows][8 b16] */
    for (int i = threadIdx.x; i < 32 * 8; i += blockDim.x) tile[i] = in[i];
    __syncthreads();
    const void *row = &tile[(threadIdx.x % 32) * 8];
    uint32_t a[4], b[2], bt[2], x1[1], x1t[1], x4t[4];
    ldmatrix_x4(a, row);
    ldmatrix_x2(b, row);
    ldmatrix_x2_trans(bt, row);
    ldmatrix_x1(x1, row);
    ldmatrix_x1_trans(x1t, row);
    ldmatrix_x4_trans(x4t, row);
    a[0] ^= x1[0] ^ x1t[0] ^ x4t[0] ^ x4t[1] ^ x4t[2] ^ x4t[3];
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d[4];
    mma_m16n8k16_bf16(d, a, b, c);
    mma_m16n8k16_bf16(d, a, bt, d); /* chained through the accumulator, d and c the same array */
    for (int i = 0; i < 4; i++) out[threadIdx.x * 4 + i] = d[i];
}
