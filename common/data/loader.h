/* loader.h: batches of training sequences from token shards.
 *
 * A plain loader walks the concatenation of one or more shards in windows of `seq`
 * tokens, in a seeded shuffled order of windows that is redrawn each epoch. Its whole
 * position is a few integers (epoch, index), saved in the training state so a resumed
 * run reads exactly the batches the uninterrupted run would have read. */
#ifndef VRL_LOADER_H
#define VRL_LOADER_H

#include <stdint.h>

#define LOADER_POS_WORDS 16

typedef struct DataLoader DataLoader;

/* `spec`: comma-separated shard paths. Every id must be < vocab_size. */
DataLoader *loader_open(const char *spec, int batch, int seq, int vocab_size, uint64_t seed);
/* A loader over tokens already in memory (the synthetic corpus); copies them. */
DataLoader *loader_from_tokens(const uint32_t *tokens, uint64_t n, const char *name, int batch, int seq,
                               uint64_t seed);
/* A loader over n tokens of the synthetic corpus's stream (synthetic.h: the training
 * stream SYNTHETIC_TRAIN_STREAM or the validation stream SYNTHETIC_VAL_STREAM). */
DataLoader *loader_synthetic(int vocab, uint64_t stream, uint64_t n, int batch, int seq, uint64_t seed);
void loader_close(DataLoader *l);

/* Next batch: tokens [batch, seq]. */
void loader_next(DataLoader *l, int32_t *tokens);

/* Number of distinct windows (sequences) one epoch holds. */
uint64_t loader_windows(const DataLoader *l);
/* Window i of the corpus in file order (validation walks these in order). */
void loader_window(const DataLoader *l, uint64_t i, int32_t *tokens /* [seq] */);

/* Position for the training state: up to LOADER_POS_WORDS words. */
int loader_get_pos(const DataLoader *l, uint64_t *words);
int loader_set_pos(DataLoader *l, const uint64_t *words, int n);

#endif
