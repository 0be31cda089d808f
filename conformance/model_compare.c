/* model_compare.c: see model_compare.h. */
#include "conformance/model_compare.h"

#include <criterion/criterion.h>
#include <math.h>

#include "common/base/error.h"

void run_build(Run *r, const ModelConfig *c, int B, int T, uint64_t seed) {
    r->c = *c, r->B = B, r->T = T, r->loss = 0;
    cr_assert_eq(model_spec_build(&r->c, &r->spec), 0, "%s: %s", c->variant, vrl_last_error());
    r->t = &r->spec.table;
    r->m = model_create(&r->spec, B, T);
    cr_assert_not_null(r->m, "%s: %s", c->variant, vrl_last_error());
    params_init_f64(r->t, seed, model_params(r->m));
}

void run_step(Run *r, const int32_t *tokens) {
    model_zero_grad(r->m);
    r->loss = model_forward(r->m, tokens);
    model_backward(r->m, 1.0);
}

void run_release(Run *r) {
    model_destroy(r->m);
    model_spec_free(&r->spec);
}

double run_logits_diff(const Run *a, const Run *b) {
    const size_t n = (size_t)a->B * a->T * a->c.vocab_size;
    const real *la = model_logits(a->m), *lb = model_logits(b->m);
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(la[i] - lb[i]));
    return d;
}

int run_grad_diff(const Run *a, const Run *b, const char *name, double *diff, double *max_a) {
    const ParamInfo *pa = param_table_find(a->t, name), *pb = param_table_find(b->t, name);
    *diff = *max_a = 0;
    if (!pa || !pb) return 0;
    const real *ga = model_grads(a->m) + pa->offset, *gb = model_grads(b->m) + pb->offset;
    for (size_t i = 0; i < pa->numel; i++) {
        *diff = fmax(*diff, fabs(ga[i] - gb[i]));
        *max_a = fmax(*max_a, fabs(ga[i]));
    }
    return 1;
}
