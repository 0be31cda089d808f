/* test_gradcheck_variants.c: for EVERY value-path variant of formulas.md §4, the reference model's
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

#include "conformance/gradcheck.h"
#include "conformance/test_configs.h"

#define TOL 1e-6

enum { B = 2, T = 8 };

/* tensors up to 64 elements element by element, 32 sampled from a larger one (embedding rows:
 * of tokens in the batch) */
static const GradcheckSampling sampling = {64, 32, 1};

/* Returns the worst relative error over the tensors. */
static double gradcheck(const char *variant, int n_kv, uint64_t seed) {
    const ModelConfig c = test_config_value_path(n_kv, variant);
    Gradcheck g;
    gradcheck_begin(&g, &c, B, T, seed, 0);
    double worst = 0;
    const char *worst_name = "";
    int checked = 0;
    for (int k = 0; k < g.t->n; k++) {
        const ParamInfo *pi = &g.t->p[k];
        const GradcheckTensor r = gradcheck_tensor(&g, k, &sampling);
        double err = gradcheck_rel_err(r, 0);
        if (err > worst) worst = err, worst_name = pi->name;
        checked++;
        cr_expect(r.num > 1e-8, "%s: %s: gradient ~0, the check proves nothing", variant, pi->name);
        cr_expect_lt(err, TOL, "%s kv=%d: %s rel err %.3e", variant, n_kv, pi->name, err);
        if (strstr(pi->name, "v_residual_lambda") || strstr(pi->name, "layers.0.self_attn.v_proj"))
            printf("    %-44s %3zu/%-4zu max|grad| %.3e  rel err %.3e\n", pi->name, r.n, pi->numel, r.num, err);
    }
    printf("%-62s kv=%d loss %.4f  %2d tensors  worst rel err %.2e (%s)\n", variant, n_kv, g.loss, checked, worst,
           worst_name);
    gradcheck_end(&g);
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
