/* mixture.h: the training-data mixture loader.
 *
 * Input is a directory written by `vrl data tokenize`: DIR/train/NAME.bin and
 * DIR/validation/NAME.bin, token shards (shard.h) whose header carries the domain tag and
 * the chunk length. Shards of one domain are concatenated in file-name order into that
 * domain's list of fixed-length chunks.
 *
 * Batches are [B, T] int32 tokens, row-major; row b is one whole chunk (its first T
 * tokens when T < chunk_len), so a trainer uses row[0..T-1) as input and row[1..T) as
 * targets. For each row the domain is drawn from a seeded xoshiro256** generator with
 * probability proportional to its weight; within a domain, chunks are visited in a
 * seeded random permutation, a fresh one each epoch (rng_permutation with the stream
 * seed ^ fnv1a64(domain name), epoch + 1), looping forever.
 *
 * Resuming: the whole position is the domain generator (4 words) and, per domain, the
 * epoch and index in its permutation (1 word), plus one header word holding a magic,
 * the domain count and a fingerprint of the configuration (seed, T, names, weights,
 * chunk counts). mixture_state_export writes 5 + n_domains words (at most 16, so at
 * most 11 domains); importing them into a loader opened with the same arguments
 * continues exactly where the exported one stood, and any other configuration is
 * refused. Validation chunks are read by index and never touch the position. */
#ifndef VRL_MIXTURE_H
#define VRL_MIXTURE_H

#include <stdint.h>

#include "common/data/shard.h"

#define MIXTURE_STATE_WORDS 16
#define MIXTURE_MAX_DOMAINS 11

typedef struct Mixture Mixture;

/* formulas.md §3 defaults: CommonCrawl 0.50, C4 0.20, GitHub 0.10, StackExchange, Wikipedia,
 * Book, ArXiv 0.05 each (RedPajama* names). */
extern const char *const MIXTURE_DEFAULT_DOMAINS[7];
extern const double MIXTURE_DEFAULT_WEIGHTS[7];

/* Open DIR. domains/weights: n_domains names and weights >= 0 (not all zero); NULL
 * and 0 for the defaults. Every domain named must have shards in DIR (an unknown name
 * is an error listing the domains DIR holds), and every domain with weight > 0 train
 * chunks; shards of domains not named are ignored. seq_len T: 1 <= T <= chunk_len, or
 * 0 for chunk_len. */
/* 1 if path is a directory holding train/ and validation/ subdirectories (a folder
 * written by `vrl data tokenize`). */
int is_mixture_dir(const char *path);

int mixture_open(const char *dir, const char *const *domains, const double *weights, int n_domains,
                 uint32_t seq_len, uint64_t seed, Mixture **out);
void mixture_close(Mixture *m);

/* Weights written as "NAME=W,NAME=W,..." (`vrl train --mixture`): names as in the
 * shards' domain tags, weights finite and >= 0, not all zero, no name twice. */
typedef struct {
    int n;
    char name[MIXTURE_MAX_DOMAINS][SHARD_DOMAIN_LEN + 1];
    double weight[MIXTURE_MAX_DOMAINS];
} MixtureWeights;
/* 0, or -1 with vrl_error() saying what is wrong (without a prefix: the caller names the flag). */
int mixture_weights_parse(const char *spec, MixtureWeights *w);

int mixture_n_domains(const Mixture *m);
const char *mixture_domain(const Mixture *m, int d);
uint32_t mixture_seq_len(const Mixture *m);
uint32_t mixture_chunk_len(const Mixture *m);
/* Every token id of the folder's shards is below this (the shards' largest vocab_size). */
uint32_t mixture_vocab_size(const Mixture *m);
uint64_t mixture_train_chunks(const Mixture *m, int d);

/* Fill tokens[B * T]; domains[B] (may be NULL) receives each row's domain index. */
int mixture_next_batch(Mixture *m, int B, int32_t *tokens, int *domains);

/* Position as words[*n_words], *n_words <= MIXTURE_STATE_WORDS. */
void mixture_state_export(const Mixture *m, uint64_t words[MIXTURE_STATE_WORDS], int *n_words);
int mixture_state_import(Mixture *m, const uint64_t *words, int n_words);

/* Validation: number of chunks of domain d, and chunk i as tokens[T]. */
uint64_t mixture_val_chunks(const Mixture *m, int d);
int mixture_val_chunk(const Mixture *m, int d, uint64_t i, int32_t *tokens);

#endif
