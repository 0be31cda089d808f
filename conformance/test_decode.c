/* test_decode.c: decoding with the KV cache (ref/decode.c) gives, at every position, the logits
 * of a full forward over the whole sequence, through the Backend table's kv_create / decode.
 *
 * Each case: the value-path test model (L = 4, d = 16, 4 query heads; conformance/test_configs.h)
 * with weights params_init_f64 plus N(0, 0.1) noise on every element (so coefficients that start
 * at 0 or 1, such as AttnRes queries and HC/mHC maps, are away from their identity values), one
 * full fp64 forward over tokens [B,T], then the same tokens through the cache: a 5-token prompt
 * in one call, then one token per call. fp64 within 1e-12 absolute: both sides compute the same
 * sums in another order (the cache distributes the K/V mixes over the dot products), so they
 * differ by rounding only (logits are O(1); eps_64 ≈ 1.1e-16 times ~10² terms). GPT-2
 * (ref/gpt2_decode.c) is checked the same way on the same shape. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "common/base/error.h"
#include "common/base/rng.h"
#include "conformance/test_configs.h"
#include "ref/model.h"

enum { B = 2, T = 12, PROMPT = 5 };

/* max |cached − full| over all B·T·V logits of c's model. */
static double decode_vs_full(const ModelConfig *c) {
    const Backend *be = &ref_backend_f64;
    ModelSpec spec;
    cr_assert_eq(model_spec_build(c, &spec), 0, "%s: %s", c->variant, vrl_last_error());
    const ParamTable *t = &spec.table;
    cr_assert(be->capabilities(&spec, NULL, 0) & BACKEND_CAN_GENERATE, "%s: ref cannot generate", c->variant);
    double *w = malloc(t->total * sizeof *w);
    params_init_f64(t, 11, w);
    Rng g;
    rng_seed(&g, 5);
    for (size_t i = 0; i < t->total; i++) w[i] += 0.1 * rng_normal(&g);
    int32_t tokens[B * T];
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&g, (uint64_t)c->vocab_size);

    void *m = be->create(&spec, B, T);
    cr_assert_not_null(m, "%s: %s", c->variant, vrl_last_error());
    be->set_state(m, w, NULL, NULL);
    cr_assert(isfinite(be->forward_loss(m, tokens)));
    const size_t V = (size_t)c->vocab_size;
    double *full = malloc((size_t)B * T * V * sizeof *full);
    be->get_logits(m, full);

    void *kv = be->kv_create(m, B, T);
    cr_assert_not_null(kv, "%s: %s", c->variant, vrl_last_error());
    double *step = malloc((size_t)B * T * V * sizeof *step);
    int32_t chunk[B * PROMPT];
    double worst = 0;
    for (int at = 0; at < T;) {
        const int n = at == 0 ? PROMPT : 1;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < n; j++) chunk[b * n + j] = tokens[b * T + at + j];
        cr_assert_eq(be->decode(m, kv, chunk, n, step), 0, "%s: %s", c->variant, vrl_last_error());
        for (int b = 0; b < B; b++)
            for (int j = 0; j < n; j++)
                for (size_t v = 0; v < V; v++) {
                    const double d = fabs(step[((size_t)b * n + j) * V + v] - full[((size_t)b * T + at + j) * V + v]);
                    worst = fmax(worst, d);
                }
        at += n;
    }
    /* the cache is full: one more position is an error, not an overflow */
    cr_expect_eq(be->decode(m, kv, chunk, 1, step), -1, "%s: decoding past max_seq must fail", c->variant);
    be->kv_free(kv);
    be->destroy(m);
    free(step);
    free(full);
    free(w);
    model_spec_free(&spec);
    return worst;
}

/* GPT-2 (ref/gpt2_decode.c) on the same shape: its own decoder behind the same Backend calls. */
Test(decode, gpt2) {
    ModelConfig c = test_config_value_path(4, "baseline");
    test_config_gpt2(&c, 0.1); /* dropout is off outside training: the cache must not apply it */
    const double worst = decode_vs_full(&c);
    printf("%-44s n_kv 4: max |cached - full| logit %.2e\n", "gpt2", worst);
    cr_expect_leq(worst, 1e-12, "gpt2: cached logits differ from the full forward by %.3e", worst);
}

/* Argmax of logits [V] (the lowest id among equal maxima). */
static int argmax(const double *row, int V) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (row[v] > row[best]) best = v;
    return best;
}

/* Greedy decoding through the cache picks, at every step, the argmax of a full forward recomputed
 * over the whole sequence so far (a new model of that length each step), on GPT-2 and the llama
 * baseline: 3 prompt tokens, 9 drawn. */
static void greedy_vs_recompute(ModelConfig *c) {
    enum { P0 = 3, N = 12 };
    const Backend *be = &ref_backend_f64;
    ModelSpec spec;
    cr_assert_eq(model_spec_build(c, &spec), 0, "%s", vrl_last_error());
    const int V = c->vocab_size;
    double *w = malloc(spec.table.total * sizeof *w), *row = malloc((size_t)N * V * sizeof *row);
    params_init_f64(&spec.table, 3, w);
    Rng g;
    rng_seed(&g, 9);
    for (size_t i = 0; i < spec.table.total; i++) w[i] += 0.3 * rng_normal(&g);
    int32_t seq[N] = {1, 7, 5};
    void *m = be->create(&spec, 1, 2);
    be->set_state(m, w, NULL, NULL);
    void *kv = be->kv_create(m, 1, N);
    cr_assert_not_null(kv, "%s", vrl_last_error());
    cr_assert_eq(be->decode(m, kv, seq, P0, row), 0, "%s", vrl_last_error());
    const double *last = row + (size_t)(P0 - 1) * V;
    for (int n = P0; n < N; n++) {
        seq[n] = argmax(last, V);
        void *full = be->create(&spec, 1, n + 1 > 2 ? n + 1 : 2);
        be->set_state(full, w, NULL, NULL);
        cr_assert(isfinite(be->forward_loss(full, seq)));
        double *fl = malloc((size_t)(n + 1) * V * sizeof *fl);
        be->get_logits(full, fl);
        /* position n - 1's full logits choose token n */
        cr_expect_eq(argmax(fl + (size_t)(n - 1) * V, V), seq[n], "%s: step %d: cached greedy %d, full argmax %d",
                     c->variant, n, seq[n], argmax(fl + (size_t)(n - 1) * V, V));
        free(fl);
        be->destroy(full);
        cr_assert_eq(be->decode(m, kv, &seq[n], 1, row), 0, "%s", vrl_last_error());
        last = row;
    }
    printf("%-8s greedy through the cache = full-forward argmax at every step:", c->arch == ARCH_GPT2 ? "gpt2" : "llama");
    for (int n = 0; n < N; n++) printf(" %d", (int)seq[n]);
    printf("\n");
    be->kv_free(kv);
    be->destroy(m);
    free(row);
    free(w);
    model_spec_free(&spec);
}

Test(decode, greedy_equals_full_argmax) {
    ModelConfig c = test_config_value_path(4, "baseline");
    greedy_vs_recompute(&c);
    test_config_gpt2(&c, 0);
    greedy_vs_recompute(&c);
}

static void check(int n_kv, const char *variant) {
    const ModelConfig c = test_config_value_path(n_kv, variant);
    const double worst = decode_vs_full(&c);
    printf("%-44s n_kv %d: max |cached - full| logit %.2e\n", variant, n_kv, worst);
    cr_expect_leq(worst, 1e-12, "%s (n_kv %d): cached logits differ from the full forward by %.3e", variant, n_kv,
                  worst);
}

Test(decode, value_path_variants) {
    check(4, "baseline");
    check(2, "baseline"); /* GQA */
    check(1, "baseline"); /* MQA */
    check(4, "resformer");
    check(2, "resformer");
    check(4, "resformer:mode=learnable");
    check(4, "resformer:mode=dense");
    check(4, "svformer");
    check(4, "svformer:anchors=1,3");
    check(4, "neutreno:lambda=0.4");
    check(1, "neutreno:lambda=0.4");
    check(4, "neutreno_resformer:lambda=0.2");
    check(4, "cla");
}

Test(decode, ablations) {
    check(4, "query_residual");
    check(4, "key_residual");
    check(4, "attn_residual");
    check(4, "hidden_residual");
    check(4, "shared_q");
    check(4, "shared_k");
    check(4, "cross_layer:m=1");
    check(4, "cross_layer:m=prev");
    check(4, "identity_mapping");
}

Test(decode, stream_variants) {
    check(4, "denseformer");
    check(4, "denseformer:dilation=2,period=2");
    check(4, "attnres:mode=full");
    check(4, "attnres:mode=block,size=3");
    check(4, "hc:n=4");
    check(4, "mhc:n=4,iters=20");
    check(4, "mhc:n=4,iters=20+resformer:mode=learnable");
    check(2, "denseformer+svformer");
}

Test(decode, bad_input) {
    const Backend *be = &ref_backend_f64;
    ModelConfig c = test_config_value_path(4, "baseline");
    ModelSpec spec;
    cr_assert_eq(model_spec_build(&c, &spec), 0);
    void *m = be->create(&spec, 1, 4);
    void *kv = be->kv_create(m, 1, 4);
    cr_assert_not_null(kv);
    double logits[64];
    int32_t bad = 64;
    cr_expect_eq(be->decode(m, kv, &bad, 1, logits), -1);
    cr_expect(strstr(vrl_last_error(), "outside the vocabulary") != NULL, "%s", vrl_last_error());
    cr_expect_null(be->kv_create(m, 1, c.max_seq + 1));
    be->kv_free(kv);
    be->destroy(m);
    model_spec_free(&spec);
    /* GPT-2's decoder checks the same way: an id outside the vocabulary, a cache past max_seq */
    test_config_gpt2(&c, 0);
    cr_assert_eq(model_spec_build(&c, &spec), 0);
    m = be->create(&spec, 1, 4);
    kv = be->kv_create(m, 1, 4);
    cr_assert_not_null(kv, "%s", vrl_last_error());
    cr_expect_eq(be->decode(m, kv, &bad, 1, logits), -1);
    cr_expect(strstr(vrl_last_error(), "outside the vocabulary") != NULL, "%s", vrl_last_error());
    cr_expect_null(be->kv_create(m, 1, c.max_seq + 1));
    be->kv_free(kv);
    be->destroy(m);
    model_spec_free(&spec);
}
