/* test_exact_sumsq.c: fast/exact_sumsq.h, the exact sum of squares behind fast/'s gradient
 * norm (issue 40), on the host, where its functions are plain C.
 *
 * Story: sums whose double result depends on the order of the adds (2^60 and a thousand 1s)
 * give one result in every order, and it is the exact sum rounded once; the rounding is to
 * nearest with ties to even, a tie broken by a square 358 bits below it (the smallest
 * subnormal's), and a carry into the next power of two; normalize carries through full
 * digits and from a word at its maximum; subnormal squares are exact, and so
 * is the largest float's, 2^20 times over; NaN wins over inf, inf over any finite sum; the
 * integer itself, for 3,000 random floats of every exponent and a run of 70,000 equal
 * all-ones significands (carries), equals a bit-by-bit binary adder written here, and cut
 * into pieces merged in reverse order gives the same words; random short sums whose exact
 * value fits a long double's 64-bit significand round to what the long double rounds to. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fast/exact_sumsq.h"

static uint64_t seed_state = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) { /* xorshift64: a fixed sequence */
    seed_state ^= seed_state << 13, seed_state ^= seed_state >> 7, seed_state ^= seed_state << 17;
    return (uint32_t)(seed_state >> 32);
}

static double exact_of(const float *g, size_t n) {
    uint64_t w[EXACT_SUMSQ_WORDS];
    exact_sumsq_clear(w);
    for (size_t i = 0; i < n; i++) exact_sumsq_add(w, g[i]);
    exact_sumsq_normalize(w);
    return exact_sumsq_round(w);
}

static uint64_t bits_of(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* 2^30 (square 2^60) and a thousand 1s: in double, 2^60 first swallows every 1 (half its ulp
 * is 128), the 1s first add to 1000 and then round to 2^60 + 1024; the exact sum is
 * 2^60 + 1000, whose nearest double is 2^60 + 1024, whatever the order. */
Test(exact_sumsq, one_result_where_double_sums_depend_on_the_order) {
    enum { N = 1001 };
    float big_first[N], big_last[N];
    for (int i = 0; i < N; i++) big_first[i] = big_last[i] = 1.0f;
    big_first[0] = big_last[N - 1] = 0x1p30f;
    double a = 0, b = 0;
    for (int i = 0; i < N; i++) a += (double)big_first[i] * big_first[i];
    for (int i = 0; i < N; i++) b += (double)big_last[i] * big_last[i];
    cr_assert_neq(bits_of(a), bits_of(b), "the premise: double sums in the two orders differ (%.17g, %.17g)", a, b);
    const double x = exact_of(big_first, N), y = exact_of(big_last, N);
    cr_expect_eq(bits_of(x), bits_of(0x1p60 + 1024), "big first: %.17g", x);
    cr_expect_eq(bits_of(y), bits_of(0x1p60 + 1024), "big last: %.17g", y);
}

/* 2^60 + k as squares: 2^30, then k 1s. */
static double big_plus_ones(int k, float extra) {
    float g[600];
    g[0] = 0x1p30f;
    for (int i = 1; i <= k; i++) g[i] = 1.0f;
    g[k + 1] = extra;
    return exact_of(g, (size_t)k + 2);
}

/* Around 2^60 the double's ulp is 256. */
Test(exact_sumsq, rounds_to_nearest_ties_to_even) {
    cr_expect_eq(big_plus_ones(127, 0), 0x1p60, "127 below half an ulp: down");
    cr_expect_eq(big_plus_ones(129, 0), 0x1p60 + 256, "129 above half an ulp: up");
    cr_expect_eq(big_plus_ones(128, 0), 0x1p60, "a tie, to the even 2^60");
    cr_expect_eq(big_plus_ones(384, 0), 0x1p60 + 512, "a tie from an odd significand, up to even");
    /* the tie 2^60 + 128 plus the smallest subnormal's square 2^-298: just above the tie */
    cr_expect_eq(big_plus_ones(128, 0x1p-149f), 0x1p60 + 256, "a bit 358 places below the tie breaks it upwards");
}

/* r = 2^61 − d written as squares of floats: 2^30, 2^30 − 64 (2^60 − 2^37 + 2^12), then the
 * remainder (< 2^38) greedily as squares of integers below 2^19 (exact floats). */
static size_t below_2_61(uint64_t d, float *g) {
    size_t n = 0;
    g[n++] = 0x1p30f;
    g[n++] = 0x1p30f - 64.0f;
    uint64_t r = ((uint64_t)1 << 37) - ((uint64_t)1 << 12) - d;
    while (r) {
        uint64_t x = (uint64_t)sqrt((double)r);
        while (x * x > r) x--;
        while ((x + 1) * (x + 1) <= r) x++;
        g[n++] = (float)x;
        r -= x * x;
    }
    return n;
}

/* 2^61 − 127 = (2^53 − 1)·2^8 + 129: rounds up, the 53 ones carry into 2^61; 2^61 − 129 down. */
Test(exact_sumsq, rounding_up_carries_into_the_next_power_of_two) {
    float g[64];
    size_t n = below_2_61(127, g);
    cr_expect_eq(exact_of(g, n), 0x1p61, "2^61 - 127 (%zu squares)", n);
    n = below_2_61(129, g);
    cr_expect_eq(exact_of(g, n), 0x1p61 - 256, "2^61 - 129 (%zu squares)", n);
}

Test(exact_sumsq, subnormal_and_largest_squares_are_exact) {
    const float tiny = 0x1p-149f, big_sub = 0x1.fffffcp-127f; /* smallest and largest subnormals */
    cr_expect_eq(exact_of(&tiny, 1), 0x1p-298, "(2^-149)^2");
    const float neg = -big_sub;
    cr_expect_eq(exact_of(&neg, 1), (double)big_sub * big_sub, "the largest subnormal's square (46 bits)");
    enum { M = 1 << 20 };
    static float many[M];
    for (int i = 0; i < M; i++) many[i] = tiny;
    cr_expect_eq(exact_of(many, M), 0x1p-278, "2^20 times 2^-298");
    for (int i = 0; i < M; i++) many[i] = i % 2 ? FLT_MAX : -FLT_MAX;
    const double top = (double)FLT_MAX * FLT_MAX; /* (2^24 − 1)^2·2^208, exact in double */
    cr_expect_eq(exact_of(many, 1), top, "FLT_MAX^2");
    cr_expect_eq(exact_of(many, M), ldexp(top, 20), "2^20 times FLT_MAX^2");
    const float ones[3] = {1.0f, 0x1p-149f, 0.0f};
    cr_expect_eq(exact_of(ones, 3), 1.0, "1 + 2^-298 is 1 in double");
    const float zeros[2] = {0.0f, -0.0f};
    cr_expect_eq(bits_of(exact_of(zeros, 2)), bits_of(0.0), "+0 and -0: +0");
    cr_expect_eq(bits_of(exact_of(zeros, 0)), bits_of(0.0), "nothing: +0");
}

Test(exact_sumsq, nan_and_inf_make_the_sum_non_finite) {
    const float a[4] = {1.0f, NAN, 2.0f, 3.0f}, b[3] = {1.0f, -INFINITY, 2.0f}, c[3] = {INFINITY, NAN, 1.0f};
    cr_expect(isnan(exact_of(a, 4)), "a NaN among finite terms");
    const double ib = exact_of(b, 3);
    cr_expect(isinf(ib) && ib > 0, "-inf squared: +inf, got %g", ib);
    cr_expect(isnan(exact_of(c, 3)), "inf and NaN: NaN");
    /* through a merge: the other accumulator's NaN count is kept by normalize */
    uint64_t w[EXACT_SUMSQ_WORDS], v[EXACT_SUMSQ_WORDS];
    exact_sumsq_clear(w), exact_sumsq_clear(v);
    exact_sumsq_add(w, 5.0f), exact_sumsq_add(v, -NAN);
    exact_sumsq_normalize(w), exact_sumsq_normalize(v);
    exact_sumsq_merge(w, v);
    exact_sumsq_normalize(w);
    cr_expect(isnan(exact_sumsq_round(w)), "a NaN from a merged accumulator");
}

/* normalize on words set by hand: a carry into a full digit (0xffffffff) ripples on, and a
 * word at its maximum 2^64 − 1 loses nothing. */
Test(exact_sumsq, normalize_carries_through_full_digits) {
    uint64_t w[EXACT_SUMSQ_WORDS];
    exact_sumsq_clear(w);
    w[0] = (uint64_t)1 << 32, w[1] = 0xffffffffu; /* 2^32 + (2^32 − 1)·2^32 = 2^64 */
    exact_sumsq_normalize(w);
    cr_expect(w[0] == 0 && w[1] == 0 && w[2] == 1 && w[3] == 0, "2^64: %#llx %#llx %#llx %#llx",
              (unsigned long long)w[0], (unsigned long long)w[1], (unsigned long long)w[2], (unsigned long long)w[3]);
    exact_sumsq_clear(w);
    w[5] = UINT64_MAX, w[6] = 0xffffffffu; /* (2^64 − 1) + (2^32 − 1)·2^32 = 2^65 − 2^32 − 1, at limb 5 */
    exact_sumsq_normalize(w);
    cr_expect(w[5] == 0xffffffffu && w[6] == 0xfffffffeu && w[7] == 1 && w[8] == 0, "%#llx %#llx %#llx %#llx",
              (unsigned long long)w[5], (unsigned long long)w[6], (unsigned long long)w[7], (unsigned long long)w[8]);
    cr_expect_eq(exact_sumsq_round(w), ldexp(0x1p65 - 0x1p32 - 1, 32 * 5 + EXACT_SUMSQ_BIT0), "its value");
}

/* The oracle: the integer as one byte per bit, m² added bit by bit with a ripple carry. */
enum { ORACLE_BITS = EXACT_SUMSQ_LIMBS * 32 };
static void oracle_add(uint8_t *bit, float g) {
    uint32_t b;
    memcpy(&b, &g, sizeof b);
    const uint32_t e = (b >> 23) & 0xff;
    const uint64_t m = e ? (b & 0x7fffff) | 0x800000 : (b & 0x7fffff);
    /* |g| = m·2^(max(e,1) − 150), so g² = m²·2^(2·max(e,1) − 300) = m² at bit 2·max(e,1) − 2 */
    const int at = 2 * (e ? (int)e : 1) - 2;
    const uint64_t sq = m * m;
    for (int k = 0; k < 64; k++) {
        if (!((sq >> k) & 1)) continue;
        int q = at + k;
        while (bit[q]) bit[q++] = 0;
        bit[q] = 1;
    }
}

static void expect_words_equal_oracle(const uint64_t *w, const uint8_t *bit, const char *what) {
    long bad = 0;
    for (int j = 0; j < EXACT_SUMSQ_LIMBS; j++) {
        cr_expect_lt(w[j], (uint64_t)1 << 32, "%s: limb %d is not normalized (%#llx)", what, j, (unsigned long long)w[j]);
        for (int b = 0; b < 32; b++) bad += ((w[j] >> b) & 1) != bit[32 * j + b];
    }
    cr_expect_eq(bad, 0, "%s: %ld bits differ from the bit-by-bit adder", what, bad);
}

static float random_finite(void) {
    uint32_t b = next_u32();
    if (((b >> 23) & 0xff) == 0xff) b ^= 0x40000000u; /* no inf or NaN here */
    float g;
    memcpy(&g, &b, sizeof g);
    return g;
}

Test(exact_sumsq, integer_matches_a_bit_by_bit_adder_in_any_split) {
    enum { N = 3000, RUN = 70000 };
    static float g[N + RUN];
    for (int i = 0; i < N; i++) g[i] = random_finite();
    /* all-ones significands at one exponent: each word of the limbs fills and carries */
    for (int i = 0; i < RUN; i++) g[N + i] = 0x1.fffffep+40f;
    static uint8_t bit[ORACLE_BITS + 64];
    memset(bit, 0, sizeof bit);
    uint64_t whole[EXACT_SUMSQ_WORDS];
    exact_sumsq_clear(whole);
    for (int i = 0; i < N + RUN; i++) exact_sumsq_add(whole, g[i]), oracle_add(bit, g[i]);
    exact_sumsq_normalize(whole);
    expect_words_equal_oracle(whole, bit, "one accumulator");
    for (int k = ORACLE_BITS; k < ORACLE_BITS + 64; k++) cr_expect_eq(bit[k], 0, "the oracle overflowed at bit %d", k);
    /* random pieces, each normalized, merged last piece first */
    for (int trial = 0; trial < 5; trial++) {
        enum { PIECES = 7 };
        size_t cut[PIECES + 1];
        cut[0] = 0, cut[PIECES] = N + RUN;
        for (int p = 1; p < PIECES; p++) cut[p] = cut[p - 1] + next_u32() % ((N + RUN - cut[p - 1]) / 2 + 1);
        uint64_t piece[PIECES][EXACT_SUMSQ_WORDS], merged[EXACT_SUMSQ_WORDS];
        for (int p = 0; p < PIECES; p++) {
            exact_sumsq_clear(piece[p]);
            for (size_t i = cut[p]; i < cut[p + 1]; i++) exact_sumsq_add(piece[p], g[i]);
            exact_sumsq_normalize(piece[p]);
        }
        exact_sumsq_clear(merged);
        for (int p = PIECES - 1; p >= 0; p--) exact_sumsq_merge(merged, piece[p]);
        exact_sumsq_normalize(merged);
        for (int k = 0; k < EXACT_SUMSQ_WORDS; k++)
            cr_expect_eq(merged[k], whole[k], "trial %d: word %d differs from the one accumulator's", trial, k);
        cr_expect_eq(bits_of(exact_sumsq_round(merged)), bits_of(exact_sumsq_round(whole)), "trial %d", trial);
    }
}

/* Up to 8 floats with exponents within 4 of each other: their squares are multiples of
 * 2^(2e0 − 46) below 2^(2e0 + 11) in all, a 57-bit integer, which a long double (64-bit
 * significand on x86) holds exactly; converting it to double is then the one rounding. */
Test(exact_sumsq, short_sums_round_as_an_exact_long_double_does) {
    if (LDBL_MANT_DIG < 64) cr_skip_test("long double has a %d-bit significand here", LDBL_MANT_DIG);
    for (int trial = 0; trial < 20000; trial++) {
        float g[8];
        const int n = 1 + (int)(next_u32() % 8), e0 = (int)(next_u32() % 240) - 120;
        long double s = 0;
        for (int i = 0; i < n; i++) {
            const float u = 1.0f + (float)(next_u32() >> 9) * 0x1p-23f; /* [1, 2): 24-bit significand */
            g[i] = ldexpf(next_u32() & 1 ? -u : u, e0 + (int)(next_u32() % 4));
            s += (long double)g[i] * g[i];
        }
        const double want = (double)s, got = exact_of(g, (size_t)n);
        cr_assert_eq(bits_of(got), bits_of(want), "trial %d (%d terms near 2^%d): %a, the long double %a", trial, n,
                     2 * e0, got, want);
    }
}
