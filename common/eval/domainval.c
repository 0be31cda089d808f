/* domainval.c: per-domain validation loss for the trainer (domainval.h). */
#include "common/eval/domainval.h"

#include <math.h>
#include <stdio.h>

double domain_val_loss(const Backend *be, void *model, const Mixture *mx, int d, int B, int T, int max_batches,
                       int32_t *tokens) {
    const uint64_t n = mixture_val_chunks(mx, d);
    if (n == 0) return NAN;
    uint64_t nb = (n + (uint64_t)B - 1) / (uint64_t)B;
    if (nb > (uint64_t)max_batches) nb = (uint64_t)max_batches;
    double sum = 0;
    for (uint64_t b = 0; b < nb; b++) {
        for (int i = 0; i < B; i++)
            if (mixture_val_chunk(mx, d, (b * (uint64_t)B + (uint64_t)i) % n, tokens + (size_t)i * T) < 0) return NAN;
        sum += be->forward_loss(model, tokens); /* every row predicts T-1 tokens: batch means average to the token mean */
    }
    return sum / (double)nb;
}
