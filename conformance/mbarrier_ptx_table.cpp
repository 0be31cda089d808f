/* mbarrier_ptx_table.cpp: what the CPU layer executes for each kernel of mbarrier_ptx_compile.cu
 * (the source nvcc compiles to PTX), for test_mbarrier_ptx.sh. Runs each kernel on one thread and
 * prints the instructions the layer executed (fast/cuda_cpu/mbarrier.h, mbarrier_trace):
 *   <kernel> <instruction> <operands> [; <instruction> <operands>]...
 * e.g. "arrive mbarrier.init.shared.b64 [1] r ; mbarrier.arrive.shared.b64 r [1]".
 * Exit 1 with a line naming the kernel if a launch fails or executes no instruction. */
#include <stdio.h>

#include "fast/cuda_cpu/runtime.h"
#include "conformance/mbarrier_ptx_compile.cu"

int main(void) {
    uint64_t out[1] = {0};
    alignas(16) static const float src[4] = {1, 2, 3, 4};
    const char *names[] = {"init", "arrive", "arrive_expect_tx", "try_wait", "test_wait", "bulk_copy"};
    int bad = 0;
    for (int i = 0; i < 6; i++) {
        cuda_cpu::mbarrier_forget();
        const size_t smem = MBARRIER_PTX_SMEM_BYTES;
        if (i == 0) CUDA_CPU_LAUNCH(mbarrier_ptx_init, 1, 1, smem, 0)(1u);
        if (i == 1) CUDA_CPU_LAUNCH(mbarrier_ptx_arrive, 1, 1, smem, 0)(out, 1u);
        if (i == 2) CUDA_CPU_LAUNCH(mbarrier_ptx_arrive_expect_tx, 1, 1, smem, 0)(out, 1u, 16u);
        if (i == 3) CUDA_CPU_LAUNCH(mbarrier_ptx_try_wait, 1, 1, smem, 0)(out, 1u, 0u);
        if (i == 4) CUDA_CPU_LAUNCH(mbarrier_ptx_test_wait, 1, 1, smem, 0)(out, 1u, 0u);
        if (i == 5) CUDA_CPU_LAUNCH(mbarrier_ptx_bulk_copy, 1, 1, smem, 0)(src, 1u, 16u);
        const cudaError_t e = cudaGetLastError();
        char ins[1024];
        if (e != cudaSuccess || cuda_cpu::mbarrier_trace(ins, sizeof ins)) {
            fprintf(stderr, "mbarrier_ptx_table: kernel mbarrier_ptx_%s: %s\n", names[i],
                    e != cudaSuccess ? cudaGetErrorString(e) : "no mbarrier instruction executed");
            bad = 1;
            continue;
        }
        printf("%s %s\n", names[i], ins);
    }
    return bad;
}
