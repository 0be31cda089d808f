/* sample.c: temperature, top-k, top-p and one draw (sample.h). */
#include "common/eval/sample.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    double p;
    int32_t id;
} Cand;

struct SampleScratch {
    Cand *c; /* [V] */
};

SampleScratch *sample_alloc(int V) {
    SampleScratch *s = malloc(sizeof *s);
    if (!s) return NULL;
    if (!(s->c = malloc((size_t)(V > 0 ? V : 1) * sizeof *s->c))) {
        free(s);
        return NULL;
    }
    return s;
}

void sample_free(SampleScratch *s) {
    if (!s) return;
    free(s->c);
    free(s);
}

/* most likely first; the lower id first among equals, so the order is total */
static int by_prob(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

int32_t sample_next(const double *logits, int V, const SampleParams *sp, Rng *g, SampleScratch *s) {
    if (sp->temperature <= 0) {
        int32_t best = 0;
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[best]) best = v;
        return best;
    }
    /* softmax of logits / temperature, shifted by the max */
    double mx = -INFINITY;
    for (int v = 0; v < V; v++) mx = fmax(mx, logits[v]);
    Cand *c = s->c;
    for (int v = 0; v < V; v++) c[v] = (Cand){exp((logits[v] - mx) / sp->temperature), v};
    qsort(c, (size_t)V, sizeof *c, by_prob);
    int n = V;
    if (sp->top_k > 0 && sp->top_k < n) n = sp->top_k;
    double total = 0;
    for (int i = 0; i < n; i++) total += c[i].p;
    if (sp->top_p < 1) { /* keep until the kept mass reaches top_p (at least one) */
        double cum = 0;
        int keep = 0;
        while (keep < n && (keep == 0 || cum < sp->top_p * total)) cum += c[keep++].p;
        n = keep;
        total = cum;
    }
    const double u = rng_uniform(g) * total;
    double cum = 0;
    for (int i = 0; i < n; i++) {
        cum += c[i].p;
        if (u < cum) return c[i].id;
    }
    return c[n - 1].id; /* u within rounding of the total */
}
