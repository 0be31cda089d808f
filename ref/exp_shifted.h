/* exp_shifted.h: e^x for x <= 0, in plain IEEE double arithmetic (no library call).
 *
 * Used wherever the reference exponentiates a non-positive number in a hot loop: the
 * cross-entropy's and attention's max-shifted logits and the sigmoid's e^-|g| (ops.c,
 * attn_ops.c). Plain arithmetic lets the compiler vectorise the calling loops, and with
 * -ffp-contract=off every build (x86-64-v2, -march=native, any thread count) gives the
 * same bits; glibc's scalar exp() was 45% of a training step at the 50277-token vocabulary
 * (`perf`, d = 64) and glibc's expf 12% of a `small` step, with SwiGLU, before this. */
#ifndef VRL_REF_EXP_SHIFTED_H
#define VRL_REF_EXP_SHIFTED_H

#include <stdint.h>
#include <string.h>

/* exp(x) for x <= 0 (up to rounding): x = k ln2 + r with k = round(x / ln2) and
 * |r| <= ln2 / 2 (Cody and Waite: ln2 split in a high part with trailing zero bits, so
 * k * LN2_HI is exact), e^r by its Taylor series (the caller's polynomial in r), times 2^k
 * built in the exponent field. Below -708 (2^k would leave the normal range) the result
 * is 0: exp(-708) = 3e-308 does not move a sum that holds exp(0) = 1, nor a float
 * gradient. A NaN stays NaN (so a NaN loss is still seen). The range test is a bit mask,
 * not a branch, so the loops vectorise. */
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

/* The series' last terms, Horner from the r^7 coefficient p (1/5040 plus, for the longer
 * series, the higher terms times r): p·r^7 + r^6/720 + ... + r + 1. */
static inline double exp_series_low_(double p, double r) {
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    return p * r + 1.0;
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
    p = exp_series_low_(p, r);
    return exp_scale_(x, k, p);
}

/* For a result rounded to float: the series to r^7 (next term r^8/8! < 6e-9 relative,
 * under half a float ulp), still in double. Rounded to float it is within 1 float ulp of
 * e^x (every float of [-103, 0] checked once; test_exp checks every 64th), at half the
 * polynomial. */
static inline double exp_shifted_for_float(double x) {
    double k;
    const double r = exp_reduce_(x, &k);
    const double p = exp_series_low_(1.0 / 5040.0, r);
    return exp_scale_(x, k, p);
}

/* e^x (x <= 0) in the reference's precision: what a loop storing `real` results calls. */
#if VRL_FP64
#define exp_shifted_real(x) exp_shifted(x)
#else
#define exp_shifted_real(x) ((float)exp_shifted_for_float(x))
#endif

#endif
