/* test_metrics.c: formulas.md §6 analysis metrics (ref/analysis.c, fp64 build) on inputs whose
 * answer is known in closed form, and against the PyTorch-computed
 * conformance/golden/fixtures/metrics_baseline.safetensors. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/spec.h"
#include "common/model/config.h"
#include "common/base/error.h"
#include "common/model/params.h"
#include "common/base/safetensors.h"
#include "conformance/test_util.h"
#include "ref/analysis.h"
#include "ref/model.h"

/* Uniform causal attention: row i puts 1/(i+1) on keys 0..i. Column sums
 * c_j = Σ_{i≥j} 1/(i+1) = H_T − H_j, total T, so p_j = (H_T − H_j)/T. */
Test(metrics, entropy_uniform_causal_by_hand) {
    enum { NH = 3, T = 4 };
    double att[NH * T * T] = {0}; /* [NH,T,T] */
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) att[(h * T + i) * T + j] = 1.0 / (i + 1);
    /* by hand, T = 4: c = (25/12, 13/12, 7/12, 3/12), Σ = 4 */
    const double p[4] = {25.0 / 48, 13.0 / 48, 7.0 / 48, 3.0 / 48};
    double want = 0;
    for (int j = 0; j < 4; j++) want -= p[j] * log(p[j]);
    const double got = metric_attention_entropy(att, NH, T);
    cr_assert(fabs(got - want) < 1e-14, "entropy %.17g, by hand %.17g", got, want);
    cr_assert(fabs(got - 1.1475875696975468) < 1e-12, "entropy %.17g", got); /* Python: -Σ p ln p */
}

/* Attention that only looks at itself (identity) spreads the mass evenly: ln T. Heads
 * are averaged first: one head on the diagonal, one on key 0 gives a known mixture. */
Test(metrics, entropy_identity_and_head_mean) {
    enum { T = 5 };
    double att[2 * T * T] = {0}; /* [2,T,T] */
    for (int i = 0; i < T; i++) att[i * T + i] = 1, att[(T + i) * T + 0] = 1;
    double one = metric_attention_entropy(att, 1, T);
    cr_assert(fabs(one - log(T)) < 1e-14, "identity attention: %.17g vs ln 5", one);
    /* head mean: key 0 gets (1 + 5)/2 = 3 of 5, keys 1..4 get 1/2 each -> p = (0.6, 0.1 x4) */
    double want = -(0.6 * log(0.6) + 4 * 0.1 * log(0.1));
    double got = metric_attention_entropy(att, 2, T);
    cr_assert(fabs(got - want) < 1e-14, "two heads: %.17g vs %.17g", got, want);
}

Test(metrics, similarity_identical_tokens_is_one) {
    enum { T = 7, D = 5 };
    double x[T * D]; /* [T,D] the same vector at different scales */
    for (int i = 0; i < T; i++)
        for (int c = 0; c < D; c++) x[i * D + c] = (i + 1) * (c - 1.5);
    double s = metric_token_similarity(x, T, D, D);
    cr_assert(fabs(s - 1) < 1e-14, "identical directions: %.17g", s);
    /* orthonormal tokens: 0; a token and its negation: -1 */
    double e[3 * 3] = {1, 0, 0, 0, 2, 0, 0, 0, 3}; /* [3,3] */
    cr_assert(fabs(metric_token_similarity(e, 3, 3, 3)) < 1e-15);
    double pm[2 * 2] = {1, 1, -2, -2}; /* [2,2] */
    cr_assert(fabs(metric_token_similarity(pm, 2, 2, 2) + 1) < 1e-15);
    /* a zero vector stays zero after normalisation (eps 1e-12): pairs (a,b) = 1, with 0 = 0.
     * ordered pairs i != j: 6, of which 2 are (a,b): 2/6 */
    double z[3 * 2] = {1, 0, 3, 0, 0, 0}; /* [3,2] */
    cr_assert(fabs(metric_token_similarity(z, 3, 2, 2) - 1.0 / 3) < 1e-15);
}

Test(metrics, key_similarity_heads_average_vs_concat) {
    /* two tokens, two heads of dim 1: head 0 agrees (+1), head 1 opposes (-1).
     * averaged: (1 + -1)/2 = 0; concatenated: (1,1)·(1,-1) = 0 as well, so tilt head 1
     * in magnitude: token 1 = (1, -3): concat cos = (1 - 3)/(√2·√10) */
    double k[2 * 2] = {1, 1, 1, -3}; /* [T=2, NKV*hd=2] */
    cr_assert(fabs(metric_key_similarity(k, 2, 2, 1, 0) - 0) < 1e-15);
    const double want = -2 / (sqrt(2) * sqrt(10));
    cr_assert(fabs(metric_key_similarity(k, 2, 2, 1, 1) - want) < 1e-15);
}

/* Rows 2e_1, 2e_1, e_2, 0 (T = 4) give C = (1/T)Σ v vᵀ = diag(8/4, 1/4, 0) = (2, 0.25, 0);
 * rotating every row by an orthogonal Q gives the solver real work (C -> QCQᵀ) and
 * leaves the eigenvalues as they are. */
Test(metrics, spectrum_known_eigenvalues) {
    enum { T = 4, D = 3 };
    const double c = cos(0.7), s = sin(0.7);
    const double Q[D * D] = {c, -s, 0, s * 0.6, c * 0.6, -0.8, s * 0.8, c * 0.8, 0.6}; /* orthogonal */
    const double raw[T * D] = {2, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0};
    double v[T * D] = {0}; /* [T,D] raw rows rotated by Q */
    for (int i = 0; i < T; i++)
        for (int a = 0; a < D; a++)
            for (int b = 0; b < D; b++) v[i * D + a] += Q[a * D + b] * raw[i * D + b];
    double eig[D];
    cr_assert_eq(metric_value_spectrum(v, T, D, eig), 0, "%s", vrl_last_error());
    const double want[D] = {2, 0.25, 0};
    for (int i = 0; i < D; i++) cr_assert(fabs(eig[i] - want[i]) < 1e-14, "eig[%d] = %.17g, want %g", i, eig[i], want[i]);
}

/* When K_m = K_n and V_m = V_n, Eq. 2 is exactly A_n V_n (the doubled keys leave the
 * softmax unchanged), so Eq. 3's ½A_n(V_n + V_m) equals it: cosine 1. */
Test(metrics, cross_layer_identical_layers) {
    enum { T = 5, NH = 2, NKV = 1, hd = 2 };
    double q[T * NH * hd], k[T * NKV * hd], v[T * NKV * hd];
    for (int i = 0; i < T * NH * hd; i++) q[i] = sin(1.3 * i + 0.2);
    for (int i = 0; i < T * NKV * hd; i++) k[i] = cos(0.9 * i), v[i] = 0.5 + sin(2.1 * i);
    double c3, c6;
    cr_assert_eq(metric_cross_layer(q, k, v, k, v, T, NH, NKV, hd, &c3, &c6), 0);
    cr_assert(fabs(c3 - 1) < 1e-14, "cos(Eq2, Eq3) = %.17g", c3);
    /* Eq. 6 form ½(A V + V_t) differs from A V unless V is constant: strictly below 1 */
    cr_assert(c6 < 1 - 1e-6, "cos(Eq2, Eq6) = %.17g", c6);
    /* T = 1: everything is v_0 itself, both cosines 1 */
    cr_assert_eq(metric_cross_layer(q, k, v, k, v, 1, NH, NKV, hd, &c3, &c6), 0);
    cr_assert(fabs(c3 - 1) < 1e-14 && fabs(c6 - 1) < 1e-14);
}

/* ---------------------------------------------------------------- golden fixture */

static const char *fixture(const char *name) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/conformance/golden/fixtures/%s", VRL_SOURCE_DIR, name);
    return p;
}

static double worst_diff; /* largest |C - PyTorch| seen, for the log */

/* Relative-or-absolute closeness: |a-b| <= tol·max(1, |b|). */
static void expect_close(const char *what, int i, double got, double want, double tol) {
    worst_diff = fmax(worst_diff, fabs(got - want));
    cr_expect(fabs(got - want) <= tol * fmax(1, fabs(want)), "%s[%d]: C %.17g, PyTorch %.17g (diff %.3g)", what, i, got,
              want, fabs(got - want));
}

Test(metrics, golden_baseline_fp64) {
    StFile met, base;
    cr_assert_eq(st_read(fixture("metrics_baseline.safetensors"), &met), 0, "%s", vrl_last_error());
    cr_assert_eq(st_read(fixture("baseline.safetensors"), &base), 0, "%s", vrl_last_error());
    /* the model's config.json text is in the metadata */
    json_t *meta = json_loads(met.metadata_json, 0, NULL);
    cr_assert_not_null(meta);
    const char *cfg_text = json_string_value(json_object_get(meta, "config"));
    cr_assert_not_null(cfg_text);
    const char *dir = test_tmpdir();
    const char *cfg_path = test_path(dir, "config.json");
    test_write(cfg_path, cfg_text, strlen(cfg_text));
    json_decref(meta);
    ModelConfig c;
    cr_assert_eq(config_load_json(cfg_path, &c), 0, "%s", vrl_last_error());
    ModelSpec spec;
    cr_assert_eq(model_spec_build(&c, &spec), 0, "%s", vrl_last_error());

    const StTensor *tok = st_find(&met, "batch.tokens");
    cr_assert_not_null(tok);
    const int B = (int)tok->shape[0], T = (int)tok->shape[1];
    const Backend *be = &ref_backend_f64; /* the analysis goes through the Backend table */
    void *m = be->create(&spec, B, T);
    cr_assert_not_null(m, "%s", vrl_last_error());
    double *params = calloc(spec.table.total, sizeof *params); /* [total] the fixture's weights */
    cr_assert_not_null(params);
    for (int i = 0; i < spec.table.n; i++) {
        char name[160];
        snprintf(name, sizeof name, "param.%s", spec.table.p[i].name);
        const StTensor *p = st_find(&base, name);
        cr_assert_not_null(p, "fixture lacks %s", name);
        cr_assert_eq(st_to_f64(p, params + spec.table.p[i].offset, spec.table.p[i].numel), 0, "%s", vrl_last_error());
    }
    be->set_state(m, params, NULL, NULL);
    free(params);
    double tokd[64]; /* [B,T] as double, then int32 */
    int32_t tokens[64];
    cr_assert(B * T <= 64);
    cr_assert_eq(st_to_f64(tok, tokd, (size_t)B * T), 0);
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)tokd[i];

    MetricSums s;
    cr_assert_eq(metric_sums_init(&s, c.n_layers, c.n_kv_heads * config_head_dim(&c)), 0);
    cr_assert_eq(metrics_accumulate(be, m, &c, B, T, tokens, &s), 0, "%s", vrl_last_error());
    metric_sums_mean(&s);
    const int L = c.n_layers, kvC = s.kvC;

    /* Tolerances. The fixture is float64 PyTorch on the same fp32-representable weights,
     * so only summation order differs: 1e-12 for sums of O(1) terms. Two exceptions:
     * - similarity uses |Σx̂|² − Σ|x̂|² (O(T·D)) instead of PyTorch's explicit pair
     *   matrix; the subtraction of two O(T²) numbers costs ~T² ulps -> 1e-11.
     * - eigenvalues come from another LAPACK path (dsyev vs eigvalsh's syevd); both are
     *   backward stable to ~n·eps·|C|, so 1e-11 relative to the largest. */
    double want[64];
    const StTensor *e = st_find(&met, "metric.attention_entropy");
    cr_assert_eq(st_to_f64(e, want, (size_t)L), 0);
    for (int l = 0; l < L; l++) expect_close("attention_entropy", l, s.entropy[l], want[l], 1e-12);

    e = st_find(&met, "metric.token_similarity_hidden");
    cr_assert_eq(st_to_f64(e, want, (size_t)L + 1), 0);
    for (int l = 0; l <= L; l++) expect_close("token_similarity_hidden", l, s.sim_hidden[l], want[l], 1e-11);

    e = st_find(&met, "metric.value_spectrum");
    cr_assert_eq(e->shape[1], kvC);
    cr_assert_eq(st_to_f64(e, want, (size_t)L * kvC), 0);
    for (int l = 0; l < L; l++)
        for (int i = 0; i < kvC; i++)
            cr_expect(fabs(s.spectrum[l * kvC + i] - want[l * kvC + i]) <= 1e-11 * want[l * kvC],
                      "value_spectrum[%d][%d]: C %.17g, PyTorch %.17g", l, i, s.spectrum[l * kvC + i],
                      want[l * kvC + i]);
    e = st_find(&met, "metric.value_spectrum_max");
    cr_assert_eq(st_to_f64(e, want, (size_t)L), 0);
    for (int l = 0; l < L; l++) expect_close("value_spectrum_max", l, s.spectrum[l * kvC], want[l], 1e-11);

    e = st_find(&met, "metric.cross_layer_cos_eq3");
    cr_assert_eq(st_to_f64(e, want, (size_t)L - 1), 0);
    for (int l = 1; l < L; l++) expect_close("cross_layer_cos_eq3", l, s.cos_eq3[l], want[l - 1], 1e-12);
    e = st_find(&met, "metric.cross_layer_cos_eq6");
    cr_assert_eq(st_to_f64(e, want, (size_t)L - 1), 0);
    for (int l = 1; l < L; l++) expect_close("cross_layer_cos_eq6", l, s.cos_eq6[l], want[l - 1], 1e-12);

    /* print the measured agreement for the report */
    fprintf(stderr, "golden metrics: largest |C - PyTorch| over entropy, similarity, spectrum max, Fig. 3: %.3g\n",
            worst_diff);

    metric_sums_free(&s);
    be->destroy(m);
    model_spec_free(&spec);
    st_free(&met);
    st_free(&base);
}
