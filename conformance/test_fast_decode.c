/* test_fast_decode.c: fast/'s KV-cache decoder (fast/decode.cu, Backend kv_create / decode)
 * against the float64 reference's full forward.
 *
 * Each case: the tiny preset (or GPT-2 on it) with weights params_init_f64 plus N(0, 0.1) noise on
 * every element (the mixing coefficients away from their identity values), random tokens [B,T];
 * ref fp64's full forward gives the logits, and fast/'s decoder feeds the same tokens through its
 * cache twice: a 5-token prompt in one call (the prefill forward) and then one token per call, and
 * every token one call at a time from the start (the step alone). The decoder's logits must be
 * within TOL_LOGITS of ref's, relative in the 2-norm: the bound test_fast_vs_ref holds fast/'s
 * training forward to (bf16 storage, docs/design/conformance.md), since the decoder runs the same kernels
 * on one-row batches and only its attention is new. Its greedy choice must be ref's at every
 * position where ref's two largest logits are further apart than twice the largest logit
 * difference (no error that small can swap them). fast/'s own full forward is printed beside it.
 * Then: an id outside the vocabulary and a position past the cache are refused, and a variant
 * the decoder lacks is refused by capabilities with its name.
 *
 * Built twice: test_fast_decode (a GPU; exits 77 without one) and test_fast_cpu_decode (the CPU
 * layer, fast/cuda_cpu/). Plain C. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/rng.h"
#include "common/model/spec.h"
#include "fast/fast.h"
#include "ref/model.h"

#define TOL_LOGITS 2e-2 /* ‖Δlogits‖ / ‖logits_ref‖, test_fast_vs_ref's bf16 bound */
enum { B = 2, T = 12, PROMPT = 5 };

static int failures = 0;
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            printf("FAIL: ");                                                                                          \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

static int argmax(const double *row, int V) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (row[v] > row[best]) best = v;
    return best;
}

/* ‖a − b‖ / ‖b‖ and max |a − b| over n elements. */
static double rel(const float *a, const double *b, size_t n, double *mx) {
    double num = 0, den = 0;
    *mx = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = (double)a[i] - b[i];
        num += e * e, den += b[i] * b[i];
        if (fabs(e) > *mx) *mx = fabs(e);
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void run_case(const char *variant, int gpt2) {
    const Backend *fb = &fast_backend_cuda, *rb = &ref_backend_f64;
    ModelConfig c;
    config_preset("tiny", &c);
    snprintf(c.variant, sizeof c.variant, "%s", variant);
    if (gpt2) c.arch = ARCH_GPT2, c.dropout = 0.0, c.d_ffn = 4 * c.d_model;
    ModelSpec spec;
    if (model_spec_build(&c, &spec) < 0) {
        CHECK(0, "%s: %s", variant, vrl_last_error());
        return;
    }
    const char *name = gpt2 ? "gpt2" : variant;
    char why[512] = "";
    if (!(fb->capabilities(&spec, why, sizeof why) & BACKEND_CAN_GENERATE)) {
        CHECK(0, "%s: the CUDA backend cannot generate: %s", name, why);
        model_spec_free(&spec);
        return;
    }
    const size_t P = spec.table.total, V = (size_t)c.vocab_size, n = (size_t)B * T * V;
    double *w = malloc(P * sizeof *w), *full = malloc(n * sizeof *full);
    float *wf = malloc(P * sizeof *wf), *step = malloc(n * sizeof *step), *ffull = malloc(n * sizeof *ffull);
    params_init_f64(&spec.table, 11, w);
    Rng g;
    rng_seed(&g, 5);
    for (size_t i = 0; i < P; i++) wf[i] = (float)(w[i] += 0.1 * rng_normal(&g));
    for (size_t i = 0; i < P; i++) w[i] = wf[i]; /* both sides read the same (fp32) weights */
    int32_t tokens[B * T], chunk[B * PROMPT];
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&g, V);

    void *r = rb->create(&spec, B, T), *m = fb->create(&spec, B, T);
    if (!r || !m) {
        CHECK(0, "%s: create: %s", name, vrl_last_error());
        goto done;
    }
    rb->set_state(r, w, NULL, NULL);
    fb->set_state(m, wf, NULL, NULL);
    CHECK(isfinite(rb->forward_loss(r, tokens)), "%s: ref forward", name);
    rb->get_logits(r, full);
    CHECK(isfinite(fb->forward_loss(m, tokens)), "%s: fast forward: %s", name, vrl_last_error());
    fb->get_logits(m, ffull);
    void *kv = fb->kv_create(m, B, T);
    if (!kv) {
        CHECK(0, "%s: kv_create: %s", name, vrl_last_error());
        goto done;
    }
    float *out = malloc((size_t)B * PROMPT * V * sizeof *out);
    for (int pass = 0; pass < 2; pass++) {
    if (pass) {
        fb->kv_free(kv);
        if (!(kv = fb->kv_create(m, B, T))) {
            CHECK(0, "%s: kv_create: %s", name, vrl_last_error());
            free(out);
            goto done;
        }
    }
    for (int at = 0; at < T;) {
        const int k = at == 0 && !pass ? PROMPT : 1;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < k; j++) chunk[b * k + j] = tokens[b * T + at + j];
        CHECK(fb->decode(m, kv, chunk, k, out) == 0, "%s: decode at %d: %s", name, at, vrl_last_error());
        for (int b = 0; b < B; b++)
            for (int j = 0; j < k; j++)
                memcpy(step + ((size_t)b * T + at + j) * V, out + ((size_t)b * k + j) * V, V * sizeof *out);
        at += k;
    }
    double mx, mx_full;
    const double e = rel(step, full, n, &mx), e_full = rel(ffull, full, n, &mx_full);
    int greedy = 0, near = 0;
    for (size_t row = 0; row < (size_t)B * T; row++) {
        const double *fr = full + row * V;
        const int best = argmax(fr, (int)V);
        double second = -INFINITY;
        for (size_t v = 0; v < V; v++)
            if ((int)v != best && fr[v] > second) second = fr[v];
        if (fr[best] - second <= 2 * mx) {
            near++;
            continue;
        }
        int fbest = 0;
        for (size_t v = 1; v < V; v++)
            if (step[row * V + v] > step[row * V + fbest]) fbest = (int)v;
        greedy++;
        CHECK(fbest == best, "%s: position %zu: decoder's greedy %d, ref's %d", name, row, fbest, best);
    }
    printf("%-26s %-7s decoder vs ref fp64: logits rel %.2e max|diff| %.2e (fast's full forward: rel %.2e); greedy "
           "equal at %d positions, %d within the bound\n",
           name, pass ? "steps" : "prefill", e, mx, e_full, greedy, near);
    CHECK(e <= TOL_LOGITS, "%s: decoder logits relative error %.3e over %.0e", name, e, TOL_LOGITS);
    CHECK(greedy >= B * T / 2, "%s: only %d positions clear of ties", name, greedy);
    fflush(stdout); /* before the next model's memory report on stderr */
    }
    /* the cache is full: one more position is an error; so is an id outside the vocabulary */
    CHECK(fb->decode(m, kv, chunk, 1, out) == -1, "%s: decoding past max_seq must fail", name);
    fb->kv_free(kv);
    kv = fb->kv_create(m, B, T);
    int32_t bad[B] = {0, (int32_t)V};
    CHECK(kv && fb->decode(m, kv, bad, 1, out) == -1 && strstr(vrl_last_error(), "outside the vocabulary"),
          "%s: a bad id must be refused (%s)", name, vrl_last_error());
    if (kv) fb->kv_free(kv);
    free(out);
done:
    if (r) rb->destroy(r);
    if (m) fb->destroy(m);
    free(w), free(full), free(wf), free(step), free(ffull);
    model_spec_free(&spec);
}

int main(void) {
    if (fast_device_check() < 0) {
        printf("SKIP: %s\n", vrl_last_error());
        return 77;
    }
    static const char *variants[] = {"baseline", "resformer", "resformer:mode=learnable", "svformer",
                                     "svformer:anchors=1", "neutreno:lambda=0.4", "cla", "hidden_residual",
                                     "denseformer", "attnres:mode=block,size=1", "hc:n=4", "mhc:n=4"};
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) run_case(variants[i], 0);
    run_case("baseline", 1);
    /* what the decoder lacks: refused by name, with what is missing */
    ModelConfig c;
    config_preset("tiny", &c);
    snprintf(c.variant, sizeof c.variant, "key_residual");
    ModelSpec spec;
    if (model_spec_build(&c, &spec) == 0) {
        CHECK(!backend_require(&fast_backend_cuda, &spec, BACKEND_CAN_GENERATE) &&
                  strstr(vrl_last_error(), "key_residual") && strstr(vrl_last_error(), "keys mixed across layers"),
              "key_residual: %s", vrl_last_error());
        printf("refused: %s\n", vrl_last_error());
        model_spec_free(&spec);
    } else CHECK(0, "key_residual: %s", vrl_last_error());
    printf(failures ? "%d check(s) failed\n" : "all fast decoder checks passed\n", failures);
    return failures ? 1 : 0;
}
