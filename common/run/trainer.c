/* trainer.c: the backend-independent training loop (trainer.h). */
#include "common/run/trainer.h"
#include "common/run/hf_export.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/run/checkpoint.h"
#include "common/run/ckpt_folder.h"
#include "common/run/model_record.h"
#include "common/run/stop_request.h"
#include "common/run/dist.h"
#include "common/run/run_folder.h"
#include "common/run/out_folder.h"
#include "common/run/runlock.h"
#include "common/eval/domainval.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/base/memory.h"
#include "common/data/data_fingerprint.h"
#include "common/data/loader.h"
#include "common/run/metrics.h"
#include "common/base/clock.h"
#include "common/model/spec.h"
#include "common/data/synthetic.h"

/* ------------------------------------------------------------------ data */

static int open_data(const TrainArgs *a, DataLoader **train, DataLoader **val, Mixture **mix) {
    *train = *val = NULL;
    *mix = NULL;
    const int folder = a->data[0] && is_mixture_dir(a->data);
    if (a->mixture[0] && !folder) {
        if (!a->data[0]) return vrl_error("--mixture: needs --data DIR, a folder written by `vrl data tokenize`");
        return vrl_error("--mixture: --data %s is not a folder written by `vrl data tokenize` (train/ and validation/)",
                         a->data);
    }
    if (folder) { /* `vrl data tokenize` output: formulas.md §3 mixture or --mixture, per-domain val */
        if (a->val_data[0]) return vrl_error("--val-data: %s is a data folder with its own validation/", a->data);
        char why[VRL_ERROR_LEN];
        if (!a->mixture[0]) {
            if (mixture_open(a->data, NULL, NULL, 0, (uint32_t)a->seq, a->seed, mix) < 0) {
                snprintf(why, sizeof why, "%s", vrl_last_error());
                return vrl_error("%s (the formulas.md §3 mixture needs all 7; choose the domains with --mixture NAME=W,...)",
                                 why);
            }
        } else {
            MixtureWeights w;
            const char *names[MIXTURE_MAX_DOMAINS];
            if (mixture_weights_parse(a->mixture, &w) < 0) {
                snprintf(why, sizeof why, "%s", vrl_last_error());
                return vrl_error("--mixture: %s", why);
            }
            for (int i = 0; i < w.n; i++) names[i] = w.name[i];
            if (mixture_open(a->data, names, w.weight, w.n, (uint32_t)a->seq, a->seed, mix) < 0) {
                snprintf(why, sizeof why, "%s", vrl_last_error());
                return vrl_error("--mixture: %s", why);
            }
        }
        /* Checked once here, so no batch can hold an id the model cannot embed. */
        if (mixture_vocab_size(*mix) > (uint32_t)a->model.vocab_size) {
            vrl_error("%s: token ids go up to %u but the model's vocab_size is %d (tokenizer and model differ)",
                      a->data, mixture_vocab_size(*mix) - 1, a->model.vocab_size);
            mixture_close(*mix);
            *mix = NULL;
            return -1;
        }
        return 0;
    }
    if (a->data[0]) {
        *train = loader_open(a->data, a->batch, a->seq, a->model.vocab_size, a->seed);
        if (*train && a->val_data[0]) *val = loader_open(a->val_data, a->batch, a->seq, a->model.vocab_size, a->seed);
        if (*train && a->val_data[0] && !*val) {
            loader_close(*train);
            *train = NULL;
        }
    } else {
        const int V = a->model.vocab_size;
        *train = loader_synthetic(V, SYNTHETIC_TRAIN_STREAM, (uint64_t)a->synthetic_tokens, a->batch, a->seq, a->seed);
        if (*train) *val = loader_synthetic(V, SYNTHETIC_VAL_STREAM, SYNTHETIC_VAL_TOKENS, a->batch, a->seq, a->seed);
        if (*train && !*val) {
            loader_close(*train);
            *train = NULL;
        }
    }
    return *train ? 0 : -1;
}

/* The shards' identity (data_fingerprint.h): recorded by a fresh run, compared on resume so
 * a data folder regenerated at the same path is refused, not silently trained on. */
static int check_data_fingerprint(TrainArgs *a) {
    char d[20], v[20], fp[sizeof a->data_fingerprint];
    if (data_fingerprint(a->data, d, sizeof d) < 0 || data_fingerprint(a->val_data, v, sizeof v) < 0) return -1;
    snprintf(fp, sizeof fp, "%s%s%s", d, v[0] ? "," : "", v);
    if (a->resume && a->data_fingerprint[0] && strcmp(fp, a->data_fingerprint))
        return vrl_error("--data %s: the shards differ from those the run started on (fingerprint %s, stored %s: "
                         "regenerated or edited?); a resumed run reads the same data",
                         a->data, fp, a->data_fingerprint);
    snprintf(a->data_fingerprint, sizeof a->data_fingerprint, "%s", fp);
    return 0;
}

/* Mean loss over the first eval_batches full batches of the validation windows, in order. */
static double evaluate(const TrainArgs *a, void *model, DataLoader *val, int32_t *tokens) {
    const uint64_t windows = loader_windows(val);
    const uint64_t batches = windows / (uint64_t)a->batch;
    const uint64_t use = batches < (uint64_t)a->eval_batches ? batches : (uint64_t)a->eval_batches;
    double sum = 0;
    for (uint64_t b = 0; b < use; b++) {
        for (int i = 0; i < a->batch; i++) loader_window(val, b * a->batch + i, tokens + (size_t)i * a->seq);
        sum += a->backend->forward_loss(model, tokens);
    }
    return use ? sum / (double)use : NAN;
}

/* ------------------------------------------------------------------ checkpoints */

typedef struct {
    ModelSpec spec;                      /* the model, built once from the run's config */
    void *params, *exp_avg, *exp_avg_sq; /* host views [spec.table.total] in backend dtype */
    int owned; /* 1: host copies of our own (get_state fills them); 0: the backend's state_view */
} HostState;

/* The whole step goes into a stage folder, then one rename publishes it (ckpt_folder.h). */
static int save_run(const TrainArgs *a, void *model, HostState *h, DataLoader *train, const Mixture *mix, long step,
                    const Rng *rng) {
    const ParamTable *t = &h->spec.table;
    if (h->owned) /* every rank: may gather */
        a->backend->get_state(model, h->params, NULL, h->exp_avg, h->exp_avg_sq);
    if (dist_rank() != 0) return 0;                                             /* rank 0 writes */
    TrainState s = {.step = step, .rng = *rng};
    if (mix) mixture_state_export(mix, s.data_pos, &s.n_data_pos);
    else s.n_data_pos = loader_get_pos(train, s.data_pos);
    if (train_args_to_json(a, s.train_args_json, sizeof s.train_args_json) < 0) return -1;
    char stage[TRAIN_PATH_LEN + 64];
    if (ckpt_stage(a->out, step, stage, sizeof stage) < 0) return -1;
    if (checkpoint_save_model(stage, &a->model, t, a->backend->dtype, h->params) < 0 ||
        checkpoint_save_state(stage, t, a->backend->dtype, h->exp_avg, h->exp_avg_sq, &s) < 0 ||
        ckpt_publish(a->out, step, a->keep_previous) < 0) {
        ckpt_discard(stage);
        return -1;
    }
    return 0;
}

/* For a new run: the spec the caller built (taken over), else built here from c. */
static int host_state_alloc(HostState *h, const ModelConfig *c, ModelSpec *given, DType dt) {
    if (given) {
        h->spec = *given;
        memset(given, 0, sizeof *given);
    } else if (model_spec_build(c, &h->spec) < 0)
        return -1;
    const size_t total = h->spec.table.total, bytes = total * dtype_size(dt); /* total <= 2^40: no wrap */
    /* the host copies and the double draw of the initialisation, before any of them is made */
    char what[96];
    snprintf(what, sizeof what, "a model of %zu parameters", param_table_count(&h->spec.table)); /* the slots' gaps aside */
    if (memory_check(3 * bytes + total * sizeof(double), what) < 0) return -1;
    h->params = calloc(1, bytes);
    h->exp_avg = calloc(1, bytes);
    h->exp_avg_sq = calloc(1, bytes);
    h->owned = 1;
    if (!h->params || !h->exp_avg || !h->exp_avg_sq) return vrl_error("out of memory for %zu parameters", total);
    return 0;
}

static int recover_latest(const char *run, const ParamTable *t, DType dt);

/* --resume: the run's model (the shape --model may name again), weights, moments and state,
 * read through run_folder.h into h and st. */
static int resume_open(const char *run, const TrainArgs *cli, DType dt, int root, HostState *h, TrainState *st) {
    RunFolder rf;
    char path[TRAIN_PATH_LEN + 64];
    if (run_folder_open(run, 0, dt, &rf) < 0) return -1;
    int rc = 0;
    /* rank 0 holds the lock: a copy without a usable latest gets it back, verified */
    if (root && ckpt_needs_recovery(run)) rc = recover_latest(run, &rf.spec.table, dt);
    if (!rc && train_args_flag_given(cli, "--model") && !config_same_shape(&cli->model, &rf.config)) {
        rc = run_path(path, sizeof path, run, RUN_CONFIG);
        if (!rc) rc = vrl_error("--model %s: differs from the run's %s; a resumed run keeps its model",
                                config_origin(&cli->model), path);
    }
    if (!rc && run_folder_read(&rf, RUN_OPEN_PARAMS | RUN_OPEN_MOMENTS) < 0) {
        rc = -1;
        long steps[2];
        char why[VRL_ERROR_LEN];
        /* the published step is damaged (a file written over it): the one before is whole */
        if (ckpt_steps(run, steps, 2) == 2 && ckpt_step_dir(run, steps[1], path, sizeof path) == 0) {
            snprintf(why, sizeof why, "%s", vrl_last_error());
            vrl_error("%s; the previous checkpoint %s is untouched: remove %s/latest and --resume continues from "
                      "the newest step that verifies", why, path, run);
        }
    }
    if (rc) {
        run_folder_close(&rf);
        return -1;
    }
    /* moved into h: the spec and the three buffers */
    h->spec = rf.spec;
    h->params = rf.params, h->exp_avg = rf.exp_avg, h->exp_avg_sq = rf.exp_avg_sq;
    h->owned = 1;
    *st = rf.state;
    return 0;
}

static void host_state_free(HostState *h) {
    if (h->owned) {
        free(h->params);
        free(h->exp_avg);
        free(h->exp_avg_sq);
    }
    model_spec_free(&h->spec);
}

/* The draw in the backend's dtype, straight into the host view (no double staging copy). */
static void init_params(HostState *h, DType dt, uint64_t seed) {
    if (dt == DT_F64) params_init_f64(&h->spec.table, seed, h->params);
    else params_init_f32(&h->spec.table, seed, h->params);
}

/* Rank 0's parameters and moments to every rank, so the replicas start as one. */
static void share_state(HostState *h, DType dt) {
    const size_t bytes = h->spec.table.total * dtype_size(dt);
    dist_broadcast(h->params, bytes);
    dist_broadcast(h->exp_avg, bytes);
    dist_broadcast(h->exp_avg_sq, bytes);
}

/* The host state into the model. A backend whose state is in host memory (state_view)
 * takes it one buffer at a time, each host copy freed as soon as it is copied, and from
 * then on the trainer reads the backend's own buffers: one copy of the state in memory,
 * and at most one more while the run opens. */
static void hand_state_to_backend(HostState *h, const Backend *be, void *model) {
    if (!be->state_view) {
        be->set_state(model, h->params, h->exp_avg, h->exp_avg_sq);
        return;
    }
    be->set_state(model, h->params, NULL, NULL);
    free(h->params);
    be->set_state(model, NULL, h->exp_avg, NULL);
    free(h->exp_avg);
    be->set_state(model, NULL, NULL, h->exp_avg_sq);
    free(h->exp_avg_sq);
    be->state_view(model, &h->params, &h->exp_avg, &h->exp_avg_sq);
    h->owned = 0;
}

/* The next micro-batch of the training stream into tokens [batch, seq]. */
static int next_batch(const TrainArgs *a, DataLoader *train, Mixture *mix, int32_t *tokens) {
    if (mix) return mixture_next_batch(mix, a->batch, tokens, NULL);
    loader_next(train, tokens);
    return 0;
}

/* RUN/latest is missing, a copied folder, a file or a loop (what rsync -r, cp -rL, scp -r
 * leave): the newest step folder whose model and state load with their checksums verified
 * is published again. Nothing is removed but what stood at RUN/latest. */
static int recover_latest(const char *run, const ParamTable *t, DType dt) {
    long steps[64];
    char dir[TRAIN_PATH_LEN + 64], why[VRL_ERROR_LEN] = "";
    const int n = ckpt_steps(run, steps, 64);
    const size_t bytes = t->total * dtype_size(dt);
    void *p = malloc(bytes), *m = malloc(bytes), *v = malloc(bytes); /* [total] each, read to verify */
    int rc = p && m && v ? 1 : vrl_error("out of memory for %zu parameters", t->total);
    for (int i = 0; rc > 0 && i < n; i++) {
        TrainState st;
        if (ckpt_step_dir(run, steps[i], dir, sizeof dir) < 0) rc = -1;
        else if (checkpoint_load_model(dir, t, dt, p) < 0 || checkpoint_load_state(dir, t, dt, m, v, &st) < 0)
            snprintf(why, sizeof why, "%s", vrl_last_error());
        else if (st.step != steps[i]) rc = vrl_error("%s: holds the state of step %ld, not %ld", dir, st.step, steps[i]);
        else if (ckpt_republish(run, steps[i]) < 0) rc = -1;
        else {
            fprintf(stderr, "vrl train: %s/latest was not a link to a checkpoint; it points at %s again (verified)\n",
                    run, dir);
            rc = 0;
        }
    }
    free(p), free(m), free(v);
    return rc > 0 ? vrl_error("%s: no step folder in checkpoints/ verifies (%s)", run, why) : rc;
}

/* ------------------------------------------------------------------ opening a run */

/* Everything the step loop needs, validated and in place. */
typedef struct {
    TrainArgs *a;
    const Backend *be;
    HostState h;             /* the spec and the host views of the state */
    DataLoader *train, *val; /* plain shards or the synthetic corpus */
    Mixture *mix;            /* instead of train/val when --data is a tokenized data folder */
    void *model;             /* be's model of h.spec, holding the run's state */
    int32_t *tokens;         /* [batch, seq] one micro-batch */
    int32_t *skip;           /* [batch, seq] other ranks' micro-batches, read and dropped */
    double *micro_losses;    /* [accum] this rank's micro-batch losses of an update, where the
                              * backend keeps them until its step (Backend.micro_losses) */
    Metrics met;             /* metrics.jsonl + progress line */
    TrainState st;           /* the step reached, the RNG, the data position */
    DistGrad dg;             /* who takes which micro-batch, how gradients combine (dist.h) */
    int root;                /* rank 0: alone writes the run folder and reports */
    int lock;                /* rank 0's run_lock descriptor on the folder, -1 before */
    dev_t folder_dev;        /* rank 0: the locked run folder's identity, checked every step */
    ino_t folder_ino;
} Run;

static void run_close(Run *r) {
    free(r->tokens);
    free(r->skip);
    free(r->micro_losses);
    dist_grad_close(&r->dg);
    metrics_close(&r->met);
    if (r->model) r->be->destroy(r->model);
    loader_close(r->train);
    loader_close(r->val);
    mixture_close(r->mix);
    host_state_free(&r->h);
    run_unlock(r->lock);
}

/* A fresh run (a->out must not hold one) or a resumed one (everything from its folder but
 * the flags train_args_resume lets change): builds the spec, the host state, the data and the backend's model, and only
 * once every input is valid creates or touches the run folder. */
static int run_open(TrainArgs *a, Run *r) {
    memset(r, 0, sizeof *r);
    r->lock = -1;
    r->a = a;
    r->be = a->backend;
    r->root = dist_rank() == 0;
    const Backend *be = r->be;
    HostState *h = &r->h;
    TrainState *st = &r->st;
    char path[TRAIN_PATH_LEN + 64];
    char changes[1024] = ""; /* flags a --resume changed, for metrics.jsonl */
    if (train_args_check(a, NULL) < 0) return -1;
    /* the longest path a save makes (a stage's state file while written, any step number
     * --steps allows): a folder near PATH_MAX is refused now, not at the first save */
    char longest[PATH_MAX];
    const int need = snprintf(longest, sizeof longest, "%s/%s/.stage-%06ld/%s" VRL_TMP_INFIX "%d", a->out,
                              RUN_CHECKPOINTS, 1L << 40, RUN_TRAIN_STATE, INT_MAX);
    if (need < 0 || need >= (int)sizeof longest)
        return vrl_error("%s: a path of %zu bytes; a checkpoint's files under it would pass PATH_MAX (%d bytes)",
                         a->out, strlen(a->out), PATH_MAX);
    if (run_path(path, sizeof path, a->out, RUN_CONFIG) < 0) return -1;
    if (a->resume) {
        /* The lock comes first: another run may be writing the folder (rank 0 holds it). */
        if (!ckpt_exists(a->out))
            return vrl_error(file_exists(path) ? "%s: holds no checkpoint yet (the run stopped before its first save); "
                                                 "start it again with --out %s"
                                               : "%s: not a run folder (no checkpoint); start a run with --out %s",
                             a->out, a->out);
        if (r->root && ((r->lock = run_lock(a->out)) < 0 || ckpt_clean(a->out, a->keep_previous) < 0)) return -1;
        TrainArgs cli = *a;
        if (resume_open(a->out, &cli, be->dtype, r->root, h, st) < 0) return -1;
        a->model = h->spec.config;
        if (run_path(path, sizeof path, a->out, RUN_TRAIN_STATE) < 0) return -1;
        const ModelConfig model = a->model;
        if (train_args_resume(st->train_args_json, path, &cli, a, changes, sizeof changes) < 0) return -1;
        a->model = model;
        a->quiet = cli.quiet || !r->root;
        if (st->step >= a->steps)
            return vrl_error("%s: the run is already at step %ld of %ld; give --steps N with N > %ld to continue",
                             a->out, st->step, a->steps, st->step);
    } else {
        /* A folder whose run died before its first save holds no checkpoint: it is reused. */
        if (ckpt_exists(a->out))
            return vrl_error("%s: already holds a run; continue it with --resume %s or choose another --out", a->out,
                             a->out);
        if (out_folder_check(a->out) < 0) return -1; /* someone's files, never replaced or cleaned */
        if (a->sched.decay_end < 0) a->sched.decay_end = a->steps;
        if (host_state_alloc(h, &a->model, a->spec, be->dtype) < 0) return -1;
        init_params(h, be->dtype, a->seed);
        rng_seed(&st->rng, a->seed);
        if (!r->root) a->quiet = 1;
    }
    if (!backend_require(be, &h->spec, BACKEND_CAN_TRAIN)) return -1;
    if (a->seq > a->model.max_seq)
        return vrl_error("--seq %d exceeds the model's max_position_embeddings %d", a->seq, a->model.max_seq);
    if (open_data(a, &r->train, &r->val, &r->mix) < 0) return -1;
    if (check_data_fingerprint(a) < 0) return -1;
    if (r->val && loader_windows(r->val) < (uint64_t)a->batch) /* no full batch: no validation loss to log */
        return vrl_error("%s: %llu validation windows of %d tokens, fewer than one --batch of %d",
                         a->val_data[0] ? a->val_data : "the synthetic validation set",
                         (unsigned long long)loader_windows(r->val), a->seq, a->batch);
    /* said once the resume is accepted: a refusal above stays one line */
    if (a->resume && r->root && strstr(changes, "\"decay_end\":{\"kept\""))
        fprintf(stderr,
                "vrl train: note: the run's schedule is kept: its decay ends at step %ld (planned when it "
                "started), so steps %ld..%ld train at --lr-end %g, as `--steps %ld --decay-end %ld` would from "
                "the start (recorded in metrics.jsonl; to plan a longer run, start it with --decay-end N)\n",
                a->sched.decay_end, a->sched.decay_end + 1, a->steps, a->sched.end, a->steps, a->sched.decay_end);
    /* the flags must fit the training state, or the first checkpoint would fail after the work */
    if (train_args_to_json(a, st->train_args_json, sizeof st->train_args_json) < 0) return -1;
    if (a->resume && (r->mix ? mixture_state_import(r->mix, st->data_pos, st->n_data_pos)
                             : loader_set_pos(r->train, st->data_pos, st->n_data_pos)) < 0)
        return -1;
    if (!(r->model = be->create(&h->spec, a->batch, a->seq))) return -1;
    share_state(h, be->dtype);
    hand_state_to_backend(h, be, r->model);
    if (dist_grad_open(&r->dg, be, r->model, h->spec.table.total, a->accum) < 0) return -1;

    /* Inputs are all valid: only now is the run folder created or touched, by rank 0,
     * after every rank has checked it. */
    dist_barrier();
    if (!a->resume && r->root) {
        if (make_dirs(a->out) < 0 || (r->lock = run_lock(a->out)) < 0) return -1;
        if (ckpt_exists(a->out)) /* a run that started meanwhile and saved */
            return vrl_error("%s: already holds a run; continue it with --resume %s or choose another --out", a->out,
                             a->out);
        if (ckpt_clean(a->out, a->keep_previous) < 0) return -1;
        if (run_path(path, sizeof path, a->out, RUN_CONFIG) < 0) return -1;
        /* torch_dtype: the dtype every model.safetensors of the run is saved in (be->dtype) */
        const char *torch_dtype = be->dtype == DT_F64 ? "float64" : "float32";
        if (hf_export_end_tokens(a->data, &a->model) < 0 || config_save_json_dtype(path, &a->model, torch_dtype) < 0)
            return -1;
        if (hf_export_static(a->out, &a->model, a->data) < 0) return -1;
    }
    if (r->root) {
        struct stat fs;
        if (stat(a->out, &fs) != 0) return vrl_error("%s: cannot stat the run folder", a->out);
        r->folder_dev = fs.st_dev, r->folder_ino = fs.st_ino;
    }
    if (r->root && metrics_open(&r->met, a->out, a->resume ? st->step : -1) < 0) return -1;
    if (r->root && changes[0] && metrics_log_resume(&r->met, st->step, changes) < 0) return -1;
    if (!(r->tokens = malloc((size_t)a->batch * a->seq * sizeof *r->tokens))) return vrl_error("out of memory");
    if (!(r->micro_losses = malloc((size_t)a->accum * sizeof *r->micro_losses))) return vrl_error("out of memory");
    if (r->dg.world > 1 && !(r->skip = malloc((size_t)a->batch * a->seq * sizeof *r->skip)))
        return vrl_error("out of memory");
    if (!a->quiet)
        fprintf(stderr, "vrl train: %s, %s preset, %zu parameters, %s, batch %d x seq %d x accum %d, %ld steps -> %s\n",
                be->name, a->model.preset, param_table_count(&h->spec.table), a->model.variant, a->batch, a->seq,
                a->accum, a->steps, a->out);
    if (!a->quiet && r->dg.world > 1)
        fprintf(stderr, "vrl train: %d processes (%s), %d micro-batch%s each per update\n", r->dg.world,
                dist_launcher(), dist_grad_rounds(&r->dg), dist_grad_rounds(&r->dg) > 1 ? "es" : "");
    return 0;
}

/* ------------------------------------------------------------------ the step loop */

/* One update, number `step` (1-based): accum micro-batches (gradients summed, scaled by
 * 1/accum), then clipping and AdamW at lr(step - 1). *loss is the mean of the micro-batch
 * means, *norm the pre-clip gradient norm. -1 on a data error or a non-finite loss.
 * Micro-batch i of the update is rank i % world's (common/run/dist.h). A backend that keeps
 * its losses on the device (Backend.micro_losses, fast/) hands them over after its step, so
 * the update has one host wait: the losses are then combined in the same order, and a
 * non-finite loss ends the run as before (the weights it updated are never saved). */
static int train_update(Run *r, long step, double *loss, double *lr, double *norm) {
    const TrainArgs *a = r->a;
    const Backend *be = r->be;
    DistGrad *dg = &r->dg;
    be->zero_grad(r->model);
    vrl_clear_error();
    for (int round = 0; round < dist_grad_rounds(dg); round++) {
        for (int k = 0; k < dg->world; k++) /* every rank reads every batch: the position stays global */
            if (next_batch(a, r->train, r->mix, k == dg->rank ? r->tokens : r->skip) < 0) return -1;
        const int micro = dist_grad_micro(dg, round);
        dist_grad_begin_micro(dg, be, r->model, round);
        if (be->set_rng_key) be->set_rng_key(r->model, a->seed, step, micro);
        const double micro_loss = be->forward_backward(r->model, r->tokens, 1.0 / a->accum);
        if (be->micro_losses) {
            if (isnan(micro_loss) && vrl_last_error()[0]) return -1; /* refused the batch */
            continue;
        }
        if (dist_grad_end_micro(dg, be, r->model, micro_loss) < 0) return -1;
    }
    *lr = schedule_lr_update(&a->sched, step);
    if (be->micro_losses) {
        *norm = be->step(r->model, &a->opt, *lr, step);
        const int rounds = dist_grad_rounds(dg);
        if (be->micro_losses(r->model, r->micro_losses, rounds) < 0) return -1;
        for (int round = 0; round < rounds; round++)
            if (dist_grad_end_micro(dg, be, r->model, r->micro_losses[round]) < 0) return -1;
    }
    *loss = dist_grad_finish(dg, be, r->model);
    if (!isfinite(*loss)) {
        /* A backend that refused the batch said why; otherwise the run diverged. */
        if (!vrl_last_error()[0] && ckpt_exists(a->out))
            vrl_error("step %ld: training loss is %g (diverged); the last checkpoint in %s is intact", step, *loss,
                      a->out);
        else if (!vrl_last_error()[0])
            vrl_error("step %ld: training loss is %g (diverged) before the first checkpoint", step, *loss);
        return -1;
    }
    if (!be->micro_losses) *norm = be->step(r->model, &a->opt, *lr, step);
    return 0;
}

/* A non-finite value at `step` ends the run before anything is saved from it. */
static int diverged(const Run *r, long step, const char *what, double x) {
    if (isfinite(x)) return 0;
    const char *v = isnan(x) ? "NaN" : x > 0 ? "+inf" : "-inf";
    if (ckpt_exists(r->a->out))
        return vrl_error("step %ld: %s is %s (diverged); stopped, the last checkpoint in %s is intact", step, what, v,
                         r->a->out);
    return vrl_error("step %ld: %s is %s (diverged) before the first checkpoint; stopped", step, what, v);
}

/* Validation at `step`: the mean loss of the val windows, or with a data folder the loss of
 * each domain, then the mean over the domains that have chunks. -1 on a write error or a
 * non-finite loss. */
static int run_evaluate(Run *r, long step) {
    const TrainArgs *a = r->a;
    if (r->val) {
        const double vl = evaluate(a, r->model, r->val, r->tokens);
        if (metrics_log_eval(&r->met, step, "val", NULL, vl) < 0 || diverged(r, step, "the validation loss", vl) < 0)
            return -1;
        if (!a->quiet) {
            progress_end(&r->met);
            fprintf(stderr, "step %ld: val loss %.4f\n", step, vl);
        }
    }
    if (r->mix) {
        double sum = 0;
        int nd = 0;
        for (int d = 0; d < mixture_n_domains(r->mix); d++) {
            const double vl = domain_val_loss(r->be, r->model, r->mix, d, a->batch, a->seq, a->eval_batches, r->tokens);
            if (mixture_val_chunks(r->mix, d) == 0) continue; /* no validation chunks: no line */
            if (metrics_log_eval(&r->met, step, "val", mixture_domain(r->mix, d), vl) < 0 ||
                diverged(r, step, "a domain's validation loss", vl) < 0)
                return -1;
            sum += vl, nd++;
        }
        if (nd) {
            if (metrics_log_eval(&r->met, step, "val", NULL, sum / nd) < 0) return -1;
            if (!a->quiet) {
                progress_end(&r->met);
                fprintf(stderr, "step %ld: val loss %.4f (mean of %d domains)\n", step, sum / nd, nd);
            }
        }
    }
    return 0;
}

/* The run folder is still the one this run locked: deleted or replaced under a running
 * trainer, every later write would half re-create it (mkdir -p) and leave rc 0. step < 0: not
 * known (after the loop has failed). */
static int folder_intact(const Run *r, long step) {
    struct stat st;
    char path[TRAIN_PATH_LEN + 16];
    if (run_path(path, sizeof path, r->a->out, RUN_CONFIG) < 0) return -1;
    if (stat(r->a->out, &st) != 0 || st.st_dev != r->folder_dev || st.st_ino != r->folder_ino || stat(path, &st) != 0)
        return step >= 0 ? vrl_error("%s: the run folder was deleted or replaced while training (at step %ld); "
                                     "stopped, nothing more is written",
                                     r->a->out, step)
                         : vrl_error("%s: the run folder was deleted or replaced while training; stopped, "
                                     "nothing more is written",
                                     r->a->out);
    return 0;
}

/* A SIGTERM or SIGINT on any rank stops every rank after the same step. */
static int stop_signal(const Run *r) {
    int sig = stop_request_signal();
    if (r->dg.world > 1 && dist_sum_f64(sig ? 1.0 : 0.0) > 0 && !sig) sig = SIGTERM;
    return sig;
}

/* From the step after the run's last checkpoint to a->steps: update, log, evaluate, save.
 * 0 at the end, -1 on an error, 128 + the signal after a requested stop (saved first). */
static int train_loop(Run *r) {
    const TrainArgs *a = r->a;
    const double tokens_per_step = (double)a->batch * a->seq * a->accum;
    double sec_per_step = 0;
    for (long step = r->st.step + 1; step <= a->steps; step++) {
        const double t0 = now_seconds();
        double loss, lr, norm;
        if (train_update(r, step, &loss, &lr, &norm) < 0) return -1;
        const double dt = now_seconds() - t0;
        sec_per_step = sec_per_step == 0 ? dt : 0.9 * sec_per_step + 0.1 * dt;
        if (r->root && folder_intact(r, step) < 0) return -1;
        if (r->root && metrics_log_step(&r->met, step, loss, lr, norm, tokens_per_step / dt) < 0) return -1;
        if (diverged(r, step, "the gradient norm", norm) < 0) return -1; /* nothing of this step is saved */
        if (!a->quiet && (r->met.tty || step == r->st.step + 1 || step % 10 == 0 || step == a->steps))
            progress_print(&r->met, step, a->steps, loss, lr, norm, tokens_per_step / sec_per_step, sec_per_step);
        if (r->root && ((a->eval_every > 0 && step % a->eval_every == 0) || step == a->steps) &&
            run_evaluate(r, step) < 0)
            return -1;
        const int sig = stop_signal(r);
        if (sig || (a->save_every > 0 && step % a->save_every == 0) || step == a->steps) {
            if (save_run(a, r->model, &r->h, r->train, r->mix, step, &r->st.rng) < 0) return -1;
            dist_barrier(); /* the checkpoint is whole before any rank moves on or ends */
        }
        if (sig) {
            if (!a->quiet) progress_end(&r->met);
            if (r->root)
                fprintf(stderr, "vrl train: stopped by %s after step %ld of %ld; checkpoint saved in %s "
                                "(continue with --resume %s); exit %d\n",
                        stop_request_name(sig), step, a->steps, a->out, a->out, 128 + sig);
            return 128 + sig;
        }
    }
    if (!a->quiet) {
        progress_end(&r->met);
        fprintf(stderr, "vrl train: done; run folder %s\n", a->out);
    }
    return 0;
}

int train_run(TrainArgs *a) {
    Run r;
    int rc = run_open(a, &r);
    if (rc == 0) { /* from the first step on, SIGTERM/SIGINT save before they stop the run */
        stop_request_install();
        rc = train_loop(&r);
        /* a folder deleted between two checks makes some write fail first (ENOENT, a missing
         * parent): name the cause, not the file that happened to notice it. The deletion may
         * still be under way (rm -r removes a step folder's files before config.json), so the
         * folder is looked at again for up to half a second before the first error stands */
        if (rc == -1 && r.root)
            for (int i = 0; i < 10 && folder_intact(&r, -1) == 0; i++) {
                const struct timespec pause = {0, 50 * 1000 * 1000};
                nanosleep(&pause, NULL);
            }
        stop_request_uninstall();
    }
    run_close(&r);
    return rc;
}
