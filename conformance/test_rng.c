/* test_rng.c: the xoshiro256** generator: reference output, determinism, independent
 * streams, exact state round trip, and loose distribution checks with bounds derived
 * from the sample size (5 standard errors: a false failure has probability < 1e-6). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "common/base/rng.h"

/* The published algorithms, written out again here (Vigna, prng.di.unimi.it). */
static uint64_t ref_splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint64_t ref_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t ref_next(uint64_t s[4]) {
    uint64_t r = ref_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = ref_rotl(s[3], 45);
    return r;
}

Test(rng, matches_reference) {
    Rng r;
    rng_seed(&r, 0);
    /* splitmix64's first output from 0 is the well-known 0xe220a8397b1dcdaf */
    cr_assert_eq(r.s[0], 0xe220a8397b1dcdafULL);
    uint64_t x = 12345, s[4];
    for (int i = 0; i < 4; i++) s[i] = ref_splitmix(&x);
    rng_seed(&r, 12345);
    for (int i = 0; i < 1000; i++) cr_assert_eq(rng_u64(&r), ref_next(s), "output %d differs", i);
}

Test(rng, deterministic) {
    Rng a, b, c;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    rng_seed(&c, 43);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = rng_u64(&a);
        cr_assert_eq(x, rng_u64(&b));
        differ += x != rng_u64(&c);
    }
    cr_assert_eq(differ, 1000, "seeds 42 and 43 share %d outputs", 1000 - differ);
}

Test(rng, streams_independent) {
    /* First outputs of 64 streams of one seed are distinct (a collision has p ~ 1e-16). */
    uint64_t first[64];
    for (int i = 0; i < 64; i++) {
        Rng r;
        rng_seed_stream(&r, 7, (uint64_t)i);
        first[i] = rng_u64(&r);
        for (int j = 0; j < i; j++) cr_assert_neq(first[i], first[j], "streams %d and %d start alike", i, j);
    }
    /* Adjacent streams are uncorrelated: Pearson r of n pairs has SE 1/sqrt(n). */
    const int n = 200000;
    Rng a, b;
    rng_seed_stream(&a, 7, 1);
    rng_seed_stream(&b, 7, 2);
    double sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        double x = rng_uniform(&a), y = rng_uniform(&b);
        sa += x, sb += y, sab += x * y, saa += x * x, sbb += y * y;
    }
    double cov = sab / n - sa / n * sb / n, r = cov / sqrt((saa / n - sa * sa / n / n) * (sbb / n - sb * sb / n / n));
    cr_assert(fabs(r) < 5.0 / sqrt(n), "stream correlation %g", r);
}

Test(rng, state_round_trip) {
    Rng a;
    rng_seed(&a, 99);
    for (int i = 0; i < 17; i++) rng_normal(&a);
    Rng saved;
    memcpy(&saved, &a, sizeof a); /* what the training state stores: the four words */
    for (int i = 0; i < 100; i++) {
        double x = rng_normal(&a), y = rng_normal(&saved);
        cr_assert_eq(memcmp(&x, &y, sizeof x), 0, "draw %d differs after restore", i);
    }
}

Test(rng, normal_moments) {
    /* n = 1e6: SE(mean) = 1e-3, SE(var) = sqrt(2/n) = 1.41e-3; bounds are 5 SE. */
    const int n = 1000000;
    Rng r;
    rng_seed(&r, 2024);
    double s = 0, ss = 0;
    for (int i = 0; i < n; i++) {
        double x = rng_normal(&r);
        cr_assert(isfinite(x));
        s += x, ss += x * x;
    }
    double mean = s / n, var = ss / n - mean * mean;
    cr_assert(fabs(mean) < 5e-3, "mean %g", mean);
    cr_assert(fabs(var - 1) < 7.1e-3, "variance %g", var);
}

Test(rng, uniform_and_below) {
    Rng r;
    rng_seed(&r, 5);
    for (int i = 0; i < 100000; i++) {
        double u = rng_uniform(&r);
        cr_assert(u >= 0 && u < 1);
    }
    const uint64_t ns[] = {1, 2, 3, 1000, (1ULL << 63) + 1, UINT64_MAX};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int i = 0; i < 10000; i++) cr_assert_lt(rng_below(&r, ns[k]), ns[k]);
    /* 7 buckets, 70000 draws: each count ~ Binomial(70000, 1/7), sd 92.6; 5 sd = 463. */
    int count[7] = {0};
    for (int i = 0; i < 70000; i++) count[rng_below(&r, 7)]++;
    for (int b = 0; b < 7; b++) cr_assert(abs(count[b] - 10000) < 463, "bucket %d: %d", b, count[b]);
}

/* Fisher-Yates written out again from the published generator (splitmix64 seeding,
 * xoshiro256**, rejection sampling for an unbiased index), independent of rng.c. */
static void ref_permutation(uint64_t seed, uint64_t *a, uint64_t n) {
    uint64_t x = seed, s[4];
    for (int i = 0; i < 4; i++) s[i] = ref_splitmix(&x);
    for (uint64_t i = 0; i < n; i++) a[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        const uint64_t limit = UINT64_MAX - UINT64_MAX % i;
        uint64_t v;
        do v = ref_next(s);
        while (v >= limit);
        const uint64_t j = v % i, t = a[i - 1];
        a[i - 1] = a[j], a[j] = t;
    }
}

/* The loaders' epoch orders (loader.c, mixture.c) are rng_permutation: a change here
 * would silently reorder every existing shard, so the draw order is pinned. */
Test(rng, permutation) {
    /* a known permutation for a fixed seed, frozen */
    const uint64_t known[10] = {5, 4, 6, 0, 2, 9, 7, 1, 3, 8};
    uint64_t a[1000], b[1000];
    Rng r;
    rng_seed(&r, 2024);
    rng_permutation(&r, a, 10);
    for (int i = 0; i < 10; i++) cr_assert_eq(a[i], known[i], "seed 2024, position %d: %llu, expected %llu", i,
                                               (unsigned long long)a[i], (unsigned long long)known[i]);
    const uint64_t ns[] = {0, 1, 2, 3, 10, 1000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (uint64_t seed = 0; seed < 20; seed++) {
            const uint64_t n = ns[k];
            /* the same order as the independent reference */
            rng_seed(&r, seed);
            rng_permutation(&r, a, n);
            ref_permutation(seed, b, n);
            cr_assert_eq(memcmp(a, b, n * sizeof *a), 0, "n %llu seed %llu differs from the reference",
                         (unsigned long long)n, (unsigned long long)seed);
            /* a permutation: every index exactly once */
            unsigned char seen[1000] = {0};
            for (uint64_t i = 0; i < n; i++) {
                cr_assert_lt(a[i], n);
                cr_assert_eq(seen[a[i]], 0, "n %llu seed %llu: %llu twice", (unsigned long long)n,
                             (unsigned long long)seed, (unsigned long long)a[i]);
                seen[a[i]] = 1;
            }
            /* same seed, same order; rng_shuffle_u64 of the identity is the same draw */
            for (uint64_t i = 0; i < n; i++) b[i] = i;
            rng_seed(&r, seed);
            rng_shuffle_u64(&r, b, n);
            cr_assert_eq(memcmp(a, b, n * sizeof *a), 0);
        }
    /* another seed gives another order (1000! orders: a collision is impossible in practice) */
    rng_seed(&r, 1);
    rng_permutation(&r, a, 1000);
    rng_seed(&r, 2);
    rng_permutation(&r, b, 1000);
    cr_assert_neq(memcmp(a, b, 1000 * sizeof *a), 0, "seeds 1 and 2 gave the same order");
    /* rng_shuffle_u64 moves the values, whatever they are */
    uint64_t v[5] = {50, 40, 30, 20, 10}, p[5];
    rng_seed(&r, 3);
    rng_permutation(&r, p, 5);
    rng_seed(&r, 3);
    rng_shuffle_u64(&r, v, 5);
    for (int i = 0; i < 5; i++) cr_assert_eq(v[i], 50 - 10 * p[i]);
}
