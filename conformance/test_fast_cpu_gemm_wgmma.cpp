/* test_fast_cpu_gemm_wgmma.cpp: fast/gemm_wgmma.cu (TMA loads, mbarrier stages, wgmma
 * products, epilogues) on the CPU layer, against the product computed here in the order the
 * kernel sums it, in every thread and block order.
 *
 * The layer's wgmma adds each k16 step's 16 exact products to the fp32 accumulator in double
 * and rounds once (fast/cuda_cpu/wgmma.cpp, "Precision"); the kernel takes the k16 steps in
 * ascending k. So the expected bits are acc = fp32(acc + Σ16 a·b) over k16 steps, then the
 * epilogue's roundings: any misplaced element (a layout, a swizzle, a TMA coordinate, a stage
 * read before it landed, an edge not zero-filled) changes them. The kernel is persistent: in
 * the third order three blocks take all the tiles between them, so a block's ring of stages and
 * phases runs on from one tile into the next. Shapes: rows, columns and k not multiples of the
 * 128 x 256 x 64 tile (edge blocks, a k tail zero-filled by TMA), more k
 * steps than stages (the ring wraps twice), the residual add, and the SwiGLU epilogue whose
 * gate and up columns are F apart, checked bit for bit against swiglu_forward on the gate|up
 * it wrote. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <vector>

#include "fast/cuda_cpu/launch_state.h"
#include "fast/gemm_wgmma.cuh"
#include "fast/ops.cuh"

#include "fast_cpu_test_inputs.h"

using std::vector;

static XorShift rng = {0x9e3779b97f4a7c15ull};
static float uniform(void) { return rng.uniform(); }
static vector<bf16> random_bf16(size_t n, float scale) { return random_bf16(rng, n, scale); }
static float f(bf16 x) { return __bfloat162float(x); }

/* acc[m][n] = Σ_k a[m][k]·b[n][k] as the kernel sums it: k16 steps in order, each step's 16
 * products exact in double added to the fp32 accumulator and rounded once.  a [M,K], b [N,K] */
static vector<float> product_as_summed(const vector<bf16> &a, const vector<bf16> &b, int M, int N, int K) {
    vector<float> acc((size_t)M * N, 0.0f);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0.0f;
            for (int k0 = 0; k0 < K; k0 += 16) {
                double step = s;
                for (int k = k0; k < k0 + 16 && k < K; k++)
                    step += (double)f(a[(size_t)m * K + k]) * (double)f(b[(size_t)n * K + k]);
                s = (float)step;
            }
            acc[(size_t)m * N + n] = s;
        }
    return acc;
}

static const char *orders[] = {"forward", "reverse", "random:7"};

/* the first mismatching index, or -1 */
static long first_diff(const vector<bf16> &got, const vector<bf16> &want) {
    for (size_t i = 0; i < want.size(); i++)
        if (memcmp(&got[i], &want[i], sizeof(bf16))) return (long)i;
    return -1;
}

static void forward_case(int M, int K, int N, int with_residual) {
    const vector<bf16> a = random_bf16((size_t)M * K, 2.0f), b = random_bf16((size_t)N * K, 1.0f);
    const vector<bf16> res = random_bf16((size_t)M * N, 4.0f);
    const vector<float> acc = product_as_summed(a, b, M, N, K);
    vector<bf16> want((size_t)M * N);
    for (size_t i = 0; i < want.size(); i++) want[i] = __float2bfloat16(acc[i] + (with_residual ? f(res[i]) : 0.0f));
    for (const char *o : orders) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        cr_assert_eq(cuda_cpu::set_block_order(o), 0);
        fast_cpu::gemm_wgmma_max_blocks(o == orders[2] ? 3 : 0); /* the third order: 3 blocks take every tile */
        vector<bf16> out((size_t)M * N, __float2bfloat16(NAN));
        cr_assert_eq(fast_cpu::gemm_wgmma_forward(out.data(), a.data(), b.data(), with_residual ? res.data() : NULL, M,
                                                  K, N),
                     0, "%s", vrl_last_error());
        const long d = first_diff(out, want);
        cr_expect_eq(d, -1L, "wgmma GEMM M %d K %d N %d%s, order %s: out[%ld] (row %ld col %ld) = %g, expected %g", M, K,
                     N, with_residual ? " + residual" : "", o, d, d / N, d % N, d < 0 ? 0.0 : f(out[d]),
                     d < 0 ? 0.0 : f(want[d]));
    }
    cuda_cpu::set_thread_order("forward");
    cuda_cpu::set_block_order("forward");
    fast_cpu::gemm_wgmma_max_blocks(0);
}

Test(gemm_wgmma, edge_tiles_k_tail_and_wrapping_stages) { forward_case(200, 584, 264, 0); }
Test(gemm_wgmma, residual_added_before_the_rounding) { forward_case(130, 72, 136, 1); }

Test(gemm_wgmma, swiglu_epilogue_writes_gate_up_and_the_product) {
    const int M = 150, K = 200, F = 300; /* F: 3 tiles of 128 gate + 128 up columns, the last straddling W_up's first rows */
    const vector<bf16> a = random_bf16((size_t)M * K, 2.0f), w = random_bf16((size_t)2 * F * K, 1.0f);
    const vector<float> acc = product_as_summed(a, w, M, 2 * F, K);
    vector<bf16> want_gu((size_t)M * 2 * F);
    for (size_t i = 0; i < want_gu.size(); i++) want_gu[i] = __float2bfloat16(acc[i]);
    vector<bf16> want_swi((size_t)M * F);
    cr_assert_eq(fast_cpu::swiglu_forward(want_swi.data(), want_gu.data(), M, F), 0, "%s", vrl_last_error());
    for (const char *o : orders) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        cr_assert_eq(cuda_cpu::set_block_order(o), 0);
        fast_cpu::gemm_wgmma_max_blocks(o == orders[2] ? 3 : 0); /* the third order: 3 blocks take every tile */
        vector<bf16> gu((size_t)M * 2 * F, __float2bfloat16(NAN)), swi((size_t)M * F, __float2bfloat16(NAN));
        cr_assert_eq(fast_cpu::gemm_wgmma_gate_up_swiglu(gu.data(), swi.data(), a.data(), w.data(), M, K, F), 0, "%s",
                     vrl_last_error());
        const long dg = first_diff(gu, want_gu), ds = first_diff(swi, want_swi);
        cr_expect_eq(dg, -1L, "gate|up, order %s: gu[%ld] (row %ld col %ld) = %g, expected %g", o, dg, dg / (2 * F),
                     dg % (2 * F), dg < 0 ? 0.0 : f(gu[dg]), dg < 0 ? 0.0 : f(want_gu[dg]));
        cr_expect_eq(ds, -1L, "swiglu, order %s: out[%ld] (row %ld col %ld) = %g, swiglu_forward gives %g", o, ds,
                     ds / F, ds % F, ds < 0 ? 0.0 : f(swi[ds]), ds < 0 ? 0.0 : f(want_swi[ds]));
    }
    cuda_cpu::set_thread_order("forward");
    cuda_cpu::set_block_order("forward");
    fast_cpu::gemm_wgmma_max_blocks(0);
}

/* dgu = swiglu_backward(dout · W_down, gu) with W_down [C,F] read N-major (its 64-column blocks
 * by the descriptor's LBO): against the product summed as the kernel does, rounded to bf16, and
 * swiglu_backward on it, bit for bit. F = 600: two 256-column tiles and a short one; C = 136: a k tail. */
static void down_dx_case(int M, int C, int F) {
    const vector<bf16> dout = random_bf16((size_t)M * C, 1.0f), w = random_bf16((size_t)C * F, 1.0f);
    const vector<bf16> gu = random_bf16((size_t)M * 2 * F, 3.0f);
    vector<bf16> wt((size_t)F * C); /* [F,C]: W_down transposed, for the host product */
    for (int k = 0; k < C; k++)
        for (int n = 0; n < F; n++) wt[(size_t)n * C + k] = w[(size_t)k * F + n];
    const vector<float> acc = product_as_summed(dout, wt, M, F, C);
    vector<bf16> dh((size_t)M * F), want((size_t)M * 2 * F);
    for (size_t i = 0; i < dh.size(); i++) dh[i] = __float2bfloat16(acc[i]);
    cr_assert_eq(fast_cpu::swiglu_backward(want.data(), dh.data(), gu.data(), M, F), 0, "%s", vrl_last_error());
    for (const char *o : orders) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        cr_assert_eq(cuda_cpu::set_block_order(o), 0);
        fast_cpu::gemm_wgmma_max_blocks(o == orders[2] ? 3 : 0); /* the third order: 3 blocks take every tile */
        vector<bf16> dgu((size_t)M * 2 * F, __float2bfloat16(NAN));
        cr_assert_eq(fast_cpu::gemm_wgmma_down_dx_swiglu(dgu.data(), dout.data(), w.data(), gu.data(), M, C, F), 0,
                     "%s", vrl_last_error());
        const long d = first_diff(dgu, want);
        cr_expect_eq(d, -1L, "down dX + swiglu bwd, order %s: dgu[%ld] (row %ld col %ld) = %g, expected %g", o, d,
                     d / (2 * F), d % (2 * F), d < 0 ? 0.0 : f(dgu[d]), d < 0 ? 0.0 : f(want[d]));
    }
    cuda_cpu::set_thread_order("forward");
    cuda_cpu::set_block_order("forward");
    fast_cpu::gemm_wgmma_max_blocks(0);
}
Test(gemm_wgmma, down_projection_dx_with_the_swiglu_backward) { down_dx_case(140, 136, 600); }
Test(gemm_wgmma, down_projection_dx_narrower_than_one_box) { down_dx_case(80, 16, 56); }

/* the fused qkv GEMM with RoPE in its epilogue = the GEMM rounded, then rope_forward over q and k
 * (their heads in the row of ld OC), bit for bit; v's columns as the plain GEMM's. B 3 x T 50: rows
 * past a 128-row tile and positions restarting per sequence. */
static void rope_case(int hd, int NH, int NKV) {
    const int B = 3, T = 50, M = B * T, K = 72, OC = (NH + 2 * NKV) * hd, rope_cols = (NH + NKV) * hd;
    const vector<bf16> a = random_bf16((size_t)M * K, 2.0f), w = random_bf16((size_t)OC * K, 1.0f);
    vector<float> cos_t((size_t)T * hd / 2), sin_t((size_t)T * hd / 2);
    for (size_t i = 0; i < cos_t.size(); i++) cos_t[i] = uniform(), sin_t[i] = uniform();
    const vector<float> acc = product_as_summed(a, w, M, OC, K);
    vector<bf16> want((size_t)M * OC);
    for (size_t i = 0; i < want.size(); i++) want[i] = __float2bfloat16(acc[i]);
    cr_assert_eq(fast_cpu::rope_forward(want.data(), OC, cos_t.data(), sin_t.data(), B, T, NH, hd), 0);
    cr_assert_eq(fast_cpu::rope_forward(want.data() + NH * hd, OC, cos_t.data(), sin_t.data(), B, T, NKV, hd), 0);
    for (const char *o : orders) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        cr_assert_eq(cuda_cpu::set_block_order(o), 0);
        fast_cpu::gemm_wgmma_max_blocks(o == orders[2] ? 1 : 0);
        vector<bf16> out((size_t)M * OC, __float2bfloat16(NAN));
        cr_assert_eq(fast_cpu::gemm_wgmma_forward_rope(out.data(), a.data(), w.data(), M, K, OC, rope_cols, cos_t.data(),
                                                       sin_t.data(), T, hd),
                     0, "%s", vrl_last_error());
        const long d = first_diff(out, want);
        cr_expect_eq(d, -1L, "qkv + RoPE hd %d, order %s: out[%ld] (row %ld col %ld) = %g, expected %g", hd, o, d,
                     d / OC, d % OC, d < 0 ? 0.0 : f(out[d]), d < 0 ? 0.0 : f(want[d]));
    }
    cuda_cpu::set_thread_order("forward");
    cuda_cpu::set_block_order("forward");
    fast_cpu::gemm_wgmma_max_blocks(0);
}
Test(gemm_wgmma, qkv_with_rope_in_the_epilogue_hd64_gqa) { rope_case(64, 4, 2); }
Test(gemm_wgmma, qkv_with_rope_in_the_epilogue_hd16_and_hd128) {
    rope_case(16, 6, 2);
    rope_case(128, 2, 1);
}
Test(gemm_wgmma, rope_epilogue_refuses_head_dims_it_cannot_pair) {
    vector<bf16> a(16 * 16), b(24 * 16), out(16 * 24);
    vector<float> t(8);
    cr_expect_eq(fast_cpu::gemm_wgmma_forward_rope(out.data(), a.data(), b.data(), 16, 16, 24, 16, t.data(), t.data(),
                                                   4, 8),
                 -1);
    cr_expect(strstr(vrl_last_error(), "head dim 8") != NULL, "the error: %s", vrl_last_error());
}

Test(gemm_wgmma, refuses_a_row_stride_tma_cannot_take) {
    vector<bf16> a(4 * 12), b(8 * 12), out(4 * 8);
    cr_expect_eq(fast_cpu::gemm_wgmma_forward(out.data(), a.data(), b.data(), NULL, 4, 12, 8), -1);
    cr_expect(strstr(vrl_last_error(), "multiple of 8") != NULL, "the error: %s", vrl_last_error());
}
