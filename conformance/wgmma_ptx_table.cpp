/* wgmma_ptx_table.cpp: what the CPU layer executes for each kernel of wgmma_ptx_compile.cu (the
 * source nvcc compiles to PTX), for test_wgmma_ptx.sh. Runs each kernel on one warpgroup and
 * prints the warpgroup instructions the layer completed (fast/cuda_cpu/wgmma.h, wgmma_trace):
 *   <kernel> <instruction> <operands> [; <instruction> <operands>]...
 * e.g. "ss_n64_01 wgmma.fence.sync.aligned ; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
 * {32} r r p 1 1 0 1 ; wgmma.commit_group.sync.aligned ; wgmma.wait_group.sync.aligned 0".
 * Exit 1 with a line naming the kernel if a launch fails or completes no warpgroup instruction. */
#include <stdio.h>

#include <vector>

#include "fast/cuda_cpu/runtime.h"
#include "conformance/wgmma_ptx_compile.cu"

int main(void) {
    std::vector<float> out(128 * 128);
    const struct {
        const char *name;
        void (*kernel)(float *);
    } mma[] = {{"ss_n8_00", wgmma_ptx_ss_n8_00},     {"ss_n32_11", wgmma_ptx_ss_n32_11},
               {"ss_n64_01", wgmma_ptx_ss_n64_01},   {"ss_n128_10", wgmma_ptx_ss_n128_10},
               {"ss_n256_00", wgmma_ptx_ss_n256_00}, {"rs_n16_0", wgmma_ptx_rs_n16_0},
               {"rs_n96_1", wgmma_ptx_rs_n96_1},     {"rs_n192_0", wgmma_ptx_rs_n192_0}};
    const struct {
        const char *name;
        void (*kernel)(void);
    } alone[] = {{"fence", wgmma_ptx_fence}, {"commit", wgmma_ptx_commit}, {"wait", wgmma_ptx_wait}};
    int bad = 0;
    for (size_t i = 0; i < sizeof mma / sizeof mma[0] + sizeof alone / sizeof alone[0]; i++) {
        const int is_mma = i < sizeof mma / sizeof mma[0];
        const char *name = is_mma ? mma[i].name : alone[i - sizeof mma / sizeof mma[0]].name;
        cuda_cpu::wgmma_forget();
        if (is_mma) CUDA_CPU_LAUNCH(mma[i].kernel, 1, 128, WGMMA_PTX_SMEM_BYTES, 0)(out.data());
        else CUDA_CPU_LAUNCH(alone[i - sizeof mma / sizeof mma[0]].kernel, 1, 128, 0, 0)();
        const cudaError_t e = cudaGetLastError();
        char ins[1024];
        if (e != cudaSuccess || cuda_cpu::wgmma_trace(ins, sizeof ins)) {
            fprintf(stderr, "wgmma_ptx_table: kernel wgmma_ptx_%s: %s\n", name,
                    e != cudaSuccess ? cudaGetErrorString(e) : "no warpgroup instruction completed");
            bad = 1;
            continue;
        }
        printf("%s %s\n", name, ins);
    }
    return bad;
}
