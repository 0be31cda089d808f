/* test_golden_stream.c: the residual-stream variants and GPT-2 against the PyTorch
 * oracle (conformance/golden/fixtures, made by make_golden.py from SPEC.md alone).
 *
 * For each case: the fixture's config.json text and initial weights, its batch [2,16];
 * the float64 reference must reproduce out.loss, out.logits and grad.<name> of every
 * parameter. Bound 1e-10 relative to max(each tensor's max |value|, 1e-6): the fixtures run the
 * same formulas in float64 (fp32-rounded weights, exact in double), so only summation
 * order differs (~1e-15), while a wrong formula differs at 1e-3 or more. The 1e-6 floor:
 * mHC's residual maps at init (Sinkhorn of exp(4·I), exactly doubly stochastic) have
 * gradients that are zero up to rounding, ~1e-20 in both implementations. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include <jansson.h>

#include "common/safetensors.h"
#include "conformance/test_util.h"
#include "ref/model.h"

#define TOL 1e-10

static double rel_diff(const double *want, const real *got, size_t n) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs(want[i] - got[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    return diff / fmax(scale, 1e-6);
}

static void golden_case(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/conformance/golden/fixtures/%s.safetensors", VRL_SOURCE_DIR, name);
    StFile f;
    cr_assert_eq(st_read(path, &f), 0, "%s", vrl_last_error());
    /* metadata "config" holds the config.json text: write it out and load it as a file */
    const char *dir = test_tmpdir();
    const char *cpath = test_path(dir, "config.json");
    /* the metadata value is a JSON string; decode it with the config reader's library */
    char *text = NULL;
    {
        json_error_t e;
        json_t *root = json_loads(f.metadata_json, 0, &e);
        cr_assert_not_null(root);
        text = strdup(json_string_value(json_object_get(root, "config")));
        json_decref(root);
    }
    test_write(cpath, text, strlen(text));
    free(text);
    ModelConfig c;
    cr_assert_eq(config_load_json(cpath, &c), 0, "%s", vrl_last_error());
    ParamTable t;
    cr_assert_eq(param_table_build(&c, &t), 0, "%s", vrl_last_error());
    const StTensor *tok = st_find(&f, "batch.tokens");
    cr_assert_not_null(tok);
    const int B = (int)tok->shape[0], T = (int)tok->shape[1];
    RefModel *m = model_create(&c, &t, B, T);
    cr_assert_not_null(m, "%s", vrl_last_error());
    for (int k = 0; k < t.n; k++) {
        char key[160];
        snprintf(key, sizeof key, "param.%s", t.p[k].name);
        const StTensor *p = st_find(&f, key);
        cr_assert_not_null(p, "%s: fixture lacks %s", name, key);
        cr_assert_eq(st_to_f64(p, model_params(m) + t.p[k].offset, t.p[k].numel), 0, "%s", key);
    }
    int32_t *tokens = malloc((size_t)B * T * sizeof *tokens);
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)((const int64_t *)tok->data)[i];
    model_zero_grad(m);
    const double loss = model_forward(m, tokens);
    model_backward(m, 1.0);
    double want_loss;
    cr_assert_eq(st_to_f64(st_find(&f, "out.loss"), &want_loss, 1), 0);
    const size_t nl = (size_t)B * T * c.vocab_size;
    double *buf = malloc((nl > t.total ? nl : t.total) * sizeof *buf);
    cr_assert_eq(st_to_f64(st_find(&f, "out.logits"), buf, nl), 0);
    const double dl = rel_diff(buf, model_logits(m), nl);
    double worst = 0;
    const char *worst_name = "";
    for (int k = 0; k < t.n; k++) {
        char key[160];
        snprintf(key, sizeof key, "grad.%s", t.p[k].name);
        cr_assert_eq(st_to_f64(st_find(&f, key), buf, t.p[k].numel), 0, "%s", key);
        const double e = rel_diff(buf, model_grads(m) + t.p[k].offset, t.p[k].numel);
        if (e > worst) worst = e, worst_name = t.p[k].name;
        double mw = 0, mg = 0;
        for (size_t i = 0; i < t.p[k].numel; i++) {
            mw = fmax(mw, fabs(buf[i]));
            mg = fmax(mg, fabs(model_grads(m)[t.p[k].offset + i]));
        }
        cr_expect_lt(e, TOL, "%s: %s rel diff %.3e (max |torch| %.3e, max |ours| %.3e)", name, key, e, mw, mg);
    }
    printf("golden %-18s loss %.15f (torch %.15f)  logits rel %.2e  worst grad rel %.2e (%s)\n", name, loss,
           want_loss, dl, worst, worst_name);
    cr_expect_lt(fabs(loss - want_loss), TOL * fabs(want_loss));
    cr_expect_lt(dl, TOL);
    free(buf);
    free(tokens);
    model_destroy(m);
    param_table_free(&t);
    st_free(&f);
}

Test(golden_stream, denseformer_fp64) { golden_case("denseformer"); }
Test(golden_stream, denseformer_k2_p2_fp64) { golden_case("denseformer_k2_p2"); }
Test(golden_stream, attnres_full_fp64) { golden_case("attnres_full"); }
Test(golden_stream, attnres_block_fp64) { golden_case("attnres_block"); }
Test(golden_stream, hc_fp64) { golden_case("hc"); }
Test(golden_stream, mhc_fp64) { golden_case("mhc"); }
Test(golden_stream, gpt2_fp64) { golden_case("gpt2"); }
