/* evalbatches.c: fixed held-out batches from a data folder, shards or the synthetic stream. */
#include "cli/evalbatches.h"

#include <string.h>

#include "common/data/mixture.h"
#include "common/data/synthetic.h"

int eval_batches_open(EvalBatches *e, const char *data, int vocab_size, int B, int T) {
    memset(e, 0, sizeof *e);
    e->B = B, e->T = T;
    if (data && is_mixture_dir(data)) return mixture_open(data, NULL, NULL, 0, (uint32_t)T, 0, &e->mx);
    if (data) return (e->ld = loader_open(data, B, T, vocab_size, 0)) ? 0 : -1;
    e->ld = loader_synthetic(vocab_size, SYNTHETIC_VAL_STREAM, SYNTHETIC_VAL_TOKENS, B, T, 0);
    return e->ld ? 0 : -1;
}

int eval_batches_next(EvalBatches *e, int32_t *tokens) {
    for (int i = 0; i < e->B; i++, e->next++) {
        if (e->mx) {
            /* sequence k of the concatenated validation chunks of every domain */
            long k = e->next;
            int d = 0;
            while (d < mixture_n_domains(e->mx) && (uint64_t)k >= mixture_val_chunks(e->mx, d))
                k -= (long)mixture_val_chunks(e->mx, d++);
            if (d == mixture_n_domains(e->mx)) return 1;
            if (mixture_val_chunk(e->mx, d, (uint64_t)k, tokens + (size_t)i * e->T) < 0) return -1;
        } else {
            if ((uint64_t)e->next >= loader_windows(e->ld)) return 1;
            loader_window(e->ld, (uint64_t)e->next, tokens + (size_t)i * e->T);
        }
    }
    return 0;
}

void eval_batches_close(EvalBatches *e) {
    mixture_close(e->mx);
    loader_close(e->ld);
    memset(e, 0, sizeof *e);
}
