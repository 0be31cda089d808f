/* sample.h: choosing the next token from one row of logits (vrl generate).
 *
 * The order of transformers' LogitsProcessors: logits / temperature, then top-k (keep the k most
 * likely), then top-p (keep the smallest most-likely set whose probability reaches top_p,
 * renormalised after top-k), then one draw. temperature 0 is greedy: the argmax, the lowest id
 * on ties, with no draw (the Rng is not advanced). */
#ifndef VRL_SAMPLE_H
#define VRL_SAMPLE_H

#include <stdint.h>

#include "common/base/rng.h"

typedef struct {
    double temperature; /* 0: greedy; > 0 divides the logits */
    int top_k;          /* 0: no limit */
    double top_p;       /* 1: no limit; in (0, 1] */
} SampleParams;

/* Scratch for V candidates; sample_alloc returns NULL when out of memory. */
typedef struct SampleScratch SampleScratch;
SampleScratch *sample_alloc(int V);
void sample_free(SampleScratch *s);

/* The chosen id in [0, V) for logits [V]. */
int32_t sample_next(const double *logits, int V, const SampleParams *sp, Rng *g, SampleScratch *s);

#endif
