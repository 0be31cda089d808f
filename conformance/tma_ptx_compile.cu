/* tma_ptx_compile.cu: a kernel that calls fast/tma.cuh's load, named tma_ptx_<name>, and a host
 * function that encodes its map.
 *  - nvcc for sm_90: test_tma_ptx.sh compiles it to PTX (nvcc -ptx), reads the kernel's mbarrier
 *    and cp.async.bulk instructions and assembles the PTX with ptxas; it also compiles the host
 *    half (nvcc -c, -Wall -Wextra) and requires the object to reach the driver only through the
 *    runtime's entry point (no cu* driver symbol: no link against libcuda).
 *  - the CPU layer (tma_ptx_table.cpp includes this file): the kernel runs on one thread and the
 *    layer lists the instructions it executed (fast/cuda_cpu/mbarrier.h, mbarrier_trace).
 * The coordinates and byte count come from the kernel's parameters, so nvcc keeps them in
 * registers. Only a GPU can execute the PTX or the driver's encoder. */
#include <stdint.h>

#include "fast/mbarrier.cuh"
#include "fast/tma.cuh"

#if VRL_CUDA_CPU
#define TMA_PTX_SMEM ((char *)cuda_cpu::dynamic_shared())
#else
extern __shared__ __align__(1024) char tma_ptx_smem[];
#define TMA_PTX_SMEM tma_ptx_smem
#endif

/* the launch's shared memory: the barrier at 0, the 64 x 64 box (8 KiB, 128B-swizzled) at 1024 */
#define TMA_PTX_SMEM_BYTES (1024 + 8192)

/* the map of a 64 x 64 bf16 tensor (row stride 128 bytes), 64 x 64 boxes, 128B swizzle */
int tma_ptx_encode(TmaMap *map, const void *global, char *err, size_t errlen) {
    return tma_map_2d_bf16(map, global, 64, 64, 128, 64, 64, TMA_SWIZZLE_128B, err, errlen);
}

/* n: the init count (1); bytes: the box's (8192); (col, row): the box's first element */
extern "C" __global__ void tma_ptx_load(const __grid_constant__ TmaMap map, uint32_t n, uint32_t bytes, int32_t col,
                                        int32_t row) {
    uint64_t *bar = (uint64_t *)TMA_PTX_SMEM;
    mbarrier_init(bar, n);
    mbarrier_arrive_expect_tx(bar, bytes);
    tma_load_2d(TMA_PTX_SMEM + 1024, &map, col, row, bar);
}
