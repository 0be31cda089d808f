/* test_fast_cpu_attention_wgmma.cpp: fast/attention_wgmma_forward.cu (TMA loads of Q once and of
 * K/V tiles into a two-stage mbarrier ring, S = Q·Kᵀ by wgmma SS, online softmax, P·V by wgmma RS)
 * on the CPU layer, against causal attention computed here in double.
 *
 * Expected: out within 1e-2 relative (P and the output rounded to bf16, as attention_mma_forward),
 * lse within 1e-4 absolute (fp32 accumulation over at most a few hundred keys); a misplaced
 * fragment, swizzle chunk, stage or TMA coordinate moves whole blocks of S or O: errors of order
 * 1. Every thread and block order gives the same bits, and q/k/v read as views into one fused
 * projection [N, qC + 2kvC] give the bits of separate tensors. Shapes: T not a multiple of the
 * 128-query block nor of the 128-key tile (and T = 256, one that is), two batches (a block's rows past T read the next
 * batch's rows or TMA's zero fill and must not leak), three key tiles (the two-stage ring wraps),
 * GQA and MQA, hd 64 and 128; hd 32 falls back to attention_mma_forward's bits. Under the
 * checkers (the _check build) a stage read before its TMA bytes landed, or refilled while a
 * wgmma still reads it, is a race naming the kernel. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <vector>

#include "fast/attention_wgmma.cuh"
#include "fast/cuda_cpu/launch_state.h"

#include "fast_cpu_test_inputs.h"

using std::vector;

static XorShift rng = {0x2545f4914f6cdd1dull};
static vector<bf16> random_bf16(size_t n, float scale) { return random_bf16(rng, n, scale); }
static double f(bf16 x) { return (double)__bfloat162float(x); }
template <class T> static int same_bits(const vector<T> &a, const vector<T> &b) {
    return a.size() == b.size() && !memcmp(a.data(), b.data(), a.size() * sizeof(T));
}

static const char *orders[] = {"forward", "reverse", "random:7"};

static void wgmma_case(int B, int T, int NH, int NKV, int hd) {
    const int qC = NH * hd, kvC = NKV * hd, N = B * T, S = qC + 2 * kvC;
    const vector<bf16> q = random_bf16((size_t)N * qC, 2.0f), k = random_bf16((size_t)N * kvC, 2.0f);
    const vector<bf16> v = random_bf16((size_t)N * kvC, 1.0f);
    vector<double> rout, rlse;
    attention_forward_fp64(q, k, v, B, T, NH, NKV, hd, rout, rlse);
    vector<bf16> qkv((size_t)N * S);
    for (int n = 0; n < N; n++) {
        memcpy(&qkv[(size_t)n * S], &q[(size_t)n * qC], qC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC], &k[(size_t)n * kvC], kvC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC + kvC], &v[(size_t)n * kvC], kvC * sizeof(bf16));
    }
    const fast_cpu::AttnLd own = {qC, kvC, kvC}, fused = {S, S, S};
    cr_assert(fast_cpu::attention_wgmma_runs(q.data(), k.data(), v.data(), own, hd), "hd %d: not the wgmma kernel", hd);
    vector<bf16> first_o;
    vector<float> first_lse;
    for (const char *o : orders) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        cr_assert_eq(cuda_cpu::set_block_order(o), 0);
        vector<bf16> out((size_t)N * qC, __float2bfloat16(NAN)), out2(out);
        vector<float> lse((size_t)B * NH * T, NAN), lse2(lse);
        cr_assert_eq(fast_cpu::attention_wgmma_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), own, B, T,
                                                       NH, NKV, hd),
                     0, "%s", vrl_last_error());
        cr_assert_eq(fast_cpu::attention_wgmma_forward(out2.data(), lse2.data(), qkv.data(), qkv.data() + qC,
                                                       qkv.data() + qC + kvC, fused, B, T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        cr_expect(same_bits(out2, out) && same_bits(lse2, lse), "T=%d hd=%d, order %s: strided views differ", T, hd, o);
        double num = 0, den = 0, lse_err = 0;
        size_t worst = 0;
        for (size_t i = 0; i < out.size(); i++) {
            const double e = fabs(f(out[i]) - rout[i]);
            if (!(e <= fabs(f(out[worst]) - rout[worst]))) worst = i; /* NaN counts as the worst */
            num += e * e, den += rout[i] * rout[i];
        }
        for (size_t i = 0; i < lse.size(); i++) lse_err = fmax(lse_err, fabs((double)lse[i] - rlse[i]));
        const double rel = sqrt(num / den);
        cr_log_info("wgmma B=%d T=%d NH=%d NKV=%d hd=%d, order %s: out rel %.2e, lse max |err| %.2e", B, T, NH, NKV,
                    hd, o, rel, lse_err);
        cr_expect(rel <= 1e-2, "T=%d hd=%d out, order %s: rel %.3e; worst out[%zu] (row %zu col %zu) = %g, want %g", T,
                  hd, o, rel, worst, worst / qC, worst % qC, f(out[worst]), rout[worst]);
        cr_expect(lse_err <= 1e-4, "T=%d hd=%d lse, order %s: max |error| %.3e", T, hd, o, lse_err);
        if (o == orders[0]) first_o = out, first_lse = lse;
        else cr_expect(same_bits(out, first_o) && same_bits(lse, first_lse), "T=%d hd=%d: order %s changes the bits",
                       T, hd, o);
    }
    cuda_cpu::set_thread_order("forward");
    cuda_cpu::set_block_order("forward");
}

Test(attention_wgmma, hd64_gqa_two_batches_t_past_the_tile) { wgmma_case(2, 200, 4, 2, 64); }
Test(attention_wgmma, hd64_mqa_three_key_tiles_ring_wraps) { wgmma_case(1, 300, 2, 1, 64); }
Test(attention_wgmma, hd128_gqa) { wgmma_case(2, 130, 4, 2, 128); }
Test(attention_wgmma, hd64_one_position) { wgmma_case(2, 1, 2, 2, 64); }
Test(attention_wgmma, hd128_mqa_t_a_multiple_of_the_tile) { wgmma_case(1, 256, 2, 1, 128); }

Test(attention_wgmma, other_head_dims_fall_back_to_the_mma_forward) {
    const int B = 1, T = 70, NH = 2, NKV = 1, hd = 32, qC = NH * hd, kvC = NKV * hd;
    const vector<bf16> q = random_bf16((size_t)T * qC, 2.0f), k = random_bf16((size_t)T * kvC, 2.0f);
    const vector<bf16> v = random_bf16((size_t)T * kvC, 1.0f);
    const fast_cpu::AttnLd ld = {qC, kvC, kvC};
    cr_expect(!fast_cpu::attention_wgmma_runs(q.data(), k.data(), v.data(), ld, hd));
    vector<bf16> out((size_t)T * qC), want(out), qm = q;
    vector<float> lse((size_t)NH * T), wlse(lse);
    cr_assert_eq(fast_cpu::attention_wgmma_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), ld, B, T, NH,
                                                   NKV, hd),
                 0, "%s", vrl_last_error());
    cr_assert_eq(fast_cpu::attention_mma_forward(want.data(), wlse.data(), qm.data(), k.data(), v.data(), ld, B, T, NH,
                                                 NKV, hd, NULL),
                 0, "%s", vrl_last_error());
    cr_expect(same_bits(out, want) && same_bits(lse, wlse), "hd 32: not attention_mma_forward's bits");
}
