/* test_thread_bits.c: the reference gives the same bits on any number of threads.
 *
 * Story: the `small` preset at B8 × T64 (every matrix product large enough to be split
 * between threads, ref/ops.c gemm_tiles), the same weights and tokens, three full training
 * steps (forward, backward, clip, AdamW) with 1 thread and again with 2 and 3; the weights
 * and both AdamW moments must be byte-identical, in float32 and float64. A second model
 * covers grouped-query attention (2 query heads per key/value head, whose key and value
 * gradients several heads add into) with the ResFormer value path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/rng.h"
#include "common/model/backend.h"
#include "common/model/spec.h"
#include "ref/threads.h"

extern const Backend ref_backend_f32, ref_backend_f64;

enum { B = 8, T = 64, STEPS = 3 };

/* The state after STEPS steps on `threads` threads: params, exp_avg, exp_avg_sq, one after
 * another in out [3 * total] (backend dtype). */
static void train(const Backend *be, const ModelSpec *spec, int threads, unsigned char *out) {
    cr_assert_eq(ref_threads_set(threads), threads);
    const size_t P = spec->table.total, bytes = P * dtype_size(be->dtype);
    double *init = malloc(P * sizeof *init);
    void *w = malloc(bytes);
    cr_assert(init && w);
    params_init_f64(&spec->table, 5, init);
    for (size_t i = 0; i < P; i++) {
        if (be->dtype == DT_F64) ((double *)w)[i] = init[i];
        else ((float *)w)[i] = (float)init[i];
    }
    void *m = be->create(spec, B, T);
    cr_assert(m, "%s", vrl_last_error());
    be->set_state(m, w, NULL, NULL);
    int32_t tokens[B * T];
    Rng r;
    rng_seed(&r, 11);
    /* clip 0.5: the gradient norm exceeds it, so the clip's scaling runs too */
    const AdamWConfig opt = {0.9, 0.95, 1e-8, 0.1, 0.5};
    for (int s = 1; s <= STEPS; s++) {
        for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&r, (uint64_t)spec->config.vocab_size);
        be->zero_grad(m);
        be->forward_backward(m, tokens, 1.0);
        be->step(m, &opt, 1e-3, s);
    }
    be->get_state(m, out, NULL, out + bytes, out + 2 * bytes);
    be->destroy(m);
    free(w);
    free(init);
}

static void same_bits(const char *preset, int kv_heads, const char *variant) {
    ModelConfig c;
    ModelSpec spec;
    cr_assert_eq(config_preset(preset, &c), 0);
    if (kv_heads) c.n_kv_heads = kv_heads;
    if (variant) snprintf(c.variant, sizeof c.variant, "%s", variant);
    cr_assert_eq(model_spec_build(&c, &spec), 0, "%s", vrl_last_error());
    const Backend *bes[] = {&ref_backend_f32, &ref_backend_f64};
    for (int k = 0; k < 2; k++) {
        const size_t bytes = 3 * spec.table.total * dtype_size(bes[k]->dtype);
        unsigned char *one = malloc(bytes), *many = malloc(bytes);
        cr_assert(one && many);
        train(bes[k], &spec, 1, one);
        for (int threads = 2; threads <= 3; threads++) {
            train(bes[k], &spec, threads, many);
            size_t first = 0;
            while (first < bytes && one[first] == many[first]) first++;
            cr_expect_eq(first, bytes, "%s %s: %d threads differ from 1 thread at byte %zu of %zu", preset,
                         bes[k]->name, threads, first, bytes);
        }
        free(one);
        free(many);
    }
    ref_threads_set(1);
    model_spec_free(&spec);
}

Test(thread_bits, small_1_2_3_threads_identical) { same_bits("small", 0, NULL); }

Test(thread_bits, gqa_resformer_1_2_3_threads_identical) { same_bits("small", 2, "resformer"); }
