/* test_overfit.c: the tiny model memorises one fixed batch in both precisions.
 *
 * Story: tiny preset (2 layers, d 16, vocab 64), one batch of B=2 random sequences of
 * T=8 tokens (14 next-token targets), initialised from seed 1 (formulas.md §1 init), trained
 * through the Backend table with the formulas.md §2 AdamW (β 0.9/0.95, wd 0.1, clip 1.0) at
 * lr 1e-2 after a 10-step linear warm-up. The loss starts near ln 64 ≈ 4.16 and must fall
 * below 0.05 within MAX_STEPS; the curve is printed every 25 steps. This fails on any
 * sign error or broken gradient path that the gradient checks could miss in combination
 * (optimizer wiring, accumulation, zeroing). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/model/spec.h"
#include "common/model/backend.h"
#include "common/base/error.h"
#include "common/base/rng.h"

extern const Backend ref_backend_f32, ref_backend_f64;

enum { B = 2, T = 8, MAX_STEPS = 300 };
#define PEAK_LR 3e-3
#define WARMUP 10
#define TARGET 0.05

static void overfit(const Backend *be) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    ModelSpec spec;
    cr_assert_eq(model_spec_build(&c, &spec), 0);
    void *m = be->create(&spec, B, T);
    cr_assert_not_null(m, "%s", vrl_last_error());

    double *p64 = malloc(spec.table.total * sizeof *p64);
    params_init_f64(&spec.table, 1, p64);
    if (be->dtype == DT_F32) {
        float *p32 = malloc(spec.table.total * sizeof *p32);
        for (size_t i = 0; i < spec.table.total; i++) p32[i] = (float)p64[i];
        be->set_state(m, p32, NULL, NULL);
        free(p32);
    } else {
        be->set_state(m, p64, NULL, NULL);
    }
    free(p64);

    Rng r;
    rng_seed(&r, 42);
    int32_t tokens[B * T];
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);

    const AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    double loss = 0, first = 0;
    int step;
    for (step = 0; step < MAX_STEPS; step++) {
        be->zero_grad(m);
        loss = be->forward_backward(m, tokens, 1.0);
        if (step == 0) first = loss;
        if (step % 25 == 0) printf("%s step %3d loss %.5f\n", be->name, step, loss);
        if (loss < TARGET) break;
        double lr = step < WARMUP ? PEAK_LR * (step + 1) / WARMUP : PEAK_LR;
        double norm = be->step(m, &opt, lr, step + 1);
        cr_assert(isfinite(norm));
    }
    printf("%s: loss %.5f -> %.5f at step %d (target < %.2f within %d)\n", be->name, first, loss, step, TARGET,
           MAX_STEPS);
    cr_log_info("%s: loss %.5f -> %.5f at step %d", be->name, first, loss, step);
    cr_assert_float_eq(first, log(64.0), 0.05, "initial loss %.4f should be near ln 64", first);
    cr_assert_lt(loss, TARGET, "%s did not overfit: loss %.4f after %d steps", be->name, loss, step);
    be->destroy(m);
    model_spec_free(&spec);
}

Test(overfit, tiny_fp32) { overfit(&ref_backend_f32); }
Test(overfit, tiny_fp64) { overfit(&ref_backend_f64); }
