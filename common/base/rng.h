/* rng.h: a small seeded generator (xoshiro256**, seeded through splitmix64) whose
 * whole state is four words, so the training state can save and restore it exactly. */
#ifndef VRL_RNG_H
#define VRL_RNG_H

#include <stdint.h>

typedef struct { uint64_t s[4]; } Rng;

/* splitmix64's output function: a bijective 64-bit mix (its state advances by the golden
 * gamma 0x9e3779b97f4a7c15 before each call). Also keys GPT-2's dropout masks (ref/gpt2.c). */
uint64_t rng_mix64(uint64_t z);

void rng_seed(Rng *r, uint64_t seed);
/* A generator for sub-stream `stream` of `seed` (e.g. one per parameter tensor). */
void rng_seed_stream(Rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_u64(Rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform(Rng *r);
/* Uniform integer in [0, n), unbiased. */
uint64_t rng_below(Rng *r, uint64_t n);
/* Standard normal (Box-Muller, no cached second value so the state is the whole story). */
double rng_normal(Rng *r);
/* Fisher-Yates, in place: for i = n down to 2, swap a[i-1] with a[rng_below(r, i)].
 * The data loaders' epoch orders are this shuffle, so its draw order is fixed for good. */
void rng_shuffle_u64(Rng *r, uint64_t *a, uint64_t n);
/* a[0..n) = a uniformly random permutation of 0..n-1: the identity, then rng_shuffle_u64. */
void rng_permutation(Rng *r, uint64_t *a, uint64_t n);

#endif
