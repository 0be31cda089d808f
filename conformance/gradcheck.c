/* gradcheck.c: see gradcheck.h. */
#include "conformance/gradcheck.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

void gradcheck_begin(Gradcheck *g, const ModelConfig *c, int B, int T, uint64_t seed, int dropout) {
    memset(g, 0, sizeof *g);
    g->c = *c, g->B = B, g->T = T;
    cr_assert_eq(model_spec_build(c, &g->spec), 0, "%s: %s", c->variant, vrl_last_error());
    g->t = &g->spec.table;
    g->net = ref_net(c);
    g->m = g->net->create(&g->spec, B, T);
    cr_assert_not_null(g->m, "%s: %s", c->variant, vrl_last_error());
    g->buf = g->net->buffers(g->m);
    real *p = g->buf.params;
    params_init_f64(g->t, seed, p);
    rng_seed(&g->r, seed + 1);
    for (int k = 0; k < g->t->n; k++) {
        const ParamInfo *pi = &g->t->p[k];
        const int scale = strstr(pi->name, "hc_") && (strstr(pi->name, ".scale_") || strstr(pi->name, ".alpha_p") ||
                                                       strstr(pi->name, ".alpha_res"));
        const int bres = strstr(pi->name, ".b_res") != NULL;
        for (size_t i = 0; i < pi->numel && pi->init != INIT_NORMAL; i++) {
            real *x = &p[pi->offset + i];
            *x = scale ? 0.5 + 0.2 * rng_normal(&g->r) : bres ? 0.5 * rng_normal(&g->r) : *x + 0.2 * rng_normal(&g->r);
        }
    }
    g->tokens = malloc((size_t)B * T * sizeof *g->tokens);
    cr_assert_not_null(g->tokens);
    for (int i = 0; i < B * T; i++) g->tokens[i] = (int32_t)rng_below(&g->r, (uint64_t)c->vocab_size);
    if (g->net->set_dropout) g->net->set_dropout(g->m, dropout, 1234, 7, 1);
    memset(g->buf.grads, 0, g->t->total * sizeof *g->buf.grads);
    g->loss = g->net->forward(g->m, g->tokens);
    g->net->backward(g->m, 1.0);
}

void gradcheck_end(Gradcheck *g) {
    g->net->destroy(g->m);
    model_spec_free(&g->spec);
    free(g->tokens);
}

GradcheckTensor gradcheck_tensor(Gradcheck *g, int k, const GradcheckSampling *s) {
    const ParamInfo *pi = &g->t->p[k];
    const int full = pi->numel <= s->full_max;
    const int embed = s->embed_batch_rows && !strcmp(pi->name, "model.embed_tokens.weight");
    const size_t d = (size_t)g->c.d_model;
    real *p = g->buf.params;
    const real *grad = g->buf.grads;
    GradcheckTensor r = {full ? pi->numel : s->subset, 0, 0};
    for (size_t j = 0; j < r.n; j++) {
        size_t e = full ? j : (size_t)rng_below(&g->r, pi->numel);
        if (!full && embed) e = (size_t)g->tokens[rng_below(&g->r, (uint64_t)g->B * g->T)] * d + e % d;
        const size_t i = pi->offset + e;
        const real keep = p[i];
        p[i] = keep + GRADCHECK_STEP;
        const double lp = g->net->forward(g->m, g->tokens);
        p[i] = keep - GRADCHECK_STEP;
        const double lm = g->net->forward(g->m, g->tokens);
        p[i] = keep;
        const double num = (lp - lm) / (2 * GRADCHECK_STEP);
        r.diff = fmax(r.diff, fabs(num - grad[i]));
        r.num = fmax(r.num, fabs(num));
    }
    return r;
}
