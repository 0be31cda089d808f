/* test_gradcheck_model.c: the whole reference model's backward equals central finite
 * differences of its loss, for EVERY parameter tensor, in float64.
 *
 * Configs: the "tiny" preset (2 layers, 2 heads, d 16, ffn 56, vocab 64) and a GQA
 * config (3 layers, 4 query heads on 2 kv heads, d 32, ffn 64, vocab 64), B=2, T=8.
 * Tensors with at most 1024 elements are checked element by element (every tiny tensor);
 * larger ones (the GQA config's embedding, lm_head and MLP) on a seeded random subset of
 * 64 elements. Weights: std 0.3 instead of 0.02 and norm gains 1 + N(0, 0.2²), so every
 * nonlinearity is exercised away from its linear regime and the gain gradients do not
 * sit on a symmetric point (gradcheck.h).
 *
 * Error of a tensor = max |analytic − numeric| / max |numeric| over its checked elements
 * (gradcheck.h). h = 1e-5. Bound 1e-6: the loss is a composition of ~40 ops,
 * so rounding noise in the differences is ~eps_64·|L|/h ≈ 1e-10 of an O(1) gradient and
 * truncation ~h² ≈ 1e-10; 1e-6 leaves room for tensors whose largest gradient is ~1e-3,
 * while any wrong backward term is orders of magnitude larger. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/spec.h"
#include "conformance/gradcheck.h"
#include "ref/model.h"

#define TOL 1e-6

enum { B = 2, T = 8 };

/* tensors up to 1024 elements element by element, 64 sampled from a larger one */
static const GradcheckSampling sampling = {1024, 64, 0};

static void gradcheck_config(const ModelConfig *c0, uint64_t seed) {
    ModelConfig c = *c0;
    c.init_std = 0.3;
    Gradcheck g;
    gradcheck_begin(&g, &c, B, T, seed, 0);
    printf("gradcheck model L=%d heads=%d kv=%d d=%d: loss %.6f (ln V = %.6f)\n", c.n_layers, c.n_heads,
           c.n_kv_heads, c.d_model, g.loss, log(c.vocab_size));
    double worst = 0;
    for (int k = 0; k < g.t->n; k++) {
        const ParamInfo *pi = &g.t->p[k];
        const GradcheckTensor r = gradcheck_tensor(&g, k, &sampling);
        double err = gradcheck_rel_err(r, 0);
        if (err > worst) worst = err;
        printf("  %-44s %5zu/%-5zu max|grad| %.3e  rel err %.3e\n", pi->name, r.n, pi->numel, r.num, err);
        cr_expect(r.num > 1e-8, "%s: gradient ~0, the check proves nothing", pi->name);
        cr_expect_lt(err, TOL, "%s: rel err %.3e", pi->name, err);
    }
    printf("  worst rel err %.3e over %d tensors\n", worst, g.t->n);
    cr_log_info("L=%d kv=%d: worst rel err %.3e", c.n_layers, c.n_kv_heads, worst);
    gradcheck_end(&g);
}

Test(gradcheck_model, tiny_every_tensor_fp64) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    gradcheck_config(&c, 11);
}

Test(gradcheck_model, gqa_every_tensor_fp64) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    c.n_layers = 3;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.d_model = 32;
    c.d_ffn = 64;
    snprintf(c.preset, sizeof c.preset, "tiny-gqa");
    gradcheck_config(&c, 12);
}

/* Gradients accumulate: two backwards with scale 0.5 equal one with scale 1 (the trainer's
 * micro-batch accumulation relies on it), and zero_grad clears them. */
Test(gradcheck_model, backward_accumulates_scaled) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    ModelSpec spec;
    cr_assert_eq(model_spec_build(&c, &spec), 0);
    RefModel *m = model_create(&spec, B, T);
    cr_assert_not_null(m);
    params_init_f64(&spec.table, 5, model_params(m)); /* real is double here */
    int32_t tokens[B * T];
    for (int i = 0; i < B * T; i++) tokens[i] = (i * 7 + 3) % c.vocab_size;
    real *g1 = malloc(spec.table.total * sizeof *g1);
    model_zero_grad(m);
    model_forward(m, tokens);
    model_backward(m, 1.0);
    memcpy(g1, model_grads(m), spec.table.total * sizeof *g1);
    model_zero_grad(m);
    for (int rep = 0; rep < 2; rep++) {
        model_forward(m, tokens);
        model_backward(m, 0.5);
    }
    double max_diff = 0, max_g = 0;
    for (size_t i = 0; i < spec.table.total; i++) {
        max_diff = fmax(max_diff, fabs(model_grads(m)[i] - g1[i]));
        max_g = fmax(max_g, fabs(g1[i]));
    }
    printf("accumulation: max |2 x 0.5 - 1 x 1| = %.3e (max |g| %.3e)\n", max_diff, max_g);
    cr_assert_gt(max_g, 0);
    cr_assert_lt(max_diff, 1e-15 * max_g * 4, "0.5+0.5 differs from 1 beyond rounding");
    model_zero_grad(m);
    for (size_t i = 0; i < spec.table.total; i++) cr_assert_eq(model_grads(m)[i], 0);
    free(g1);
    model_destroy(m);
    model_spec_free(&spec);
}
