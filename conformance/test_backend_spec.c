/* test_backend_spec.c: the model spec is built once and every backend declares what it does
 * with it (common/model/spec.h, common/model/backend.h).
 *
 * - a spec's plans and table agree (a stream part and a value part together);
 * - errors of either family name the origin given to model_spec_set_variant;
 * - ref declares training, scoring and analysis for llama, training and scoring for GPT-2, and a command
 *   asking for a missing capability gets one line naming the backend;
 * - the analysis views exist exactly where the model has them (AttnRes depth weights: rows
 *   sum to 1 over the plan's sources);
 * - fast (when built) declares training and scoring, and refuses by name what its kernels lack,
 *   with no GPU needed for the question. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/backend.h"
#include "common/model/spec.h"
#include "conformance/test_configs.h"
#include "ref/model.h"
#if VRL_HAVE_CUDA
#include "fast/fast.h"
#endif

/* gpt2: 0 llama, 1 GPT-2, 2 GPT-2 with dropout 0.1 */
static void build(ModelSpec *s, const char *variant, int gpt2) {
    ModelConfig c;
    test_config_tiny(&c, 3, variant);
    if (gpt2) test_config_gpt2(&c, gpt2 == 2 ? 0.1 : 0);
    cr_assert_eq(model_spec_build(&c, s), 0, "%s: %s", variant, vrl_last_error());
}

Test(spec, plans_and_table_agree) {
    ModelSpec s;
    build(&s, "attnres:mode=block,size=2+resformer:mode=learnable", 0);
    cr_assert_eq(s.stream.kind, STREAM_ATTNRES);
    cr_assert_eq(s.stream.block, 2);
    cr_assert_str_eq(s.value.name, "resformer");
    cr_assert_eq(s.value.n_train[0], 0);
    cr_assert_eq(s.value.n_train[2], 2);
    cr_assert_eq(s.variant.n_parts, 2);
    /* both families' tensors are in the one table, value ones inside the layer, stream ones last */
    const ParamInfo *lam = param_table_find(&s.table, "model.layers.2.self_attn.v_residual_lambda");
    const ParamInfo *fin = param_table_find(&s.table, "model.final_res_query");
    cr_assert(lam && fin);
    cr_assert_eq(lam->numel, 2);
    cr_assert_eq(fin->offset + fin->numel, s.table.total, "the stream's tensors close the table");
    ParamTable t;
    cr_assert_eq(model_spec_table(&s.config, &t), 0);
    cr_assert_eq(t.total, s.table.total);
    cr_assert_eq(t.n, s.table.n);
    param_table_free(&t);
    model_spec_free(&s);
}

Test(spec, errors_name_the_origin) {
    ModelConfig c;
    test_config_tiny(&c, 3, "baseline");
    cr_assert_eq(model_spec_set_variant(&c, "attnres:size=x", "--variant", NULL), -1);
    cr_assert(!strncmp(vrl_last_error(), "--variant: ", 11), "%s", vrl_last_error());
    cr_assert(strstr(vrl_last_error(), "size"), "%s", vrl_last_error());
    cr_assert_eq(model_spec_set_variant(&c, "svformer:anchors=2", "run/config.json", NULL), -1);
    cr_assert(!strncmp(vrl_last_error(), "run/config.json: ", 17), "%s", vrl_last_error());
    cr_assert_eq(model_spec_set_variant(&c, "hc:n=2", "--variant", NULL), 0, "%s", vrl_last_error());
    cr_assert_str_eq(c.variant, "hc:n=2");
}

Test(backend, ref_capabilities) {
    const Backend *bes[2] = {&ref_backend_f32, &ref_backend_f64};
    ModelSpec llama, gpt2;
    build(&llama, "neutreno", 0);
    build(&gpt2, "baseline", 1);
    for (int b = 0; b < 2; b++) {
        char why[256] = "";
        cr_assert_eq(bes[b]->capabilities(&llama, why, sizeof why),
                     BACKEND_CAN_TRAIN | BACKEND_CAN_ANALYZE | BACKEND_CAN_GENERATE | BACKEND_CAN_SCORE);
        cr_assert_eq(bes[b]->capabilities(&gpt2, why, sizeof why),
                     BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE | BACKEND_CAN_SCORE);
        cr_assert(strstr(why, "gpt2"), "%s", why);
        cr_assert_eq(backend_require(bes[b], &llama, BACKEND_CAN_TRAIN | BACKEND_CAN_ANALYZE), 1);
        cr_assert_eq(backend_require(bes[b], &gpt2, BACKEND_CAN_ANALYZE), 0);
        cr_assert(strstr(vrl_last_error(), bes[b]->name) && strstr(vrl_last_error(), "cannot analyze"), "%s",
                  vrl_last_error());
        cr_assert_eq(backend_require(bes[b], &llama, BACKEND_CAN_GENERATE), 1); /* ref/decode.c */
        cr_assert_eq(backend_require(bes[b], &gpt2, BACKEND_CAN_GENERATE), 1); /* ref/gpt2_decode.c */
    }
    model_spec_free(&llama);
    model_spec_free(&gpt2);
}

/* Depth weights exist for AttnRes only; each token's weights over a step's sources sum to 1. */
Test(backend, views) {
    const Backend *be = &ref_backend_f64;
    enum { B = 2, T = 5 };
    int32_t tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (7 * i + 3) % 64;
    for (int attnres = 0; attnres < 2; attnres++) {
        ModelSpec s;
        build(&s, attnres ? "attnres:mode=block,size=2" : "baseline", 0);
        double *p = malloc(s.table.total * sizeof *p);
        cr_assert_not_null(p);
        params_init_f64(&s.table, 5, p);
        void *m = be->create(&s, B, T);
        cr_assert_not_null(m, "%s", vrl_last_error());
        be->set_state(m, p, NULL, NULL);
        cr_assert(isfinite(be->forward_loss(m, tok)));
        const int L = s.config.n_layers;
        for (int l = 0; l < L; l++) {
            cr_assert_not_null(be->view(m, VIEW_ATTENTION, l));
            const double *a = be->view(m, VIEW_ATTENTION, l); /* [B,NH,T,T]: causal rows sum to 1 */
            double row = 0;
            for (int j = 0; j < T; j++) row += a[(T - 1) * T + j];
            cr_expect(fabs(row - 1) < 1e-12, "layer %d: last row sums to %.17g", l, row);
            cr_assert_not_null(be->view(m, VIEW_VALUES, l));
        }
        cr_assert_not_null(be->view(m, VIEW_HIDDEN, L));
        cr_assert_null(be->view(m, VIEW_HIDDEN, L + 1));
        const double *w = be->view(m, VIEW_DEPTH_WEIGHTS, 3);
        if (!attnres) {
            cr_assert_null(w, "the baseline has no depth weights");
        } else {
            const int ns = s.stream.n_src[3];
            cr_assert_not_null(w, "%s", vrl_last_error());
            for (int n = 0; n < B * T; n++) {
                double sum = 0;
                for (int g = 0; g < ns; g++) sum += w[(size_t)n * ns + g];
                cr_expect(fabs(sum - 1) < 1e-12, "token %d: depth weights sum to %.17g", n, sum);
            }
        }
        be->destroy(m);
        free(p);
        model_spec_free(&s);
    }
}

#if VRL_HAVE_CUDA
/* fast_capabilities reads only the spec: no GPU needed. */
Test(backend, fast_capabilities) {
    struct { const char *variant; int gpt2; unsigned want; const char *why; } cases[] = {
        {"baseline", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"resformer:mode=constant,lambda=2", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"svformer", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"attnres", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"attnres:mode=block,size=3", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"denseformer", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"hc", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"hc:n=3", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"mhc", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"mhc:n=2,iters=5", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"neutreno", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"resformer:mode=learnable", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"cla", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"query_residual", 0, BACKEND_CAN_TRAIN, "needs queries mixed across layers"},
        {"attn_residual", 0, BACKEND_CAN_TRAIN, "needs attention-matrix mixing across layers"},
        {"hidden_residual", 0, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"},
        {"cross_layer", 0, BACKEND_CAN_TRAIN, "needs Eq. 2 cross-layer attention"},
        {"cross_layer:m=prev", 0, BACKEND_CAN_TRAIN, "needs Eq. 2 cross-layer attention"},
        {"baseline", 1, BACKEND_CAN_TRAIN | BACKEND_CAN_GENERATE, "no analysis"}, /* fast/gpt2.cu */
        {"baseline", 2, 0, "GPT-2 with dropout 0.1 is not implemented on CUDA"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ModelSpec s;
        build(&s, cases[i].variant, cases[i].gpt2);
        char why[512] = "";
        /* what fast trains it also scores (vrl eval) */
        const unsigned want = cases[i].want ? cases[i].want | BACKEND_CAN_SCORE : 0u;
        cr_expect_eq(fast_backend_cuda.capabilities(&s, why, sizeof why), want, "%s", cases[i].variant);
        cr_expect(strstr(why, cases[i].why), "%s: \"%s\"", cases[i].variant, why);
        if (!cases[i].want) {
            cr_expect_eq(backend_require(&fast_backend_cuda, &s, BACKEND_CAN_TRAIN), 0);
            cr_expect(strstr(vrl_last_error(), "backend cuda-bf16 cannot train this model: "), "%s", vrl_last_error());
            cr_expect_eq(backend_require(&fast_backend_cuda, &s, BACKEND_CAN_SCORE), 0);
            cr_expect(strstr(vrl_last_error(), "backend cuda-bf16 cannot score this model: "), "%s", vrl_last_error());
        }
        model_spec_free(&s);
    }
    /* plans no variant makes, which fast/attention_mix.cu does not do: refused by name. Three
     * layers (0-based l = 0..2); ca[l][i] is row l, source i. */
    struct { const char *variant; int l, i; double c; const char *why; } plans[] = {
        {"attn_residual", 2, 2, 0.0, "without the layer's own softmax"}, /* A_3 = A_1 only */
        {"cross_layer", 1, 0, 0.5, "attention-matrix mixing in an Eq. 2 layer"},
        {"cross_layer:m=prev", 2, 0, 0.5, "mixing in an Eq. 2 layer"},
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        ModelSpec s;
        build(&s, plans[i].variant, 0);
        s.value.ca[(size_t)plans[i].l * s.value.L + plans[i].i] = plans[i].c;
        char why[512] = "";
        cr_expect_eq(fast_backend_cuda.capabilities(&s, why, sizeof why), 0u, "%s, ca[%d][%d]", plans[i].variant,
                     plans[i].l, plans[i].i);
        cr_expect(strstr(why, plans[i].why), "%s: \"%s\"", plans[i].variant, why);
        model_spec_free(&s);
    }
    {   /* a baseline layer mixing in an Eq. 2 layer's [T, 2T] softmax */
        ModelSpec s;
        build(&s, "cross_layer", 0);
        s.value.cross[2] = -1;
        s.value.ca[(size_t)2 * s.value.L + 1] = 0.5;
        s.value.ca[(size_t)2 * s.value.L + 2] = 0.5;
        char why[512] = "";
        cr_expect_eq(fast_backend_cuda.capabilities(&s, why, sizeof why), 0u);
        cr_expect(strstr(why, "the softmax of an Eq. 2 layer"), "\"%s\"", why);
        model_spec_free(&s);
    }
}
#endif
