/* test_resume.c: a stopped and resumed run is bit-exact (fp32 and fp64 reference).
 *
 * Story: train 20 steps in one go; separately train 10 steps, stop, and --resume the
 * run for 10 more. The logged losses of steps 11..20 must be equal as doubles, and
 * the final weights equal byte for byte. Losses are read back from metrics.jsonl,
 * which prints doubles with %.17g (exact round trip). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/fsutil.h"
#include "common/trainer.h"
#include "ref/model.h"

static void base_args(TrainArgs *a, const Backend *be, const char *out, long steps) {
    train_args_defaults(a);
    cr_assert_eq(config_preset("tiny", &a->model), 0);
    a->backend = be;
    a->batch = 4;
    a->seq = 16;
    a->accum = 2;
    a->steps = steps;
    a->sched.warmup = 3;
    a->sched.decay_end = 20;       /* the same schedule whether the run stops at 10 or not */
    a->sched.peak = 1e-2;
    a->eval_every = 5;
    a->eval_batches = 2;
    a->save_every = 0;
    a->synthetic_tokens = 20000;
    a->quiet = 1;
    snprintf(a->out, sizeof a->out, "%s", out);
}

/* losses[step] from RUN/metrics.jsonl (training lines only). */
static int read_losses(const char *dir, double *losses, int max_step) {
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        long step;
        double loss;
        if (sscanf(line, "{\"step\":%ld,\"loss\":%lf", &step, &loss) == 2 && step <= max_step) {
            losses[step] = loss;
            n++;
        }
    }
    fclose(f);
    return n;
}

static void check_resume_model(const Backend *be, const ModelConfig *model) {
    char root[] = "/tmp/vrl_resume_XXXXXX", one[256], two[256];
    cr_assert(mkdtemp(root));
    snprintf(one, sizeof one, "%s/one", root);
    snprintf(two, sizeof two, "%s/two", root);

    TrainArgs a;
    base_args(&a, be, one, 20);
    if (model) a.model = *model;
    cr_assert_eq(train_run(&a), 0, "%s", vrl_last_error());

    base_args(&a, be, two, 10);
    if (model) a.model = *model;
    cr_assert_eq(train_run(&a), 0, "%s", vrl_last_error());
    TrainArgs r;
    train_args_defaults(&r);
    r.backend = be;
    r.resume = 1;
    r.steps = 20;
    r.quiet = 1;
    snprintf(r.out, sizeof r.out, "%s", two);
    cr_assert_eq(train_run(&r), 0, "%s", vrl_last_error());

    double l1[21] = {0}, l2[21] = {0};
    cr_assert_eq(read_losses(one, l1, 20), 20);
    cr_assert_eq(read_losses(two, l2, 20), 20, "the resumed log must hold steps 1..20 exactly once");
    for (int s = 1; s <= 20; s++) {
        printf("%s step %2d: %.17g %.17g\n", be->name, s, l1[s], l2[s]);
        cr_assert_eq(l1[s], l2[s], "%s step %d: %.17g vs %.17g", be->name, s, l1[s], l2[s]);
    }
    cr_assert(l1[20] < l1[1], "the loss should fall over 20 steps (%g -> %g)", l1[1], l1[20]);

    void *w1, *w2;
    size_t n1, n2;
    char p1[300], p2[300];
    snprintf(p1, sizeof p1, "%s/model.safetensors", one);
    snprintf(p2, sizeof p2, "%s/model.safetensors", two);
    cr_assert_eq(read_file_all(p1, &w1, &n1), 0);
    cr_assert_eq(read_file_all(p2, &w2, &n2), 0);
    cr_assert_eq(n1, n2);
    cr_assert_eq(memcmp(w1, w2, n1), 0, "final weights differ after resume");
    free(w1);
    free(w2);
}

Test(resume, bit_exact_fp32) { check_resume_model(&ref_backend_f32, NULL); }
Test(resume, bit_exact_fp64) { check_resume_model(&ref_backend_f64, NULL); }

/* GPT-2 with dropout 0.1: the masks are keyed by (seed, update, micro-batch), so the
 * resumed half draws the same masks as the uninterrupted run. */
Test(resume, bit_exact_gpt2_dropout) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    c.arch = ARCH_GPT2;
    c.d_ffn = 4 * c.d_model;
    c.dropout = 0.1;
    check_resume_model(&ref_backend_f32, &c);
}

/* A value-path and a residual-stream variant with trainable coefficients. */
Test(resume, bit_exact_variants) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    snprintf(c.variant, sizeof c.variant, "attnres:mode=block,size=2+resformer:mode=learnable");
    check_resume_model(&ref_backend_f64, &c);
}

Test(resume, refuses_finished_run_and_existing_folder) {
    char root[] = "/tmp/vrl_resume_XXXXXX", dir[256];
    cr_assert(mkdtemp(root));
    snprintf(dir, sizeof dir, "%s/run", root);
    TrainArgs a;
    base_args(&a, &ref_backend_f32, dir, 3);
    cr_assert_eq(train_run(&a), 0, "%s", vrl_last_error());
    /* a new run into a folder that holds one is refused, naming the folder */
    base_args(&a, &ref_backend_f32, dir, 3);
    cr_assert_eq(train_run(&a), -1);
    cr_assert(strstr(vrl_last_error(), "already holds a run"), "%s", vrl_last_error());
    /* resuming a finished run without more steps is refused */
    TrainArgs r;
    train_args_defaults(&r);
    r.backend = &ref_backend_f32;
    r.resume = 1;
    r.steps = 0; /* "no --steps": keep the run's own length */
    r.quiet = 1;
    snprintf(r.out, sizeof r.out, "%s", dir);
    cr_assert_eq(train_run(&r), -1);
    cr_assert(strstr(vrl_last_error(), "already at step 3"), "%s", vrl_last_error());
}
