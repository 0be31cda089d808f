/* mma_ptx_table.cpp: what the CPU layer executes for each function of fast/mma.cuh, for
 * test_mma_ptx.sh. Runs each kernel of mma_ptx_compile.cu (the same source nvcc compiles to
 * PTX) on one warp and prints the instruction the layer completed for it
 * (fast/cuda_cpu/tensor_core.h, tensor_core_ptx; fast/cuda_cpu/ptx_ops.h, ptx_last):
 *   <function> <instruction> <operand groups>
 * e.g. "ldmatrix_x2_trans ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {2} [1]".
 * Exit 1 with a line naming the kernel if a launch fails or completes no tensor-core
 * instruction. */
#include <stdio.h>
#include <string.h>

#include <vector>

#include "fast/cuda_cpu/runtime.h"
#include "conformance/mma_ptx_compile.cu"

/* The instruction the last launch completed, printed for fn; 0 or 1. */
static int print_last(const char *fn) {
    const cudaError_t e = cudaGetLastError();
    int op, param;
    cuda_cpu::tensor_core_last(&op, &param);
    char ins[128];
    const int other = cuda_cpu::ptx_last(ins, sizeof ins) == 0; /* ex2 or cp.async ran (ptx_ops.h) */
    cuda_cpu::ptx_forget();
    if (e != cudaSuccess ||
        (!other && (op < 0 || cuda_cpu::tensor_core_ptx((cuda_cpu::WarpOp)op, param, ins, sizeof ins) < 0))) {
        fprintf(stderr, "mma_ptx_table: kernel mma_ptx_%s: %s\n", fn,
                e != cudaSuccess ? cudaGetErrorString(e) : "no tensor-core instruction completed");
        return 1;
    }
    printf("%s %s\n", fn, ins);
    return 0;
}

int main(void) {
    std::vector<uint16_t> in(32 * 8, 0x3f80); /* bf16 1.0 */
    std::vector<uint32_t> out(32 * 4), frag(32 * 6, 0x3f803f80u);
    std::vector<float> c(32 * 4, 0.0f), d(32 * 4);
    int bad = 0;
    struct {
        const char *name;
        void (*kernel)(uint32_t *, const uint16_t *);
    } const ld[] = {{"ldmatrix_x1", mma_ptx_ldmatrix_x1},           {"ldmatrix_x2", mma_ptx_ldmatrix_x2},
                    {"ldmatrix_x4", mma_ptx_ldmatrix_x4},           {"ldmatrix_x1_trans", mma_ptx_ldmatrix_x1_trans},
                    {"ldmatrix_x2_trans", mma_ptx_ldmatrix_x2_trans}, {"ldmatrix_x4_trans", mma_ptx_ldmatrix_x4_trans}};
    for (const auto &k : ld) {
        CUDA_CPU_LAUNCH(k.kernel, 1, 32, 0, 0)(out.data(), in.data());
        bad |= print_last(k.name);
    }
    CUDA_CPU_LAUNCH(mma_ptx_mma_m16n8k16_bf16, 1, 32, 0, 0)(d.data(), frag.data(), c.data());
    bad |= print_last("mma_m16n8k16_bf16");
    std::vector<float> x(32, 0.5f), y(32);
    CUDA_CPU_LAUNCH(mma_ptx_ex2_approx_ftz, 1, 32, 0, 0)(y.data(), x.data());
    bad |= print_last("ex2_approx_ftz");
    const struct {
        const char *name;
        void (*kernel)(const uint16_t *);
    } cp[] = {{"cp_async_16", mma_ptx_cp_async_16}, {"cp_async_commit", mma_ptx_cp_async_commit},
              {"cp_async_wait", mma_ptx_cp_async_wait}};
    for (const auto &k : cp) {
        CUDA_CPU_LAUNCH(k.kernel, 1, 32, 0, 0)(in.data());
        bad |= print_last(k.name);
    }
    return bad;
}
