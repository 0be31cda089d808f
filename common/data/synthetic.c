/* synthetic.c: the seeded toy language described in synthetic.h. */
#include "common/data/synthetic.h"

#include <stdlib.h>

#include "common/base/error.h"
#include "common/base/rng.h"

#define SUCCESSORS 4
/* Successor probabilities: cumulative 0.55, 0.80, 0.92, 1.0. */
static const double successor_cdf[SUCCESSORS] = {0.55, 0.80, 0.92, 1.0};
#define COPY_PROB 0.04      /* chance per position of starting a copy span */
#define COPY_MIN 6
#define COPY_MAX 16
#define DOC_MIN 64
#define DOC_MAX 512

int synthetic_corpus(uint32_t *out, uint64_t n, int vocab, uint64_t language_seed, uint64_t stream_seed) {
    if (vocab < 16) return vrl_error("synthetic corpus: vocab %d is too small (need >= 16)", vocab);
    const int words = vocab - SYN_FIRST_WORD;
    uint32_t *next = malloc((size_t)words * SUCCESSORS * sizeof *next); /* [words, SUCCESSORS] */
    if (!next) return vrl_error("synthetic corpus: out of memory");
    Rng lang;
    rng_seed(&lang, language_seed);
    for (int w = 0; w < words * SUCCESSORS; w++) next[w] = SYN_FIRST_WORD + (uint32_t)rng_below(&lang, words);

    Rng r;
    rng_seed_stream(&r, language_seed, stream_seed);
    uint64_t pos = 0;
    while (pos < n) {
        const uint64_t doc_start = pos;
        const uint64_t len = DOC_MIN + rng_below(&r, DOC_MAX - DOC_MIN + 1);
        uint32_t prev = SYN_FIRST_WORD + (uint32_t)rng_below(&r, words);
        out[pos++] = prev;
        while (pos < n && pos - doc_start < len) {
            const uint64_t have = pos - doc_start;
            if (have > 2 * COPY_MAX && rng_uniform(&r) < COPY_PROB) {
                /* Copy span: marker, then tokens repeated from earlier in this document. */
                const uint64_t span = COPY_MIN + rng_below(&r, COPY_MAX - COPY_MIN + 1);
                const uint64_t from = doc_start + rng_below(&r, have - span);
                out[pos++] = SYN_COPY;
                for (uint64_t i = 0; i < span && pos < n; i++) out[pos++] = out[from + i];
                prev = out[pos - 1];
                if (prev == SYN_COPY) prev = SYN_FIRST_WORD;
                continue;
            }
            const double u = rng_uniform(&r);
            int k = 0;
            while (k < SUCCESSORS - 1 && u >= successor_cdf[k]) k++;
            prev = next[(size_t)(prev - SYN_FIRST_WORD) * SUCCESSORS + k];
            out[pos++] = prev;
        }
        if (pos < n) out[pos++] = SYN_EOS;
    }
    free(next);
    return 0;
}
