/* synthetic.h: the corpus `vrl train` uses when no data is given.
 *
 * A seeded toy language with structure a small model can learn in a minute:
 *   - a sparse first-order Markov chain over the ordinary tokens (each token has a
 *     few likely successors), which a model learns from bigram statistics;
 *   - copy spans: the marker token SYN_COPY, then a span of 6..16 tokens repeated from
 *     earlier in the same document, which only attention to the earlier occurrence can
 *     predict (an induction-head task, where value residuals are said to help);
 *   - documents of 64..512 tokens, each followed by EOS (id 0), as in formulas.md §3.
 * The language (transition table) depends only on `language_seed`; the documents on
 * `stream_seed`, so train and validation text share one language. */
#ifndef VRL_SYNTHETIC_H
#define VRL_SYNTHETIC_H

#include <stdint.h>

/* The corpus `vrl train` uses without --data: one fixed language, so every default run
 * learns the same toy language; the training seed changes only initialisation and order. */
#define SYNTHETIC_LANGUAGE_SEED 1234
#define SYNTHETIC_TRAIN_STREAM 1
#define SYNTHETIC_VAL_STREAM 2
#define SYNTHETIC_VAL_TOKENS 65536

#define SYN_EOS 0
#define SYN_COPY 1
#define SYN_FIRST_WORD 2   /* ordinary tokens are SYN_FIRST_WORD .. vocab-1 */

/* Fill out[n] with documents (the last one may be cut). vocab >= 16. */
int synthetic_corpus(uint32_t *out, uint64_t n, int vocab, uint64_t language_seed, uint64_t stream_seed);

#endif
