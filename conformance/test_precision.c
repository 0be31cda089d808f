/* test_precision.c: the float32 and float64 builds of the one reference source agree,
 * and the Backend tables validate their inputs.
 *
 * Story: tiny preset, weights from seed 3 rounded to float32 and given to BOTH builds
 * (so the only difference is arithmetic precision), one batch B=2, T=8; compare logits,
 * loss and gradients of the f32 build with the f64 build as the truth.
 *
 * Bounds, from float32 rounding (2^-24 ≈ 6e-8 per operation): logits pass through ~30
 * dependent ops with sums of ≤ 56 terms, so ~1e-6 of their scale is expected; we bound
 * the logits at 1e-5 of max |logit| and the loss (accumulated in double from float
 * logits) at 1e-6 relative. Gradients go through the backward's longer chain: bound
 * 1e-5 of each tensor's max |grad|. Measured: logits 1.4e-7, loss 6e-11, grads 4.7e-7. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/spec.h"
#include "common/model/backend.h"
#include "common/base/error.h"
#include "common/base/rng.h"

extern const Backend ref_backend_f32, ref_backend_f64;

enum { B = 2, T = 8 };

static void setup(ModelConfig *c, ModelSpec *s) {
    cr_assert_eq(config_preset("tiny", c), 0);
    cr_assert_eq(model_spec_build(c, s), 0);
}

Test(precision, fp32_matches_fp64_logits_loss_grads) {
    ModelConfig c;
    ModelSpec spec;
    setup(&c, &spec);
    const size_t P = spec.table.total, NL = (size_t)B * T * c.vocab_size;
    double *p64 = malloc(P * sizeof *p64), *g64 = malloc(P * sizeof *g64), *l64 = malloc(NL * sizeof *l64);
    float *p32 = malloc(P * sizeof *p32), *g32 = malloc(P * sizeof *g32), *l32 = malloc(NL * sizeof *l32);
    params_init_f64(&spec.table, 3, p64);
    for (size_t i = 0; i < P; i++) p64[i] = p32[i] = (float)p64[i]; /* identical weights */

    int32_t tokens[B * T];
    Rng r;
    rng_seed(&r, 7);
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);

    void *m32 = ref_backend_f32.create(&spec, B, T), *m64 = ref_backend_f64.create(&spec, B, T);
    cr_assert(m32 && m64, "%s", vrl_last_error());
    cr_assert_eq(ref_backend_f32.dtype, DT_F32);
    cr_assert_eq(ref_backend_f64.dtype, DT_F64);
    ref_backend_f32.set_state(m32, p32, NULL, NULL);
    ref_backend_f64.set_state(m64, p64, NULL, NULL);
    ref_backend_f32.zero_grad(m32);
    ref_backend_f64.zero_grad(m64);
    double loss32 = ref_backend_f32.forward_backward(m32, tokens, 1.0);
    double loss64 = ref_backend_f64.forward_backward(m64, tokens, 1.0);
    ref_backend_f32.get_logits(m32, l32);
    ref_backend_f64.get_logits(m64, l64);
    ref_backend_f32.get_state(m32, NULL, g32, NULL, NULL);
    ref_backend_f64.get_state(m64, NULL, g64, NULL, NULL);

    double dmax = 0, lmax = 0;
    for (size_t i = 0; i < NL; i++) {
        dmax = fmax(dmax, fabs(l32[i] - l64[i]));
        lmax = fmax(lmax, fabs(l64[i]));
    }
    double loss_rel = fabs(loss32 - loss64) / loss64;
    printf("precision: logits max|diff| %.3e of max|logit| %.3e (rel %.3e); loss %.9f vs %.9f (rel %.3e)\n", dmax,
           lmax, dmax / lmax, loss32, loss64, loss_rel);
    cr_log_info("logits rel %.3e, loss rel %.3e", dmax / lmax, loss_rel);
    cr_assert_lt(dmax / lmax, 1e-5);
    cr_assert_lt(loss_rel, 1e-6);

    double worst = 0;
    for (int k = 0; k < spec.table.n; k++) {
        const ParamInfo *pi = &spec.table.p[k];
        double d = 0, gm = 0;
        for (size_t i = pi->offset; i < pi->offset + pi->numel; i++) {
            d = fmax(d, fabs(g32[i] - g64[i]));
            gm = fmax(gm, fabs(g64[i]));
        }
        cr_assert_gt(gm, 0, "%s: zero gradient", pi->name);
        worst = fmax(worst, d / gm);
        cr_expect_lt(d / gm, 1e-5, "%s: grad rel %.3e", pi->name, d / gm);
    }
    printf("precision: worst per-tensor gradient rel diff %.3e\n", worst);

    ref_backend_f32.destroy(m32);
    ref_backend_f64.destroy(m64);
    free(p64), free(g64), free(l64), free(p32), free(g32), free(l32);
    model_spec_free(&spec);
}

/* The Backend refuses impossible shapes and out-of-vocabulary ids with a message. */
Test(precision, backend_validates_inputs) {
    ModelConfig c;
    ModelSpec spec;
    setup(&c, &spec);
    const Backend *bes[2] = {&ref_backend_f32, &ref_backend_f64};
    for (int b = 0; b < 2; b++) {
        const Backend *be = bes[b];
        vrl_clear_error();
        cr_assert_null(be->create(&spec, 1, c.max_seq + 1));
        cr_assert(strstr(vrl_last_error(), "seq"), "%s", vrl_last_error());
        cr_assert_null(be->create(&spec, 0, 8));
        cr_assert(strstr(vrl_last_error(), "batch"), "%s", vrl_last_error());

        void *m = be->create(&spec, B, T);
        cr_assert_not_null(m);
        int32_t tokens[B * T] = {0};
        tokens[11] = c.vocab_size; /* one past the end */
        be->zero_grad(m);
        vrl_clear_error();
        double loss = be->forward_backward(m, tokens, 1.0);
        printf("%s: bad token -> loss %f, error \"%s\"\n", be->name, loss, vrl_last_error());
        cr_assert(isnan(loss));
        cr_assert(strstr(vrl_last_error(), "token id 64 at batch 1 position 3"), "%s", vrl_last_error());
        tokens[11] = -1;
        cr_assert(isnan(be->forward_loss(m, tokens)));
        /* the rejected batch added nothing to the gradients */
        size_t gbytes = spec.table.total * (be->dtype == DT_F32 ? 4 : 8);
        unsigned char *g = malloc(gbytes);
        be->get_state(m, NULL, g, NULL, NULL);
        for (size_t i = 0; i < gbytes; i++) cr_assert_eq(g[i], 0);
        free(g);
        be->destroy(m);
    }
    model_spec_free(&spec);
}
