/* bench_ref_train.c: reference training throughput on this CPU.
 *
 * For each preset: a few full training steps (forward, backward, AdamW) of the
 * float32 and float64 reference on random tokens; prints tokens/s, the achieved
 * GFLOP/s by the 6N + attention count, and the share of the step spent inside
 * OpenBLAS matrix products (timed around every cblas call in ref/ops.c).
 *
 * usage: bench_ref_train [--fp32] [PRESET[:BATCHxSEQ] ...]   (default: 2M:8x256 82M:2x256)
 *        --fp32: the float32 reference only (bench/ref_vs_torch.sh)
 * env:   OPENBLAS_NUM_THREADS=N: the reference's threads (ref/threads.h) [all cores]
 *        STEPS=n: timed steps per preset [5; 2 above 10M parameters] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/model/spec.h"
#include "common/base/error.h"
#include "common/base/clock.h"
#include "common/model/params.h"
#include "common/base/rng.h"
#include "ref/model.h"
#include "ref/profile.h"
#include "ref/threads.h"

/* CPU time of the whole process (all threads): on a shared machine, where wall time
 * depends on the load, tokens per CPU-second of a 1-thread run is the steadier figure */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef struct {
    const Backend *be;
    double (*matmul_seconds)(void);
} Precision;

static void run(const char *preset, int B, int T, const Precision *pr) {
    ModelConfig c;
    ModelSpec spec;
    if (config_preset(preset, &c) < 0 || model_spec_build(&c, &spec) < 0) {
        fprintf(stderr, "bench: %s\n", vrl_last_error());
        exit(1);
    }
    if (T > c.max_seq) T = c.max_seq;
    /* large models: a few seconds per step; STEPS=n overrides (longer runs for profiling) */
    const char *steps_env = getenv("STEPS");
    const int steps = steps_env && atoi(steps_env) > 0 ? atoi(steps_env) : spec.table.total > 10000000 ? 2 : 5;
    void *m = pr->be->create(&spec, B, T);
    if (!m) {
        fprintf(stderr, "bench: %s\n", vrl_last_error());
        exit(1);
    }
    /* weights from the usual initialisation, in the backend's precision; freed once the
     * backend has its own copy, so the peak RSS is the model's */
    void *w = malloc(spec.table.total * dtype_size(pr->be->dtype));
    if (pr->be->dtype == DT_F64) params_init_f64(&spec.table, 1, w);
    else params_init_f32(&spec.table, 1, w);
    pr->be->set_state(m, w, NULL, NULL);
    free(w);
    int32_t *tok = malloc((size_t)B * T * sizeof *tok);
    Rng r;
    rng_seed(&r, 7);
    for (int i = 0; i < B * T; i++) tok[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);
    AdamWConfig opt = {0.9, 0.95, 1e-8, 0.1, 1.0};

    /* one warm-up step (page faults, BLAS thread start), then the timed ones */
    pr->be->zero_grad(m);
    pr->be->forward_backward(m, tok, 1.0);
    pr->be->step(m, &opt, 1e-4, 1);
    const double mm0 = pr->matmul_seconds(), t0 = now_seconds(), c0 = cpu_seconds();
    for (int s = 0; s < steps; s++) {
        pr->be->zero_grad(m);
        pr->be->forward_backward(m, tok, 1.0);
        pr->be->step(m, &opt, 1e-4, s + 2);
    }
    const double secs = now_seconds() - t0, mm = pr->matmul_seconds() - mm0, cpu = cpu_seconds() - c0;
    const double tokens = (double)B * T * steps;
    /* FLOPs per token: 6 per weight that takes part in a matrix product (every parameter
     * but the input embedding, a table lookup), plus attention scores and mixing:
     * 6·L·T·d (QKᵀ and AV, forward and backward, the causal half counted as full, as in
     * PaLM's MFU). */
    const double matmul_params = (double)spec.table.total - (double)c.vocab_size * c.d_model;
    const double flops = tokens * (6.0 * matmul_params + 6.0 * c.n_layers * T * c.d_model);
    printf("%-5s %-9s B=%-2d T=%-4d params=%-10zu %9.0f tokens/s  %6.2f GFLOP/s  %5.1f%% in matmul  (%d steps, %.2f "
           "s/step, %.2f CPU-s/step: %.0f tokens per CPU-second)\n",
           preset, pr->be->name, B, T, spec.table.total, tokens / secs, flops / secs * 1e-9, 100.0 * mm / secs, steps,
           secs / steps, cpu / steps, tokens / cpu);
    fflush(stdout);
    free(tok);
    pr->be->destroy(m);
    model_spec_free(&spec);
}

int main(int argc, char **argv) {
    const char *defaults[] = {"2M:8x256", "82M:2x256"};
    const int fp32_only = argc > 1 && !strcmp(argv[1], "--fp32");
    const int first = 1 + fp32_only;
    const char **specs = argc > first ? (const char **)argv + first : defaults;
    const int n = argc > first ? argc - first : 2;
    const Precision precisions[] = {{&ref_backend_f32, ref_matmul_seconds_f32}, {&ref_backend_f64, ref_matmul_seconds_f64}};
    const char *env = getenv("OPENBLAS_NUM_THREADS");
    const int threads = ref_threads_set(env ? atoi(env) : 0);
    printf("reference training throughput (forward + backward + AdamW), OpenBLAS, this CPU, %d thread(s)\n", threads);
    for (int i = 0; i < n; i++) {
        char preset[32];
        int B = 4, T = 256;
        if (sscanf(specs[i], "%31[^:]:%dx%d", preset, &B, &T) < 1) {
            fprintf(stderr, "bench: bad spec %s (PRESET[:BxT])\n", specs[i]);
            return 2;
        }
        for (int p = 0; p < (fp32_only ? 1 : 2); p++) run(preset, B, T, &precisions[p]);
    }
    return 0;
}
