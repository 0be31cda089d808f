/* exp_shifted.h: e^x for x <= 0, in plain IEEE arithmetic (no library call): double for
 * the float64 reference and the cross-entropy, float for the float32 reference.
 *
 * Used wherever the reference exponentiates a non-positive number in a hot loop: the
 * cross-entropy's and attention's max-shifted logits and the sigmoid's e^-|g| (ops.c,
 * attn_ops.c). Plain arithmetic lets the compiler vectorise the calling loops, and with
 * -ffp-contract=off every build (x86-64-v2, -march=native, any thread count) gives the
 * same bits; glibc's scalar exp() was 45% of a training step at the 50277-token vocabulary
 * (`perf`, d = 64) and glibc's expf 12% of a `small` step, with SwiGLU, before this.
 * Since the float version (issue 26) the float32 reference's sigmoid and softmax no longer
 * convert to double: their results changed in the last bits, the float64 ones did not. */
#ifndef VRL_REF_EXP_SHIFTED_H
#define VRL_REF_EXP_SHIFTED_H

#include <stdint.h>
#include <string.h>

/* exp(x) for x <= 0 (up to rounding): x = k ln2 + r with k = round(x / ln2) and
 * |r| <= ln2 / 2 (Cody and Waite: ln2 split in a high part with trailing zero bits, so
 * k * LN2_HI is exact), e^r by its Taylor series, times 2^k built in the exponent field.
 * Below -708 (2^k would leave the normal range) the result is 0: exp(-708) = 3e-308 does
 * not move a sum that holds exp(0) = 1, nor a float gradient. A NaN stays NaN (so a NaN
 * loss is still seen). The range test is a bit mask, not a branch, so the loops vectorise. */
#define LN2_HI_ 6.93147180369123816490e-01
#define LN2_LO_ 1.90821492927058770002e-10
static inline double exp_reduce_(double x, double *k_out) { /* r; k in *k_out */
    const double LOG2E = 1.4426950408889634074, ROUND = 6755399441055744.0; /* 1.5 * 2^52 */
    const double k = (x * LOG2E + ROUND) - ROUND; /* round(x / ln2), exact below 2^51 */
    *k_out = k;
    return (x - k * LN2_HI_) - k * LN2_LO_;
}
static inline double exp_scale_(double x, double k, double p) { /* p · 2^k, 0 below -708 */
    const double t = k + 6755399441055744.0; /* k in the low bits of t's significand */
    uint64_t tb; /* unsigned: modular arithmetic, defined for any x (a NaN, -inf) */
    memcpy(&tb, &t, sizeof tb);
    const uint64_t ki = tb - 0x4338000000000000ULL; /* k mod 2^64 (bits of ROUND subtracted) */
    const uint64_t eb = (ki + 1023) << 52;         /* the exponent field of 2^k, k >= -1022 */
    double scale;
    memcpy(&scale, &eb, sizeof scale);
    const double v = p * scale;
    uint64_t vb;
    memcpy(&vb, &v, sizeof vb);
    vb &= (uint64_t)0 - (uint64_t)!(x < -708.0); /* all ones, or 0 below the range */
    double out;
    memcpy(&out, &vb, sizeof out);
    return out;
}

/* Double precision: the series to r^13 (next term < 5e-18). Error about 1 ulp. */
static inline double exp_shifted(double x) {
    double k;
    const double r = exp_reduce_(x, &k);
    double p = 1.0 / 6227020800.0; /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return exp_scale_(x, k, p);
}

/* Single precision, in float arithmetic only, so a vector holds 8 lanes (AVX2) where the
 * double version holds 4. For every float x in [-104, 0] the result is within 1 float ulp
 * of the correctly rounded e^x, subnormal results included (every such float checked once
 * against glibc's double exp rounded to float: at most 0.76 ulp from e^x where the result is
 * normal, 0.14% of them not the correctly rounded float; test_exp checks every 16th).
 *
 * - k = round(x / ln2) by the 1.5 * 2^23 trick (exact below 2^22); x = k ln2 + r.
 * - ln2 = LN2_HI + LN2_LO with LN2_HI of 15 significant bits, so k * LN2_HI (|k| <= 150:
 *   8 bits) is exact, and so is r_hi = x - k * LN2_HI: where k != 0, |x| > 0.34, so x and
 *   k * LN2_HI are multiples of 2^-25 and their difference is below 0.5 (24 bits).
 *   r = r_hi - k * LN2_LO is rounded, but r only feeds the small terms below.
 * - e^r = 1 + r + r^2 q(r), q the Taylor series from 1/2 to r^5/7! (next term r^8/8! <
 *   6e-9 for |r| <= 0.35). The leading 1 + r_hi is split exactly into a + e (Fast2Sum,
 *   |r_hi| < 1), so the sum p = a + (r^2 q - k LN2_LO + e) rounds once at the end instead
 *   of twice (as 1 + (r + r^2 q): up to 1.02 ulp from e^x, 0.85% not correctly rounded).
 * - 2^k in two exact steps: p * 2^(k+64), a normal number for k >= -190, then * 2^-64,
 *   which rounds only when the result is subnormal, so a subnormal result rounds once.
 *   Below -104 (e^x < 2^-150, which rounds to 0) the result is 0 by a bit mask; -inf
 *   gives 0, a NaN stays NaN, e^0 = e^-0 = 1 exactly. */
static inline float exp_shifted_float(float x) {
    const float LOG2E = 1.44269502f, ROUND = 12582912.0f; /* 1.5 * 2^23 */
    const float LN2_HI = 0.693145751953125f, LN2_LO = 1.42860677e-6f; /* 0x3f317200, 0x35bfbe8e */
    const float t = x * LOG2E + ROUND; /* k in the low bits of t's significand */
    const float k = t - ROUND;
    const float r_hi = x - k * LN2_HI; /* exact */
    const float c = k * LN2_LO;
    const float r = r_hi - c;
    const float a = 1.0f + r_hi;
    const float e = r_hi - (a - 1.0f); /* 1 + r_hi = a + e exactly */
    float q = 1.0f / 5040.0f;
    q = q * r + 1.0f / 720.0f;
    q = q * r + 1.0f / 120.0f;
    q = q * r + 1.0f / 24.0f;
    q = q * r + 1.0f / 6.0f;
    q = q * r + 0.5f;
    const float p = a + ((r * r * q - c) + e);
    uint32_t tb; /* unsigned: modular arithmetic, defined for any x (a NaN, -inf) */
    memcpy(&tb, &t, sizeof tb);
    const uint32_t sb = (tb - 0x4B400000u + 64u + 127u) << 23; /* 2^(k+64): k's bits, biased */
    float scale;
    memcpy(&scale, &sb, sizeof scale);
    const float v = (p * scale) * 0x1p-64f;
    uint32_t vb;
    memcpy(&vb, &v, sizeof vb);
    vb &= 0u - (uint32_t)!(x < -104.0f); /* all ones, or 0 below the range */
    float out;
    memcpy(&out, &vb, sizeof out);
    return out;
}

/* e^x (x <= 0) in the reference's precision, for an argument of type `real`: what a loop
 * storing `real` results calls. */
#if VRL_FP64
#define exp_shifted_real(x) exp_shifted(x)
#else
#define exp_shifted_real(x) exp_shifted_float(x)
#endif

#endif
