/* generate.c: prompt continuation through the KV cache (generate.h). */
#include "common/eval/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/clock.h"
#include "common/base/error.h"
#include "common/base/rng.h"

/* The largest logit minus the second largest, of row [n] (0 at a tie). */
static double top2_gap(const double *row, int n) {
    double a = -INFINITY, b = -INFINITY;
    for (int v = 0; v < n; v++) {
        if (row[v] > a) b = a, a = row[v];
        else if (row[v] > b) b = row[v];
    }
    return a - b;
}

int generate(const Backend *be, const ModelSpec *spec, const void *params, TokIds *ids, int max_new, int draw_vocab,
             const SampleParams *sp, uint64_t seed, GenerateSink sink, void *ctx, GenerateStats *st) {
    const ModelConfig *c = &spec->config;
    const int V = c->vocab_size;
    memset(st, 0, sizeof *st);
    st->min_margin = INFINITY;
    if (ids->n == 0) return vrl_error("the prompt is empty");
    for (size_t i = 0; i < ids->n; i++)
        if (ids->ids[i] >= (uint32_t)V)
            return vrl_error("prompt token %u at position %zu is outside the model's vocabulary [0, %d)", ids->ids[i], i,
                             V);
    if (ids->n >= (size_t)c->max_seq)
        return vrl_error("the prompt has %zu tokens; the model holds %d positions", ids->n, c->max_seq);
    const int prompt_n = (int)ids->n;
    const int total = prompt_n + max_new < c->max_seq ? prompt_n + max_new : c->max_seq;
    const size_t esz = dtype_size(be->dtype);
    void *m = NULL, *kv = NULL;
    void *logits = malloc((size_t)prompt_n * V * esz); /* [prompt_n, V] in be's dtype */
    double *row = malloc((size_t)V * sizeof *row);      /* [V] the last position's logits */
    int32_t *in = malloc((size_t)prompt_n * sizeof *in); /* [prompt_n] */
    SampleScratch *ss = sample_alloc(V);
    int rc = -1;
    if (!logits || !row || !in || !ss) {
        vrl_error("out of memory");
        goto done;
    }
    if (!(m = be->create(spec, 1, 2))) goto done;
    be->set_state(m, params, NULL, NULL);
    if (!(kv = be->kv_create(m, 1, total))) goto done;
    for (int i = 0; i < prompt_n; i++) in[i] = (int32_t)ids->ids[i];
    if (sink(ctx, ids, -1) < 0) goto done;
    const double t0 = now_seconds();
    if (be->decode(m, kv, in, prompt_n, logits) < 0) goto done;
    st->prompt_seconds = now_seconds() - t0;
    const void *last = (const char *)logits + (size_t)(prompt_n - 1) * V * esz;
    Rng g;
    rng_seed(&g, seed);
    for (int pos = prompt_n; pos < total; pos++) {
        for (int v = 0; v < V; v++)
            row[v] = be->dtype == DT_F64 ? ((const double *)last)[v] : ((const float *)last)[v];
        const int32_t next = sample_next(row, draw_vocab < V ? draw_vocab : V, sp, &g, ss);
        if (sp->temperature == 0) {
            const double gap = top2_gap(row, draw_vocab < V ? draw_vocab : V);
            if (gap < st->min_margin) st->min_margin = gap, st->min_margin_step = pos - prompt_n;
        }
        if (next == c->eos_id) { /* -1 (no end token) never matches */
            st->at_eos = 1;
            break;
        }
        st->made++;
        if (tok_ids_push(ids, (uint32_t)next) < 0 || sink(ctx, ids, next) < 0) goto done;
        if (pos + 1 == total) break; /* the last token needs no logits */
        if (be->decode(m, kv, &next, 1, logits) < 0) goto done;
        last = logits;
    }
    st->seconds = now_seconds() - t0 - st->prompt_seconds;
    rc = 0;
done:
    sample_free(ss);
    free(in);
    free(row);
    free(logits);
    if (kv) be->kv_free(kv);
    if (m) be->destroy(m);
    return rc;
}
