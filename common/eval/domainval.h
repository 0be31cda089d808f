/* domainval.h: per-domain validation (formulas.md §7) for a data folder written by
 * `vrl data tokenize` (DIR/train/ and DIR/validation/ with per-domain shards, read by
 * the mixture loader, mixture.h). Used by the trainer at --eval-every. */
#ifndef VRL_DOMAINVAL_H
#define VRL_DOMAINVAL_H

#include <stdint.h>

#include "common/model/backend.h"
#include "common/data/mixture.h"

/* Mean loss of domain d over its validation chunks (first T tokens of each), read in
 * order in batches of B: max_batches batches at most, fewer when the domain has fewer
 * chunks (ceil(n/B) batches; row i reads chunk i mod n, so a domain with fewer than B
 * chunks is read cyclically to fill its one batch). tokens: scratch [B,T].
 * Returns NaN for a domain without validation chunks. */
double domain_val_loss(const Backend *be, void *model, const Mixture *mx, int d, int B, int T, int max_batches,
                       int32_t *tokens);

#endif
