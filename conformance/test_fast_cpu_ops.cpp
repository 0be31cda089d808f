/* test_fast_cpu_ops.cpp: fast/'s kernels one by one, on the CPU layer, against ref/'s ops in
 * float64, at edge shapes the model tests do not reach, in all three thread orders.
 *
 * Story: each op gets bf16 inputs (the fp64 reference gets the same values widened), runs
 * through fast/'s launcher (fast/ops.cu, attention.cu compiled for the CPU, namespace fast_cpu) and must
 * land within bf16 tolerances of ref; then it runs again in the reverse and random thread
 * orders and must give the same bits (a missing barrier would not). Shapes: RMSNorm with
 * rows not a multiple of the 8 rows of a block and channels not a multiple of the warp, its
 * gain gradient over more than one 256-row chunk; the single-read cross-entropy (against a
 * double computation) at each of its register sizes up to the paper's vocabulary, odd V, pad
 * columns and rows without a target; SwiGLU on the fused gate|up layout; scoring's log-softmax and argmax with
 * ties and a padded vocabulary; attention with T = 1 and T = 65
 * (one query past a 64-query tile), GQA, hd 16 and 128, its dV written in fp32, added onto an
 * fp32 accumulator and rounded to bf16 in the same call, and on q/k/v views into one fused
 * projection buffer (the same bits); attention_dv_scatter (cuDNN's dV into those destinations)
 * against flash's epilogue; the tensor-core forward (attention_mma_forward) at T = 1, 33, 65,
 * 70 and 100 (past a 64-row tile), GQA and MQA, hd 8 (zero-padded to the mma's 16), 16, 64,
 * 128, its lse feeding the CUDA-core backward. The step's other kernels (issue 37), each within a bound written
 * from its rounding points: the value mix with a trainable λ read on the device, its backward
 * from fp32 and bf16 gradients and the λ gradient past its grid; RoPE and its transpose on a
 * view; the embedding gather and its per-token backward; the loss's device sum and record.
 * The 16-byte vector path of the memory-bound kernels (fast/vec.cuh) against their scalar
 * path: the same bits, and each path taken where it should be. (AdamW and the bf16 casts:
 * test_fast_cpu_bits.cpp.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "fast/cuda_cpu/launch_state.h"
#include "fast/gpt2_ops.cuh"
#include "fast/ops.cuh"
extern "C" {
#include "ref/attn_ops.h"
#include "ref/gpt2.h"
#include "ref/ops.h"
}
#undef rmsnorm_forward  /* ref/real.h's renaming would reach fast_cpu::rmsnorm_forward too */
#undef rmsnorm_backward
#undef token_logprobs_forward
#undef swiglu_forward
#undef swiglu_backward
#undef embedding_forward
#undef embedding_backward
#undef rope_tables
#undef rope_forward
#undef rope_backward
#undef mix_forward
#undef mix_backward

using std::vector;

/* ref's names, widened to its float64 build (ref/real.h maps them; fast's are in fast_cpu) */
#define REF64(name) name##_f64

static uint64_t seed_state = 88172645463325252ull;
static double uniform(void) { /* xorshift: a fixed sequence in [-1, 1) */
    seed_state ^= seed_state << 13, seed_state ^= seed_state >> 7, seed_state ^= seed_state << 17;
    return (double)(seed_state >> 11) / 4503599627370496.0 - 1.0;
}

/* n bf16 values (scaled) and the same values in double */
static void random_bf16(vector<bf16> &b, vector<double> &d, size_t n, double scale) {
    b.resize(n), d.resize(n);
    for (size_t i = 0; i < n; i++) {
        b[i] = __float2bfloat16((float)(uniform() * scale));
        d[i] = __bfloat162float(b[i]);
    }
}

template <class T> static double val(const T &x) { return (double)x; }
template <> double val(const bf16 &x) { return __bfloat162float(x); }

/* ‖a − b‖ / ‖b‖ */
template <class T> static double rel(const vector<T> &a, const vector<double> &b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < b.size(); i++) {
        const double e = val(a[i]) - b[i];
        num += e * e, den += b[i] * b[i];
    }
    return den == 0 ? sqrt(num) : sqrt(num / den);
}

template <class T> static bool same_bits(const vector<T> &a, const vector<T> &b) {
    return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

static const char *orders[] = {"forward", "reverse", "random:99"};
/* The thread orders a test runs: all three, or the forward one alone where
 * VRL_TEST_ONE_ORDER=1 (the sanitizer pass: its job is memory errors, and the plain pass
 * compares the orders; conformance/tests.cmake). */
static vector<const char *> test_orders(void) {
    const char *one = getenv("VRL_TEST_ONE_ORDER");
    if (one && !strcmp(one, "1")) return {orders[0]};
    return vector<const char *>(orders, orders + 3);
}

/* ------------------------------------------------------------------ rmsnorm */

/* The backward with the gain's gradient fused (the step's form) against ref, and bit for bit
 * against the separate passes (rmsnorm_backward_weight); a row wider than the fused block's
 * shared sums (RMSNORM_GAIN_MAX_C) takes the separate passes. */
static void rmsnorm_case(int N, int C) {
    vector<bf16> x16, w16, dout16; /* dout in bf16, as its GEMMs write it */
    vector<double> x, w, dout;
    random_bf16(x16, x, (size_t)N * C, 2.0);
    random_bf16(w16, w, C, 1.0);
    random_bf16(dout16, dout, (size_t)N * C, 1.0);
    vector<double> ry((size_t)N * C), rr(N), rdx((size_t)N * C, 0.0), rdw(C, 0.0);
    REF64(rmsnorm_forward)(ry.data(), rr.data(), x.data(), w.data(), N, C, 1e-5);
    REF64(rmsnorm_backward)(rdx.data(), rdw.data(), dout.data(), x.data(), w.data(), rr.data(), N, C, GRAD_ADD);
    vector<bf16> first_y, first_dx16;
    vector<float> first_dw;
    const size_t chunks = (N + RMSNORM_WEIGHT_ROWS - 1) / RMSNORM_WEIGHT_ROWS;
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<bf16> y((size_t)N * C), dx16((size_t)N * C);
        vector<float> r(N), dx((size_t)N * C, 0.0f), dw(C, 0.0f), partial(chunks * C);
        vector<float> dx_sep((size_t)N * C, 0.0f), dw_sep(C, 0.0f), partial_sep(chunks * C);
        cr_assert_eq(fast_cpu::rmsnorm_forward(y.data(), r.data(), x16.data(), w16.data(), N, C, 1e-5f), 0, "%s",
                     vrl_last_error());
        cr_assert_eq(fast_cpu::rmsnorm_backward(dx.data(), dx16.data(), dw.data(), partial.data(), dout16.data(),
                                                x16.data(), w16.data(), r.data(), N, C),
                     0, "%s", vrl_last_error());
        cr_assert_eq(fast_cpu::rmsnorm_backward(dx_sep.data(), NULL, NULL, NULL, dout16.data(), x16.data(), w16.data(),
                                                r.data(), N, C),
                     0, "%s", vrl_last_error());
        cr_assert_eq(fast_cpu::rmsnorm_backward_weight(dw_sep.data(), partial_sep.data(), dout16.data(), x16.data(),
                                                       r.data(), N, C),
                     0, "%s", vrl_last_error());
        cr_expect_leq(rel(y, ry), 1e-2, "rmsnorm out, C %d, order %s: %.3e", C, o, rel(y, ry));
        cr_expect_leq(rel(r, rr), 1e-6, "rmsnorm rstd, C %d, order %s: %.3e", C, o, rel(r, rr));
        cr_expect_leq(rel(dx, rdx), 1e-5, "rmsnorm dinp, C %d, order %s: %.3e", C, o, rel(dx, rdx));
        cr_expect_leq(rel(dw, rdw), 1e-5, "rmsnorm dweight, C %d, order %s: %.3e", C, o, rel(dw, rdw));
        cr_expect(same_bits(dx, dx_sep) && same_bits(dw, dw_sep),
                  "rmsnorm, C %d, order %s: the fused gain pass and the separate passes differ", C, o);
        if (o == orders[0]) first_y = y, first_dx16 = dx16, first_dw = dw;
        else
            cr_expect(same_bits(y, first_y) && same_bits(dx16, first_dx16) && same_bits(dw, first_dw),
                      "rmsnorm, C %d: order %s changes the bits", C, o);
    }
    cuda_cpu::set_thread_order("forward");
}

Test(fast_cpu_ops, rmsnorm_edge_shapes) {
    rmsnorm_case(300, 40); /* 37.5 blocks of 8 rows; 9.4 gain chunks of 32 (the last one short) */
    static_assert(RMSNORM_GAIN_MAX_C < 1040, "the wide case must be wider than the fused block's sums");
    rmsnorm_case(37, 1040); /* wider than RMSNORM_GAIN_MAX_C: the separate passes */
}

/* zero_grad's kernel: exactly the listed ranges become 0, in every thread and block order */
Test(fast_cpu_ops, zero_ranges) {
    const size_t n = 5000;
    const vector<size_t> ranges = {0, 3, 10, 1, 1000, 2600, 4990, 10}; /* (offset, floats); the longest 2600 */
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<float> g(n, 1.5f);
        cr_assert_eq(fast_cpu::zero_ranges(g.data(), ranges.data(), 4, 2600), 0, "%s", vrl_last_error());
        size_t zeros = 0, wrong = 0;
        for (size_t i = 0; i < n; i++) {
            int in = 0;
            for (size_t r = 0; r < ranges.size(); r += 2) in |= i >= ranges[r] && i < ranges[r] + ranges[r + 1];
            zeros += g[i] == 0.0f;
            wrong += in ? g[i] != 0.0f : g[i] != 1.5f;
        }
        cr_expect(wrong == 0 && zeros == 3 + 1 + 2600 + 10, "zero_ranges, order %s: %zu wrong, %zu zeros", o, wrong,
                  zeros);
    }
    cuda_cpu::set_thread_order("forward");
}

/* ------------------------------------------------------------------ cross-entropy */

/* The single-read cross-entropy on bf16 rows of LD columns (the padded vocabulary) against
 * a double computation from the same bf16 values: loss = logsumexp(x) − x[t] over the V real
 * columns, gradient w·(softmax(x) − onehot(t)) written over the logits, 0 in the pad. The pad
 * holds NaN, so reading it would show. Row 1 has no target (loss 0, zero gradient row); the
 * targets include column 0 and the last real column V − 1 (with V odd, the low half of the
 * row's last word, whose high half is pad). The shapes reach each register template (1, 4,
 * 16 and 56 words per thread of 512), the last one the paper's 50277 in 50304. Forward only
 * (backward 0) must give the same losses and leave the row as it was. */
/* off: the logits start off elements past a 16-byte boundary (2: the 32-bit words stay
 * aligned, the 16-byte packs do not, so the launcher takes the scalar path) */
static void crossentropy_case(int V, int LD, int R, int off = 0) {
    vector<bf16> logits((size_t)R * LD, __float2bfloat16(NAN));
    vector<double> x((size_t)R * V);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < V; i++) {
            logits[(size_t)r * LD + i] = __float2bfloat16((float)(4 * uniform()));
            x[(size_t)r * V + i] = __bfloat162float(logits[(size_t)r * LD + i]);
        }
    vector<int32_t> targets(R);
    for (int r = 0; r < R; r++) targets[r] = r == 0 ? V - 1 : r == 1 ? -1 : r == 2 ? 0 : (r * 7919) % V;
    const double w = 1.0 / 3.0;
    vector<double> rloss(R, 0.0), rd((size_t)R * V, 0.0);
    for (int r = 0; r < R; r++) {
        if (targets[r] < 0) continue;
        const double *xr = &x[(size_t)r * V];
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < V; i++) mx = fmax(mx, xr[i]);
        for (int i = 0; i < V; i++) sum += exp(xr[i] - mx);
        const double lse = mx + log(sum);
        rloss[r] = lse - xr[targets[r]];
        for (int i = 0; i < V; i++) rd[(size_t)r * V + i] = w * (exp(xr[i] - lse) - (i == targets[r] ? 1.0 : 0.0));
    }
    vector<float> first_loss;
    vector<bf16> first_d;
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<float> loss(R, -1.0f), loss_fwd(R, -1.0f);
        vector<bf16> store(logits.size() + 16), d((size_t)R * V);
        bf16 *at = store.data() + ((16 - (uintptr_t)store.data() % 16) % 16) / sizeof(bf16) + off;
        memcpy(at, logits.data(), logits.size() * sizeof(bf16));
        cr_assert_eq(fast_cpu::crossentropy_forward_backward(loss_fwd.data(), at, targets.data(), R, V, LD, (float)w, 0), 0,
                     "%s", vrl_last_error());
        cr_expect(same_bits(vector<bf16>(at, at + logits.size()), logits),
                  "V=%d order %s: the forward-only pass wrote the logits", V, o);
        const unsigned long s0 = fast_cpu::vec_scalar_launches;
        cr_assert_eq(fast_cpu::crossentropy_forward_backward(loss.data(), at, targets.data(), R, V, LD, (float)w, 1), 0,
                     "%s", vrl_last_error());
        if (LD / 2 > 512) /* rows of more than one word per thread: 16-byte packs when aligned */
            cr_expect_eq(fast_cpu::vec_scalar_launches - s0, off ? 1 : 0, "V=%d off %d: the wrong path", V, off);
        const vector<bf16> row(at, at + logits.size());
        cr_expect(same_bits(loss, loss_fwd), "V=%d order %s: forward-only and training losses differ", V, o);
        int pad_nonzero = 0;
        for (int r = 0; r < R; r++) {
            for (int i = 0; i < V; i++) d[(size_t)r * V + i] = row[(size_t)r * LD + i];
            for (int i = V; i < LD; i++) pad_nonzero += __bfloat162float(row[(size_t)r * LD + i]) != 0.0f;
        }
        cr_expect_eq(pad_nonzero, 0, "V=%d order %s: %d pad columns of the gradient are not 0", V, o, pad_nonzero);
        /* fp32 sums of exp over V terms: ~1e-7 relative on logsumexp */
        cr_expect_leq(rel(loss, rloss), 1e-6, "V=%d losses, order %s: %.3e", V, o, rel(loss, rloss));
        /* bf16 rounding is at most 2^-9 relative per element; 2^-8 leaves room for fp32 exp */
        cr_expect_leq(rel(d, rd), 1.0 / 256, "V=%d dlogits (bf16), order %s: %.3e", V, o, rel(d, rd));
        cr_expect_eq(loss[1], 0.0f, "a row without a target has loss 0");
        int row1_nonzero = 0;
        for (int i = 0; i < V; i++) row1_nonzero += __bfloat162float(d[(size_t)V + i]) != 0.0f;
        cr_expect_eq(row1_nonzero, 0, "V=%d: the row without a target has %d non-zero gradients", V, row1_nonzero);
        if (o == orders[0]) first_loss = loss, first_d = d;
        else
            cr_expect(same_bits(loss, first_loss) && same_bits(d, first_d), "V=%d cross-entropy: order %s changes the bits",
                      V, o);
    }
    cuda_cpu::set_thread_order("forward");
}

Test(fast_cpu_ops, crossentropy_one_word_per_thread) { crossentropy_case(300, 384, 5); }
Test(fast_cpu_ops, crossentropy_four_words_odd_vocabulary) { crossentropy_case(1999, 2048, 4); }
Test(fast_cpu_ops, crossentropy_sixteen_words) { crossentropy_case(9000, 9088, 4); }
Test(fast_cpu_ops, crossentropy_paper_vocabulary) { crossentropy_case(50277, 50304, 3); }
Test(fast_cpu_ops, crossentropy_scalar_path_off_alignment) { crossentropy_case(1999, 2048, 4, 2); }

Test(fast_cpu_ops, crossentropy_refuses_what_registers_cannot_hold) {
    vector<float> loss(1);
    vector<bf16> row(4);
    vector<int32_t> t(1, 0);
    cr_expect_lt(fast_cpu::crossentropy_forward_backward(loss.data(), row.data(), t.data(), 1, 3, 3, 1.0f, 1), 0,
                 "an odd row stride");
    cr_expect(strstr(vrl_last_error(), "ld even"), "%s", vrl_last_error());
    cr_expect_lt(fast_cpu::crossentropy_forward_backward(loss.data(), row.data(), t.data(), 1, 70000, 70016, 1.0f, 1),
                 0, "a row over CE_MAX_COLUMNS");
}

/* ------------------------------------------------------------------ swiglu */

/* The fused gate|up layout: rows of 2F, gate in [0, F), up in [F, 2F); F = 300 is not a
 * multiple of the 256-thread column blocks, so each row's second block is partly idle (a
 * column guard that let it through would read up as gate). Against ref's float64 swiglu on
 * the same values taken apart; the gradient lands back in the same layout. */
Test(fast_cpu_ops, swiglu_reads_and_writes_the_gate_up_stride) {
    const int N = 7, F = 300;
    vector<bf16> gu16, do16;
    vector<double> gu, dout;
    random_bf16(gu16, gu, (size_t)N * 2 * F, 3.0);
    random_bf16(do16, dout, (size_t)N * F, 1.0);
    vector<double> g((size_t)N * F), u((size_t)N * F), ry((size_t)N * F), rdg((size_t)N * F, 0.0), rdu((size_t)N * F, 0.0);
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) g[(size_t)n * F + f] = gu[(size_t)n * 2 * F + f], u[(size_t)n * F + f] = gu[(size_t)n * 2 * F + F + f];
    REF64(swiglu_forward)(ry.data(), g.data(), u.data(), (size_t)N * F);
    REF64(swiglu_backward)(rdg.data(), rdu.data(), dout.data(), g.data(), u.data(), (size_t)N * F, GRAD_ADD);
    vector<double> rdgu((size_t)N * 2 * F);
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++)
            rdgu[(size_t)n * 2 * F + f] = rdg[(size_t)n * F + f], rdgu[(size_t)n * 2 * F + F + f] = rdu[(size_t)n * F + f];
    vector<bf16> y((size_t)N * F), dgu((size_t)N * 2 * F, __float2bfloat16(NAN));
    cr_assert_eq(fast_cpu::swiglu_forward(y.data(), gu16.data(), N, F), 0, "%s", vrl_last_error());
    cr_assert_eq(fast_cpu::swiglu_backward(dgu.data(), do16.data(), gu16.data(), N, F), 0, "%s", vrl_last_error());
    /* silu rounded to bf16, then the product: two roundings of at most 2^-9 each */
    cr_expect_leq(rel(y, ry), 1.0 / 256, "swiglu out: %.3e", rel(y, ry));
    cr_expect_leq(rel(dgu, rdgu), 1.0 / 256, "swiglu d(gate|up) (NaN where a column was missed): %.3e", rel(dgu, rdgu));
}

/* ------------------------------------------------------------------ scoring (vrl eval) */

/* token_logprobs_forward on the model's bf16 logits against ref's: V = 300 in rows of LD = 384 with
 * 1e30 in the pad columns (read, they would win the argmax and swamp the sum); exact ties, where
 * the lowest id wins (so a target tied with a lower id is not greedy) across threads, inside one
 * thread's columns (0 and 256) and at the last real column; a row of equal logits; a row
 * without a target left as it was. Values are bf16-exact, so ref sees the same. */
Test(fast_cpu_ops, token_logprobs_bf16_ties_and_pads) {
    const int V = 300, LD = 384, R = 9;
    vector<bf16> logits((size_t)R * LD);
    vector<double> rlogits((size_t)R * V);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < LD; i++) {
            const float x = i >= V ? 1e30f : r == 7 ? 0.5f : __bfloat162float(__float2bfloat16((float)(3 * uniform())));
            logits[(size_t)r * LD + i] = __float2bfloat16(x);
            if (i < V) rlogits[(size_t)r * V + i] = x;
        }
    const struct { int a, b, target; } ties[] = {{10, 200, 10}, {10, 200, 200}, {7, 299, 299}, {-1, 299, 299},
                                                 {0, 256, 256}, {1, 255, 1}, {3, 100, 100}};
    for (int r = 0; r < 7; r++) /* 5 beats the uniform values in [-3, 3) */
        for (int c : {ties[r].a, ties[r].b})
            if (c >= 0) logits[(size_t)r * LD + c] = __float2bfloat16(5.0f), rlogits[(size_t)r * V + c] = 5.0;
    vector<int32_t> targets(R);
    for (int r = 0; r < 7; r++) targets[r] = ties[r].target;
    targets[7] = 0, targets[8] = -1;
    const int want_greedy[R] = {1, 0, 0, 1, 0, 1, 0, 1, 7};
    vector<double> rlp(R, 0.0);
    vector<uint8_t> rg(R, 7);
    REF64(token_logprobs_forward)(rlp.data(), rg.data(), rlogits.data(), targets.data(), R, V);
    for (int r = 0; r < R; r++) cr_expect_eq(rg[r], want_greedy[r], "ref, row %d: greedy %d", r, rg[r]);
    cr_expect(fabs(rlp[7] + log(300.0)) < 1e-12, "ref: equal logits give log(1/V), got %.17g", rlp[7]);
    vector<float> first_lp;
    vector<uint8_t> first_g;
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<float> lp(R, -123.0f);
        vector<uint8_t> g(R, 7);
        cr_assert_eq(fast_cpu::token_logprobs_forward(lp.data(), g.data(), logits.data(), targets.data(), R, V, LD), 0,
                     "%s", vrl_last_error());
        for (int r = 0; r < R; r++) cr_expect_eq(g[r], want_greedy[r], "order %s, row %d: greedy %d", o, r, g[r]);
        cr_expect(lp[8] == -123.0f, "a row without a target is left as it was");
        for (int r = 0; r < R - 1; r++)
            cr_expect(fabs(lp[r] - rlp[r]) <= 1e-5 * fabs(rlp[r]), "order %s, row %d: %.9g vs ref %.9g", o, r, lp[r],
                      rlp[r]);
        if (o == orders[0]) first_lp = lp, first_g = g;
        else cr_expect(same_bits(lp, first_lp) && same_bits(g, first_g), "scoring: order %s changes the bits", o);
    }
    cuda_cpu::set_thread_order("forward");
}

/* ------------------------------------------------------------------ attention */

/* ref in float64: probabilities, then their application; backward in reverse.
 * out, dq [N,NH*hd], dk, dv [N,NKV*hd] (resized and written) */
static void attention_ref64(const vector<double> &q, const vector<double> &k, const vector<double> &v,
                            const vector<double> &dout, int B, int T, int NH, int NKV, int hd, vector<double> &out,
                            vector<double> &rdq, vector<double> &rdk, vector<double> &rdv) {
    const size_t N = (size_t)B * T;
    vector<double> att((size_t)B * NH * T * T), datt(att.size(), 0.0);
    out.assign(N * NH * hd, 0.0), rdq.assign(N * NH * hd, 0.0), rdk.assign(N * NKV * hd, 0.0);
    rdv.assign(N * NKV * hd, 0.0);
    REF64(attn_probs_forward)(att.data(), q.data(), k.data(), NULL, B, T, NH, NKV, hd);
    REF64(attn_apply_forward)(out.data(), att.data(), v.data(), NULL, B, T, NH, NKV, hd);
    REF64(attn_apply_backward)(datt.data(), rdv.data(), NULL, dout.data(), att.data(), v.data(), NULL, B, T, NH, NKV,
                               hd, GRAD_ADD);
    REF64(attn_probs_backward)(rdq.data(), rdk.data(), NULL, datt.data(), att.data(), q.data(), k.data(), NULL, B, T,
                               NH, NKV, hd);
}

/* Random bf16 q [N,NH*hd], k, v [N,NKV*hd] and dout [N,NH*hd] in [-1, 1), and ref's out, dq, dk,
 * dv on their values in float64 */
static void attention_inputs(int B, int T, int NH, int NKV, int hd, vector<bf16> &q16, vector<bf16> &k16,
                             vector<bf16> &v16, vector<bf16> &do16, vector<double> &out, vector<double> &rdq,
                             vector<double> &rdk, vector<double> &rdv) {
    const size_t N = (size_t)B * T;
    vector<double> q, k, v, dout;
    random_bf16(q16, q, N * NH * hd, 1.0);
    random_bf16(k16, k, N * NKV * hd, 1.0);
    random_bf16(v16, v, N * NKV * hd, 1.0);
    random_bf16(do16, dout, N * NH * hd, 1.0);
    attention_ref64(q, k, v, dout, B, T, NH, NKV, hd, out, rdq, rdk, rdv);
}

static void attention_case(int B, int T, int NH, int NKV, int hd) {
    const int qC = NH * hd, kvC = NKV * hd, N = B * T;
    vector<bf16> q16, k16, v16, do16;
    vector<double> out, rdq, rdk, rdv;
    attention_inputs(B, T, NH, NKV, hd, q16, k16, v16, do16, out, rdq, rdk, rdv);
    vector<bf16> first_o, first_dq, first_dk;
    vector<float> first_dv;
    const fast_cpu::AttnLd own = {qC, kvC, kvC};
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<bf16> fo((size_t)N * qC), dq((size_t)N * qC), dk((size_t)N * kvC);
        vector<float> lse((size_t)B * NH * T), D((size_t)B * NH * T), dv((size_t)N * kvC);
        cr_assert_eq(fast_cpu::attention_forward(fo.data(), lse.data(), q16.data(), k16.data(), v16.data(), own, B,
                                                 T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        /* the backward reads the forward's bf16 output, as in the model */
        cr_assert_eq(fast_cpu::attention_backward(dq.data(), dk.data(), {dv.data(), 1.0f, 0, NULL}, D.data(),
                                                  do16.data(), fo.data(), q16.data(), k16.data(), v16.data(), own,
                                                  lse.data(), B, T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        /* the model's other two dV destinations: added onto an fp32 accumulator (a value shared
         * across layers) and, in the same call, its bf16 rounding (the W_v GEMMs' input):
         * exactly dv + acc and bf16(dv) */
        vector<float> dv_acc((size_t)N * kvC);
        vector<bf16> dv16((size_t)N * kvC), dq2((size_t)N * qC), dk2((size_t)N * kvC);
        for (size_t i = 0; i < dv_acc.size(); i++) dv_acc[i] = (float)uniform();
        const vector<float> acc0 = dv_acc;
        cr_assert_eq(fast_cpu::attention_backward(dq2.data(), dk2.data(), {dv_acc.data(), 1.0f, 1, dv16.data()},
                                                  D.data(), do16.data(), fo.data(), q16.data(), k16.data(),
                                                  v16.data(), own, lse.data(), B, T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        int acc_ok = 1, r16_ok = 1;
        for (size_t i = 0; i < dv.size(); i++) {
            acc_ok &= dv_acc[i] == acc0[i] + dv[i];
            const bf16 want = __float2bfloat16(dv[i]);
            r16_ok &= !memcmp(&dv16[i], &want, sizeof want);
        }
        cr_expect(acc_ok, "T=%d hd=%d: dv added onto the accumulator is not acc + dv exactly", T, hd);
        cr_expect(r16_ok, "T=%d hd=%d: the bf16 dv is not bf16(fp32 dv)", T, hd);
        cr_expect(same_bits(dq2, dq) && same_bits(dk2, dk), "T=%d hd=%d: the dv destinations change dq/dk", T, hd);
        cr_expect_neq(fast_cpu::attention_backward(dq2.data(), dk2.data(), {NULL, 1.0f, 0, NULL}, D.data(),
                                                   do16.data(), fo.data(), q16.data(), k16.data(), v16.data(), own,
                                                   lse.data(), B, T, NH, NKV, hd),
                      0, "no dv destination at all is refused");
        /* q, k, v as views into one fused [N, qC+2kvC] projection, and dq, dk, dv16 into another
         * (the model's fused QKV GEMM): the same bits as tensors of their own */
        const int S = qC + 2 * kvC;
        const fast_cpu::AttnLd fused = {S, S, S};
        vector<bf16> qkv((size_t)N * S), dqkv((size_t)N * S), fo2((size_t)N * qC);
        vector<float> lse2(lse.size());
        for (int n = 0; n < N; n++) {
            memcpy(&qkv[(size_t)n * S], &q16[(size_t)n * qC], qC * sizeof(bf16));
            memcpy(&qkv[(size_t)n * S + qC], &k16[(size_t)n * kvC], kvC * sizeof(bf16));
            memcpy(&qkv[(size_t)n * S + qC + kvC], &v16[(size_t)n * kvC], kvC * sizeof(bf16));
        }
        cr_assert_eq(fast_cpu::attention_forward(fo2.data(), lse2.data(), qkv.data(), qkv.data() + qC,
                                                 qkv.data() + qC + kvC, fused, B, T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        vector<float> dv_half((size_t)N * kvC);
        cr_assert_eq(fast_cpu::attention_backward(dqkv.data(), dqkv.data() + qC,
                                                  {dv_half.data(), 0.5f, 0, dqkv.data() + qC + kvC}, D.data(),
                                                  do16.data(), fo2.data(), qkv.data(), qkv.data() + qC,
                                                  qkv.data() + qC + kvC, fused, lse2.data(), B, T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        int views_ok = same_bits(fo2, fo) && same_bits(lse2, lse), scale_ok = 1;
        for (size_t i = 0; i < dv.size(); i++) scale_ok &= dv_half[i] == 0.5f * dv[i]; /* exact: a power of two */
        cr_expect(scale_ok, "T=%d hd=%d: the fp32 dv written with scale 0.5 is not 0.5·dv", T, hd);
        for (int n = 0; n < N; n++) {
            views_ok &= !memcmp(&dqkv[(size_t)n * S], &dq[(size_t)n * qC], qC * sizeof(bf16));
            views_ok &= !memcmp(&dqkv[(size_t)n * S + qC], &dk[(size_t)n * kvC], kvC * sizeof(bf16));
            views_ok &= !memcmp(&dqkv[(size_t)n * S + qC + kvC], &dv16[(size_t)n * kvC], kvC * sizeof(bf16));
        }
        cr_expect(views_ok, "T=%d hd=%d: attention on strided views differs from attention on tensors", T, hd);
        cr_expect_leq(rel(fo, out), 1e-2, "T=%d hd=%d out, order %s: %.3e", T, hd, o, rel(fo, out));
        cr_expect_leq(rel(dv, rdv), 1e-2, "T=%d hd=%d dv, order %s: %.3e", T, hd, o, rel(dv, rdv));
        cr_expect_leq(rel(dq, rdq), 2e-2, "T=%d hd=%d dq, order %s: %.3e", T, hd, o, rel(dq, rdq));
        cr_expect_leq(rel(dk, rdk), 2e-2, "T=%d hd=%d dk, order %s: %.3e", T, hd, o, rel(dk, rdk));
        if (o == orders[0]) first_o = fo, first_dq = dq, first_dk = dk, first_dv = dv;
        else
            cr_expect(same_bits(fo, first_o) && same_bits(dq, first_dq) && same_bits(dk, first_dk) &&
                          same_bits(dv, first_dv),
                      "attention T=%d hd=%d: order %s changes the bits", T, hd, o);
    }
    cuda_cpu::set_thread_order("forward");
}

Test(fast_cpu_ops, attention_one_position) { attention_case(2, 1, 2, 1, 16); }
Test(fast_cpu_ops, attention_one_past_the_tile_gqa) { attention_case(1, 65, 4, 2, 16); }
Test(fast_cpu_ops, attention_hd128) { attention_case(1, 65, 2, 1, 128); }

/* RoPE's tables as fast/model.cu makes them: [T][hd/2] fp32, theta 10000, double rounded once */
static void rope_tables_as_model(int T, int hd, vector<float> &cos_t, vector<float> &sin_t) {
    const int h2 = hd / 2;
    cos_t.assign((size_t)T * h2, 0.0f), sin_t.assign((size_t)T * h2, 0.0f);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++) {
            const double a = t * pow(10000.0, -2.0 * i / hd);
            cos_t[(size_t)t * h2 + i] = (float)cos(a), sin_t[(size_t)t * h2 + i] = (float)sin(a);
        }
}

/* The tensor-core forward (attention_mma_forward, `--attention mma`) against ref in float64:
 * out within 1e-2 relative (flash's bound: bf16 inputs and output; P rounded to bf16 before P·V
 * adds one more rounding of relative size 2^-9 per term, ~4e-3 on a row's weighted mean at
 * worst), lse within 1e-4 absolute (fp32 dot products of bf16 values, fp32 exp and sums: ~1e-6
 * here); the CUDA-core backward fed its out and lse lands within flash's gradient bounds (the
 * same lse layout and meaning); q/k/v read as views into one fused projection give the same
 * bits; all three thread orders give the same bits. A fragment register or row out of place
 * moves whole 8x8 blocks of S or O: errors of order 1. With RoPE on the queries inside it
 * (AttnRope.q), from queries before RoPE in the fused view: afterwards the view holds
 * rope_forward's bits (k and v untouched), and out and lse are the bits of the forward fed
 * rope_forward's queries. */
static void attention_mma_case(int B, int T, int NH, int NKV, int hd) {
    const int qC = NH * hd, kvC = NKV * hd, N = B * T, S = qC + 2 * kvC;
    vector<bf16> q16, k16, v16, do16;
    vector<double> q, k, v, dout;
    random_bf16(q16, q, (size_t)N * qC, 2.0); /* scale 2: scores of a few units, a peaked softmax */
    random_bf16(k16, k, (size_t)N * kvC, 2.0);
    random_bf16(v16, v, (size_t)N * kvC, 1.0);
    random_bf16(do16, dout, (size_t)N * qC, 1.0);
    vector<double> out, rdq, rdk, rdv, rlse((size_t)B * NH * T);
    attention_ref64(q, k, v, dout, B, T, NH, NKV, hd, out, rdq, rdk, rdv);
    for (int b = 0; b < B; b++) /* lse [B,NH,T] of the scaled causal score rows, in double */
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                vector<double> s(i + 1);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double d = 0;
                    for (int e = 0; e < hd; e++)
                        d += q[((size_t)b * T + i) * qC + h * hd + e] *
                             k[((size_t)b * T + j) * kvC + (h / (NH / NKV)) * hd + e];
                    s[j] = d / sqrt((double)hd), mx = fmax(mx, s[j]);
                }
                for (int j = 0; j <= i; j++) sum += exp(s[j] - mx);
                rlse[((size_t)b * NH + h) * T + i] = mx + log(sum);
            }
    vector<bf16> qkv((size_t)N * S), first_o;
    vector<float> first_lse;
    for (int n = 0; n < N; n++) {
        memcpy(&qkv[(size_t)n * S], &q16[(size_t)n * qC], qC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC], &k16[(size_t)n * kvC], kvC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC + kvC], &v16[(size_t)n * kvC], kvC * sizeof(bf16));
    }
    const fast_cpu::AttnLd own = {qC, kvC, kvC}, fused = {S, S, S};
    /* RoPE in the forward: q16 as the queries before RoPE, rope_forward's result beside them */
    vector<float> cos_t, sin_t;
    rope_tables_as_model(T, hd, cos_t, sin_t);
    vector<bf16> q_rot = q16, k_rot = k16;
    cr_assert_eq(fast_cpu::rope_forward(q_rot.data(), qC, cos_t.data(), sin_t.data(), B, T, NH, hd), 0, "%s",
                 vrl_last_error());
    cr_assert_eq(fast_cpu::rope_forward(k_rot.data(), kvC, cos_t.data(), sin_t.data(), B, T, NKV, hd), 0, "%s",
                 vrl_last_error());
    const fast_cpu::AttnRope rope = {cos_t.data(), sin_t.data(), 1, 0, 0, 0};
    /* and the keys' RoPE at the K loads (AttnRope.k): k stays as given */
    const fast_cpu::AttnRope rope_qk = {cos_t.data(), sin_t.data(), 1, 0, 0, 1};
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<bf16> fo((size_t)N * qC), fo2((size_t)N * qC), dq((size_t)N * qC), dk((size_t)N * kvC);
        vector<float> lse((size_t)B * NH * T), lse2(lse.size()), D(lse.size()), dv((size_t)N * kvC);
        cr_assert_eq(fast_cpu::attention_mma_forward(fo.data(), lse.data(), q16.data(), k16.data(), v16.data(), own, B,
                                                     T, NH, NKV, hd, NULL),
                     0, "%s", vrl_last_error());
        cr_assert_eq(fast_cpu::attention_mma_forward(fo2.data(), lse2.data(), qkv.data(), qkv.data() + qC,
                                                     qkv.data() + qC + kvC, fused, B, T, NH, NKV, hd, NULL),
                     0, "%s", vrl_last_error());
        cr_expect(same_bits(fo2, fo) && same_bits(lse2, lse), "mma T=%d hd=%d: strided views differ from tensors", T,
                  hd);
        {
            vector<bf16> qkv_rope = qkv, ro((size_t)N * qC), ro_ref((size_t)N * qC);
            vector<float> rl(lse.size()), rl_ref(lse.size());
            cr_assert_eq(fast_cpu::attention_mma_forward(ro.data(), rl.data(), qkv_rope.data(), qkv_rope.data() + qC,
                                                         qkv_rope.data() + qC + kvC, fused, B, T, NH, NKV, hd, &rope),
                         0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::attention_mma_forward(ro_ref.data(), rl_ref.data(), q_rot.data(), k16.data(),
                                                         v16.data(), own, B, T, NH, NKV, hd, NULL),
                         0, "%s", vrl_last_error());
            int view_ok = 1;
            for (int n = 0; n < N; n++) {
                view_ok &= !memcmp(&qkv_rope[(size_t)n * S], &q_rot[(size_t)n * qC], qC * sizeof(bf16));
                view_ok &= !memcmp(&qkv_rope[(size_t)n * S + qC], &qkv[(size_t)n * S + qC], 2 * kvC * sizeof(bf16));
            }
            cr_expect(view_ok, "mma T=%d hd=%d, order %s: the queries left by RoPE in the forward are not "
                               "rope_forward's bits (or k, v were touched)", T, hd, o);
            cr_expect(same_bits(ro, ro_ref) && same_bits(rl, rl_ref),
                      "mma T=%d hd=%d, order %s: out or lse with RoPE in the forward differ from the forward fed "
                      "rope_forward's queries", T, hd, o);
            /* the keys too: the same bits as the forward fed rope_forward's queries and keys; k not written */
            vector<bf16> qkv_qk = qkv;
            cr_assert_eq(fast_cpu::attention_mma_forward(ro.data(), rl.data(), qkv_qk.data(), qkv_qk.data() + qC,
                                                         qkv_qk.data() + qC + kvC, fused, B, T, NH, NKV, hd, &rope_qk),
                         0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::attention_mma_forward(ro_ref.data(), rl_ref.data(), q_rot.data(), k_rot.data(),
                                                         v16.data(), own, B, T, NH, NKV, hd, NULL),
                         0, "%s", vrl_last_error());
            int k_ok = 1;
            for (int n = 0; n < N; n++) {
                k_ok &= !memcmp(&qkv_qk[(size_t)n * S], &q_rot[(size_t)n * qC], qC * sizeof(bf16));
                k_ok &= !memcmp(&qkv_qk[(size_t)n * S + qC], &qkv[(size_t)n * S + qC], 2 * kvC * sizeof(bf16));
            }
            cr_expect(k_ok, "mma T=%d hd=%d, order %s: with the keys' RoPE at the loads, q is not rope_forward's "
                            "bits or k, v were written", T, hd, o);
            cr_expect(same_bits(ro, ro_ref) && same_bits(rl, rl_ref),
                      "mma T=%d hd=%d, order %s: out or lse with the keys rotated at their loads differ from the "
                      "forward fed rope_forward's keys", T, hd, o);
        }
        double lse_err = 0;
        for (size_t i = 0; i < lse.size(); i++) lse_err = fmax(lse_err, fabs(lse[i] - rlse[i]));
        cr_expect_leq(rel(fo, out), 1e-2, "mma T=%d hd=%d out, order %s: %.3e", T, hd, o, rel(fo, out));
        cr_expect_leq(lse_err, 1e-4, "mma T=%d hd=%d lse, order %s: max |error| %.3e", T, hd, o, lse_err);
        cr_assert_eq(fast_cpu::attention_backward(dq.data(), dk.data(), {dv.data(), 1.0f, 0, NULL}, D.data(),
                                                  do16.data(), fo.data(), q16.data(), k16.data(), v16.data(), own,
                                                  lse.data(), B, T, NH, NKV, hd),
                     0, "%s", vrl_last_error());
        cr_log_info("mma B=%d T=%d NH=%d NKV=%d hd=%d, order %s: out rel %.2e, lse max |err| %.2e, dq %.2e, dk %.2e, "
                    "dv %.2e", B, T, NH, NKV, hd, o, rel(fo, out), lse_err, rel(dq, rdq), rel(dk, rdk), rel(dv, rdv));
        cr_expect_leq(rel(dv, rdv), 1e-2, "mma T=%d hd=%d dv, order %s: %.3e", T, hd, o, rel(dv, rdv));
        cr_expect_leq(rel(dq, rdq), 2e-2, "mma T=%d hd=%d dq, order %s: %.3e", T, hd, o, rel(dq, rdq));
        cr_expect_leq(rel(dk, rdk), 2e-2, "mma T=%d hd=%d dk, order %s: %.3e", T, hd, o, rel(dk, rdk));
        if (o == orders[0]) first_o = fo, first_lse = lse;
        else
            cr_expect(same_bits(fo, first_o) && same_bits(lse, first_lse), "mma T=%d hd=%d: order %s changes the bits",
                      T, hd, o);
    }
    cuda_cpu::set_thread_order("forward");
}

Test(fast_cpu_ops, attention_mma_one_position) { attention_mma_case(2, 1, 2, 1, 16); }
Test(fast_cpu_ops, attention_mma_one_past_the_tile_gqa) { attention_mma_case(1, 65, 4, 2, 16); }
Test(fast_cpu_ops, attention_mma_hd64_mqa_two_tiles) { attention_mma_case(2, 100, 4, 1, 64); }
Test(fast_cpu_ops, attention_mma_hd128_gqa) { attention_mma_case(1, 70, 4, 2, 128); }
Test(fast_cpu_ops, attention_mma_hd8_padded_to_16) { attention_mma_case(1, 33, 2, 2, 8); }
Test(fast_cpu_ops, attention_mma_refuses_other_head_dims) {
    vector<bf16> x(64 * 48);
    vector<float> l(64);
    cr_expect_neq(fast_cpu::attention_mma_forward(x.data(), l.data(), x.data(), x.data(), x.data(), {48, 48, 48}, 1,
                                                  64, 1, 1, 48, NULL),
                  0, "hd 48 is not a compiled head dim");
    cr_expect(strstr(vrl_last_error(), "head_dim 8, 16, 32, 64 or 128"), "%s", vrl_last_error());
}

/* attention_dv_scatter (cuDNN's dV, bf16 and contiguous, into the AttnDv destinations): for a dV
 * flash computed, each destination kind must hold what flash's own epilogue writes there, given
 * that the scatter starts from bf16(dV): the bf16 copy (strided into a fused gradient) the same
 * bits as flash's, fp32 written with scale 1 = bf16(flash's fp32 dV) widened, fp32 added with a
 * coefficient = acc + c·bf16(dV) exactly, the untouched columns of the strided view kept. */
Test(fast_cpu_ops, attention_dv_scatter_matches_the_flash_epilogue) {
    const int B = 1, T = 65, NH = 4, NKV = 2, hd = 16, qC = NH * hd, kvC = NKV * hd, N = B * T, S = qC + 2 * kvC;
    vector<bf16> q16, k16, v16, do16;
    vector<double> unused;
    random_bf16(q16, unused, (size_t)N * qC, 1.0);
    random_bf16(k16, unused, (size_t)N * kvC, 1.0);
    random_bf16(v16, unused, (size_t)N * kvC, 1.0);
    random_bf16(do16, unused, (size_t)N * qC, 1.0);
    const fast_cpu::AttnLd own = {qC, kvC, kvC};
    vector<bf16> fo((size_t)N * qC), dq((size_t)N * qC), dk((size_t)N * kvC), g((size_t)N * kvC);
    vector<bf16> flash_view((size_t)N * S, __float2bfloat16(7.0f)); /* flash's bf16 dV with the fused stride */
    vector<float> lse((size_t)B * NH * T), D((size_t)B * NH * T), flash32((size_t)N * kvC);
    cr_assert_eq(fast_cpu::attention_forward(fo.data(), lse.data(), q16.data(), k16.data(), v16.data(), own, B, T,
                                             NH, NKV, hd),
                 0, "%s", vrl_last_error());
    /* flash's dV three ways: contiguous bf16 (the scatter's input, as cuDNN would leave it),
     * fp32 unscaled, and bf16 into column qC+kvC of [N, S] rows */
    const fast_cpu::AttnDv to_g = {flash32.data(), 1.0f, 0, g.data()};
    cr_assert_eq(fast_cpu::attention_backward(dq.data(), dk.data(), to_g, D.data(), do16.data(), fo.data(), q16.data(),
                                              k16.data(), v16.data(), own, lse.data(), B, T, NH, NKV, hd),
                 0, "%s", vrl_last_error());
    const fast_cpu::AttnLd v_strided = {qC, kvC, S}; /* dv.b16 takes ld.v: the view's stride */
    vector<bf16> v_wide((size_t)N * S);
    for (int n = 0; n < N; n++) memcpy(&v_wide[(size_t)n * S], &v16[(size_t)n * kvC], kvC * sizeof(bf16));
    const fast_cpu::AttnDv to_view = {NULL, 1.0f, 0, flash_view.data() + qC + kvC};
    cr_assert_eq(fast_cpu::attention_backward(dq.data(), dk.data(), to_view, D.data(), do16.data(), fo.data(),
                                              q16.data(), k16.data(), v_wide.data(), v_strided, lse.data(), B, T, NH,
                                              NKV, hd),
                 0, "%s", vrl_last_error());

    /* 1: fp32 written, scale 1, together with the bf16 copy into the fused view */
    vector<float> w32((size_t)N * kvC, -3.0f);
    vector<bf16> view((size_t)N * S, __float2bfloat16(7.0f));
    cr_assert_eq(fast_cpu::attention_dv_scatter({w32.data(), 1.0f, 0, view.data() + qC + kvC}, g.data(), S, N, kvC), 0,
                 "%s", vrl_last_error());
    int write_ok = 1;
    for (size_t i = 0; i < w32.size(); i++) write_ok &= w32[i] == __bfloat162float(__float2bfloat16(flash32[i]));
    cr_expect(write_ok, "fp32 dV written with scale 1 is not bf16(flash's fp32 dV)");
    cr_expect(same_bits(view, flash_view), "the bf16 dV in the fused view (and the columns around it) differs from "
                                           "flash's");
    /* 2: fp32 added with a coefficient onto an accumulator (ResFormer's λ1 onto dV_1) */
    vector<float> acc((size_t)N * kvC);
    for (float &x : acc) x = (float)uniform();
    const vector<float> acc0 = acc;
    const float c = 0.3f;
    cr_assert_eq(fast_cpu::attention_dv_scatter({acc.data(), c, 1, NULL}, g.data(), kvC, N, kvC), 0, "%s",
                 vrl_last_error());
    int add_ok = 1;
    for (size_t i = 0; i < acc.size(); i++) add_ok &= acc[i] == acc0[i] + c * __bfloat162float(g[i]);
    cr_expect(add_ok, "fp32 dV added with coefficient %.1f is not acc + c·dV exactly", c);
    /* 3: fp32 written with a coefficient, no bf16: c·dV, and flash's within its rounding (c·dV
     * from an fp32 dV against one rounded to bf16 first: 2^-8 relative at most per element) */
    vector<float> s32((size_t)N * kvC);
    const fast_cpu::AttnDv scaled = {s32.data(), 0.5f, 0, NULL};
    cr_assert_eq(fast_cpu::attention_dv_scatter(scaled, g.data(), kvC, N, kvC), 0, "%s", vrl_last_error());
    int scale_ok = 1;
    for (size_t i = 0; i < s32.size(); i++) {
        scale_ok &= s32[i] == 0.5f * __bfloat162float(g[i]);
        scale_ok &= fabsf(s32[i] - 0.5f * flash32[i]) <= fabsf(0.5f * flash32[i]) * (1.0f / 256);
    }
    cr_expect(scale_ok, "fp32 dV written with scale 0.5 is not 0.5·bf16(dV), or strays from flash's 0.5·dV");
    /* refusals: nowhere to put dV; a stride under the width */
    cr_expect_neq(fast_cpu::attention_dv_scatter({NULL, 1.0f, 0, NULL}, g.data(), kvC, N, kvC), 0,
                  "no dv destination at all is refused");
    cr_expect_neq(fast_cpu::attention_dv_scatter({NULL, 1.0f, 0, view.data()}, g.data(), kvC - 1, N, kvC), 0,
                  "a row stride under kvC is refused");
}

/* ------------------------------------------------------------------ attention backward on tensor cores */
/* attention_mma_backward (--attention mma's backward, bf16 mma.sync) against ref in float64 from
 * the CUDA-core forward's out and lse (the backward's inputs in the model): T past a 64-row block
 * and not a multiple of the streamed tile, GQA and MQA (dK/dV summed over the group's heads), hd
 * 8 (zero-padded to the mma's k = 16 in shared memory), 16, 32, 64 and 128. Bound 5e-3 on
 * ‖fast − ref‖/‖ref‖ for each: the errors come from bf16 rounding (inputs of the D pass, P and
 * dS as bf16 factors of the second products, the bf16 dQ/dK), each 2⁻⁹ relative at most and
 * random in sign; measured at these shapes 1.4e-3 (dV) to 2.6e-3 (dQ, dK), about half the bound. In every thread
 * order the same bits; then, in the same call, dV added onto an fp32 accumulator (exactly
 * acc + dv) and rounded to bf16 (exactly bf16(dv)), on q/k/v and dq/dk/dv16 as views into fused
 * [N, qC+2kvC] buffers (the same bits as on tensors of their own).
 * With RoPE's transpose fused into the epilogues (AttnRope, the model's tables at theta 10000):
 * dq and dk against ref's rotated by Rᵀ in float64, within the same bound (the rotation is
 * exact in real arithmetic; only where bf16 rounding happens moves), in every order the same
 * bits. A wrong partner column, a flipped sin or a wrong position makes the error O(1): the
 * angles at T 33-70 reach tens of radians. dv untouched. */
static void attention_mma_backward_case(int B, int T, int NH, int NKV, int hd) {
    const int qC = NH * hd, kvC = NKV * hd, N = B * T, S = qC + 2 * kvC;
    vector<bf16> q16, k16, v16, do16;
    vector<double> out, rdq, rdk, rdv;
    attention_inputs(B, T, NH, NKV, hd, q16, k16, v16, do16, out, rdq, rdk, rdv);
    const fast_cpu::AttnLd own = {qC, kvC, kvC}, fused = {S, S, S};
    vector<bf16> fo((size_t)N * qC);
    vector<float> lse((size_t)B * NH * T), D((size_t)B * NH * T);
    cr_assert_eq(fast_cpu::attention_forward(fo.data(), lse.data(), q16.data(), k16.data(), v16.data(), own, B, T,
                                             NH, NKV, hd),
                 0, "%s", vrl_last_error());
    vector<bf16> qkv((size_t)N * S);
    for (int n = 0; n < N; n++) {
        memcpy(&qkv[(size_t)n * S], &q16[(size_t)n * qC], qC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC], &k16[(size_t)n * kvC], kvC * sizeof(bf16));
        memcpy(&qkv[(size_t)n * S + qC + kvC], &v16[(size_t)n * kvC], kvC * sizeof(bf16));
    }
    /* RoPE's tables as fast/model.cu makes them, ref's d(q), d(k) through Rᵀ:
     * (x_i, x_{i+hd/2}) -> (x_i c + x_{i+hd/2} s, x_{i+hd/2} c − x_i s) */
    const int h2 = hd / 2;
    vector<float> cos_t, sin_t;
    rope_tables_as_model(T, hd, cos_t, sin_t);
    auto rotate_t = [&](const vector<double> &g, int C) {
        vector<double> r(g.size());
        for (int n = 0; n < N; n++)
            for (int h = 0; h < C / hd; h++)
                for (int i = 0; i < h2; i++) {
                    const size_t at = (size_t)n * C + h * hd + i, ts = (size_t)(n % T) * h2 + i;
                    const double c = cos_t[ts], s = sin_t[ts], x1 = g[at], x2 = g[at + h2];
                    r[at] = x1 * c + x2 * s, r[at + h2] = x2 * c - x1 * s;
                }
        return r;
    };
    const vector<double> rdq_rope = rotate_t(rdq, qC), rdk_rope = rotate_t(rdk, kvC);
    const fast_cpu::AttnRope rope = {cos_t.data(), sin_t.data(), 0, 1, 1, 0};
    /* the keys' RoPE at the K loads: fed the keys before RoPE, the bits of the run fed rope_forward's */
    const fast_cpu::AttnRope rope_k = {cos_t.data(), sin_t.data(), 0, 1, 1, 1};
    vector<bf16> k_rot = k16;
    cr_assert_eq(fast_cpu::rope_forward(k_rot.data(), kvC, cos_t.data(), sin_t.data(), B, T, NKV, hd), 0, "%s",
                 vrl_last_error());
    vector<bf16> first_dq, first_dk, first_dq_rope, first_dk_rope;
    vector<float> first_dv;
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<bf16> dq((size_t)N * qC), dk((size_t)N * kvC), dq_rope((size_t)N * qC), dk_rope((size_t)N * kvC);
        vector<float> dv((size_t)N * kvC), dv_rope((size_t)N * kvC);
        cr_assert_eq(fast_cpu::attention_mma_backward(dq.data(), dk.data(), {dv.data(), 1.0f, 0, NULL}, D.data(),
                                                      do16.data(), fo.data(), q16.data(), k16.data(), v16.data(), own,
                                                      lse.data(), B, T, NH, NKV, hd, NULL),
                     0, "%s", vrl_last_error());
        cr_expect_leq(rel(dv, rdv), 5e-3, "mma T=%d hd=%d dv, order %s: %.3e", T, hd, o, rel(dv, rdv));
        cr_expect_leq(rel(dq, rdq), 5e-3, "mma T=%d hd=%d dq, order %s: %.3e", T, hd, o, rel(dq, rdq));
        cr_expect_leq(rel(dk, rdk), 5e-3, "mma T=%d hd=%d dk, order %s: %.3e", T, hd, o, rel(dk, rdk));
        cr_assert_eq(fast_cpu::attention_mma_backward(dq_rope.data(), dk_rope.data(), {dv_rope.data(), 1.0f, 0, NULL},
                                                      D.data(), do16.data(), fo.data(), q16.data(), k16.data(),
                                                      v16.data(), own, lse.data(), B, T, NH, NKV, hd, &rope),
                     0, "%s", vrl_last_error());
        cr_log_info("mma T=%d hd=%d with RoPE's transpose, order %s: dq %.2e, dk %.2e", T, hd, o,
                    rel(dq_rope, rdq_rope), rel(dk_rope, rdk_rope));
        cr_expect_leq(rel(dq_rope, rdq_rope), 5e-3, "mma T=%d hd=%d Rᵀ·dq, order %s: %.3e", T, hd, o,
                      rel(dq_rope, rdq_rope));
        cr_expect_leq(rel(dk_rope, rdk_rope), 5e-3, "mma T=%d hd=%d Rᵀ·dk, order %s: %.3e", T, hd, o,
                      rel(dk_rope, rdk_rope));
        cr_expect(same_bits(dv_rope, dv), "mma T=%d hd=%d: the RoPE epilogue changed dv", T, hd);
        {
            vector<bf16> dq_a((size_t)N * qC), dk_a((size_t)N * kvC), dq_b((size_t)N * qC), dk_b((size_t)N * kvC);
            vector<float> dv_a((size_t)N * kvC), dv_b((size_t)N * kvC);
            cr_assert_eq(fast_cpu::attention_mma_backward(dq_a.data(), dk_a.data(), {dv_a.data(), 1.0f, 0, NULL},
                                                          D.data(), do16.data(), fo.data(), q16.data(), k16.data(),
                                                          v16.data(), own, lse.data(), B, T, NH, NKV, hd, &rope_k),
                         0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::attention_mma_backward(dq_b.data(), dk_b.data(), {dv_b.data(), 1.0f, 0, NULL},
                                                          D.data(), do16.data(), fo.data(), q16.data(), k_rot.data(),
                                                          v16.data(), own, lse.data(), B, T, NH, NKV, hd, &rope),
                         0, "%s", vrl_last_error());
            cr_expect(same_bits(dq_a, dq_b) && same_bits(dk_a, dk_b) && same_bits(dv_a, dv_b),
                      "mma T=%d hd=%d, order %s: dq, dk, dv with the keys rotated at their loads differ from the "
                      "backward fed rope_forward's keys", T, hd, o);
        }
        if (o == orders[0]) first_dq = dq, first_dk = dk, first_dv = dv, first_dq_rope = dq_rope, first_dk_rope = dk_rope;
        else
            cr_expect(same_bits(dq, first_dq) && same_bits(dk, first_dk) && same_bits(dv, first_dv) &&
                          same_bits(dq_rope, first_dq_rope) && same_bits(dk_rope, first_dk_rope),
                      "mma attention backward T=%d hd=%d: order %s changes the bits", T, hd, o);
    }
    const fast_cpu::AttnRope misaligned = {cos_t.data() + 1, sin_t.data(), 0, 1, 0, 0};
    cr_expect_neq(fast_cpu::attention_mma_backward(first_dq.data(), first_dk.data(), {first_dv.data(), 1.0f, 0, NULL},
                                                   D.data(), do16.data(), fo.data(), q16.data(), k16.data(), v16.data(),
                                                   own, lse.data(), B, T, NH, NKV, hd, &misaligned),
                  0, "RoPE tables off 8-byte alignment are refused");
    cuda_cpu::set_thread_order("forward");
    /* the fused views, dv added onto an accumulator and rounded to bf16 in the same call */
    vector<bf16> dqkv((size_t)N * S);
    vector<float> acc((size_t)N * kvC);
    for (float &x : acc) x = (float)uniform();
    const vector<float> acc0 = acc;
    cr_assert_eq(fast_cpu::attention_mma_backward(dqkv.data(), dqkv.data() + qC,
                                                  {acc.data(), 1.0f, 1, dqkv.data() + qC + kvC}, D.data(),
                                                  do16.data(), fo.data(), qkv.data(), qkv.data() + qC,
                                                  qkv.data() + qC + kvC, fused, lse.data(), B, T, NH, NKV, hd, NULL),
                 0, "%s", vrl_last_error());
    int acc_ok = 1, views_ok = 1;
    for (size_t i = 0; i < acc.size(); i++) acc_ok &= acc[i] == acc0[i] + first_dv[i];
    for (int n = 0; n < N; n++) {
        views_ok &= !memcmp(&dqkv[(size_t)n * S], &first_dq[(size_t)n * qC], qC * sizeof(bf16));
        views_ok &= !memcmp(&dqkv[(size_t)n * S + qC], &first_dk[(size_t)n * kvC], kvC * sizeof(bf16));
        for (int c = 0; c < kvC; c++) {
            const bf16 want = __float2bfloat16(first_dv[(size_t)n * kvC + c]);
            views_ok &= !memcmp(&dqkv[(size_t)n * S + qC + kvC + c], &want, sizeof want);
        }
    }
    cr_expect(acc_ok, "mma T=%d hd=%d: dv added onto the accumulator is not acc + dv exactly", T, hd);
    cr_expect(views_ok, "mma T=%d hd=%d: the fused views (dq, dk, bf16 dv) differ from tensors of their own", T, hd);
    cr_expect_neq(fast_cpu::attention_mma_backward(dqkv.data(), dqkv.data() + qC, {NULL, 1.0f, 0, NULL}, D.data(),
                                                   do16.data(), fo.data(), q16.data(), k16.data(), v16.data(), own,
                                                   lse.data(), B, T, NH, NKV, hd, NULL),
                  0, "no dv destination at all is refused");
}

Test(fast_cpu_ops, attention_mma_backward_gqa_hd16) { attention_mma_backward_case(1, 65, 4, 2, 16); }
Test(fast_cpu_ops, attention_mma_backward_mqa_hd64) { attention_mma_backward_case(2, 40, 3, 1, 64); }
Test(fast_cpu_ops, attention_mma_backward_hd128) { attention_mma_backward_case(1, 37, 2, 1, 128); }
Test(fast_cpu_ops, attention_mma_backward_mqa_hd8_padded) { attention_mma_backward_case(2, 33, 4, 1, 8); }
Test(fast_cpu_ops, attention_mma_backward_hd32) { attention_mma_backward_case(1, 70, 2, 2, 32); }
Test(fast_cpu_ops, attention_mma_backward_refuses_head_dims) {
    vector<bf16> x(64);
    vector<float> f(64);
    const fast_cpu::AttnLd ld = {8, 8, 8};
    cr_expect_neq(fast_cpu::attention_mma_backward(x.data(), x.data(), {f.data(), 1.0f, 0, NULL}, f.data(), x.data(),
                                                   x.data(), x.data(), x.data(), x.data(), ld, f.data(), 1, 4, 1, 1, 24, NULL),
                  0, "head_dim 24 (no kernel for it) is refused");
    cr_expect(strstr(vrl_last_error(), "head_dim") != NULL, "the refusal names head_dim: %s", vrl_last_error());
}

/* ------------------------------------------------------------------ the step's other kernels */
/* Each against ref's op in float64 on the same inputs, within a written bound per element
 * (u16 = 2⁻⁸: bf16's unit roundoff, half an ulp relative to the value; u32 = 2⁻²⁴: fp32's),
 * and the same bits in every thread order. */
static const double u16 = 1.0 / 256, u32 = 1.0 / 16777216;

/* Runs f (one launch sequence writing into fresh outputs it returns as raw bytes) in the three
 * orders; the first order's bytes are kept in *first and later orders must equal them. */
template <class F> static void in_every_order(const char *what, F f, vector<unsigned char> *first) {
    for (const char *o : test_orders()) {
        cr_assert_eq(cuda_cpu::set_thread_order(o), 0);
        vector<unsigned char> b = f();
        if (o == orders[0]) *first = b;
        else cr_expect(b == *first, "%s: order %s changes the bits", what, o);
    }
    cuda_cpu::set_thread_order("forward");
}
template <class T> static void append_bytes(vector<unsigned char> &out, const vector<T> &v) {
    const unsigned char *p = (const unsigned char *)v.data();
    out.insert(out.end(), p, p + v.size() * sizeof(T));
}
/* the bytes of several vectors, one after another */
template <class... V> static vector<unsigned char> bytes_of(const V &...v) {
    vector<unsigned char> b;
    (append_bytes(b, v), ...);
    return b;
}

/* The value mix (ResFormer's V'_n = Σ λ_i V_i, NeuTRENO's sources), its backward into fp32 and
 * from a bf16 gradient, and the trainable λ's gradient (lambda_backward), against ref's
 * mix_forward/mix_backward: three sources, one weight a bf16 parameter (a trainable λ), n not
 * a multiple of a block and past the λ gradient's grid. */
Test(fast_cpu_ops, value_mix_and_lambda_gradients) {
    const size_t n = 20000; /* past LAMBDA_BLOCKS x 256 threads, so every λ partial sum has terms */
    const int S = 3;
    vector<bf16> s16[S], lam16(1, __float2bfloat16(0.8125f)), dout16;
    vector<double> sd[S], dd;
    for (int i = 0; i < S; i++) random_bf16(s16[i], sd[i], n, 1.5);
    random_bf16(dout16, dd, n, 1.0);
    vector<float> dout32(n);
    for (size_t i = 0; i < n; i++) dout32[i] = __bfloat162float(dout16[i]); /* the same values in fp32 */
    /* the weights as the kernel holds them (fp32 constants, a bf16 parameter), so ref and fast
     * multiply by the same numbers */
    const double coef[S] = {(double)0.3f, -1.25, (double)__bfloat162float(lam16[0])};
    const double *srcs[S] = {sd[0].data(), sd[1].data(), sd[2].data()};
    vector<double> rout(n), rds[S], dcoef(S, 0.0);
    for (int i = 0; i < S; i++) rds[i].assign(n, 0.0);
    double *rdp[S] = {rds[0].data(), rds[1].data(), rds[2].data()};
    REF64(mix_forward)(rout.data(), srcs, coef, S, n);
    REF64(mix_backward)(rdp, dcoef.data(), dd.data(), srcs, coef, S, n);
    vector<unsigned char> first;
    in_every_order("value mix", [&]() {
        fast_cpu::MixArgs a = {};
        a.n = S;
        vector<float> ds[S], ds16[S], grad(S, 0.0f), partial(S * LAMBDA_BLOCKS);
        for (int i = 0; i < S; i++) {
            a.src[i] = s16[i].data(), ds[i].assign(n, 0.0f), ds16[i].assign(n, 0.0f);
            a.coef[i] = (float)coef[i];
        }
        a.param[2] = lam16.data(), a.coef[2] = 7.0f; /* a trainable λ: its value is the parameter's, read on the device */
        vector<bf16> out(n);
        cr_assert_eq(fast_cpu::mix_forward(out.data(), &a, n), 0, "%s", vrl_last_error());
        for (int i = 0; i < S; i++) a.dsrc[i] = ds[i].data();
        cr_assert_eq(fast_cpu::mix_backward(&a, dout32.data(), n), 0, "%s", vrl_last_error());
        for (int i = 0; i < S; i++) a.dsrc[i] = ds16[i].data();
        cr_assert_eq(fast_cpu::mix_backward_bf16(&a, dout16.data(), n), 0, "%s", vrl_last_error());
        fast_cpu::LambdaGradArgs g = {};
        g.n = S;
        for (int i = 0; i < S; i++) g.src[i] = s16[i].data(), g.grad[i] = &grad[i];
        cr_assert_eq(fast_cpu::lambda_backward(&g, dout32.data(), n, partial.data()), 0, "%s", vrl_last_error());
        long bad = 0;
        for (size_t e = 0; e < n; e++) {
            /* out: Σ of S fp32 products (each ≤ u32 off, the sum S·u32) rounded once to bf16 */
            double mag = 0;
            for (int i = 0; i < S; i++) mag += fabs(coef[i] * sd[i][e]);
            bad += fabs(__bfloat162float(out[e]) - rout[e]) > u16 * fabs(rout[e]) + 2 * S * u32 * mag;
            /* dsrc: one fp32 product onto 0, so within u32 of ref's */
            for (int i = 0; i < S; i++)
                bad += fabs(ds[i][e] - rds[i][e]) > u32 * fabs(rds[i][e]) ||
                       fabs(ds16[i][e] - rds[i][e]) > u32 * fabs(rds[i][e]);
        }
        cr_expect_eq(bad, 0, "value mix: %ld elements outside their bounds", bad);
        /* an fp32 sum whose every term passes through at most `depth` roundings is within
         * depth·u32·Σ|terms| of exact (Higham, §4.2): a product, a thread's grid-strided chain
         * (n / (LAMBDA_BLOCKS·256) terms), the block's 8-level tree, the LAMBDA_BLOCKS partial
         * sums in order, the add onto grad */
        const double depth = 1 + (double)((n + LAMBDA_BLOCKS * 256 - 1) / (LAMBDA_BLOCKS * 256)) + 8 + LAMBDA_BLOCKS + 1;
        for (int i = 0; i < S; i++) {
            double mag = 0;
            for (size_t e = 0; e < n; e++) mag += fabs(dd[e] * sd[i][e]);
            cr_expect_leq(fabs(grad[i] - dcoef[i]), depth * u32 * mag, "λ gradient %d: %.9g vs ref %.9g (bound %.3g)", i,
                          grad[i], dcoef[i], depth * u32 * mag);
        }
        vector<unsigned char> b;
        append_bytes(b, out), append_bytes(b, grad);
        for (int i = 0; i < S; i++) append_bytes(b, ds[i]), append_bytes(b, ds16[i]);
        return b;
    }, &first);
}

/* RoPE in place on a view (rows ld > NHX·hd apart, the columns past it untouched) and its
 * transpose, against ref's rope_forward/rope_backward with ref's double tables; fast/'s are
 * the same tables rounded to fp32 (fast/model.cu). */
Test(fast_cpu_ops, rope_forward_and_backward) {
    const int B = 2, T = 9, NHX = 3, hd = 16, ld = NHX * hd + 8, h2 = hd / 2, W = NHX * hd;
    vector<double> ct(T * h2), st(T * h2);
    REF64(rope_tables)(ct.data(), st.data(), T, hd, 10000.0);
    vector<float> ct32(T * h2), st32(T * h2);
    for (int i = 0; i < T * h2; i++) ct32[i] = (float)ct[i], st32[i] = (float)st[i];
    vector<bf16> x16;
    vector<double> xd;
    random_bf16(x16, xd, (size_t)B * T * ld, 2.0);
    vector<double> dense((size_t)B * T * W), rf((size_t)B * T * W), rb((size_t)B * T * W);
    for (int r = 0; r < B * T; r++)
        for (int c = 0; c < W; c++) dense[(size_t)r * W + c] = xd[(size_t)r * ld + c];
    REF64(rope_forward)(rf.data(), dense.data(), ct.data(), st.data(), B, T, NHX, hd);
    REF64(rope_backward)(rb.data(), dense.data(), ct.data(), st.data(), B, T, NHX, hd, GRAD_SET);
    vector<unsigned char> first;
    in_every_order("rope", [&]() {
        vector<bf16> f = x16, g = x16;
        cr_assert_eq(fast_cpu::rope_forward(f.data(), ld, ct32.data(), st32.data(), B, T, NHX, hd), 0);
        cr_assert_eq(fast_cpu::rope_backward(g.data(), ld, ct32.data(), st32.data(), B, T, NHX, hd), 0);
        long bad = 0;
        for (int r = 0; r < B * T; r++)
            for (int c = 0; c < ld; c++) {
                const size_t o = (size_t)r * ld + c;
                if (c >= W) { /* past the view: untouched */
                    bad += __bfloat16_as_ushort(f[o]) != __bfloat16_as_ushort(x16[o]) ||
                           __bfloat16_as_ushort(g[o]) != __bfloat16_as_ushort(x16[o]);
                    continue;
                }
                /* the pair's magnitude: two fp32 products and a sum on fp32 tables (4·u32), one bf16 rounding */
                const int cc = c % hd, pc = cc < h2 ? c + h2 : c - h2;
                const double mag = fabs(xd[o]) + fabs(xd[(size_t)r * ld + pc]), rf_ = rf[(size_t)r * W + c],
                             rb_ = rb[(size_t)r * W + c];
                bad += fabs(__bfloat162float(f[o]) - rf_) > u16 * fabs(rf_) + 4 * u32 * mag;
                bad += fabs(__bfloat162float(g[o]) - rb_) > u16 * fabs(rb_) + 4 * u32 * mag;
            }
        cr_expect_eq(bad, 0, "rope: %ld elements outside their bounds", bad);
        return bytes_of(f, g);
    }, &first);
}

/* The embedding gather (the same bits as the table's rows) and its backward (one block per
 * distinct token, positions in order, fp32) against ref's, with repeated tokens. */
Test(fast_cpu_ops, embedding_forward_and_backward) {
    const int V = 37, C = 300, N = 50; /* C past one 256-thread block */
    vector<bf16> wte16;
    vector<double> wte;
    random_bf16(wte16, wte, (size_t)V * C, 1.0);
    vector<int32_t> tok(N);
    for (int i = 0; i < N; i++) tok[i] = (int32_t)((uniform() + 1) * 0.5 * 12) % V; /* 12 distinct at most: repeats */
    vector<float> dout(N * C);
    vector<double> dd(N * C), rout((size_t)N * C), rdw((size_t)V * C, 0.0);
    for (int i = 0; i < N * C; i++) dout[i] = (float)uniform(), dd[i] = dout[i];
    REF64(embedding_forward)(rout.data(), tok.data(), wte.data(), N, C);
    REF64(embedding_backward)(rdw.data(), dd.data(), tok.data(), N, C);
    /* the host's plan (fast/model.cu does the same): distinct tokens, their positions in order */
    vector<int32_t> uniq, offsets(1, 0), pos;
    for (int t = 0; t < V; t++) {
        int any = 0;
        for (int p = 0; p < N; p++)
            if (tok[p] == t) pos.push_back(p), any = 1;
        if (any) uniq.push_back(t), offsets.push_back((int32_t)pos.size());
    }
    const int32_t U = (int32_t)uniq.size();
    vector<unsigned char> first;
    in_every_order("embedding", [&]() {
        vector<bf16> out((size_t)N * C);
        vector<float> dw((size_t)V * C, 0.0f);
        cr_assert_eq(fast_cpu::embedding_forward(out.data(), tok.data(), wte16.data(), N, C), 0);
        cr_assert_eq(fast_cpu::embedding_backward(dw.data(), dout.data(), uniq.data(), offsets.data(), pos.data(), &U,
                                                  N, C),
                     0);
        long bad = 0;
        for (size_t i = 0; i < (size_t)N * C; i++) bad += __bfloat162float(out[i]) != rout[i];
        for (int t = 0; t < V; t++)
            for (int c = 0; c < C; c++) { /* an fp32 sum of k terms: k·u32·Σ|terms| */
                double mag = 0;
                int k = 0;
                for (int p = 0; p < N; p++)
                    if (tok[p] == t) mag += fabs(dd[(size_t)p * C + c]), k++;
                bad += fabs(dw[(size_t)t * C + c] - rdw[(size_t)t * C + c]) > k * u32 * mag;
            }
        cr_expect_eq(bad, 0, "embedding: %ld elements outside their bounds", bad);
        return bytes_of(out, dw);
    }, &first);
}

/* The loss's device sum (double, a fixed order) and its record into the micro-batch slots. */
Test(fast_cpu_ops, loss_sum_and_record) {
    const int n = 777;
    vector<float> losses(n);
    double exact = 0, mag = 0;
    for (int i = 0; i < n; i++) losses[i] = (float)(2 + uniform()), exact += losses[i], mag += fabs(losses[i]);
    vector<unsigned char> first;
    in_every_order("loss sum", [&]() {
        double sum = 0, slots[2] = {-1, -1};
        int32_t count = 0;
        cr_assert_eq(fast_cpu::loss_sum(&sum, losses.data(), n), 0);
        cr_expect_leq(fabs(sum - exact), n * 0x1p-53 * mag, "loss sum %.17g vs %.17g", sum, exact);
        cr_assert_eq(fast_cpu::loss_record(slots, &count, 2, &sum, 3.0), 0);
        cr_assert_eq(fast_cpu::loss_record(slots, &count, 2, &sum, 3.0), 0);
        cr_assert_eq(fast_cpu::loss_record(slots, &count, 2, &sum, 3.0), 0); /* past the capacity: counted only */
        cr_expect(slots[0] == sum / 3.0 && slots[1] == sum / 3.0 && count == 3, "loss_record: %.17g %.17g count %d",
                  slots[0], slots[1], count);
        return bytes_of(vector<double>(1, sum));
    }, &first);
}

/* ------------------------------------------------------------------ GPT-2 (fast/gpt2_ops.cu) */

/* LayerNorm against ref/gpt2.c's in float64: 300 rows (37.5 blocks of 8 rows, two 256-row chunks
 * for the parameter gradients), 40 channels (past one warp's 32), inputs 3 + 2·U(-1,1) so that a
 * one-pass variance would lose digits. Bounds: out one bf16 rounding (relative norm 1e-2 as
 * RMSNorm's), mean and rstd fp32 (1e-6), the gradients fp32 sums of 40 or 300 terms (1e-5). */
Test(fast_cpu_ops, layernorm_edge_shapes) {
    const int N = 300, C = 40;
    vector<bf16> x16, w16, b16;
    vector<double> x, w, b, dout(N * C);
    random_bf16(x16, x, (size_t)N * C, 2.0);
    for (int i = 0; i < N * C; i++) x16[i] = __float2bfloat16(3.0f + __bfloat162float(x16[i])), x[i] = __bfloat162float(x16[i]);
    random_bf16(w16, w, C, 1.0);
    random_bf16(b16, b, C, 1.0);
    vector<float> dout32(N * C);
    for (int i = 0; i < N * C; i++) dout32[i] = (float)uniform(), dout[i] = dout32[i];
    vector<double> ry(N * C), rm(N), rr(N), rdx(N * C, 0.0), rdw(C, 0.0), rdb(C, 0.0);
    REF64(gpt2_layernorm_forward)(ry.data(), rm.data(), rr.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
    REF64(gpt2_layernorm_backward)(rdx.data(), rdw.data(), rdb.data(), dout.data(), x.data(), w.data(), rm.data(),
                                   rr.data(), N, C);
    vector<unsigned char> first;
    in_every_order("layernorm", [&]() {
        vector<bf16> y(N * C), dx16(N * C);
        vector<float> m(N), r(N), dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f), partial(4 * C);
        cr_assert_eq(fast_cpu::layernorm_forward(y.data(), m.data(), r.data(), x16.data(), w16.data(), b16.data(), N, C,
                                                 1e-5f),
                     0, "%s", vrl_last_error());
        cr_assert_eq(fast_cpu::layernorm_backward(dx.data(), dx16.data(), dout32.data(), x16.data(), w16.data(),
                                                  m.data(), r.data(), N, C),
                     0, "%s", vrl_last_error());
        cr_assert_eq(fast_cpu::layernorm_backward_params(dw.data(), db.data(), partial.data(), dout32.data(),
                                                         x16.data(), m.data(), r.data(), N, C),
                     0, "%s", vrl_last_error());
        cr_expect_leq(rel(y, ry), 1e-2, "layernorm out: %.3e", rel(y, ry));
        cr_expect_leq(rel(m, rm), 1e-6, "layernorm mean: %.3e", rel(m, rm));
        cr_expect_leq(rel(r, rr), 1e-6, "layernorm rstd: %.3e", rel(r, rr));
        cr_expect_leq(rel(dx, rdx), 1e-5, "layernorm dinp: %.3e", rel(dx, rdx));
        cr_expect_leq(rel(dw, rdw), 1e-5, "layernorm dweight: %.3e", rel(dw, rdw));
        cr_expect_leq(rel(db, rdb), 1e-5, "layernorm dbias: %.3e", rel(db, rdb));
        return bytes_of(y, m, r, dx, dx16, dw, db);
    }, &first);
}

/* The MLP's bias + tanh GELU and its backward against ref/gpt2.c's gelu (the tanh form: an erf
 * GELU differs by up to 1e-3 relative near |u| ≈ 2, far above these bounds) on 3 x 337 elements
 * (past a 256-thread block) spanning [-8, 8] with exact zeros. Bounds per element: pre is the
 * bf16 rounding of in32 + bias (exactly); out one bf16 rounding of an fp32 value, 2⁻⁸|ref| plus
 * 1e-6 absolute (fp32 tanh(x) is −1 where 1 + tanh(x) < 1e-7); the gradient fp32: 1e-5 relative. */
Test(fast_cpu_ops, gelu_tanh_forward_and_backward) {
    const int N = 3, F = 337;
    const size_t n = (size_t)N * F;
    vector<float> in32(n), dout(n);
    vector<bf16> bias16;
    vector<double> bias;
    random_bf16(bias16, bias, F, 0.5);
    for (size_t i = 0; i < n; i++) in32[i] = i % 29 == 0 ? -__bfloat162float(bias16[i % F]) : (float)(8 * uniform());
    for (size_t i = 0; i < n; i++) dout[i] = (float)uniform();
    vector<unsigned char> first;
    in_every_order("gelu", [&]() {
        vector<bf16> pre(n), out(n), d16(n);
        vector<float> d32(n);
        cr_assert_eq(fast_cpu::gelu_forward(pre.data(), out.data(), in32.data(), bias16.data(), N, F), 0, "%s",
                     vrl_last_error());
        cr_assert_eq(fast_cpu::gelu_backward(d32.data(), d16.data(), dout.data(), pre.data(), n), 0, "%s",
                     vrl_last_error());
        vector<double> u(n), ry(n), rdx(n, 0.0), dd(n);
        long bad = 0, zeros = 0;
        for (size_t i = 0; i < n; i++) {
            u[i] = __bfloat162float(pre[i]), dd[i] = dout[i];
            bad += __bfloat162float(pre[i]) != __bfloat162float(__float2bfloat16(in32[i] + __bfloat162float(bias16[i % F])));
            zeros += u[i] == 0;
        }
        REF64(gpt2_gelu_forward)(ry.data(), u.data(), n);
        REF64(gpt2_gelu_backward)(rdx.data(), dd.data(), u.data(), n);
        for (size_t i = 0; i < n; i++) bad += fabs(__bfloat162float(out[i]) - ry[i]) > fabs(ry[i]) / 256 + 1e-6;
        cr_expect_eq(bad, 0, "gelu: %ld elements outside their bounds", bad);
        cr_expect_gt(zeros, 0, "no exact zero among GELU's arguments");
        cr_expect_leq(rel(d32, rdx), 1e-5, "gelu backward: %.3e", rel(d32, rdx));
        return bytes_of(pre, out, d32, d16);
    }, &first);
}

/* Bias gradients (Σ over rows, from fp32 and from bf16 gradients) over 300 rows, and the
 * learned positions: out = wte[tok] + wpe[t] rounded once, dwpe[t] = Σ_b dout[b, t]. Bounds: fp32
 * sums of k terms, k·2⁻²⁴·Σ|terms| (1e-6 relative norm for the biases). */
Test(fast_cpu_ops, biases_and_positions) {
    const int N = 300, C = 40, B = 3, T = 100, V = 11;
    vector<float> g32(N * C);
    vector<bf16> g16(N * C);
    vector<double> rs32(C, 0.0), rs16(C, 0.0);
    for (int i = 0; i < N * C; i++) {
        g32[i] = (float)uniform(), g16[i] = __float2bfloat16(g32[i]);
        rs32[i % C] += g32[i], rs16[i % C] += __bfloat162float(g16[i]);
    }
    vector<bf16> wte16, wpe16;
    vector<double> wte, wpe;
    random_bf16(wte16, wte, (size_t)V * C, 1.0);
    random_bf16(wpe16, wpe, (size_t)T * C, 1.0);
    vector<int32_t> tok(N);
    for (int i = 0; i < N; i++) tok[i] = (int32_t)((uniform() + 1) * 0.5 * V) % V;
    vector<unsigned char> first;
    in_every_order("biases and positions", [&]() {
        vector<float> d32(C, 0.0f), d16(C, 0.0f), partial(2 * C), dwpe((size_t)T * C, 0.0f);
        vector<bf16> emb((size_t)N * C);
        cr_assert_eq(fast_cpu::bias_backward(d32.data(), partial.data(), g32.data(), N, C), 0);
        cr_assert_eq(fast_cpu::bias_backward_bf16(d16.data(), partial.data(), g16.data(), N, C), 0);
        cr_assert_eq(fast_cpu::position_embedding_forward(emb.data(), tok.data(), wte16.data(), wpe16.data(), N, T, C), 0);
        cr_assert_eq(fast_cpu::position_embedding_backward(dwpe.data(), g32.data(), B, T, C), 0);
        cr_expect_leq(rel(d32, rs32), 1e-6, "bias gradient (fp32): %.3e", rel(d32, rs32));
        cr_expect_leq(rel(d16, rs16), 1e-6, "bias gradient (bf16): %.3e", rel(d16, rs16));
        long bad = 0;
        for (int i = 0; i < N * C; i++) {
            const int r = i / C, c = i % C;
            const float want = __bfloat162float(__float2bfloat16((float)(wte[(size_t)tok[r] * C + c] + wpe[(size_t)(r % T) * C + c])));
            bad += __bfloat162float(emb[i]) != want;
        }
        for (int i = 0; i < T * C; i++) {
            double s = 0, mag = 0;
            for (int b = 0; b < B; b++) s += g32[(size_t)b * T * C + i], mag += fabs(g32[(size_t)b * T * C + i]);
            bad += fabs(dwpe[i] - s) > B * u32 * mag;
        }
        cr_expect_eq(bad, 0, "positions: %ld elements outside their bounds", bad);
        return bytes_of(d32, d16, emb, dwpe);
    }, &first);
}

/* ------------------------------------------------------------------ vector and scalar paths */

/* Each launcher of a memory-bound kernel takes the 16-byte vector path (fast/vec.cuh) when its
 * pointers are 16-byte aligned and its extents whole packs, else the scalar path. The same
 * inputs run once at 16-byte aligned addresses and once one element past them: the first must
 * take the vector path for every launch, the second the scalar one, and the outputs must be
 * the same bits (each element's arithmetic is the same in both). */
template <class T> struct Placed { /* a copy of v whose first element is `off` elements past 16-byte alignment */
    vector<T> store;
    T *p;
    Placed(const vector<T> &v, int off) : store(v.size() + 16) {
        const uintptr_t a = (uintptr_t)store.data();
        p = store.data() + ((16 - a % 16) % 16) / sizeof(T) + off;
        cr_assert((uintptr_t)store.data() % sizeof(T) == 0 && ((uintptr_t)p - off * sizeof(T)) % 16 == 0);
        memcpy(p, v.data(), v.size() * sizeof(T));
    }
    vector<T> get(size_t n) const { return vector<T>(p, p + n); }
};

/* f(off) runs the launches on inputs placed at off and returns the outputs' bytes */
template <class F> static void both_paths(const char *what, int launches, F f) {
    const unsigned long s0 = fast_cpu::vec_scalar_launches;
    const vector<unsigned char> vec = f(0);
    const unsigned long s1 = fast_cpu::vec_scalar_launches;
    const vector<unsigned char> sca = f(1);
    const unsigned long s2 = fast_cpu::vec_scalar_launches;
    cr_expect_eq(s1 - s0, 0, "%s: %lu launches took the scalar path on aligned whole packs", what, s1 - s0);
    cr_expect_eq(s2 - s1, (unsigned long)launches, "%s: %lu of %d launches took the scalar path off alignment", what,
                 s2 - s1, launches);
    cr_expect(vec == sca, "%s: the vector and the scalar path give different bits", what);
}

static vector<bf16> rand16(size_t n, double scale) {
    vector<bf16> b;
    vector<double> d;
    random_bf16(b, d, n, scale);
    return b;
}
static vector<float> rand32(size_t n, double scale) {
    vector<float> f(n);
    for (auto &x : f) x = (float)(uniform() * scale);
    return f;
}

Test(fast_cpu_ops, vector_and_scalar_paths_give_the_same_bits) {
    fast_cpu::ops_use_stream(0);
    { /* cast: n floats */
        const vector<float> x = rand32(72, 3.0);
        both_paths("cast_to_bf16", 1, [&](int off) {
            Placed<float> in(x, off);
            Placed<bf16> out(vector<bf16>(72), off);
            cr_assert_eq(fast_cpu::cast_to_bf16(out.p, in.p, 72), 0, "%s", vrl_last_error());
            return bytes_of(out.get(72));
        });
    }
    { /* embedding: N rows of C from a [7, C] table */
        const int N = 5, C = 24;
        const vector<bf16> wte = rand16(7 * C, 1.0);
        const vector<int32_t> tok = {3, 0, 6, 3, 1};
        both_paths("embedding_forward", 1, [&](int off) {
            Placed<bf16> w(wte, off), out(vector<bf16>(N * C), off);
            cr_assert_eq(fast_cpu::embedding_forward(out.p, tok.data(), w.p, N, C), 0, "%s", vrl_last_error());
            return bytes_of(out.get(N * C));
        });
    }
    { /* rmsnorm forward and backward: N rows of C (C past one 32-lane sweep of packs) */
        const int N = 9, C = 264;
        const vector<bf16> x = rand16(N * C, 2.0), w = rand16(C, 1.0);
        const vector<bf16> dy = rand16(N * C, 1.0);
        const vector<float> d0 = rand32(N * C, 0.5);
        both_paths("rmsnorm forward and backward", 2, [&](int off) {
            Placed<bf16> xp(x, off), wp(w, off), y(vector<bf16>(N * C), off), d16(vector<bf16>(N * C), off),
                dyp(dy, off);
            Placed<float> dp(d0, off);
            vector<float> rstd(N), dw(C, 0.0f), partial((N + RMSNORM_WEIGHT_ROWS - 1) / RMSNORM_WEIGHT_ROWS * C);
            cr_assert_eq(fast_cpu::rmsnorm_forward(y.p, rstd.data(), xp.p, wp.p, N, C, 1e-5f), 0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::rmsnorm_backward(dp.p, d16.p, dw.data(), partial.data(), dyp.p, xp.p, wp.p,
                                                    rstd.data(), N, C),
                         0, "%s", vrl_last_error());
            return bytes_of(y.get(N * C), rstd, dp.get(N * C), d16.get(N * C), dw);
        });
    }
    { /* RoPE and its transpose: B·T rows of NHX heads of hd, on a view with a wider row */
        const int B = 2, T = 3, NHX = 2, hd = 32, ld = 80;
        const vector<bf16> x = rand16((size_t)B * T * ld, 1.0);
        const vector<float> ct = rand32((size_t)T * hd / 2, 1.0), st = rand32((size_t)T * hd / 2, 1.0);
        both_paths("rope forward and backward", 2, [&](int off) {
            Placed<bf16> xp(x, off);
            Placed<float> c(ct, off), s(st, off);
            cr_assert_eq(fast_cpu::rope_forward(xp.p, ld, c.p, s.p, B, T, NHX, hd), 0, "%s", vrl_last_error());
            const vector<bf16> fwd = xp.get((size_t)B * T * ld);
            cr_assert_eq(fast_cpu::rope_backward(xp.p, ld, c.p, s.p, B, T, NHX, hd), 0, "%s", vrl_last_error());
            return bytes_of(fwd, xp.get((size_t)B * T * ld));
        });
    }
    { /* SwiGLU forward and backward on the fused gate|up rows */
        const int N = 3, F = 40;
        const vector<bf16> gu = rand16(2 * N * F, 3.0), dy = rand16(N * F, 1.0);
        both_paths("swiglu forward and backward", 2, [&](int off) {
            Placed<bf16> g(gu, off), d(dy, off), y(vector<bf16>(N * F), off), dg(vector<bf16>(2 * N * F), off);
            cr_assert_eq(fast_cpu::swiglu_forward(y.p, g.p, N, F), 0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::swiglu_backward(dg.p, d.p, g.p, N, F), 0, "%s", vrl_last_error());
            return bytes_of(y.get(N * F), dg.get(2 * N * F));
        });
    }
    { /* the value mix and the value-space correction, with a trainable λ */
        const int N = 3, NH = 4, NKV = 2, hd = 16, S = 2;
        const size_t n = (size_t)N * NKV * hd, nq = (size_t)N * NH * hd;
        const vector<bf16> s0 = rand16(n, 1.5), s1 = rand16(n, 1.5), lam(1, __float2bfloat16(0.8125f));
        const vector<bf16> d16 = rand16(n, 1.0), atty = rand16(nq, 1.0), dq = rand16(nq, 1.0);
        const vector<float> d32 = rand32(n, 1.0), acc = rand32(n, 0.5);
        both_paths("value mix and correction", 5, [&](int off) {
            Placed<bf16> a0(s0, off), a1(s1, off), dp16(d16, off), at(atty, off), dqp(dq, off);
            Placed<bf16> out(vector<bf16>(n), off), cor(vector<bf16>(nq), off);
            Placed<float> dp32(d32, off), ds0(acc, off), ds1(acc, off);
            fast_cpu::MixArgs a = {};
            a.n = S, a.src[0] = a0.p, a.src[1] = a1.p, a.coef[0] = 0.3f, a.param[1] = lam.data();
            a.dsrc[0] = ds0.p, a.dsrc[1] = ds1.p;
            cr_assert_eq(fast_cpu::mix_forward(out.p, &a, n), 0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::mix_backward(&a, dp32.p, n), 0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::mix_backward_bf16(&a, dp16.p, n), 0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::correction_forward(cor.p, at.p, &a, N, NH, NKV, hd), 0, "%s", vrl_last_error());
            cr_assert_eq(fast_cpu::correction_backward(&a, dqp.p, N, NH, NKV, hd), 0, "%s", vrl_last_error());
            return bytes_of(out.get(n), cor.get(nq), ds0.get(n), ds1.get(n));
        });
    }
}
