/* test_variant_equivalence.c: variants that are the same function must give the same numbers.
 *
 * Each case builds two fp64 models on the same weights (params_init_f64 keys every tensor by
 * its name, so shared names get identical values), runs one batch, and compares the logits,
 * the loss and the gradient of every tensor the two tables share, by name. Where both models
 * perform the same arithmetic the comparison is exact (==): identical coefficient tables mean
 * identical operations in identical order. GQA against MHA with duplicated kv heads computes
 * the same forward exactly, but its backward sums the query heads' shares of a kv head in
 * another order (inside the attention loop vs in the k/v_proj matmul), so gradients are
 * compared to 1e-13 relative (rounding of sums of ~10² terms, eps_64 ≈ 1.1e-16). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/rng.h"
#include "conformance/model_compare.h"
#include "conformance/test_configs.h"

enum { B = 2, T = 8 };

static void build(Run *r, int n_kv, const char *variant) {
    const ModelConfig c = test_config_value_path(n_kv, variant);
    run_build(r, &c, B, T, 7);
}

static void run(Run *r) {
    int32_t tokens[B * T];
    Rng g;
    rng_seed(&g, 99);
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&g, (uint64_t)r->c.vocab_size);
    run_step(r, tokens);
}

/* tol 0: exact. Returns the number of tensors compared. */
static int compare(Run *a, Run *b, double tol, int expect_shared) {
    const double dl = run_logits_diff(a, b);
    cr_expect_eq(dl, 0, "%s vs %s: logits differ by %.3e", a->c.variant, b->c.variant, dl);
    cr_expect_eq(a->loss, b->loss, "%s vs %s: loss %.17g vs %.17g", a->c.variant, b->c.variant, a->loss, b->loss);
    int shared = 0;
    double worst = 0;
    for (int k = 0; k < a->t->n; k++) {
        const char *name = a->t->p[k].name;
        double diff, mx;
        if (!run_grad_diff(a, b, name, &diff, &mx)) continue;
        shared++;
        double rel = diff / (mx > 0 ? mx : 1);
        worst = fmax(worst, rel);
        if (tol == 0) cr_expect_eq(diff, 0, "%s vs %s: %s differs by %.3e", a->c.variant, b->c.variant, name, diff);
        else cr_expect_leq(rel, tol, "%s vs %s: %s rel %.3e", a->c.variant, b->c.variant, name, rel);
    }
    cr_expect_eq(shared, expect_shared, "%s vs %s: %d shared tensors, expected %d", a->c.variant, b->c.variant, shared,
                 expect_shared);
    printf("%-52s == %-34s logits %.1e  loss %.1e  %2d grads, worst rel %.1e\n", a->c.variant, b->c.variant, dl,
           fabs(a->loss - b->loss), shared, worst);
    return shared;
}

/* Same weights, same kv heads: a exactly equals b. */
static void exact(const char *va, const char *vb, int expect_shared) {
    Run a, b;
    build(&a, 4, va);
    build(&b, 4, vb);
    run(&a);
    run(&b);
    compare(&a, &b, 0, expect_shared);
    run_release(&a);
    run_release(&b);
}

/* 4 layers × 9 tensors + embedding, final norm, lm_head */
#define BASE_TENSORS 39

Test(variant_equivalence, identity_resformer_is_general_half_half) {
    exact("resformer", "resformer:mode=general,lambda1=0.5,0.5,0.5,lambda2=0.5,0.5,0.5", BASE_TENSORS);
}

Test(variant_equivalence, general_zero_one_is_baseline) {
    exact("resformer:mode=general,lambda1=0,0,0,lambda2=1,1,1", "baseline", BASE_TENSORS);
}

Test(variant_equivalence, svformer_anchor_everywhere_is_baseline) {
    exact("svformer:anchors=1-4", "baseline", BASE_TENSORS);
}

Test(variant_equivalence, constant_zero_is_baseline) { exact("resformer:mode=constant,lambda=0", "baseline", BASE_TENSORS); }

Test(variant_equivalence, neutreno_zero_is_baseline) { exact("neutreno:lambda=0", "baseline", BASE_TENSORS); }

Test(variant_equivalence, sparse_everywhere_is_constant) {
    exact("resformer:mode=sparse,layers=2-4,lambda=3", "resformer:mode=constant,lambda=3", BASE_TENSORS);
}

Test(variant_equivalence, source_one_is_identity) { exact("resformer:source=1", "resformer", BASE_TENSORS); }

/* Trainable coefficients at their initial values: the model is identity ResFormer, and every
 * other gradient is the same (the coefficient tensors exist in one model only). */
Test(variant_equivalence, learnable_and_dense_at_init_are_identity) {
    exact("resformer:mode=learnable", "resformer", BASE_TENSORS);
    exact("resformer:mode=dense", "resformer", BASE_TENSORS);
}

/* GQA (n_kv = 2) equals MHA (n_kv = 4) whose kv heads 2g and 2g+1 both copy GQA's head g. */
static void gqa_vs_duplicated(const char *variant) {
    Run g, h;
    build(&g, 2, variant);
    build(&h, 4, variant);
    const int hd = 4, d = 16;
    for (int l = 0; l < 4; l++)
        for (int which = 0; which < 2; which++) {
            char name[PARAM_NAME_LEN];
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s_proj.weight", l, which ? "v" : "k");
            const ParamInfo *pg = param_table_find(g.t, name), *ph = param_table_find(h.t, name);
            if (!pg) continue; /* a projection the variant drops */
            const real *src = model_params(g.m) + pg->offset;
            real *dst = model_params(h.m) + ph->offset;
            for (int head = 0; head < 4; head++) memcpy(dst + (size_t)head * hd * d, src + (size_t)(head / 2) * hd * d, sizeof(real) * hd * d);
        }
    run(&g);
    run(&h);
    /* d(GQA head g) = d(MHA head 2g) + d(MHA head 2g+1): fold MHA's k/v gradients to GQA's shape */
    for (int l = 0; l < 4; l++)
        for (int which = 0; which < 2; which++) {
            char name[PARAM_NAME_LEN];
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s_proj.weight", l, which ? "v" : "k");
            const ParamInfo *ph = param_table_find(h.t, name);
            if (!ph) continue;
            real *gr = model_grads(h.m) + ph->offset;
            for (int head = 0; head < 2; head++)
                for (int i = 0; i < hd * d; i++)
                    gr[(size_t)head * hd * d + i] = gr[(size_t)2 * head * hd * d + i] + gr[(size_t)(2 * head + 1) * hd * d + i];
        }
    compare(&g, &h, 1e-13, g.t->n);
    run_release(&g);
    run_release(&h);
}

Test(variant_equivalence, gqa_is_mha_with_duplicated_kv_heads) {
    gqa_vs_duplicated("baseline");
    gqa_vs_duplicated("resformer");
    gqa_vs_duplicated("svformer");
    gqa_vs_duplicated("neutreno:lambda=0.4");
}
