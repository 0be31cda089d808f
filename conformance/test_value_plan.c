/* test_value_plan.c: the value-path plans (common/model/value_path.c) as the parameter table sees
 * them: the paper's parameter counts, which tensors each variant drops or adds with which
 * initial values, and one clear error (naming its origin) for every kind of bad variant string. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/spec.h"
#include "common/model/params.h"
#include "common/model/value_path.h"
#include "conformance/test_util.h"

static size_t count(const char *preset, const char *variant) {
    ModelConfig c;
    ParamTable t;
    cr_assert_eq(config_preset(preset, &c), 0);
    cr_assert_eq(model_spec_set_variant(&c, variant, "--variant", NULL), 0, "%s: %s", variant, vrl_last_error());
    cr_assert_eq(model_spec_table(&c, &t), 0, "%s: %s", variant, vrl_last_error());
    size_t n = param_table_count(&t);
    param_table_free(&t);
    return n;
}

Test(value_plan, paper_parameter_counts_82M) {
    cr_expect_eq(count("82M", "baseline"), 81901056, "baseline 82M: formulas.md §1 says 81,901,056");
    cr_expect_eq(count("82M", "resformer"), 81901056, "identity ResFormer adds nothing");
    cr_expect_eq(count("82M", "svformer"), 80066048, "SVFormer 82M: formulas.md §1 says 80,066,048 (7 W_v removed)");
    const size_t wv = 512 * 512;
    cr_expect_eq(count("82M", "svformer:anchors=1,5"), 81901056 - 6 * wv);
    cr_expect_eq(count("82M", "cla"), 81901056 - 4 * 2 * wv, "CLA: layers 2, 4, 6, 8 lose k_proj and v_proj");
    cr_expect_eq(count("82M", "shared_q"), 81901056 - 7 * wv);
    cr_expect_eq(count("82M", "resformer:mode=learnable"), 81901056 + 7 * 2);
    cr_expect_eq(count("82M", "resformer:mode=dense"), 81901056 + (2 + 3 + 4 + 5 + 6 + 7 + 8));
    cr_expect_eq(count("82M", "neutreno"), 81901056);
    cr_expect_eq(count("82M", "cross_layer:m=prev"), 81901056);
}

static ParamTable table(const char *variant, int L) {
    ModelConfig c;
    ParamTable t;
    cr_assert_eq(config_preset("tiny", &c), 0);
    c.n_layers = L;
    cr_assert_eq(model_spec_set_variant(&c, variant, "--variant", NULL), 0, "%s: %s", variant, vrl_last_error());
    cr_assert_eq(model_spec_table(&c, &t), 0);
    return t;
}

Test(value_plan, tensors_dropped_and_added) {
    ParamTable t = table("svformer:anchors=1,3", 4);
    cr_expect_not_null(param_table_find(&t, "model.layers.0.self_attn.v_proj.weight"));
    cr_expect_null(param_table_find(&t, "model.layers.1.self_attn.v_proj.weight"));
    cr_expect_not_null(param_table_find(&t, "model.layers.2.self_attn.v_proj.weight"));
    cr_expect_null(param_table_find(&t, "model.layers.3.self_attn.v_proj.weight"));
    param_table_free(&t);

    t = table("cla", 4);
    cr_expect_null(param_table_find(&t, "model.layers.1.self_attn.k_proj.weight"));
    cr_expect_null(param_table_find(&t, "model.layers.3.self_attn.v_proj.weight"));
    cr_expect_not_null(param_table_find(&t, "model.layers.2.self_attn.k_proj.weight"));
    param_table_free(&t);

    /* dense: [n] at layer n >= 2, init as identity ResFormer; no decay */
    t = table("resformer:mode=dense", 4);
    cr_expect_null(param_table_find(&t, "model.layers.0.self_attn.v_residual_lambda"));
    const ParamInfo *p = param_table_find(&t, "model.layers.3.self_attn.v_residual_lambda");
    cr_assert_not_null(p);
    cr_expect_eq(p->numel, 4);
    cr_expect_eq(p->decay, 0);
    param_table_free(&t);
}

/* Initial coefficient values, through params_init_f64 (what training starts from). */
static void expect_init(const char *variant, int L, int layer, const double *want, int n) {
    ParamTable t = table(variant, L);
    char name[PARAM_NAME_LEN];
    value_plan_lambda_name(layer, name, sizeof name);
    const ParamInfo *p = param_table_find(&t, name);
    cr_assert_not_null(p, "%s: no %s", variant, name);
    cr_assert_eq((int)p->numel, n);
    double *x = malloc(t.total * sizeof *x);
    params_init_f64(&t, 3, x);
    for (int j = 0; j < n; j++) cr_expect_float_eq(x[p->offset + j], want[j], 1e-15, "%s %s[%d] = %g, want %g", variant, name, j, x[p->offset + j], want[j]);
    free(x);
    param_table_free(&t);
}

Test(value_plan, coefficient_initial_values) {
    expect_init("resformer:mode=dense", 4, 3, (double[]){0.5, 0, 0, 0.5}, 4);
    expect_init("resformer:mode=dense", 4, 1, (double[]){0.5, 0.5}, 2);
    expect_init("resformer:mode=learnable", 4, 2, (double[]){0.5, 0.5}, 2);
    /* learnable-plus: λ_{n,1} from 0.5 at n = 2 to 2 at n = L, linear; λ_{n,2} = 0.5 */
    expect_init("resformer:mode=learnable-plus", 8, 1, (double[]){0.5, 0.5}, 2);
    expect_init("resformer:mode=learnable-plus", 8, 4, (double[]){1.25, 0.5}, 2);
    expect_init("resformer:mode=learnable-plus", 8, 7, (double[]){2.0, 0.5}, 2);
    /* L = 4, the golden fixture resformer_learnable_plus (make_golden.py's own rule): 0.5, 1.25, 2 */
    expect_init("resformer:mode=learnable-plus", 4, 2, (double[]){1.25, 0.5}, 2);
    expect_init("resformer:mode=learnable-plus", 4, 3, (double[]){2.0, 0.5}, 2);
    expect_init("resformer:mode=learnable-plus,lambda1_first=1,lambda1_last=3,lambda2=1", 3, 2, (double[]){3, 1}, 2);
}

static void bad(const char *variant, const char *origin, const char *frag) {
    ModelConfig c;
    cr_assert_eq(config_preset("82M", &c), 0);
    expect_error(model_spec_set_variant(&c, variant, origin, NULL), frag);
    cr_expect(strstr(vrl_last_error(), origin) != NULL, "error \"%s\" does not name %s", vrl_last_error(), origin);
    cr_expect(strchr(vrl_last_error(), '\n') == NULL, "error is not one line");
}

Test(value_plan, bad_variant_strings_rejected) {
    bad("resformer:mode=sparse,layers=9-12", "--variant", "outside 2..8 of this 8-layer model");
    bad("resformer:mode=sparse,layers=1-3", "--variant", "outside 2..8");
    bad("resformer:mode=sparse", "--variant", "needs layers=");
    bad("resformer:mode=sparse,layers=x", "--variant", "not a layer list");
    bad("svformer:anchors=2,3", "--variant", "must include layer 1");
    bad("svformer:anchors=1,9", "--variant", "outside 1..8");
    bad("resformer:mode=fancy", "--variant", "unknown mode \"fancy\"");
    bad("resformer:lamda=2", "--variant", "no option \"lamda\"");
    bad("resformer:mode=constant,lambda=two", "--variant", "not a number");
    bad("resformer:mode=general,lambda1=1,2,lambda2=1", "--variant", "lambda1 has 2 values, the model needs 7");
    bad("resformer:mode=general", "--variant", "needs lambda1");
    bad("resformer:mode=dense,source=prev", "--variant", "needs a fixed mode");
    bad("resformer:source=9", "--variant", "not prev, mean or a layer 1..8");
    bad("cross_layer:m=2", "--variant", "is not 1 or prev");
    bad("neutreno:lambda=0.4,extra=1", "--variant", "no option \"extra\"");
    bad("cla:m=1", "runs/x/config.json", "no option \"m\"");
    bad("resformerr", "runs/x/config.json", "unknown variant \"resformerr\"");
}
