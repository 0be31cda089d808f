/* train_args_check.c: one range check for the training flags, whether they come from
 * the command line or from a stored training state, and the rules for flags given
 * again on `vrl train --resume` (trainer.h). */
#include "common/run/train_args.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/base/error.h"

#define MAX_COUNT (1L << 40) /* steps, warm-up, intervals: the command line's bounds */
#define MAX_SIZE (1 << 20)   /* batch, seq, accum, eval batches */

/* origin NULL: the flags of the command line ("--lr -1: ..."); else the file the values
 * were stored in ("RUN/train_state.safetensors: stored lr -1: ..."). */
static int bad(const char *origin, const char *flag, const char *value, const char *want) {
    if (origin) return vrl_error("%s: stored %s %s: %s (the file is damaged or not from vrl)", origin, flag + 2, value, want);
    return vrl_error("%s %s: %s", flag, value, want);
}
static int bad_long(const char *origin, const char *flag, long x, const char *want) {
    char v[32];
    snprintf(v, sizeof v, "%ld", x);
    return bad(origin, flag, v, want);
}
static int bad_double(const char *origin, const char *flag, double x, const char *want) {
    char v[40];
    snprintf(v, sizeof v, "%g", x);
    return bad(origin, flag, v, want);
}

int train_args_check(const TrainArgs *a, const char *origin) {
    const Schedule *s = &a->sched;
    const AdamWConfig *o = &a->opt;
    if (a->steps < 0 || a->steps > MAX_COUNT) return bad_long(origin, "--steps", a->steps, "must be in 0..2^40");
    if (a->batch < 1 || a->batch > MAX_SIZE) return bad_long(origin, "--batch", a->batch, "must be in 1..2^20");
    if (a->seq < 2 || a->seq > MAX_SIZE) return bad_long(origin, "--seq", a->seq, "must be in 2..2^20");
    if (a->accum < 1 || a->accum > MAX_SIZE) return bad_long(origin, "--accum", a->accum, "must be in 1..2^20");
    if (!(s->peak > 0) || !isfinite(s->peak)) return bad_double(origin, "--lr", s->peak, "must be a finite number > 0");
    if (!(s->end >= 0) || !isfinite(s->end)) return bad_double(origin, "--lr-end", s->end, "must be a finite number >= 0");
    if (s->kind == SCHED_EXPONENTIAL && !(s->end < s->peak))
        return bad_double(origin, "--lr-end", s->end, "must be below --lr for the exponential schedule");
    if (s->warmup < 0 || s->warmup > MAX_COUNT) return bad_long(origin, "--warmup", s->warmup, "must be in 0..2^40");
    /* -1: "= --steps", filled in when the run starts */
    if (s->decay_end < -1 || s->decay_end > MAX_COUNT)
        return bad_long(origin, "--decay-end", s->decay_end, "must be in 0..2^40");
    if (s->offset != 0 && s->offset != 1) return bad_long(origin, "--schedule-offset", s->offset, "must be 0 or 1");
    if (!(o->beta1 >= 0 && o->beta1 < 1)) return bad_double(origin, "--beta1", o->beta1, "must be in [0, 1)");
    if (!(o->beta2 >= 0 && o->beta2 < 1)) return bad_double(origin, "--beta2", o->beta2, "must be in [0, 1)");
    if (!(o->eps > 0) || !isfinite(o->eps)) return bad_double(origin, "--eps", o->eps, "must be a finite number > 0");
    if (!(o->weight_decay >= 0) || !isfinite(o->weight_decay))
        return bad_double(origin, "--wd", o->weight_decay, "must be a finite number >= 0");
    if (!(o->clip >= 0) || !isfinite(o->clip))
        return bad_double(origin, "--clip", o->clip, "must be a finite number >= 0 (0 = off)");
    if (a->eval_every < 0 || a->eval_every > MAX_COUNT)
        return bad_long(origin, "--eval-every", a->eval_every, "must be in 0..2^40");
    if (a->eval_batches < 1 || a->eval_batches > MAX_SIZE)
        return bad_long(origin, "--eval-batches", a->eval_batches, "must be in 1..2^20");
    if (a->save_every < 0 || a->save_every > MAX_COUNT)
        return bad_long(origin, "--save-every", a->save_every, "must be in 0..2^40");
    if (a->synthetic_tokens < 1024 || a->synthetic_tokens > (1L << 34))
        return bad_long(origin, "--synthetic-tokens", a->synthetic_tokens, "must be in 1024..2^34");
    if (a->keep_previous < 0 || a->keep_previous > 1000)
        return bad_long(NULL, "--keep-previous", a->keep_previous, "must be in 0..1000");
    return 0;
}

/* ------------------------------------------------------------------ --resume */

/* What a flag given again on --resume may do. Flags that shape the trajectory (data,
 * batch, optimizer, seed) are refused when they differ from the stored run: the
 * resumed run would no longer be the run that was started. Flags that only say how
 * long to train, how often to evaluate and save, are accepted and the change is
 * recorded in metrics.jsonl. */
static const struct {
    const char *flag, *key;
    int may_change;
} resume_rules[] = {
    {"--data", "data", 0},         {"--val-data", "val_data", 0},   {"--synthetic-tokens", "synthetic_tokens", 0},
    {"--batch", "batch", 0},       {"--seq", "seq", 0},             {"--accum", "accum", 0},
    {"--lr", "lr", 0},             {"--lr-end", "lr_end", 0},       {"--warmup", "warmup", 0},
    {"--decay-end", "decay_end", 0}, {"--schedule", "schedule", 0}, {"--wd", "wd", 0},
    {"--schedule-offset", "schedule_offset", 0},
    {"--clip", "clip", 0},         {"--seed", "seed", 0},           {"--threads", "threads", 1},
    {"--steps", "steps", 1},
    {"--eval-every", "eval_every", 1}, {"--eval-batches", "eval_batches", 1}, {"--save-every", "save_every", 1},
};

void train_args_note_flag(TrainArgs *a, const char *flag) {
    size_t len = strlen(a->given);
    snprintf(a->given + len, sizeof a->given - len, " %s ", flag);
}

int train_args_flag_given(const TrainArgs *a, const char *flag) {
    char key[64];
    snprintf(key, sizeof key, " %s ", flag);
    return strstr(a->given, key) != NULL;
}

/* A stored value as the user would type it (malloc'd). */
static char *value_text(json_t *v) {
    if (json_is_string(v)) return strdup(json_string_length(v) ? json_string_value(v) : "\"\"");
    return json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
}

int train_args_resume(const char *stored_json, const char *origin, const TrainArgs *cli, TrainArgs *out,
                      char *changes, size_t n) {
    *out = *cli;
    changes[0] = '\0';
    if (train_args_from_json(stored_json, out, origin) < 0 || train_args_check(out, origin) < 0) return -1;
    char cli_json[TRAIN_ARGS_JSON_LEN];
    if (train_args_to_json(cli, cli_json, sizeof cli_json) < 0) return -1;
    json_t *run = json_loads(stored_json, 0, NULL), *now = json_loads(cli_json, 0, NULL), *log = json_object();
    int rc = (run && now && log) ? 0 : vrl_error("%s: out of memory", origin);
    const char *stored_be = rc ? NULL : json_string_value(json_object_get(run, "backend"));
    if (!rc && (!stored_be || strcmp(stored_be, cli->backend->name)))
        rc = vrl_error("%s: the run was trained on %s, this command would resume it on %s; give the run's --device "
                       "and --precision",
                       origin, stored_be ? stored_be : "?", cli->backend->name);
    for (size_t i = 0; !rc && i < sizeof resume_rules / sizeof resume_rules[0]; i++) {
        /* steps > 0 counts as given: callers of the library set it without the flag list */
        const int steps_set = !strcmp(resume_rules[i].flag, "--steps") && cli->steps > 0;
        if (!train_args_flag_given(cli, resume_rules[i].flag) && !steps_set) continue;
        json_t *was = json_object_get(run, resume_rules[i].key), *is = json_object_get(now, resume_rules[i].key);
        if (!was && !strcmp(resume_rules[i].key, "threads")) continue; /* an older state does not record it */
        if (!was && !is) continue; /* schedule_offset: stored only when not 0 */
        if (json_equal(was, is)) continue;
        json_t *zero = json_integer(0); /* an absent schedule_offset is 0 */
        if (!was) was = zero;
        if (!is) is = zero;
        char *w = value_text(was), *v = value_text(is);
        if (!resume_rules[i].may_change)
            rc = vrl_error("%s %s: the run was started with %s %s; a resumed run keeps it (see vrl train --help)",
                           resume_rules[i].flag, v ? v : "?", resume_rules[i].flag, w ? w : "?");
        else {
            /* log first: setting the new value releases the old one */
            rc = json_object_set_new(log, resume_rules[i].key, json_pack("{s:O, s:O}", "from", was, "to", is));
            rc |= json_object_set(run, resume_rules[i].key, is);
            if (rc) rc = vrl_error("%s: out of memory", origin);
        }
        free(w);
        free(v);
        json_decref(zero);
    }
    /* --steps past the stored decay end keeps the schedule: the decay was planned when the
     * run started and steps 1..now followed it, so the later steps train at lr_end. The
     * resumed run is then the run `--steps N --decay-end S` is from the start; say so. */
    json_t *steps_now = json_object_get(run, "steps"), *decay = json_object_get(run, "decay_end");
    if (!rc && json_object_get(log, "steps") && json_integer_value(steps_now) > json_integer_value(decay) &&
        json_object_set_new(log, "decay_end", json_pack("{s:O}", "kept", decay)))
        rc = vrl_error("%s: out of memory", origin);
    char *merged = rc ? NULL : json_dumps(run, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    char *logged = rc || !json_object_size(log) ? NULL : json_dumps(log, JSON_COMPACT | JSON_SORT_KEYS);
    if (!rc && !merged) rc = vrl_error("%s: out of memory", origin);
    if (!rc) rc = train_args_from_json(merged, out, origin);
    if (!rc && logged && strlen(logged) >= n) rc = vrl_error("%s: too many changed flags to record", origin);
    if (!rc && logged) snprintf(changes, n, "%s", logged);
    free(merged);
    free(logged);
    json_decref(run);
    json_decref(now);
    json_decref(log);
    return rc;
}
