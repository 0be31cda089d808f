/* rng.c: xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
#include "common/base/rng.h"

#include <math.h>

uint64_t rng_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x) { return rng_mix64(*x += 0x9e3779b97f4a7c15ULL); }

void rng_seed(Rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void rng_seed_stream(Rng *r, uint64_t seed, uint64_t stream) {
    /* Mix the stream index through splitmix64 so nearby streams are unrelated. */
    uint64_t x = stream;
    rng_seed(r, seed ^ splitmix64(&x));
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(Rng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t rng_below(Rng *r, uint64_t n) {
    /* Rejection sampling: drop the top sliver that would bias the modulo. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rng_u64(r);
    while (x >= limit);
    return x % n;
}

double rng_normal(Rng *r) {
    /* Box-Muller; u1 in (0, 1] so the log is finite. */
    double u1 = 1.0 - rng_uniform(r);
    double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void rng_shuffle_u64(Rng *r, uint64_t *a, uint64_t n) {
    for (uint64_t i = n; i > 1; i--) {
        const uint64_t j = rng_below(r, i);
        const uint64_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

void rng_permutation(Rng *r, uint64_t *a, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) a[i] = i;
    rng_shuffle_u64(r, a, n);
}
