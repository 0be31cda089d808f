/* train_args.c: the training flags' defaults and their JSON form in the training state
 * (train_args.h); the checks and the --resume merge are in train_args_check.c. */
#include "common/run/train_args.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

void train_args_defaults(TrainArgs *a) {
    memset(a, 0, sizeof *a);
    a->steps = 300;
    a->batch = 16;
    a->seq = 128;
    a->accum = 1;
    a->sched = (Schedule){.kind = SCHED_COSINE, .peak = 3e-3, .end = 3e-4, .warmup = 30, .decay_end = -1};
    a->opt = (AdamWConfig){.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    a->seed = 1337;
    a->eval_every = 100;
    a->eval_batches = 8;
    a->save_every = 500;
    a->synthetic_tokens = 2000000;
    a->keep_previous = 1;
    snprintf(a->out, sizeof a->out, "runs/default");
}

/* ------------------------------------------------------------------ args <-> JSON */

int train_args_to_json(const TrainArgs *a, char *buf, size_t n) {
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:s, s:f, s:f, s:I, s:I, s:f, s:f, s:f, s:f, s:f, "
                          "s:s, s:I, s:i, s:I, s:I}",
                          "backend", a->backend->name, "data", a->data, "val_data", a->val_data, "steps",
                          (json_int_t)a->steps, "batch", a->batch, "seq", a->seq, "accum", a->accum, "schedule",
                          schedule_kind_name(a->sched.kind), "lr", a->sched.peak, "lr_end", a->sched.end,
                          "warmup", (json_int_t)a->sched.warmup, "decay_end", (json_int_t)a->sched.decay_end,
                          "beta1", a->opt.beta1, "beta2", a->opt.beta2, "eps", a->opt.eps, "wd",
                          a->opt.weight_decay, "clip", a->opt.clip, "seed", "", "eval_every",
                          (json_int_t)a->eval_every, "eval_batches", a->eval_batches, "save_every",
                          (json_int_t)a->save_every, "synthetic_tokens", (json_int_t)a->synthetic_tokens);
    if (!o) return vrl_error("cannot encode the training arguments");
    /* The seed is a full 64-bit value: store it as a decimal string. */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)a->seed);
    json_object_set_new(o, "seed", json_string(seed));
    json_object_set_new(o, "mixture", json_string(a->mixture));
    if (a->threads > 0) json_object_set_new(o, "threads", json_integer(a->threads)); /* it changes the bits */
    if (a->sched.offset) json_object_set_new(o, "schedule_offset", json_integer(a->sched.offset)); /* older states: 0 */
    if (a->data_fingerprint[0]) json_object_set_new(o, "data_fingerprint", json_string(a->data_fingerprint));
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!text || strlen(text) >= n) {
        free(text);
        return vrl_error("training arguments too long to store");
    }
    snprintf(buf, n, "%s", text);
    free(text);
    return 0;
}

int train_args_from_json(const char *text, TrainArgs *a, const char *origin) {
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    if (!o) return vrl_error("%s: training arguments: %s", origin, e.text);
    const char *data, *val, *sched, *seed, *backend, *mixture = "";
    int threads = 0; /* absent in older states */
    json_int_t offset = 0; /* absent in older states and when 0 */
    const char *fingerprint = "";
    json_int_t steps, warmup, decay_end, eval_every, save_every, synth;
    int rc = json_unpack_ex(o, &e, JSON_STRICT,
                            "{s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:s, s:F, s:F, s:I, s:I, s:F, s:F, s:F, s:F, s:F, "
                            "s:s, s:I, s:i, s:I, s:I, s?s, s?i, s?s, s?I}",
                            "backend", &backend, "data", &data, "val_data", &val, "steps", &steps, "batch", &a->batch,
                            "seq", &a->seq, "accum", &a->accum, "schedule", &sched, "lr", &a->sched.peak, "lr_end",
                            &a->sched.end, "warmup", &warmup, "decay_end", &decay_end, "beta1", &a->opt.beta1,
                            "beta2", &a->opt.beta2, "eps", &a->opt.eps, "wd", &a->opt.weight_decay, "clip",
                            &a->opt.clip, "seed", &seed, "eval_every", &eval_every, "eval_batches",
                            &a->eval_batches, "save_every", &save_every, "synthetic_tokens", &synth, "mixture",
                            &mixture, "threads", &threads, "data_fingerprint", &fingerprint, "schedule_offset", &offset);
    if (rc == 0 && schedule_kind_parse(sched, &a->sched.kind) < 0) rc = -1, snprintf(e.text, sizeof e.text, "schedule \"%s\"", sched);
    if (rc == 0) {
        snprintf(a->data, sizeof a->data, "%s", data);
        snprintf(a->val_data, sizeof a->val_data, "%s", val);
        snprintf(a->mixture, sizeof a->mixture, "%s", mixture); /* absent in older states: formulas.md §3 weights */
        a->steps = steps;
        if (threads > 0) a->threads = threads;
        snprintf(a->data_fingerprint, sizeof a->data_fingerprint, "%s", fingerprint);
        a->sched.warmup = warmup;
        a->sched.decay_end = decay_end;
        a->sched.offset = offset;
        a->eval_every = eval_every;
        a->save_every = save_every;
        a->synthetic_tokens = synth;
        char *end;
        errno = 0;
        a->seed = strtoull(seed, &end, 10);
        if (!*seed || *end || errno || *seed == '-') rc = -1, snprintf(e.text, sizeof e.text, "seed \"%.40s\" is not a number", seed);
    }
    json_decref(o);
    return rc ? vrl_error("%s: training arguments: %s", origin, e.text) : 0;
}
