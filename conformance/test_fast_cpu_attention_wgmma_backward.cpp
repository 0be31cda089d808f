/* test_fast_cpu_attention_wgmma_backward.cpp: fast/attention_wgmma_backward.cu (the dK/dV kernel:
 * own K, V by TMA, Q and dO tiles through a two-stage mbarrier ring, Sᵀ and dPᵀ by wgmma SS, dV and
 * dK by wgmma RS; the dQ kernel likewise over K and V tiles) on the CPU layer, against the causal
 * attention's gradients computed here in double from the same inputs (q, k, v, dO, the bf16 out
 * that D reads, the fp32 lse).
 *
 * Expected: dq, dk, dv within 1e-2 relative (Frobenius; P and dS rounded to bf16 as the factors of
 * the second products, the outputs rounded to bf16: attention_mma_backward's ~3e-3 here); a
 * misplaced fragment, swizzle chunk, stage, TMA coordinate or mask moves whole blocks of a
 * gradient: errors of order 1. With RoPE's transpose in the epilogues (AttnRope dq, dk), Rᵀ of the
 * reference's gradients within the same bound, dv's bits unchanged. Every thread and block order
 * gives the same bits; q/k/v read as views into one fused projection [N, qC + 2kvC] (and dq, dk
 * written into one) give the bits of separate tensors; dv's other destinations (fp32 added onto an
 * accumulator, bf16) hold the same values. Shapes: T not a multiple of the 128-row blocks nor of
 * the 64-row tiles, two batches (rows past T read the next batch's rows or TMA's zero fill and
 * must not leak), GQA (the dK/dV block walks two query heads) and MQA, hd 64 and 128, several
 * query tiles a key block (the ring wraps); hd 32 falls back to attention_mma_backward's bits. At hd
 * 128 the dK/dV kernel's block is 384 threads (a producer warpgroup, setmaxnreg: a no-op here).
 * Under the checkers (the _check build) a stage read before its TMA bytes landed, or refilled
 * while a wgmma still reads it, is a race naming the kernel. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include <vector>

#include "fast/attention_wgmma.cuh"
#include "fast/cuda_cpu/launch_state.h"

#include "fast_cpu_test_inputs.h"

using std::vector;

static XorShift rng = {0x9e3779b97f4a7c15ull};
static vector<bf16> random_bf16(size_t n, float scale) { return random_bf16(rng, n, scale); }
static double f(bf16 x) { return (double)__bfloat162float(x); }
static double f(float x) { return (double)x; }
template <class T> static int same_bits(const vector<T> &a, const vector<T> &b) {
    return a.size() == b.size() && !memcmp(a.data(), b.data(), a.size() * sizeof(T));
}
/* ‖a − b‖ / ‖b‖ over the columns [c0, c0 + width) of rows of a (stride lda) and b (stride width) */
template <class T>
static double rel(const vector<T> &a, size_t lda, size_t c0, const vector<double> &b, size_t width) {
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); i++) {
        const double e = f(a[i / width * lda + c0 + i % width]) - b[i];
        num += e * e, den += b[i] * b[i];
    }
    return den == 0 ? sqrt(num) : sqrt(num / den); /* T = 1: dq = dk = 0 exactly, an absolute error */
}

static const char *orders[] = {"forward", "reverse", "random:7"};

/* The causal attention's forward and gradients in double: out [N,qC] and lse [B,NH,T] first (the
 * kernel's inputs, rounded by the caller), then from the rounded out16 and lse32:
 * D_i = Σ dO_i·O_i, P = exp(s − lse), dS = P∘(dP − D), dq = scale·dS·K, dk = scale·dSᵀ·Q, dv = Pᵀ·dO. */
struct Ref {
    vector<double> out, lse, dq, dk, dv;
};
static void reference(const vector<bf16> &q, const vector<bf16> &k, const vector<bf16> &v, const vector<bf16> &dout,
                      int B, int T, int NH, int NKV, int hd, Ref &r, vector<bf16> &out16, vector<float> &lse32) {
    const int qC = NH * hd, kvC = NKV * hd;
    const double scale = 1.0 / sqrt((double)hd);
    attention_forward_fp64(q, k, v, B, T, NH, NKV, hd, r.out, r.lse);
    r.dq.assign((size_t)B * T * qC, 0.0), r.dk.assign((size_t)B * T * kvC, 0.0), r.dv.assign(r.dk.size(), 0.0);
    auto Q = [&](int b, int i, int h, int e) { return f(q[((size_t)b * T + i) * qC + h * hd + e]); };
    auto K = [&](int b, int j, int h, int e) { return f(k[((size_t)b * T + j) * kvC + h * hd + e]); };
    auto V = [&](int b, int j, int h, int e) { return f(v[((size_t)b * T + j) * kvC + h * hd + e]); };
    auto DO = [&](int b, int i, int h, int e) { return f(dout[((size_t)b * T + i) * qC + h * hd + e]); };
    out16.resize(r.out.size()), lse32.resize(r.lse.size());
    for (size_t i = 0; i < r.out.size(); i++) out16[i] = __float2bfloat16((float)r.out[i]);
    for (size_t i = 0; i < r.lse.size(); i++) lse32[i] = (float)r.lse[i];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / (NH / NKV);
            for (int i = 0; i < T; i++) {
                double D = 0;
                for (int e = 0; e < hd; e++) D += DO(b, i, h, e) * f(out16[((size_t)b * T + i) * qC + h * hd + e]);
                const double l = lse32[((size_t)b * NH + h) * T + i];
                for (int j = 0; j <= i; j++) {
                    double sc = 0, dp = 0;
                    for (int e = 0; e < hd; e++) sc += Q(b, i, h, e) * K(b, j, kh, e), dp += DO(b, i, h, e) * V(b, j, kh, e);
                    const double p = exp(sc * scale - l), ds = p * (dp - D);
                    for (int e = 0; e < hd; e++) {
                        r.dq[((size_t)b * T + i) * qC + h * hd + e] += scale * ds * K(b, j, kh, e);
                        r.dk[((size_t)b * T + j) * kvC + kh * hd + e] += scale * ds * Q(b, i, h, e);
                        r.dv[((size_t)b * T + j) * kvC + kh * hd + e] += p * DO(b, i, h, e);
                    }
                }
            }
        }
}

/* RoPE's tables as fast/model.cu makes them, [T][hd/2] */
static void rope_tables(int T, int hd, vector<float> &cos_t, vector<float> &sin_t) {
    const int h2 = hd / 2;
    cos_t.assign((size_t)T * h2, 0.0f), sin_t.assign((size_t)T * h2, 0.0f);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++) {
            const double a = t * pow(10000.0, -2.0 * i / hd);
            cos_t[(size_t)t * h2 + i] = (float)cos(a), sin_t[(size_t)t * h2 + i] = (float)sin(a);
        }
}
/* Rᵀ on a gradient [N, C] of heads of hd: (x_i, x_{i+hd/2}) -> (x_i c + x_{i+hd/2} s, x_{i+hd/2} c − x_i s) */
static vector<double> rotate_t(const vector<double> &g, int C, int T, int hd, const vector<float> &cos_t,
                               const vector<float> &sin_t) {
    const int h2 = hd / 2;
    vector<double> r(g.size());
    for (size_t n = 0; n < g.size() / C; n++)
        for (int h = 0; h < C / hd; h++)
            for (int i = 0; i < h2; i++) {
                const size_t at = n * C + h * hd + i, ts = (n % T) * h2 + i;
                const double c = cos_t[ts], s = sin_t[ts], x1 = g[at], x2 = g[at + h2];
                r[at] = x1 * c + x2 * s, r[at + h2] = x2 * c - x1 * s;
            }
    return r;
}

static void backward_case(int B, int T, int NH, int NKV, int hd) {
    const int qC = NH * hd, kvC = NKV * hd, N = B * T, S = qC + 2 * kvC;
    const vector<bf16> q = random_bf16((size_t)N * qC, 2.0f), k = random_bf16((size_t)N * kvC, 2.0f);
    const vector<bf16> v = random_bf16((size_t)N * kvC, 1.0f), dout = random_bf16((size_t)N * qC, 1.0f);
    Ref r;
    vector<bf16> out;
    vector<float> lse;
    reference(q, k, v, dout, B, T, NH, NKV, hd, r, out, lse);
    vector<float> cos_t, sin_t;
    rope_tables(T, hd, cos_t, sin_t);
    const vector<double> rdq_rope = rotate_t(r.dq, qC, T, hd, cos_t, sin_t), rdk_rope = rotate_t(r.dk, kvC, T, hd, cos_t, sin_t);
    vector<bf16> qkv((size_t)N * S);
    for (int n = 0; n < N; n++) {
        memcpy(&qkv[(size_t)n * S], &q[(size_t)n * qC], qC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC], &k[(size_t)n * kvC], kvC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC + kvC], &v[(size_t)n * kvC], kvC * sizeof(bf16));
    }
    const fast_cpu::AttnLd own = {qC, kvC, kvC}, fused = {S, S, S};
    const fast_cpu::AttnRope rope = {cos_t.data(), sin_t.data(), 0, 1, 1, 0};
    cr_assert(fast_cpu::attention_wgmma_backward_runs(dout.data(), q.data(), k.data(), v.data(), own, hd, NULL),
              "hd %d: not the wgmma kernels", hd);
    vector<float> D((size_t)B * NH * T);
    vector<bf16> first_dq, first_dk;
    vector<float> first_dv;
    for (const char *o : orders) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        cr_assert_eq(cuda_cpu::set_block_order(o), 0);
        vector<bf16> dq((size_t)N * qC, __float2bfloat16(NAN)), dk((size_t)N * kvC, __float2bfloat16(NAN));
        vector<float> dv((size_t)N * kvC, NAN);
        cr_assert_eq(fast_cpu::attention_wgmma_backward(dq.data(), dk.data(), {dv.data(), 1.0f, 0, NULL}, D.data(),
                                                        dout.data(), out.data(), q.data(), k.data(), v.data(), own,
                                                        lse.data(), B, T, NH, NKV, hd, NULL),
                     0, "%s", vrl_last_error());
        const double eq = rel(dq, qC, 0, r.dq, qC), ek = rel(dk, kvC, 0, r.dk, kvC), ev = rel(dv, kvC, 0, r.dv, kvC);
        cr_log_info("wgmma backward B=%d T=%d NH=%d NKV=%d hd=%d, order %s: dq %.2e dk %.2e dv %.2e", B, T, NH, NKV,
                    hd, o, eq, ek, ev);
        cr_expect(eq <= 1e-2, "T=%d hd=%d dq, order %s: rel %.3e", T, hd, o, eq);
        cr_expect(ek <= 1e-2, "T=%d hd=%d dk, order %s: rel %.3e", T, hd, o, ek);
        cr_expect(ev <= 1e-2, "T=%d hd=%d dv, order %s: rel %.3e", T, hd, o, ev);
        if (o == orders[0]) first_dq = dq, first_dk = dk, first_dv = dv;
        else
            cr_expect(same_bits(dq, first_dq) && same_bits(dk, first_dk) && same_bits(dv, first_dv),
                      "T=%d hd=%d: order %s changes the bits", T, hd, o);
    }
    cuda_cpu::set_thread_order("forward");
    cuda_cpu::set_block_order("forward");
    /* the fused views (dq, dk written into one [N, S] buffer with the inputs' strides), dv added
     * onto an fp32 accumulator and rounded to bf16 in the same call */
    {
        vector<bf16> g((size_t)N * S, __float2bfloat16(0.0f)), dv16((size_t)N * S, __float2bfloat16(0.0f));
        vector<float> acc((size_t)N * kvC);
        for (auto &x : acc) x = rng.uniform();
        const vector<float> acc0 = acc;
        cr_assert_eq(fast_cpu::attention_wgmma_backward(g.data(), g.data() + qC, {acc.data(), 1.0f, 1, dv16.data() + qC + kvC},
                                                        D.data(), dout.data(), out.data(), qkv.data(), qkv.data() + qC,
                                                        qkv.data() + qC + kvC, fused, lse.data(), B, T, NH, NKV, hd,
                                                        NULL),
                     0, "%s", vrl_last_error());
        int same = 1;
        for (int n = 0; n < N && same; n++) {
            same &= !memcmp(&g[(size_t)n * S], &first_dq[(size_t)n * qC], qC * sizeof(bf16));
            same &= !memcmp(&g[(size_t)n * S + qC], &first_dk[(size_t)n * kvC], kvC * sizeof(bf16));
            for (int c = 0; c < kvC; c++) {
                const size_t i = (size_t)n * kvC + c;
                same &= acc[i] == acc0[i] + first_dv[i];
                const bf16 want = __float2bfloat16(first_dv[i]);
                same &= !memcmp(&dv16[(size_t)n * S + qC + kvC + c], &want, sizeof(bf16));
            }
        }
        cr_expect(same, "T=%d hd=%d: the fused views or dv's other destinations differ", T, hd);
    }
    /* RoPE's transpose in the epilogues */
    {
        vector<bf16> dq((size_t)N * qC), dk((size_t)N * kvC);
        vector<float> dv((size_t)N * kvC);
        cr_assert_eq(fast_cpu::attention_wgmma_backward(dq.data(), dk.data(), {dv.data(), 1.0f, 0, NULL}, D.data(),
                                                        dout.data(), out.data(), q.data(), k.data(), v.data(), own,
                                                        lse.data(), B, T, NH, NKV, hd, &rope),
                     0, "%s", vrl_last_error());
        const double eq = rel(dq, qC, 0, rdq_rope, qC), ek = rel(dk, kvC, 0, rdk_rope, kvC);
        cr_log_info("wgmma backward hd=%d with RoPE's transpose: dq %.2e dk %.2e", hd, eq, ek);
        cr_expect(eq <= 1e-2 && ek <= 1e-2, "T=%d hd=%d Rᵀ·dq %.3e, Rᵀ·dk %.3e (rope)", T, hd, eq, ek);
        cr_expect(same_bits(dv, first_dv), "T=%d hd=%d: the RoPE epilogue changed dv", T, hd);
    }
}

Test(attention_wgmma_backward, hd64_gqa_two_batches_t_past_the_tiles) { backward_case(2, 200, 4, 2, 64); }
Test(attention_wgmma_backward, hd128_mqa) { backward_case(1, 150, 2, 1, 128); }
Test(attention_wgmma_backward, hd64_one_position) { backward_case(2, 1, 2, 2, 64); }

/* hd 32 and the keys' RoPE at their loads (AttnRope.k) take attention_mma_backward: its bits */
Test(attention_wgmma_backward, other_head_dims_fall_back_to_the_mma_backward) {
    const int B = 1, T = 70, NH = 2, NKV = 1, hd = 32, qC = NH * hd, kvC = NKV * hd;
    const vector<bf16> q = random_bf16((size_t)T * qC, 2.0f), k = random_bf16((size_t)T * kvC, 2.0f);
    const vector<bf16> v = random_bf16((size_t)T * kvC, 1.0f), dout = random_bf16((size_t)T * qC, 1.0f);
    Ref r;
    vector<bf16> out;
    vector<float> lse;
    reference(q, k, v, dout, B, T, NH, NKV, hd, r, out, lse);
    const fast_cpu::AttnLd ld = {qC, kvC, kvC};
    cr_expect(!fast_cpu::attention_wgmma_backward_runs(dout.data(), q.data(), k.data(), v.data(), ld, hd, NULL));
    vector<bf16> dq((size_t)T * qC), dk((size_t)T * kvC), wdq(dq), wdk(dk);
    vector<float> dv((size_t)T * kvC), wdv(dv), D((size_t)NH * T);
    cr_assert_eq(fast_cpu::attention_wgmma_backward(dq.data(), dk.data(), {dv.data(), 1.0f, 0, NULL}, D.data(),
                                                    dout.data(), out.data(), q.data(), k.data(), v.data(), ld,
                                                    lse.data(), B, T, NH, NKV, hd, NULL),
                 0, "%s", vrl_last_error());
    cr_assert_eq(fast_cpu::attention_mma_backward(wdq.data(), wdk.data(), {wdv.data(), 1.0f, 0, NULL}, D.data(),
                                                  dout.data(), out.data(), q.data(), k.data(), v.data(), ld,
                                                  lse.data(), B, T, NH, NKV, hd, NULL),
                 0, "%s", vrl_last_error());
    cr_expect(same_bits(dq, wdq) && same_bits(dk, wdk) && same_bits(dv, wdv), "hd 32: not attention_mma_backward's bits");
    const fast_cpu::AttnLd ld64 = {64, 64, 64};
    float tables[2] = {1.0f, 0.0f};
    const fast_cpu::AttnRope rope_k = {tables, tables + 1, 0, 0, 0, 1};
    cr_expect(!fast_cpu::attention_wgmma_backward_runs(dout.data(), q.data(), k.data(), v.data(), ld64, 64, &rope_k),
              "keys rotated at their loads are the mma backward's");
}
