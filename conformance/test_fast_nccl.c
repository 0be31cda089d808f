/* test_fast_nccl.c: fast/'s NCCL data-parallel path (fast/zero.cuh) at world size 1
 * against the plain single-process fast trainer.
 *
 * Story: two CUDA models of the tiny config from the same weights; one joins a one-rank
 * NCCL communicator (Backend.shard_open), so its last micro-batch's backward
 * reduce-scatters bucket by bucket, AdamW runs on its shard's ranges and the bf16
 * parameters are all-gathered. Both take 4 updates of 2 micro-batches on the same random
 * batches. At world size 1 the reduce-scatter and all-gather move each value once and the
 * shard is the whole table in table order, so the same kernels see the same numbers:
 * losses, gradient norms and final fp32 weights must be EQUAL (tolerance 0).
 *
 * Plain C: exits 77 (ctest's skip) with the reason when there is no CUDA device.
 * It has never run: no GPU was available when it was written (docs/distributed.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/rng.h"
#include "common/model/params.h"
#include "common/model/spec.h"
#include "fast/fast.h"

#define B 2
#define T 32
#define STEPS 4
#define ACCUM 2

int main(void) {
    if (fast_device_check() < 0) {
        printf("SKIP: %s\n", vrl_last_error());
        return 77;
    }
    setenv("VRL_FAST_ZERO_ONE_RANK", "1", 1); /* one rank alone makes no communicator otherwise */
    const Backend *be = &fast_backend_cuda;
    if (!be->shard_open) {
        printf("SKIP: this build of fast/ has no NCCL\n");
        return 77;
    }
    ModelConfig c;
    ModelSpec spec;
    if (config_preset("tiny", &c) < 0 || model_spec_build(&c, &spec) < 0) {
        printf("FAIL: tiny config: %s\n", vrl_last_error());
        return 1;
    }
    const ParamTable *t = &spec.table;
    const size_t P = t->total;
    double *init = malloc(P * sizeof *init);          /* [P] */
    float *w32 = malloc(P * sizeof *w32);             /* [P] */
    float *wa = malloc(P * sizeof *wa), *wb = malloc(P * sizeof *wb); /* [P] final weights */
    int32_t *tok = malloc((size_t)B * T * sizeof *tok); /* [B, T] */
    if (!init || !w32 || !wa || !wb || !tok) return 1;
    params_init_f64(t, 42, init);
    for (size_t i = 0; i < P; i++) w32[i] = (float)init[i];

    void *plain = be->create(&spec, B, T), *nccl = be->create(&spec, B, T);
    if (!plain || !nccl || be->shard_open(nccl) < 0) {
        printf("FAIL: create / shard_open: %s\n", vrl_last_error());
        return 1;
    }
    be->set_state(plain, w32, NULL, NULL);
    be->set_state(nccl, w32, NULL, NULL);
    AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    Rng r;
    rng_seed(&r, 7);
    int failures = 0;
    for (long step = 1; step <= STEPS; step++) {
        be->zero_grad(plain);
        be->zero_grad(nccl);
        double la = 0, lb = 0;
        for (int micro = 0; micro < ACCUM; micro++) {
            for (int i = 0; i < B * T; i++) tok[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);
            la += backend_forward_backward_now(be, plain, tok, 1.0 / ACCUM);
            if (micro == ACCUM - 1) be->reduce_next(nccl);
            lb += backend_forward_backward_now(be, nccl, tok, 1.0 / ACCUM);
        }
        const double na = be->step(plain, &opt, 1e-2, step), nb = be->step(nccl, &opt, 1e-2, step);
        printf("step %ld: loss %.9g vs %.9g, grad norm %.9g vs %.9g\n", step, la / ACCUM, lb / ACCUM, na, nb);
        if (la != lb || na != nb) {
            printf("FAIL: step %ld: the NCCL path differs\n", step);
            failures++;
        }
    }
    be->get_state(plain, wa, NULL, NULL, NULL);
    be->get_state(nccl, wb, NULL, NULL, NULL);
    size_t differ = 0;
    for (size_t i = 0; i < P; i++) differ += wa[i] != wb[i];
    printf("final weights: %zu of %zu values differ\n", differ, P);
    if (differ) failures++;
    be->destroy(plain);
    be->destroy(nccl);
    model_spec_free(&spec);
    free(init), free(w32), free(wa), free(wb), free(tok);
    printf("%s\n", failures ? "FAIL" : "ok: world size 1 through NCCL equals the plain fast trainer");
    return failures ? 1 : 0;
}
