/* tma_ptx_table.cpp: what the CPU layer executes for each kernel of tma_ptx_compile.cu (the
 * source nvcc compiles to PTX), for test_tma_ptx.sh. Runs each kernel on one thread and prints
 * the instructions the layer executed (fast/cuda_cpu/mbarrier.h, mbarrier_trace):
 *   <kernel> <instruction> <operands> [; <instruction> <operands>]...
 * Exit 1 with a line naming the kernel if the map cannot be encoded, a launch fails or executes
 * no instruction. */
#include <stdio.h>

#include "fast/cuda_cpu/runtime.h"
#include "conformance/tma_ptx_compile.cu"

int main(void) {
    alignas(16) static uint16_t tensor[64 * 64];
    TmaMap map;
    char err[256], ins[1024];
    if (tma_ptx_encode(&map, tensor, err, sizeof err)) {
        fprintf(stderr, "tma_ptx_table: %s\n", err);
        return 1;
    }
    cuda_cpu::mbarrier_forget();
    CUDA_CPU_LAUNCH(tma_ptx_load, 1, 1, TMA_PTX_SMEM_BYTES, 0)(map, 1u, 8192u, 0, 0);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || cuda_cpu::mbarrier_trace(ins, sizeof ins)) {
        fprintf(stderr, "tma_ptx_table: kernel tma_ptx_load: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "no instruction executed");
        return 1;
    }
    printf("load %s\n", ins);
    return 0;
}
