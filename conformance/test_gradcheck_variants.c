/* test_gradcheck_variants.c: for EVERY value-path variant of SPEC.md §4, the reference model's
 * backward equals central finite differences of its loss, in float64.
 *
 * Config: L = 4 (so layers n = 2..4 read earlier layers), d = 16, 4 query heads (head dim 4),
 * ffn 32, vocab 64, B = 2, T = 8; every variant with n_kv = 2 (GQA: mixing on the flat kv
 * tensors before head repetition) and the main ones again with n_kv = 4 and n_kv = 1.
 * Weights: std 0.3, norm gains and mixing coefficients perturbed by N(0, 0.2²) so no gradient
 * sits on a symmetric point (dense ResFormer's zero-initialised λ included).
 *
 * Checked elements: every element of tensors with at most 64 elements (norm gains and every
 * v_residual_lambda), a seeded sample of 32 elements of each larger tensor (embedding rows: of tokens
 * in the batch, the only rows with a gradient). The gradient of
 * layer 0's v_proj (V_1) is the sum of the shares of every later layer that reads V_1, so its
 * check is the check of the cross-layer accumulation; likewise q/k_proj of layer 0 for the
 * Q/K residual and sharing ablations, and the embedding for the hidden residual to H_0.
 *
 * Error of a tensor = max |analytic − numeric| / max |numeric| over its checked elements.
 * h = 1e-5, bound 1e-6 (as test_gradcheck_model.c): central differences are exact to
 * O(h²) ≈ 1e-10 relative, and rounding adds ~eps_64·|loss|/h ≈ 1e-11 absolute, far below
 * 1e-6 of an O(1e-2..1) gradient; a missing or wrong backward term is orders of magnitude
 * larger. The whole file runs in a few seconds. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "ref/model.h"

#define FD_H 1e-5
#define TOL 1e-6
#define FULL_MAX 64
#define SUBSET 32

enum { B = 2, T = 8 };

static ModelConfig tiny4(int n_kv, const char *variant) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    c.n_layers = 4;
    c.n_heads = 4;
    c.n_kv_heads = n_kv;
    c.d_model = 16;
    c.d_ffn = 32;
    c.init_std = 0.3;
    snprintf(c.variant, sizeof c.variant, "%s", variant);
    return c;
}

/* Returns the worst relative error over the tensors. */
static double gradcheck(const char *variant, int n_kv, uint64_t seed) {
    ModelConfig c = tiny4(n_kv, variant);
    ParamTable t;
    cr_assert_eq(param_table_build(&c, &t), 0, "%s: %s", variant, vrl_last_error());
    RefModel *m = model_create(&c, &t, B, T);
    cr_assert_not_null(m, "%s: %s", variant, vrl_last_error());
    real *p = model_params(m);
    params_init_f64(&t, seed, p); /* real is double here */
    Rng r;
    rng_seed(&r, seed + 1);
    for (int k = 0; k < t.n; k++)
        if (t.p[k].init != INIT_NORMAL)
            for (size_t i = 0; i < t.p[k].numel; i++) p[t.p[k].offset + i] += 0.2 * rng_normal(&r);
    int32_t tokens[B * T];
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);

    model_zero_grad(m);
    double loss = model_forward(m, tokens);
    model_backward(m, 1.0);
    const real *g = model_grads(m);
    double worst = 0;
    const char *worst_name = "";
    int checked = 0;
    for (int k = 0; k < t.n; k++) {
        const ParamInfo *pi = &t.p[k];
        const int full = pi->numel <= FULL_MAX;
        const size_t n = full ? pi->numel : SUBSET;
        double max_diff = 0, max_num = 0;
        for (size_t j = 0; j < n; j++) {
            size_t e = full ? j : (size_t)rng_below(&r, pi->numel);
            if (!full && !strcmp(pi->name, "model.embed_tokens.weight"))
                e = (size_t)tokens[rng_below(&r, B * T)] * c.d_model + e % (size_t)c.d_model;
            size_t i = pi->offset + e;
            real keep = p[i];
            p[i] = keep + FD_H;
            double lp = model_forward(m, tokens);
            p[i] = keep - FD_H;
            double lm = model_forward(m, tokens);
            p[i] = keep;
            double num = (lp - lm) / (2 * FD_H);
            max_diff = fmax(max_diff, fabs(num - g[i]));
            max_num = fmax(max_num, fabs(num));
        }
        double err = max_diff / (max_num > 0 ? max_num : 1);
        if (err > worst) worst = err, worst_name = pi->name;
        checked++;
        cr_expect(max_num > 1e-8, "%s: %s: gradient ~0, the check proves nothing", variant, pi->name);
        cr_expect_lt(err, TOL, "%s kv=%d: %s rel err %.3e", variant, n_kv, pi->name, err);
        if (strstr(pi->name, "v_residual_lambda") || strstr(pi->name, "layers.0.self_attn.v_proj"))
            printf("    %-44s %3zu/%-4zu max|grad| %.3e  rel err %.3e\n", pi->name, n, pi->numel, max_num, err);
    }
    printf("%-62s kv=%d loss %.4f  %2d tensors  worst rel err %.2e (%s)\n", variant, n_kv, loss, checked, worst,
           worst_name);
    model_destroy(m);
    param_table_free(&t);
    return worst;
}

static const char *variants[] = {
    "baseline",
    "resformer",
    "resformer:mode=general,lambda1=0.3,0.7,1.5,lambda2=1.2,0.8,0.6",
    "resformer:mode=constant,lambda=2",
    "resformer:mode=sparse,layers=3-4,lambda=5",
    "resformer:mode=learnable",
    "resformer:mode=learnable-plus",
    "resformer:mode=dense",
    "resformer:source=prev",
    "resformer:source=mean",
    "resformer:source=2",
    "svformer",
    "svformer:anchors=1,3",
    "neutreno:lambda=0.4",
    "neutreno_resformer:lambda=0.2",
    "cla",
    "query_residual",
    "key_residual",
    "attn_residual",
    "hidden_residual",
    "shared_q",
    "shared_k",
    "cross_layer:m=1",
    "cross_layer:m=prev",
    "identity_mapping",
};

Test(gradcheck_variants, every_variant_gqa_fp64) {
    double worst = 0;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) worst = fmax(worst, gradcheck(variants[i], 2, 100 + i));
    printf("every variant, n_kv = 2: worst rel err %.3e (bound %.0e)\n", worst, TOL);
    cr_log_info("every variant kv=2: worst rel err %.3e", worst);
}

Test(gradcheck_variants, main_variants_mha_and_mqa_fp64) {
    static const char *main_variants[] = {"resformer", "resformer:mode=dense", "svformer", "neutreno:lambda=0.4",
                                          "cross_layer:m=prev", "attn_residual"};
    double worst = 0;
    for (size_t i = 0; i < sizeof main_variants / sizeof main_variants[0]; i++) {
        worst = fmax(worst, gradcheck(main_variants[i], 4, 200 + i));
        worst = fmax(worst, gradcheck(main_variants[i], 1, 300 + i));
    }
    printf("main variants, n_kv = 4 and 1: worst rel err %.3e (bound %.0e)\n", worst, TOL);
}
