/* exact_sumsq.h: Σ g² over float gradients summed EXACTLY, as an integer, so that the squared
 * gradient norm has the same bits however the sum is split: fast/adamw.cu's threads and
 * blocks, and with ZeRO-2 each rank's shard of the buckets (fast/zero.cuh), whose sizes
 * depend on the number of ranks (issue 40). A double sum rounds at every add, so two
 * groupings differ in the last bits; integer addition is associative, so every grouping
 * gives the same integer, rounded once to the nearest double at the end.
 *
 * The number. A float is g = ±m·2^k with an integer m < 2^24 and k = max(E, 1) − 150 for its
 * exponent field E in 1 .. 254 (E = 0: subnormal, k = −149). Its square m²·2^(2k) is the
 * integer m² < 2^48 placed at bit p = 2k + 298 = 2·max(E, 1) − 2 (0 .. 506) of a fixed-point
 * integer whose bit 0 is worth 2^−298, the square of the smallest subnormal: every finite
 * square, subnormals included, is exact there. The largest is below 2^256, i.e. below bit
 * 554, so a sum of n squares is below bit 554 + log2(n).
 *
 * The layout: uint64_t w[EXACT_SUMSQ_WORDS]
 *   w[0 .. 19]  limbs: limb j is a 32-bit digit worth 2^(32j − 298), 640 bits in all (room
 *               for 2^86 squares); each is held in a 64-bit word so that carries can wait;
 *   w[20]       how many of the terms were ±inf, w[21] how many were NaN (a finite float's
 *               square never overflows here, so these are the only non-finite cases).
 * exact_sumsq_add puts a value below 2^32 into each of three consecutive words (j = p/32,
 * j + 1, j + 2 <= 17), so a word takes 2^32 − 1 adds before it could overflow: at most
 * 2^32 − 1 terms per accumulator before exact_sumsq_normalize, which moves the carries up
 * (every limb < 2^32 after it; the value is below 2^640, so nothing leaves the top). Up to
 * 2^32 normalized accumulators can then be added word by word (exact_sumsq_merge) without
 * overflow, in any order, to the same words. exact_sumsq_round gives the normalized value
 * rounded once to nearest (ties to even) as a double: 0, or a normal double in 2^−298 ..
 * 2^342 (no underflow or overflow, so the one rounding is the only one); NaN if any term
 * was NaN, else +inf if any was infinite (the trainer's divergence check needs a
 * non-finite norm).
 *
 * The same functions serve the kernels (nvcc: __host__ __device__), the host's merge of the
 * ranks' sums (adamw.cu) and the C unit test (conformance/test_exact_sumsq.c). */
#ifndef VRL_FAST_EXACT_SUMSQ_H
#define VRL_FAST_EXACT_SUMSQ_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define EXACT_SUMSQ_FN static inline __host__ __device__
#else
#define EXACT_SUMSQ_FN static inline
#endif

#define EXACT_SUMSQ_LIMBS 20 /* w[0 .. 19]: 32-bit digits, limb j worth 2^(32j − 298) */
#define EXACT_SUMSQ_INF 20   /* w[20]: count of infinite terms */
#define EXACT_SUMSQ_NAN 21   /* w[21]: count of NaN terms */
#define EXACT_SUMSQ_WORDS 22
#define EXACT_SUMSQ_BIT0 (-298) /* bit 0 of the integer is worth 2^-298 */

EXACT_SUMSQ_FN void exact_sumsq_clear(uint64_t *w) {
    for (int k = 0; k < EXACT_SUMSQ_WORDS; k++) w[k] = 0;
}

/* w += g² (exact). */
EXACT_SUMSQ_FN void exact_sumsq_add(uint64_t *w, float g) {
    uint32_t b;
    memcpy(&b, &g, sizeof b);
    const uint32_t e = (b >> 23) & 0xffu, f = b & 0x7fffffu;
    if (e == 0xffu) { /* inf (f = 0) or NaN */
        w[f ? EXACT_SUMSQ_NAN : EXACT_SUMSQ_INF] += 1;
        return;
    }
    const uint64_t m = e ? (f | 0x800000u) : f; /* |g| = m·2^(max(e,1) − 150) */
    if (m == 0) return;                          /* ±0 */
    const uint64_t sq = m * m;                   /* < 2^48, exact */
    const int p = 2 * (int)(e ? e : 1) - 2;      /* sq's bit 0 lands on bit p (0 .. 506) */
    const int j = p >> 5, s = p & 31;
    /* sq·2^s < 2^79, cut into three 32-bit digits at limbs j, j+1, j+2 */
    w[j] += (sq << s) & 0xffffffffu;
    const uint64_t up = sq >> (32 - s); /* (sq·2^s) >> 32 < 2^47; a shift of 32 is defined on 64 bits */
    w[j + 1] += up & 0xffffffffu;
    w[j + 2] += up >> 32;
}

/* Carries up: afterwards every limb is < 2^32 and the value is unchanged. */
EXACT_SUMSQ_FN void exact_sumsq_normalize(uint64_t *w) {
    uint64_t carry = 0; /* < 2^32 + 2 */
    for (int k = 0; k < EXACT_SUMSQ_LIMBS; k++) {
        const uint64_t low = (w[k] & 0xffffffffu) + carry; /* < 2^34: no overflow */
        carry = (w[k] >> 32) + (low >> 32);
        w[k] = low & 0xffffffffu;
    }
}

/* w += v, word by word (both normalized, or within the counts above). */
EXACT_SUMSQ_FN void exact_sumsq_merge(uint64_t *w, const uint64_t *v) {
    for (int k = 0; k < EXACT_SUMSQ_WORDS; k++) w[k] += v[k];
}

EXACT_SUMSQ_FN double exact_sumsq_from_bits(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* The normalized sum w rounded to the nearest double, ties to even (see the top). */
EXACT_SUMSQ_FN double exact_sumsq_round(const uint64_t *w) {
    if (w[EXACT_SUMSQ_NAN]) return exact_sumsq_from_bits(0x7ff8000000000000ull);
    if (w[EXACT_SUMSQ_INF]) return exact_sumsq_from_bits(0x7ff0000000000000ull);
    int i = EXACT_SUMSQ_LIMBS - 1;
    while (i >= 0 && w[i] == 0) i--;
    if (i < 0) return 0.0;
    /* the 64 bits from the highest set bit down, and whether any bit below them is set */
    const uint64_t x = (w[i] << 32) | (i >= 1 ? w[i - 1] : 0), y = i >= 2 ? w[i - 2] : 0;
    int lz = 0; /* 0 .. 31: w[i] is a nonzero 32-bit digit */
    while (!((x << lz) >> 63)) lz++;
    const uint64_t top = lz ? (x << lz) | (y >> (32 - lz)) : x;
    int sticky = (lz ? y & ((1ull << (32 - lz)) - 1) : y) != 0;
    for (int k = i - 3; k >= 0 && !sticky; k--) sticky = w[k] != 0;
    /* top's bit 63 is the integer's bit 32i + 31 − lz; the double keeps top's bits 63 .. 11 */
    uint64_t mant = top >> 11;
    const uint64_t rest = top & 0x7ffu, half = 0x400u;
    if (rest > half || (rest == half && (sticky || (mant & 1)))) mant++; /* 2^53 at most: exact */
    return ldexp((double)mant, 32 * i + 31 - lz - 52 + EXACT_SUMSQ_BIT0);
}

#endif
