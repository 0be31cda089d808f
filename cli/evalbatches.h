/* evalbatches.h: fixed batches of held-out tokens for the analysis commands.
 *
 * The source is, by what `data` names: a tokenized data folder (`vrl data tokenize`:
 * the validation chunks of every domain in turn), comma-separated shards (their windows
 * in file order), or NULL for the synthetic validation stream the trainer uses without
 * --data. The order is fixed, so two runs analysed on the same data see the same tokens. */
#ifndef VRL_EVALBATCHES_H
#define VRL_EVALBATCHES_H

#include <stdint.h>

#include "common/data/loader.h"
#include "common/data/mixture.h"

typedef struct {
    Mixture *mx;
    DataLoader *ld;
    int B, T;
    long next;      /* sequences handed out so far */
} EvalBatches;

int eval_batches_open(EvalBatches *e, const char *data, int vocab_size, int B, int T);
/* Fill tokens [B,T] with the next batch: 0, 1 when the data is exhausted, -1 on error. */
int eval_batches_next(EvalBatches *e, int32_t *tokens);
void eval_batches_close(EvalBatches *e);

#endif
