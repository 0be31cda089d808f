/* test_gradcheck_stream.c: the residual-stream variants (formulas.md §5) and the GPT-2 baseline:
 * backward == central finite differences of the loss for EVERY parameter tensor,
 * including every mixing parameter (DWA α, AttnRes queries, HC/mHC maps), in float64.
 *
 * Config: tiny-ish (L = 2, 2 heads, d = 8, ffn 16, vocab 32), B = 2, T = 5, so each
 * variant takes well under a second. Weights std 0.3; every parameter that starts at a
 * symmetric point (gains 1, zero queries, zero dynamic HC/mHC weights, identity maps,
 * one-hot α) gets + N(0, 0.2²) so that no gradient vanishes by symmetry and every path
 * (tanh, sigmoid, softmax over depth, Sinkhorn) is exercised away from its init.
 *
 * The HC/mHC scales (s_α, s_β, α_pre/post/res, init 0.01) are set to 0.5 + N(0, 0.2²) and
 * mHC's b_res to N(0, 0.5²): at init the dynamic paths contribute ~1e-6 to the gradient,
 * below what differences of the loss can resolve, and b_res = 4·I saturates Sinkhorn.
 *
 * Structural zeros (asserted ~0 both ways instead of a ratio): the first attention
 * sublayer's AttnRes query (softmax over one source, the embedding), and the last mHC
 * sublayer's residual map (its columns sum to 1 and the head sums the streams, so
 * Σ_a H_res[a,b] = 1 removes it from the loss), and the first mHC sublayer's residual map
 * (its 4 streams are copies of the embedding, so only H_res's row sums act, and Sinkhorn
 * drives them to 1: gradient ~1e-11, i.e. zero within the differences' noise).
 *
 * Error of a tensor = max |analytic − numeric| / max(max |numeric|, 1e-4) over its elements,
 * h = 1e-5. The floor: the differences carry ~1e-11 of absolute noise, so for a tensor
 * whose whole gradient is below 1e-4 (mHC's pre map on identical streams) the ratio would
 * measure noise; there the bound reads as an absolute 1e-10.
 * Bound 1e-6 (as test_gradcheck_model.c): central-difference truncation ~h² ≈ 1e-10 and
 * rounding ~eps_64·|L|/h ≈ 1e-11 relative to O(1e-2..1) gradients; a wrong backward term
 * shows up as O(1e-2) or more. mHC runs its 20 Sinkhorn iterations in the loss, so its
 * check also covers the backward through the iterations. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/spec.h"
#include "common/base/error.h"
#include "conformance/gradcheck.h"
#include "conformance/test_configs.h"

#define TOL 1e-6

enum { B = 2, T = 5 };

static const GradcheckSampling every_element = {SIZE_MAX, 0, 0};
static double worst_all;
static int dropout_on; /* training-mode dropout for the next gradcheck */

static void small_config(ModelConfig *c, const char *variant) {
    test_config_tiny(c, 2, variant);
    c->n_heads = 2;
    c->n_kv_heads = 2;
    c->d_model = 8;
    c->d_ffn = 16;
    c->vocab_size = 32;
}

static void gradcheck(const ModelConfig *c, uint64_t seed) {
    Gradcheck g;
    gradcheck_begin(&g, c, B, T, seed, dropout_on);
    const real *grad = g.buf.grads;
    printf("gradcheck %s%s: loss %.6f, %d tensors\n", c->arch == ARCH_GPT2 ? "gpt2 " : "", c->variant, g.loss, g.t->n);
    double worst = 0;
    for (int k = 0; k < g.t->n; k++) {
        const ParamInfo *pi = &g.t->p[k];
        const GradcheckTensor r = gradcheck_tensor(&g, k, &every_element);
        const double max_num = r.num, err = gradcheck_rel_err(r, 1e-4);
        printf("  %-40s %5zu  max|grad| %.3e  rel err %.3e\n", pi->name, pi->numel, max_num, err);
        char last_res[PARAM_NAME_LEN];
        snprintf(last_res, sizeof last_res, "model.layers.%d.mhc_mlp.", c->n_layers - 1);
        const int mhc_end = !strncmp(pi->name, last_res, strlen(last_res)) ||
                            !strncmp(pi->name, "model.layers.0.mhc_attn.", 24);
        if (!strcmp(pi->name, "model.layers.0.attn_res_query") || (mhc_end && strstr(pi->name, "_res"))) {
            double max_an = 0;
            for (size_t j = 0; j < pi->numel; j++) max_an = fmax(max_an, fabs(grad[pi->offset + j]));
            cr_expect_lt(max_num, 1e-9, "%s: structural zero has numeric gradient %.3e", pi->name, max_num);
            cr_expect_lt(max_an, 1e-9, "%s: structural zero has analytic gradient %.3e", pi->name, max_an);
            continue;
        }
        /* wpe rows past T get no gradient by construction; everything else must move */
        if (strcmp(pi->name, "transformer.wpe.weight"))
            cr_expect(max_num > 1e-8, "%s %s: gradient ~0, the check proves nothing", c->variant, pi->name);
        cr_expect_lt(err, TOL, "%s %s: rel err %.3e", c->variant, pi->name, err);
        worst = fmax(worst, err);
    }
    printf("  worst rel err %.3e\n", worst);
    worst_all = fmax(worst_all, worst);
    gradcheck_end(&g);
}

static void check_variant(const char *variant, uint64_t seed) {
    ModelConfig c;
    small_config(&c, variant);
    gradcheck(&c, seed);
}

Test(gradcheck_stream, denseformer) { check_variant("denseformer", 21); }
Test(gradcheck_stream, denseformer_dilation_period) {
    ModelConfig c;
    small_config(&c, "denseformer:dilation=2,period=2");
    c.n_layers = 4; /* DWAs after blocks 2 and 4 only, over (X0, X2) and (X0, X2, X4) */
    gradcheck(&c, 22);
}
Test(gradcheck_stream, attnres_full) { check_variant("attnres:mode=full", 23); }
Test(gradcheck_stream, attnres_block) {
    ModelConfig c;
    small_config(&c, "attnres:mode=block,size=3");
    c.n_layers = 3; /* blocks {1,2,3} {4,5,6}: finished and partial sums both occur */
    gradcheck(&c, 24);
}
Test(gradcheck_stream, hc) { check_variant("hc:n=4", 25); }
Test(gradcheck_stream, mhc) { check_variant("mhc:n=4,iters=20", 26); }
Test(gradcheck_stream, attnres_with_baseline_value_path) { check_variant("attnres:mode=block,size=2+baseline", 27); }

Test(gradcheck_stream, gpt2) {
    ModelConfig c;
    small_config(&c, "baseline");
    test_config_gpt2(&c, 0);
    c.max_seq = 8; /* rows T..7 of wpe stay at zero gradient */
    gradcheck(&c, 28);
}

/* GPT-2 with dropout 0.1 in training mode: the masks are a pure function of their key, so
 * the finite differences see the same masks as the backward (attention, residual and
 * embedding dropout paths all checked). */
Test(gradcheck_stream, gpt2_dropout) {
    ModelConfig c;
    small_config(&c, "baseline");
    test_config_gpt2(&c, 0.1);
    c.max_seq = 8;
    dropout_on = 1;
    gradcheck(&c, 29);
    dropout_on = 0;
}

/* Composition: a value-path variant inside an AttnRes model (V_1 still from layer 1's
 * attention; the trainable λ get gradients through the depth mixer). Runs once the
 * value-path code (wt-value) is in the build: until then `resformer` parses but adds no
 * tensor, so the test skips rather than check a baseline under another name. */
Test(gradcheck_stream, attnres_with_resformer_learnable) {
    ModelConfig c;
    small_config(&c, "attnres:mode=block,size=2+resformer:mode=learnable");
    ParamTable t;
    cr_assert_eq(model_spec_table(&c, &t), 0, "%s", vrl_last_error());
    const int have = param_table_find(&t, "model.layers.1.self_attn.v_residual_lambda") != NULL;
    param_table_free(&t);
    if (!have) cr_skip_test("value-path variants are not in this build (no v_residual_lambda): composition unchecked");
    gradcheck(&c, 30);
}
