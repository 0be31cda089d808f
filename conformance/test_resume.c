/* test_resume.c: a stopped and resumed run is bit-exact (fp32 and fp64 reference).
 *
 * Story: train 20 steps in one go; separately train 10 steps, stop, and --resume the
 * run for 10 more. The logged losses of steps 11..20 must be equal as doubles, and
 * the final weights equal byte for byte. Losses are read back from metrics.jsonl,
 * which prints doubles with %.17g (exact round trip). The same on a data folder as
 * `vrl data tokenize` writes it (the domain mixture, per-domain validation), with the
 * formulas.md §3 weights and with --mixture weights, which the resumed run must keep. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/mixture.h"
#include "common/data/shard.h"
#include "common/data/synthetic.h"
#include "common/run/trainer.h"
#include "ref/model.h"
#include "conformance/test_configs.h"

#define MIX_CHUNK 17 /* chunk_len >= --seq: the mixture reads each chunk's first 16 tokens */

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

/* Validation loss logged at `step` for `domain` (NULL: the mean line); exactly one such line. */
static double read_val(const char *dir, long step, const char *domain) {
    char path[4200], line[1024], want[160];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    if (domain) snprintf(want, sizeof want, "{\"step\":%ld,\"split\":\"val\",\"domain\":\"%s\",", step, domain);
    else snprintf(want, sizeof want, "{\"step\":%ld,\"split\":\"val\",\"val_loss\":", step);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    int n = 0;
    double v = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, want, strlen(want))) {
            const char *p = strstr(line, "\"val_loss\":");
            cr_assert(p && sscanf(p + 11, "%lf", &v) == 1, "%s: %s", path, line);
            n++;
        }
    fclose(f);
    cr_assert_eq(n, 1, "%s: %d lines for step %ld domain %s", path, n, step, domain ? domain : "(mean)");
    return v;
}

/* Runs 20 steps vs 10 + --resume 10 with `data` (and `mixture`) and checks they agree;
 * l1[1..20] receives the uninterrupted run's losses. */
static void check_resume(const Backend *be, const ModelConfig *model, const char *data, const char *mixture,
                         double l1[21]) {
    char root[] = "/tmp/vrl_resume_XXXXXX", one[256], two[256];
    cr_assert(mkdtemp(root));
    snprintf(one, sizeof one, "%s/one", root);
    snprintf(two, sizeof two, "%s/two", root);

    TrainArgs a;
    base_args(&a, be, one, 20);
    if (model) a.model = *model;
    snprintf(a.data, sizeof a.data, "%s", data ? data : "");
    snprintf(a.mixture, sizeof a.mixture, "%s", mixture ? mixture : "");
    cr_assert_eq(train_run(&a), 0, "%s", vrl_last_error());

    snprintf(a.out, sizeof a.out, "%s", two);
    a.steps = 10;
    cr_assert_eq(train_run(&a), 0, "%s", vrl_last_error());
    TrainArgs r; /* everything else comes from the run folder, --mixture included */
    train_args_defaults(&r);
    r.backend = be;
    r.resume = 1;
    r.steps = 20;
    r.quiet = 1;
    snprintf(r.out, sizeof r.out, "%s", two);
    cr_assert_eq(train_run(&r), 0, "%s", vrl_last_error());
    cr_assert_str_eq(r.mixture, mixture ? mixture : "", "the resumed run lost its --mixture");

    double l2[21] = {0};
    cr_assert_eq(read_losses(one, l1, 20), 20);
    cr_assert_eq(read_losses(two, l2, 20), 20, "the resumed log must hold steps 1..20 exactly once");
    for (int s = 1; s <= 20; s++) {
        printf("%s step %2d: %.17g %.17g\n", be->name, s, l1[s], l2[s]);
        cr_assert_eq(l1[s], l2[s], "%s step %d: %.17g vs %.17g", be->name, s, l1[s], l2[s]);
    }
    cr_assert(l1[20] < l1[1], "the loss should fall over 20 steps (%g -> %g)", l1[1], l1[20]);
    /* validation at steps 5..20 (--eval-every 5): the mean, and per domain on a data folder */
    for (long s = 5; s <= 20; s += 5) {
        const double v1 = read_val(one, s, NULL), v2 = read_val(two, s, NULL);
        cr_assert_eq(v1, v2, "step %ld: val loss %.17g vs %.17g", s, v1, v2);
    }
    if (data && data[0]) {
        Mixture *mx;
        MixtureWeights w;
        const char *names[MIXTURE_MAX_DOMAINS];
        if (mixture) {
            cr_assert_eq(mixture_weights_parse(mixture, &w), 0);
            for (int i = 0; i < w.n; i++) names[i] = w.name[i];
        }
        cr_assert_eq(mixture_open(data, mixture ? names : NULL, mixture ? w.weight : NULL, mixture ? w.n : 0, 16, 1, &mx),
                     0, "%s", vrl_last_error());
        for (int d = 0; d < mixture_n_domains(mx); d++)
            for (long s = 5; s <= 20; s += 5) {
                const double v1 = read_val(one, s, mixture_domain(mx, d)), v2 = read_val(two, s, mixture_domain(mx, d));
                cr_assert_eq(v1, v2, "step %ld %s: val loss %.17g vs %.17g", s, mixture_domain(mx, d), v1, v2);
            }
        mixture_close(mx);
    }

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

static void check_resume_model(const Backend *be, const ModelConfig *model) {
    double l[21] = {0};
    check_resume(be, model, NULL, NULL, l);
}

/* DIR/train and DIR/validation as `vrl data tokenize` writes them, for the first
 * n_domains formulas.md §3 domains: 30 train and 6 validation chunks each, every domain its
 * own synthetic language (so the weights change what is learnt), ids < vocab (tiny's
 * vocab, or 0 for it). */
static void make_mixture_dir(const char *dir, int n_domains, int vocab) {
    char p[512];
    cr_assert_eq(make_dirs(dir), 0);
    snprintf(p, sizeof p, "%s/train", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/validation", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    if (vocab) c.vocab_size = vocab;
    const uint64_t nt = 30 * MIX_CHUNK, nv = 6 * MIX_CHUNK;
    uint32_t tok[30 * MIX_CHUNK];
    for (int d = 0; d < n_domains; d++) {
        const char *name = MIXTURE_DEFAULT_DOMAINS[d];
        cr_assert_eq(synthetic_corpus(tok, nt, c.vocab_size, 100 + d, SYNTHETIC_TRAIN_STREAM), 0);
        snprintf(p, sizeof p, "%s/train/%s-00000.bin", dir, name);
        cr_assert_eq(shard_write(p, tok, nt, c.vocab_size, MIX_CHUNK, name), 0, "%s", vrl_last_error());
        cr_assert_eq(synthetic_corpus(tok, nv, c.vocab_size, 100 + d, SYNTHETIC_VAL_STREAM), 0);
        snprintf(p, sizeof p, "%s/validation/%s-00000.bin", dir, name);
        cr_assert_eq(shard_write(p, tok, nv, c.vocab_size, MIX_CHUNK, name), 0, "%s", vrl_last_error());
    }
}

Test(resume, bit_exact_fp32) { check_resume_model(&ref_backend_f32, NULL); }
Test(resume, bit_exact_fp64) { check_resume_model(&ref_backend_f64, NULL); }

/* GPT-2 with dropout 0.1: the masks are keyed by (seed, update, micro-batch), so the
 * resumed half draws the same masks as the uninterrupted run. */
Test(resume, bit_exact_gpt2_dropout) {
    ModelConfig c;
    cr_assert_eq(config_preset("tiny", &c), 0);
    test_config_gpt2(&c, 0.1);
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

/* A data folder of the 7 formulas.md §3 domains: bit-exact resume with the default weights,
 * and with --mixture weights over two of them. The weighted pair agrees with itself
 * across the resume and differs from the default run, so the resumed half cannot have
 * fallen back to the default weights. */
Test(resume, bit_exact_mixture_folder) {
    char root[] = "/tmp/vrl_resume_XXXXXX", data[256];
    cr_assert(mkdtemp(root));
    snprintf(data, sizeof data, "%s/data", root);
    make_mixture_dir(data, 7, 0);
    double def[21] = {0}, mix[21] = {0};
    check_resume(&ref_backend_f32, NULL, data, NULL, def);
    check_resume(&ref_backend_f32, NULL, data, "RedPajamaC4=0.5,RedPajamaGithub=0.5", mix);
    int differ = 0;
    for (int s = 2; s <= 20; s++) differ += def[s] != mix[s];
    cr_assert_gt(differ, 10, "--mixture weights changed only %d of 19 losses", differ);
}

/* --mixture errors name the flag and the problem, before any run folder is made. */
Test(resume, mixture_flag_errors) {
    char root[] = "/tmp/vrl_resume_XXXXXX", data[256], two[256], out[256], shard[300];
    cr_assert(mkdtemp(root));
    snprintf(data, sizeof data, "%s/data", root);
    snprintf(two, sizeof two, "%s/two", root);
    snprintf(out, sizeof out, "%s/run", root);
    make_mixture_dir(data, 7, 0);
    make_mixture_dir(two, 2, 0);
    char wide[300];
    snprintf(wide, sizeof wide, "%s/wide", root);
    make_mixture_dir(wide, 7, 128); /* ids up to 127 for tiny's 64-token vocabulary */
    snprintf(shard, sizeof shard, "%s/train/RedPajamaC4-00000.bin", data);
    const struct {
        const char *data, *mixture, *error;
    } cases[] = {
        {data, "RedPajamaC4=1,RedPajamaWiki=1", "--mixture: "},
        {data, "RedPajamaC4=1,RedPajamaWiki=1", "no shards of domain \"RedPajamaWiki\"; the folder holds"},
        {two, "RedPajamaC4=1,RedPajamaWikipedia=0", "the folder holds \"RedPajamaC4\", \"RedPajamaCommonCrawl\""},
        {"", "RedPajamaC4=1", "--mixture: needs --data DIR"},
        {shard, "RedPajamaC4=1", "--mixture: --data " },
        {data, "RedPajamaC4=-1", "--mixture: weight \"-1\" of \"RedPajamaC4\" is not a finite number >= 0"},
        {data, "RedPajamaC4=0,RedPajamaGithub=0", "--mixture: all weights are zero"},
        {data, "RedPajamaC4", "--mixture: \"RedPajamaC4\" is not NAME=W"},
        {data, "RedPajamaC4=1,RedPajamaC4=2", "--mixture: domain \"RedPajamaC4\" given twice"},
        {data, "RedPajamaC4=1,", "--mixture: \"\" is not NAME=W"},
        /* the formulas.md §3 mixture on a folder of two domains: the way out is --mixture */
        {two, "", "no shards of domain \"RedPajamaGithub\"; the folder holds \"RedPajamaC4\", "
                  "\"RedPajamaCommonCrawl\" (the formulas.md §3 mixture needs all 7; choose the domains with --mixture"},
        /* data tokenized for a larger vocabulary than the model's: refused before training */
        {wide, "", "wide: token ids go up to 127 but the model's vocab_size is 64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TrainArgs a;
        base_args(&a, &ref_backend_f32, out, 2);
        snprintf(a.data, sizeof a.data, "%s", cases[i].data);
        snprintf(a.mixture, sizeof a.mixture, "%s", cases[i].mixture);
        vrl_clear_error();
        cr_assert_eq(train_run(&a), -1, "case %zu succeeded", i);
        cr_assert(strstr(vrl_last_error(), cases[i].error), "case %zu: \"%s\" lacks \"%s\"", i, vrl_last_error(),
                  cases[i].error);
        cr_assert(!strchr(vrl_last_error(), '\n'), "case %zu: not one line", i);
        cr_assert(!file_exists(out), "case %zu left a run folder", i);
    }
}

/* "mixture" in the stored training arguments: round trip; a state written before the
 * key existed still loads (formulas.md §3 weights, what that run trained on); other unknown
 * keys are still refused. */
Test(resume, train_args_json_mixture_key) {
    TrainArgs a, b;
    base_args(&a, &ref_backend_f32, "/tmp/unused", 10);
    snprintf(a.mixture, sizeof a.mixture, "RedPajamaC4=0.25,RedPajamaGithub=0.75");
    char js[4096], old[4096], extra[4200];
    cr_assert_eq(train_args_to_json(&a, js, sizeof js), 0, "%s", vrl_last_error());
    const char *key = strstr(js, "\"mixture\":\"RedPajamaC4=0.25,RedPajamaGithub=0.75\",");
    cr_assert(key, "%s", js);
    train_args_defaults(&b);
    cr_assert_eq(train_args_from_json(js, &b, "state"), 0, "%s", vrl_last_error());
    cr_assert_str_eq(b.mixture, a.mixture);
    cr_assert_eq(b.steps, 10);

    /* the same JSON without the key: an older state */
    snprintf(old, sizeof old, "%.*s%s", (int)(key - js), js, strchr(key + strlen("\"mixture\":\""), '"') + 2);
    cr_assert(!strstr(old, "mixture") && strstr(old, "\"lr_end\"") && strstr(old, "\"save_every\""), "%s", old);
    snprintf(b.mixture, sizeof b.mixture, "stale");
    cr_assert_eq(train_args_from_json(old, &b, "state"), 0, "%s", vrl_last_error());
    cr_assert_str_eq(b.mixture, "");

    /* JSON_STRICT still refuses what it does not know */
    snprintf(extra, sizeof extra, "{\"mixtures\":\"x\",%s", js + 1);
    cr_assert_eq(train_args_from_json(extra, &b, "state.safetensors"), -1);
    cr_assert(strstr(vrl_last_error(), "state.safetensors: training arguments"), "%s", vrl_last_error());
}

/* Values read back from a training state pass the command line's range check: a stored
 * seq 0 divided by zero in the loader; negative accum, warm-up or clip, eps 0 and a
 * seed "abc" (read as 0) were taken as they were. */
Test(resume, stored_args_are_checked) {
    TrainArgs a, out;
    base_args(&a, &ref_backend_f32, "/tmp/unused", 10);
    char js[4096], bad[4200], changes[256];
    cr_assert_eq(train_args_to_json(&a, js, sizeof js), 0, "%s", vrl_last_error());
    cr_assert_eq(train_args_resume(js, "S", &a, &out, changes, sizeof changes), 0, "%s", vrl_last_error());
    const struct {
        const char *key, *value, *error;
    } cases[] = {
        {"\"seq\":", "0", "S: stored seq 0: must be in 2..2^20"},
        {"\"accum\":", "-2", "S: stored accum -2"},
        {"\"warmup\":", "-5", "S: stored warmup -5"},
        {"\"steps\":", "-1", "S: stored steps -1"},
        {"\"clip\":", "-1.0", "S: stored clip -1"},
        {"\"eps\":", "0.0", "S: stored eps 0"},
        {"\"seed\":", "\"abc\"", "seed \"abc\" is not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* replace the value after key (up to the next ',' or '}') */
        const char *k = strstr(js, cases[i].key);
        cr_assert(k, "%s in %s", cases[i].key, js);
        const char *v = k + strlen(cases[i].key), *end = v + strcspn(v, ",}");
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(v - js), js, cases[i].value, end);
        vrl_clear_error();
        cr_assert_eq(train_args_resume(bad, "S", &a, &out, changes, sizeof changes), -1, "%s accepted", bad);
        cr_assert(strstr(vrl_last_error(), cases[i].error), "\"%s\" lacks \"%s\"", vrl_last_error(), cases[i].error);
    }
}
