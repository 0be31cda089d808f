/* test_sample.c: the next-token sampler (common/eval/sample.c).
 *
 * Greedy is the argmax (lowest id on ties) and draws nothing; top-k = 1 and a tiny top-p are
 * greedy at any temperature; top-k / top-p never draw outside their set; and the frequencies of
 * 200,000 seeded draws match the renormalised softmax within 5 standard errors (binomial,
 * sqrt(p(1-p)/n) ≤ 0.0012), which a wrong temperature, a missing renormalisation or an
 * off-by-one in the kept set would miss by far more. */
#include <criterion/criterion.h>
#include <math.h>

#include "common/eval/sample.h"

enum { V = 5, DRAWS = 200000 };
static const double logits[V] = {1.0, 3.0, 0.5, 2.0, 3.0 - 1e-9};

static void freqs(const SampleParams *sp, double *f) {
    SampleScratch *s = sample_alloc(V);
    Rng g;
    rng_seed(&g, 3);
    for (int v = 0; v < V; v++) f[v] = 0;
    for (int i = 0; i < DRAWS; i++) f[sample_next(logits, V, sp, &g, s)] += 1.0 / DRAWS;
    sample_free(s);
}

/* softmax(logits / temp) restricted to ids keep[0..n), renormalised */
static void expect_dist(const double *f, double temp, const int *keep, int n) {
    double z = 0, p[V] = {0};
    for (int i = 0; i < n; i++) z += exp(logits[keep[i]] / temp);
    for (int i = 0; i < n; i++) p[keep[i]] = exp(logits[keep[i]] / temp) / z;
    for (int v = 0; v < V; v++) {
        const double se = sqrt(fmax(p[v] * (1 - p[v]), 1e-12) / DRAWS);
        cr_expect_leq(fabs(f[v] - p[v]), 5 * se + 1e-12, "id %d: frequency %.5f, expected %.5f", v, f[v], p[v]);
    }
}

Test(sample, greedy) {
    SampleScratch *s = sample_alloc(V);
    Rng g, g0;
    rng_seed(&g, 1);
    g0 = g;
    const SampleParams greedy = {0, 0, 1};
    cr_expect_eq(sample_next(logits, V, &greedy, &g, s), 1);
    cr_expect_eq(rng_u64(&g), rng_u64(&g0), "greedy must not draw");
    const double tie[3] = {2, 5, 5};
    cr_expect_eq(sample_next(tie, 3, &greedy, &g, s), 1, "ties go to the lowest id");
    const SampleParams k1 = {2.0, 1, 1}, p0 = {2.0, 0, 1e-9};
    for (int i = 0; i < 100; i++) {
        cr_expect_eq(sample_next(logits, V, &k1, &g, s), 1);
        cr_expect_eq(sample_next(logits, V, &p0, &g, s), 1);
    }
    sample_free(s);
}

Test(sample, temperature) {
    double f[V];
    const int all[V] = {0, 1, 2, 3, 4};
    freqs(&(SampleParams){1.0, 0, 1}, f);
    expect_dist(f, 1.0, all, V);
    freqs(&(SampleParams){0.5, 0, 1}, f);
    expect_dist(f, 0.5, all, V);
}

Test(sample, top_k) {
    double f[V];
    const int top3[3] = {1, 4, 3};
    freqs(&(SampleParams){1.0, 3, 1}, f);
    expect_dist(f, 1.0, top3, 3);
}

Test(sample, top_p) {
    /* probabilities at temperature 1: 0.3685, 0.3685, 0.1355, 0.0822, 0.0451 for ids 1, 4, 3, 0, 2 */
    double f[V];
    const int top2[2] = {1, 4}, top3[3] = {1, 4, 3};
    freqs(&(SampleParams){1.0, 0, 0.70}, f); /* 0.737 ≥ 0.70 after two */
    expect_dist(f, 1.0, top2, 2);
    freqs(&(SampleParams){1.0, 0, 0.80}, f); /* 0.737 < 0.80: the third is kept too */
    expect_dist(f, 1.0, top3, 3);
    freqs(&(SampleParams){1.0, 2, 0.60}, f); /* after top-2 (renormalised 0.5, 0.5): both needed */
    expect_dist(f, 1.0, top2, 2);
}
