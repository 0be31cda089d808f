/* test_fast_cpu_bits.cpp: fast/'s AdamW and its bf16 copies checked in bits (issue 37, "Checks
 * in bits"; docs/design/precision.md), on the CPU layer.
 *
 * Story:
 * - AdamW: a tiny fast/ model and ref/adamw.c in float32 start from the same master weights,
 *   gradients and moments; both take the update (several steps, learning rates from the warmup
 *   through the decay, decayed and undecayed tensors, steps with and without clipping); the
 *   weights, both moments and the clipped gradients must be the same bits. The two compute
 *   every scalar (bias corrections, step size, decay, 1 − β) the same way in double, rounded
 *   once to fp32, and every element operation in the same order, so bits, not a tolerance.
 *   One scalar is computed another way: the squared gradient norm (ref: a double sum of the
 *   exact squares in chunks of lanes; fast/: the exact sum, fast/exact_sumsq.h, rounded once);
 *   a sum of n positive terms in double is within (n−1)·2⁻⁵³ relative of the exact sum
 *   whatever the order, so the norms may differ by that and no more, checked as written, and
 *   fast/'s must be the bits of the host's exact sum. The clip coefficient rounded to fp32 is
 *   then equal unless the double lands within that distance of an fp32 rounding boundary
 *   (odds ~1e-9): the weights' equality checks it.
 * - The norm kernels on a model whose P gives every thread of their grid several elements:
 *   the host's exact sum bit for bit, a lone subnormal, NaN and −inf.
 * - The bf16 copy AdamW writes beside each master weight: after every step, each element is
 *   the master weight rounded to nearest even (an independent rounding written here from
 *   the two neighbouring bf16 values, not the layer's bit trick); and on master weights that
 *   are ties, subnormals, ±0, ±inf, NaN and the overflow boundary, with zero gradients (the
 *   update adds −0: the weight stays), into a copy poisoned first.
 * - Every float -> bf16 conversion of fast/ goes through __float2bfloat16 (the CPU layer's
 *   __nv_bfloat16 has no converting constructor, so any other conversion would not compile
 *   here, and fast/ *.cu is scanned for the truncating or directed variants): that function is
 *   checked against the independent rounding on every bf16 value with the low half 0, 1,
 *   0x7fff, 0x8000 (the tie), 0x8001 and 0xffff, and the cast kernel (the copy set_state
 *   makes) on the special values.
 * - The tables' alignment (common/model/params.h): with a trainable λ, and with the hidden
 *   residual, every tensor of the four fp32 buffers and the bf16 copy starts 16-byte aligned,
 *   two training steps launch no scalar path (fast/vec.cuh), the padding gaps stay +0, and
 *   values planted in lm_head's rows past the vocabulary change no bit of the loss or the
 *   gradient. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "fast/exact_sumsq.h"
#include "fast/model.cuh"
extern "C" {
#include "common/model/spec.h"
#include "common/base/rng.h"
#include "fast/cuda_cpu/fast_cpu.h"
#include "ref/adamw.h"
}

using std::vector;

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even, written from the definition: the two bf16 values around f (its
 * truncation toward zero and the next one out; past the largest finite bf16 the next one is
 * 2¹²⁸, IEEE's unbounded exponent, which then overflows to ∞), the nearer one, on a tie the
 * one with an even last bit. The differences are exact in double. NaN: any NaN (0x7fff on a
 * GPU, the quieted input here). */
static uint16_t rne_reference(float f) {
    const uint32_t u = bits_of(f);
    const uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    if (isinf(f)) return lo;
    const double x = fabs((double)f), vlo = fabs((double)float_of((uint32_t)lo << 16));
    const double vhi = (hi & 0x7fffu) == 0x7f80u ? ldexp(1.0, 128) : fabs((double)float_of((uint32_t)hi << 16));
    const double dlo = x - vlo, dhi = vhi - x;
    if (dlo < dhi) return lo;
    if (dhi < dlo) return hi;
    return (lo & 1u) ? hi : lo;
}

static bool bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

/* The layer's result b for input f agrees with the reference (any NaN for a NaN). */
static bool rounds_right(float f, uint16_t b) {
    return isnan(f) ? bf16_is_nan(b) : b == rne_reference(f);
}

/* Master weights that test the rounding: ties at every magnitude class, subnormals, signed
 * zeros, infinities, NaNs (the signalling ones only with `signalling`: arithmetic quiets
 * them), the overflow boundary, and their neighbours.  [n] */
static vector<float> special_values(bool signalling) {
    const uint32_t raw[] = {
        0x00000000u, 0x80000000u,                           /* ±0 */
        0x00000001u, 0x00007fffu, 0x00008000u, 0x00008001u, /* subnormals: below, at, above a tie to 0 */
        0x00018000u, 0x80018000u, 0x00028000u, 0x007f8000u, /* subnormal ties: to even 2, -2, 2, up to 0x80 */
        0x007fffffu, 0x00800000u,                           /* largest subnormal, smallest normal */
        0x3f808000u, 0x3f818000u, 0xbf808000u, 0xbf818000u, /* normal ties: down to even, up to even */
        0x3f807fffu, 0x3f808001u, 0x3fffffffu,              /* just off a tie; rounds up into the next binade */
        0x7f7f7fffu, 0x7f7f8000u, 0xff7f8000u, 0x7f7fffffu, /* the overflow boundary: stays, ties to ∞, -∞, ∞ */
        0x7f800000u, 0xff800000u,                           /* ±∞ */
        0x7fc00000u, 0xffc00000u, 0x7fc00001u,              /* quiet NaNs */
    };
    vector<float> v;
    for (uint32_t r : raw) v.push_back(float_of(r));
    if (signalling) v.push_back(float_of(0x7f800001u)), v.push_back(float_of(0xffbfffffu));
    return v;
}

/* ------------------------------------------------------------------ the conversion itself */

Test(fast_cpu_bits, float2bfloat16_is_round_to_nearest_even) {
    const uint16_t lows[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu};
    long bad = 0;
    for (uint32_t top = 0; top < 65536u; top++)
        for (uint16_t low : lows) {
            const float f = float_of(top << 16 | low);
            const uint16_t b = __bfloat16_as_ushort(__float2bfloat16(f));
            if (!rounds_right(f, b) && bad++ < 5)
                cr_log_error("%08x -> %04x, nearest even is %04x", bits_of(f), b, rne_reference(f));
        }
    cr_assert_eq(bad, 0, "%ld of %d inputs rounded wrongly", bad, 65536 * 6);
}

/* fast/ *.cu converts float to bf16 only with __float2bfloat16 (or its _rn twin): none of CUDA's
 * truncating or directed conversions, no float bits shifted into a bf16. */
Test(fast_cpu_bits, every_conversion_site_rounds_to_nearest_even) {
    const char *files[] = {"ops.cu", "attention.cu", "attention_mma_forward.cu", "attention_mma_backward.cu",
                           "model.cu", "stream.cu", "adamw.cu", "zero.cu", "bench.cu"};
    const char *banned[] = {"__float2bfloat16_rz", "__float2bfloat16_rd", "__float2bfloat16_ru",
                            "__float_as_uint", "__float_as_int", "__float2bfloat162"};
    int sites = 0;
    for (const char *f : files) {
        char path[1024];
        snprintf(path, sizeof path, "%s/fast/%s", VRL_SOURCE_DIR, f);
        FILE *fp = fopen(path, "r");
        cr_assert(fp, "cannot read %s", path);
        std::string text;
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, fp)) > 0) text.append(buf, n);
        fclose(fp);
        for (const char *b : banned) cr_expect(text.find(b) == std::string::npos, "%s uses %s", path, b);
        for (size_t at = text.find("__float2bfloat16("); at != std::string::npos;
             at = text.find("__float2bfloat16(", at + 1))
            sites++;
    }
    cr_log_info("%d __float2bfloat16 call sites in fast/ *.cu", sites);
    cr_expect_geq(sites, 20, "fewer conversion sites than fast/ has: %d", sites);
}

Test(fast_cpu_bits, cast_kernel_rounds_specials) {
    vector<float> in = special_values(true);
    vector<bf16> out(in.size());
    fast_cpu::ops_use_stream(0);
    cr_assert_eq(fast_cpu::cast_to_bf16(out.data(), in.data(), in.size()), 0);
    for (size_t i = 0; i < in.size(); i++)
        cr_expect(rounds_right(in[i], __bfloat16_as_ushort(out[i])), "cast %08x -> %04x, nearest even %04x",
                  bits_of(in[i]), __bfloat16_as_ushort(out[i]), rne_reference(in[i]));
}

/* ------------------------------------------------------------------ AdamW against ref/adamw.c */

struct Tiny {
    ModelSpec spec;
    fast_cpu::FastModel *m;
    size_t P;
};

static void tiny_model(Tiny *t) {
    ModelConfig c;
    config_preset("tiny", &c);
    t->spec = ModelSpec{};
    cr_assert_eq(model_spec_build(&c, &t->spec), 0, "%s", vrl_last_error());
    t->P = t->spec.table.total;
    t->m = (fast_cpu::FastModel *)fast_backend_cuda_cpu.create(&t->spec, 2, 16);
    cr_assert(t->m, "%s", vrl_last_error());
}

static uint64_t bits_of64(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* sqrt of Σ g[i]² over g [n]: one accumulator in index order on the host (fast/exact_sumsq.h,
 * tested on its own by test_exact_sumsq), rounded once */
static double exact_norm(const float *g, size_t n) {
    uint64_t w[EXACT_SUMSQ_WORDS];
    exact_sumsq_clear(w);
    for (size_t i = 0; i < n; i++) exact_sumsq_add(w, g[i]);
    exact_sumsq_normalize(w);
    return sqrt(exact_sumsq_round(w));
}

/* each element of the bf16 copy is its master weight rounded to nearest even */
static long copy_errors(const fast_cpu::FastModel *m, const float *p, size_t P, const char *when) {
    long bad = 0;
    for (size_t i = 0; i < P; i++) {
        const uint16_t b = __bfloat16_as_ushort(m->params16[i]);
        if (!rounds_right(p[i], b) && bad++ < 3)
            cr_log_error("%s: element %zu: master %08x, copy %04x, nearest even %04x", when, i, bits_of(p[i]), b,
                         rne_reference(p[i]));
    }
    return bad;
}

Test(fast_cpu_bits, adamw_matches_ref_bit_for_bit) {
    Tiny t;
    tiny_model(&t);
    const size_t P = t.P;
    const Backend *be = &fast_backend_cuda_cpu;
    vector<double> init64(P);
    vector<float> p(P), g(P), ma(P), va(P), p2(P), g2(P), m2(P), v2(P);
    params_init_f64(&t.spec.table, 7, init64.data());
    for (size_t i = 0; i < P; i++) p[i] = (float)init64[i];
    be->set_state(t.m, p.data(), NULL, NULL);
    Rng r;
    rng_seed(&r, 5);
    vector<int32_t> tok(2 * 16);
    /* clip 0.5 is below the tiny model's gradient norm (~0.65), clip 10 above it: both paths */
    const double lrs[6] = {1e-7, 1e-3, 3e-3, 2.9e-3, 1e-3, 3e-4}, clips[6] = {10, 0.5, 10, 0.5, 0, 0.5};
    int clipped = 0;
    for (long s = 1; s <= 6; s++) {
        for (auto &x : tok) x = (int32_t)rng_below(&r, (uint64_t)t.spec.config.vocab_size);
        be->zero_grad(t.m);
        (void)backend_forward_backward_now(be, t.m, tok.data(), 1.0);
        be->get_state(t.m, p.data(), g.data(), ma.data(), va.data());
        const AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = clips[s - 1]};
        const double nf = be->step(t.m, &opt, lrs[s - 1], s);
        const double ne = exact_norm(g.data(), P); /* before ref clips g in place */
        const double nr = adamw_update(&t.spec.table, p.data(), g.data(), ma.data(), va.data(), s, &opt, lrs[s - 1]);
        be->get_state(t.m, p2.data(), g2.data(), m2.data(), v2.data());
        clipped += opt.clip > 0 && nr > opt.clip;
        /* the norms: fast/'s is the exact sum of squares rounded once, ref's a double sum of the
         * same exact squares, (P−1)·2⁻⁵³ relative from the exact sum at most */
        const double bound = (double)(P - 1) * ldexp(1.0, -53) * nr;
        cr_log_info("step %ld: norm fast %.17g ref %.17g (|diff| %.3g, bound %.3g)", s, nf, nr, fabs(nf - nr), bound);
        cr_expect_leq(fabs(nf - nr), bound, "step %ld: norm %.17g vs ref %.17g", s, nf, nr);
        cr_expect_eq(bits_of64(nf), bits_of64(ne), "step %ld: norm %a, the host's exact sum gives %a", s, nf, ne);
        const struct {
            const char *what;
            const vector<float> &a, &b;
        } pairs[] = {{"weights", p2, p}, {"exp_avg", m2, ma}, {"exp_avg_sq", v2, va}, {"clipped gradients", g2, g}};
        for (const auto &q : pairs) {
            size_t diff = 0, first = P;
            for (size_t i = 0; i < P; i++)
                if (bits_of(q.a[i]) != bits_of(q.b[i]) && diff++ == 0) first = i;
            cr_expect_eq(diff, 0, "step %ld: %s differ from ref/adamw.c in %zu of %zu elements (first %zu: %.9g vs %.9g)",
                         s, q.what, diff, P, first, first < P ? q.a[first] : 0.0, first < P ? q.b[first] : 0.0);
        }
        cr_expect_eq(copy_errors(t.m, p2.data(), P, "after a step"), 0, "step %ld: the bf16 copy is not RNE", s);
    }
    cr_expect_geq(clipped, 2, "the steps must include clipped ones (%d)", clipped);
    cr_expect_leq(clipped, 4, "the steps must include unclipped ones (%d clipped of 6)", clipped);
    be->destroy(t.m);
    model_spec_free(&t.spec);
}

/* The norm kernels alone (adamw.cu's adamw_norm_kernel and adamw_clip_kernel, through the
 * step): on a model whose vocabulary is widened to 32768, so that P (1.1M) gives each of the
 * grid's 1024 x 256 threads four or five elements, gradients written straight into the buffer
 * (the CPU layer's device memory is the host's) and the update taken: the norm must be the
 * same bits as the host's one accumulator in index order (the threads', blocks' and final
 * merges are exact); a lone smallest subnormal at the last element gives exactly 2⁻¹⁴⁹; a NaN
 * there gives NaN, a −inf in the middle +inf (the trainer's divergence check). */
Test(fast_cpu_bits, adamw_norm_is_the_exact_sum_of_squares) {
    ModelConfig c;
    config_preset("tiny", &c);
    c.vocab_size = 32768;
    ModelSpec spec = {};
    cr_assert_eq(model_spec_build(&c, &spec), 0, "%s", vrl_last_error());
    const size_t P = spec.table.total;
    cr_assert_gt(P, (size_t)4 * ADAMW_NORM_BLOCKS * 256, "P = %zu must give every thread several elements", P);
    cr_log_info("P = %zu: %.2f elements per thread of the norm's grid", P, (double)P / (ADAMW_NORM_BLOCKS * 256));
    const Backend *be = &fast_backend_cuda_cpu;
    fast_cpu::FastModel *m = (fast_cpu::FastModel *)be->create(&spec, 2, 16);
    cr_assert(m, "%s", vrl_last_error());
    const AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    vector<float> g(P);
    /* random magnitudes over 2⁻³⁰ .. 2⁰, signs, and every 997th element a subnormal */
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < P; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const float u = (float)(x >> 40) * 0x1p-24f;
        g[i] = i % 997 == 0 ? float_of((uint32_t)(x & 0x7fffffu)) : ldexpf((x & 1) ? -u : u, -(int)((x >> 8) % 31));
    }
    be->zero_grad(m);
    memcpy(m->grads, g.data(), P * sizeof(float));
    double nf = be->step(m, &opt, 1e-3, 1), ne = exact_norm(g.data(), P);
    cr_expect_eq(bits_of64(nf), bits_of64(ne), "random gradient: norm %a, the host's exact sum gives %a", nf, ne);
    const struct {
        size_t at;
        float v;
        const char *what;
    } lone[] = {{P - 1, float_of(1), "the smallest subnormal"}, {P - 1, NAN, "NaN"}, {P / 2, -INFINITY, "-inf"}};
    for (const auto &l : lone) {
        be->zero_grad(m);
        m->grads[l.at] = l.v;
        nf = be->step(m, &opt, 1e-3, 2);
        if (isnan(l.v)) cr_expect(isnan(nf), "%s: norm %g", l.what, nf);
        else if (isinf(l.v)) cr_expect(isinf(nf) && nf > 0, "%s: norm %g", l.what, nf);
        else cr_expect_eq(nf, 0x1p-149, "%s alone: norm %a", l.what, nf);
    }
    be->destroy(m);
    model_spec_free(&spec);
}

/* The copy's rounding on special master weights: zero gradients and no decay leave each weight
 * as it is (m = v = 0: the update is −0), so the copy AdamW writes is the rounding of these. */
Test(fast_cpu_bits, adamw_copy_rounds_specials) {
    Tiny t;
    tiny_model(&t);
    const size_t P = t.P;
    vector<float> sp = special_values(false), p(P), p2(P);
    for (size_t i = 0; i < P; i++) p[i] = sp[i % sp.size()];
    fast_backend_cuda_cpu.set_state(t.m, p.data(), NULL, NULL);
    fast_backend_cuda_cpu.zero_grad(t.m);
    memset(t.m->params16, 0x5a, P * sizeof(bf16)); /* poison: AdamW must write every element */
    const AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0, .clip = 0};
    (void)fast_backend_cuda_cpu.step(t.m, &opt, 1e-3, 1);
    fast_backend_cuda_cpu.get_state(t.m, p2.data(), NULL, NULL, NULL);
    cr_expect(memcmp(p.data(), p2.data(), P * sizeof(float)) == 0, "the master weights moved");
    cr_expect_eq(copy_errors(t.m, p2.data(), P, "specials"), 0, "AdamW's bf16 copy of special values is not RNE");
    fast_backend_cuda_cpu.destroy(t.m);
    model_spec_free(&t.spec);
}

/* ------------------------------------------------------------------ the tables' alignment */

/* A trainable-λ ResFormer adds one-element tensors to the parameter table, which used to push
 * every later tensor off 16-byte alignment. The table pads each tensor's slot to PARAM_ALIGN
 * elements (common/model/params.h): every tensor of the fp32 master weights, the bf16 copy,
 * the gradient and both moments starts 16-byte aligned in fast/'s buffers; the training step
 * (forward, backward, AdamW) then launches every memory-bound kernel on its vector path; the
 * gaps are zero in all four buffers after the steps (no kernel writes them, AdamW keeps
 * zeros zero); the parameter count leaves them out. lm_head's gap is its rows past the
 * vocabulary, which the lm_head GEMMs use: values planted there change no bit of the loss
 * or the gradient. */
static void aligned_case(const char *variant, bool needs_gap) {
    ModelConfig c;
    config_preset("tiny", &c);
    /* head dim 16 (tiny's is 8): RoPE's vector path needs a whole bf16 pack in each half of
     * a head, as every real preset has (head dim 64 or more) */
    c.d_model = 32, c.d_ffn = 64;
    snprintf(c.preset, sizeof c.preset, "custom");
    ModelSpec spec = {};
    cr_assert_eq(model_spec_set_variant(&c, variant, "test", &spec), 0, "%s", vrl_last_error());
    const ParamTable *t = &spec.table;
    size_t count = 0, odd = 0;
    for (int k = 0; k < t->n; k++) count += t->p[k].numel, odd += t->p[k].numel % PARAM_ALIGN != 0;
    if (needs_gap) cr_assert_gt(odd, 0, "%s has no tensor whose size needs a gap: the test would check nothing", variant);
    cr_expect_eq(param_table_count(t), count, "the count is the tensors' elements");
    cr_expect_eq(t->total % PARAM_ALIGN, 0);
    const Backend *be = &fast_backend_cuda_cpu;
    fast_cpu::FastModel *m = (fast_cpu::FastModel *)be->create(&spec, 2, 16);
    cr_assert(m, "%s", vrl_last_error());
    for (int k = 0; k < t->n; k++) {
        const size_t o = t->p[k].offset;
        const void *at[5] = {m->params32 + o, m->params16 + o, m->grads + o, m->exp_avg + o, m->exp_avg_sq + o};
        for (const void *p : at)
            cr_expect_eq((uintptr_t)p % 16, 0, "%s (offset %zu) is not 16-byte aligned", t->p[k].name, o);
    }
    const size_t P = t->total;
    vector<float> p(P), g(P), ma(P), va(P);
    params_init_f32(t, 3, p.data());
    be->set_state(m, p.data(), NULL, NULL);
    vector<int32_t> tok(2 * 16);
    Rng r;
    rng_seed(&r, 9);
    const AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    const unsigned long s0 = fast_cpu::vec_scalar_launches;
    for (long s = 1; s <= 2; s++) {
        for (auto &x : tok) x = (int32_t)rng_below(&r, (uint64_t)spec.config.vocab_size);
        be->zero_grad(m);
        (void)backend_forward_backward_now(be, m, tok.data(), 1.0);
        cr_assert(isfinite(be->step(m, &opt, 1e-3, s)), "%s", vrl_last_error());
    }
    cr_expect_eq(fast_cpu::vec_scalar_launches - s0, 0, "%s: %lu launches of the step took the scalar path", variant,
                 fast_cpu::vec_scalar_launches - s0);
    be->get_state(m, p.data(), g.data(), ma.data(), va.data());
    long nonzero = 0;
    for (int k = 0; k < t->n; k++)
        for (size_t i = t->p[k].offset + t->p[k].numel; i < t->p[k].offset + t->p[k].slot; i++)
            nonzero += bits_of(p[i]) != 0 || bits_of(g[i]) != 0 || bits_of(ma[i]) != 0 || bits_of(va[i]) != 0;
    cr_expect_eq(nonzero, 0, "%ld gap elements are not +0 after two steps", nonzero);
    /* lm_head's slot is [Vp, d] and the GEMMs run over all Vp rows; values planted in the
     * rows past V must not reach the loss nor any gradient (the cross-entropy reads only the
     * V real columns and writes the pad columns' gradient as 0) */
    const ParamInfo *head = param_table_find(t, "lm_head.weight");
    cr_assert(head && head->slot >= param_padded(head->numel) + head->shape[1], "lm_head has no pad rows");
    double loss[2];
    vector<float> g0(P);
    for (int planted = 0; planted < 2; planted++) {
        if (planted)
            for (size_t i = head->offset + head->numel; i < head->offset + head->slot; i++) p[i] = 0.75f;
        be->set_state(m, p.data(), NULL, NULL);
        be->zero_grad(m);
        loss[planted] = backend_forward_backward_now(be, m, tok.data(), 1.0);
        be->get_state(m, NULL, planted ? g.data() : g0.data(), NULL, NULL);
    }
    cr_expect_eq(bits_of64(loss[0]), bits_of64(loss[1]), "planted pad rows change the loss: %.17g vs %.17g", loss[1],
                 loss[0]);
    size_t diff = 0;
    for (size_t i = 0; i < P; i++) diff += bits_of(g[i]) != bits_of(g0[i]);
    cr_expect_eq(diff, 0, "planted pad rows change %zu gradient elements", diff);
    be->destroy(m);
    model_spec_free(&spec);
}

Test(fast_cpu_bits, every_tensor_is_16_byte_aligned_with_a_trainable_lambda) {
    aligned_case("resformer:mode=learnable", true);
}
/* the hidden residual: the residual-stream kernels (stream.cu) on the vector path too */
Test(fast_cpu_bits, every_tensor_is_16_byte_aligned_with_the_hidden_residual) { aligned_case("hidden_residual", false); }
