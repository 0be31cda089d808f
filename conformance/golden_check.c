/* golden_check.c: one golden fixture through a Backend (see golden_check.h).
 *
 * Order of work, each step a reason to stop:
 *   1. read the fixture, parse its `config` and `train` metadata;
 *   2. build the parameter table — failure means ref does not build this variant or
 *      architecture yet: SKIP, with vrl's error as the reason (likewise if the table
 *      builds but the Backend cannot create the model);
 *   3. the table's tensor set must equal the fixture's param.* set (names and shapes), and
 *      its decay flags the `no_decay_params` list: a difference is a FAIL (a model that
 *      has other tensors than the oracle cannot be compared, and is wrong);
 *   4. forward/backward at init: logits, loss, every gradient;
 *   5. the 5 clipped AdamW updates: losses, pre-clip norms, lrs, and final.* when present. */
#include "conformance/golden_check.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/spec.h"
#include "common/model/config.h"
#include "common/base/error.h"
#include "common/base/safetensors.h"
#include "common/run/schedule.h"

double golden_rel_err_floor(const double *ours, const double *want, size_t n, double floor) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(ours[i] - want[i]);
        if (!(e <= d)) d = e; /* NaN in ours propagates as the worst error */
        m = fmax(m, fabs(want[i]));
    }
    return d / fmax(fmax(m, floor), 1e-300);
}

double golden_rel_err(const double *ours, const double *want, size_t n) { return golden_rel_err_floor(ours, want, n, 0); }

static GoldenStatus set_status(GoldenResult *r, GoldenStatus s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->status = s;
    return s;
}

static size_t numel_of(const StTensor *t) {
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

/* A fixture tensor as doubles (malloc'd), or NULL if absent or of another size. */
static double *tensor_f64(const StFile *f, const char *name, size_t want_n) {
    const StTensor *t = st_find(f, name);
    if (!t || (want_n && numel_of(t) != want_n)) return NULL;
    size_t n = numel_of(t);
    double *x = malloc((n ? n : 1) * sizeof *x);
    if (x && st_to_f64(t, x, n) < 0) {
        free(x);
        return NULL;
    }
    return x;
}

/* Largest |x| over the fixture tensors "<prefix><name>" of the table's entries. */
static double max_abs_over(const StFile *f, const ParamTable *t, const char *prefix) {
    double m = 0;
    for (int k = 0; k < t->n; k++) {
        char nm[PARAM_NAME_LEN + 8];
        snprintf(nm, sizeof nm, "%s%s", prefix, t->p[k].name);
        double *x = tensor_f64(f, nm, t->p[k].numel);
        for (size_t i = 0; x && i < t->p[k].numel; i++) m = fmax(m, fabs(x[i]));
        free(x);
    }
    return m;
}

/* Host buffers in the backend's dtype <-> double. */
static void to_real(const Backend *be, const double *x, void *out, size_t n) {
    if (be->dtype == DT_F64) memcpy(out, x, n * sizeof(double));
    else
        for (size_t i = 0; i < n; i++) ((float *)out)[i] = (float)x[i];
}

static void from_real(const Backend *be, const void *in, double *x, size_t n) {
    if (be->dtype == DT_F64) memcpy(x, in, n * sizeof(double));
    else
        for (size_t i = 0; i < n; i++) x[i] = ((const float *)in)[i];
}

static double json_num(json_t *o, const char *key, int *ok) {
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) {
        *ok = 0;
        return 0;
    }
    return json_number_value(v);
}

typedef struct {
    int steps;
    AdamWConfig opt;
    Schedule sched;
    json_t *no_decay; /* array of names, owned by the parsed train object */
} TrainSetup;

static int parse_train(json_t *train, TrainSetup *ts, char *why, size_t cap) {
    int ok = 1;
    json_t *betas = json_object_get(train, "betas");
    ts->steps = (int)json_num(train, "steps", &ok);
    ts->opt.eps = json_num(train, "eps", &ok);
    ts->opt.weight_decay = json_num(train, "weight_decay", &ok);
    ts->opt.clip = json_num(train, "clip_max_norm", &ok);
    double lr_start = json_num(train, "lr_start", &ok);
    ts->sched.peak = json_num(train, "lr_peak", &ok);
    ts->sched.end = json_num(train, "lr_end", &ok);
    ts->sched.warmup = (long)json_num(train, "warmup_steps", &ok);
    ts->sched.decay_end = (long)json_num(train, "decay_end_step", &ok);
    json_t *kind = json_object_get(train, "schedule");
    json_t *optim = json_object_get(train, "optimizer");
    ts->no_decay = json_object_get(train, "no_decay_params");
    if (!ok || json_array_size(betas) != 2 || !json_is_string(kind) || !json_is_array(ts->no_decay) || ts->steps < 1)
        return snprintf(why, cap, "train metadata lacks a field this check reads"), -1;
    ts->opt.beta1 = json_number_value(json_array_get(betas, 0));
    ts->opt.beta2 = json_number_value(json_array_get(betas, 1));
    if (schedule_kind_parse(json_string_value(kind), &ts->sched.kind) < 0)
        return snprintf(why, cap, "unknown schedule \"%s\"", json_string_value(kind)), -1;
    if (!json_is_string(optim) || strcmp(json_string_value(optim), "torch.optim.AdamW"))
        return snprintf(why, cap, "optimizer is not torch.optim.AdamW"), -1;
    /* schedule.h fixes the warmup start at formulas.md's 1e-7 */
    if (lr_start != LR_START) return snprintf(why, cap, "lr_start %g differs from formulas.md's %g", lr_start, LR_START), -1;
    return 0;
}

/* Step 3: the table and the fixture hold the same tensors, shapes and decay flags. */
static GoldenStatus check_tensor_set(const StFile *f, const ParamTable *t, const TrainSetup *ts, GoldenResult *r) {
    char list[1024] = "";
    size_t len = 0;
    int bad = 0;
#define NOTE(...)                                                                     \
    do {                                                                              \
        if (len < sizeof list) len += snprintf(list + len, sizeof list - len, __VA_ARGS__); \
        bad++;                                                                        \
    } while (0)
    for (int k = 0; k < t->n; k++) {
        char name[PARAM_NAME_LEN + 8];
        snprintf(name, sizeof name, "param.%s", t->p[k].name);
        const StTensor *s = st_find(f, name);
        if (!s) {
            NOTE(" ref-only:%s", t->p[k].name);
            continue;
        }
        int same = s->ndim == t->p[k].ndim;
        for (int i = 0; same && i < s->ndim; i++) same = s->shape[i] == t->p[k].shape[i];
        if (!same) NOTE(" shape:%s", t->p[k].name);
    }
    for (int i = 0; i < f->n; i++)
        if (!strncmp(f->t[i].name, "param.", 6) && !param_table_find(t, f->t[i].name + 6))
            NOTE(" fixture-only:%s", f->t[i].name + 6);
    if (bad) return set_status(r, GOLDEN_FAIL, "%d tensor(s) differ between ref's table and the fixture:%s", bad, list);

    /* decay flags: exactly the no_decay list is undecayed */
    size_t i;
    json_t *v;
    json_array_foreach(ts->no_decay, i, v) {
        const ParamInfo *p = json_is_string(v) ? param_table_find(t, json_string_value(v)) : NULL;
        if (!p) NOTE(" no_decay-unknown:%s", json_is_string(v) ? json_string_value(v) : "?");
        else if (p->decay) NOTE(" decayed-in-ref:%s", p->name);
    }
    for (int k = 0; k < t->n; k++) {
        if (t->p[k].decay) continue;
        int listed = 0;
        json_array_foreach(ts->no_decay, i, v) listed |= json_is_string(v) && !strcmp(json_string_value(v), t->p[k].name);
        if (!listed) NOTE(" undecayed-in-ref:%s", t->p[k].name);
    }
#undef NOTE
    if (bad) return set_status(r, GOLDEN_FAIL, "%d weight-decay flag(s) differ from the fixture's no_decay_params:%s", bad, list);
    return GOLDEN_OK;
}

GoldenStatus golden_run(const char *dir, const char *name, const Backend *be, GoldenResult *r) {
    memset(r, 0, sizeof *r);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    StFile f;
    if (st_read(path, &f) < 0) return set_status(r, GOLDEN_FAIL, "cannot read fixture: %s", vrl_last_error());

    json_t *meta = NULL, *train = NULL;
    ModelSpec spec = {0};
    void *m = NULL;
    double *p64 = NULL, *g64 = NULL, *got = NULL;
    void *buf = NULL;
    int32_t *tokens = NULL;
    ModelConfig c;
    TrainSetup ts;
    char why[256];

    json_error_t jerr;
    meta = f.metadata_json ? json_loads(f.metadata_json, 0, &jerr) : NULL;
    json_t *cfg_text = json_object_get(meta, "config"), *train_text = json_object_get(meta, "train");
    if (!json_is_string(cfg_text) || !json_is_string(train_text)) {
        set_status(r, GOLDEN_FAIL, "%s: metadata lacks \"config\" or \"train\"", path);
        goto done;
    }
    char origin[4200];
    snprintf(origin, sizeof origin, "%s [config]", path);
    if (config_parse_json(json_string_value(cfg_text), &c, origin) < 0) {
        set_status(r, GOLDEN_FAIL, "%s", vrl_last_error());
        goto done;
    }
    snprintf(r->variant, sizeof r->variant, "%s", c.arch == ARCH_GPT2 ? "baseline (gpt2)" : c.variant);
    r->n_kv_heads = c.n_kv_heads;
    train = json_loads(json_string_value(train_text), 0, &jerr);
    if (!train || parse_train(train, &ts, why, sizeof why) < 0) {
        set_status(r, GOLDEN_FAIL, "%s: train metadata: %s", path, train ? why : jerr.text);
        goto done;
    }

    if (model_spec_build(&c, &spec) < 0) {
        set_status(r, GOLDEN_SKIP, "case %s: %s %s not implemented in ref: %s", name,
                   c.arch == ARCH_GPT2 ? "architecture" : "variant", c.arch == ARCH_GPT2 ? "gpt2" : c.variant,
                   vrl_last_error());
        goto done;
    }
    if (check_tensor_set(&f, &spec.table, &ts, r) != GOLDEN_OK) goto done;

    const StTensor *tok = st_find(&f, "batch.tokens");
    if (!tok || tok->ndim != 2) {
        set_status(r, GOLDEN_FAIL, "%s: batch.tokens missing or not [B, T]", path);
        goto done;
    }
    const int B = (int)tok->shape[0], T = (int)tok->shape[1];
    const size_t P = spec.table.total, NL = (size_t)B * T * c.vocab_size, esz = dtype_size(be->dtype);
    p64 = calloc(P, sizeof *p64); /* the padding gaps zero (params.h) */
    g64 = malloc(P * sizeof *g64);
    got = malloc((P > NL ? P : NL) * sizeof *got);
    buf = calloc(P > NL ? P : NL, esz);
    tokens = malloc((size_t)B * T * sizeof *tokens);
    double *tk = tensor_f64(&f, "batch.tokens", (size_t)B * T);
    if (!p64 || !g64 || !got || !buf || !tokens || !tk) {
        free(tk);
        set_status(r, GOLDEN_FAIL, "out of memory or unreadable batch.tokens");
        goto done;
    }
    for (int i = 0; i < B * T; i++) tokens[i] = (int32_t)tk[i];
    free(tk);

    /* weights: F32 in the fixture, exactly representable in either precision */
    for (int k = 0; k < spec.table.n; k++) {
        char nm[PARAM_NAME_LEN + 8];
        snprintf(nm, sizeof nm, "param.%s", spec.table.p[k].name);
        if (st_to_f64(st_find(&f, nm), p64 + spec.table.p[k].offset, spec.table.p[k].numel) < 0) {
            set_status(r, GOLDEN_FAIL, "%s: cannot read %s: %s", path, nm, vrl_last_error());
            goto done;
        }
    }

    m = be->create(&spec, B, T);
    if (!m) {
        /* the table exists but the model code does not build this case yet */
        set_status(r, GOLDEN_SKIP, "case %s: %s cannot create a model for %s %s (not implemented in ref): %s", name,
                   be->name, c.arch == ARCH_GPT2 ? "architecture" : "variant", r->variant, vrl_last_error());
        goto done;
    }
    to_real(be, p64, buf, P);
    void *zeros = calloc(P, esz);
    if (!zeros) {
        set_status(r, GOLDEN_FAIL, "out of memory");
        goto done;
    }
    be->set_state(m, buf, zeros, zeros); /* fresh AdamW moments */
    free(zeros);

    /* ---- step 4: forward/backward at init */
    be->zero_grad(m);
    double loss0 = be->forward_backward(m, tokens, 1.0);
    double *ref_loss = tensor_f64(&f, "out.loss", 1), *ref_logits = tensor_f64(&f, "out.logits", NL);
    if (!ref_loss || !ref_logits) {
        free(ref_loss);
        free(ref_logits);
        set_status(r, GOLDEN_FAIL, "%s: out.loss / out.logits missing or of the wrong size", path);
        goto done;
    }
    r->loss = golden_rel_err(&loss0, ref_loss, 1);
    be->get_logits(m, buf);
    from_real(be, buf, got, NL);
    r->logits = golden_rel_err(got, ref_logits, NL);
    free(ref_loss);
    free(ref_logits);

    be->get_state(m, NULL, buf, NULL, NULL);
    from_real(be, buf, g64, P);
    r->grad = -1;
    const double gfloor = GOLDEN_FLOOR * max_abs_over(&f, &spec.table, "grad.");
    for (int k = 0; k < spec.table.n; k++) {
        char nm[PARAM_NAME_LEN + 8];
        snprintf(nm, sizeof nm, "grad.%s", spec.table.p[k].name);
        double *g = tensor_f64(&f, nm, spec.table.p[k].numel);
        if (!g) {
            set_status(r, GOLDEN_FAIL, "%s: %s missing or of the wrong size", path, nm);
            goto done;
        }
        double e = golden_rel_err_floor(g64 + spec.table.p[k].offset, g, spec.table.p[k].numel, gfloor);
        free(g);
        if (!(e <= r->grad)) {
            r->grad = e;
            snprintf(r->grad_worst, sizeof r->grad_worst, "%s", spec.table.p[k].name);
        }
    }

    /* ---- step 5: the training steps; the gradients of update 1 are the ones above */
    double losses[64], norms[64], lrs[64];
    if (ts.steps > 64) {
        set_status(r, GOLDEN_FAIL, "%s: %d training steps (64 max here)", path, ts.steps);
        goto done;
    }
    for (int u = 1; u <= ts.steps; u++) {
        if (u > 1) {
            be->zero_grad(m);
            losses[u - 1] = be->forward_backward(m, tokens, 1.0);
        } else losses[0] = loss0;
        lrs[u - 1] = schedule_lr(&ts.sched, u - 1); /* update u uses lr(u − 1) */
        norms[u - 1] = be->step(m, &ts.opt, lrs[u - 1], u);
    }
    double *wl = tensor_f64(&f, "train.losses", (size_t)ts.steps), *wn = tensor_f64(&f, "train.grad_norms", (size_t)ts.steps),
           *wr = tensor_f64(&f, "train.lrs", (size_t)ts.steps);
    if (!wl || !wn || !wr) {
        free(wl), free(wn), free(wr);
        set_status(r, GOLDEN_FAIL, "%s: train.losses / grad_norms / lrs missing or not [%d]", path, ts.steps);
        goto done;
    }
    r->train_loss = golden_rel_err(losses, wl, (size_t)ts.steps);
    r->grad_norm = golden_rel_err(norms, wn, (size_t)ts.steps);
    r->lr = golden_rel_err(lrs, wr, (size_t)ts.steps);
    free(wl), free(wn), free(wr);

    be->get_state(m, buf, NULL, NULL, NULL);
    from_real(be, buf, p64, P);
    r->final = -1;
    const double ffloor = GOLDEN_FLOOR * max_abs_over(&f, &spec.table, "final.");
    for (int k = 0; k < spec.table.n; k++) {
        char nm[PARAM_NAME_LEN + 8];
        snprintf(nm, sizeof nm, "final.%s", spec.table.p[k].name);
        if (!st_find(&f, nm)) continue;
        double *w = tensor_f64(&f, nm, spec.table.p[k].numel);
        if (!w) {
            set_status(r, GOLDEN_FAIL, "%s: %s has the wrong size", path, nm);
            goto done;
        }
        double e = golden_rel_err_floor(p64 + spec.table.p[k].offset, w, spec.table.p[k].numel, ffloor);
        free(w);
        r->has_final = 1;
        r->n_final++;
        if (!(e <= r->final)) {
            r->final = e;
            snprintf(r->final_worst, sizeof r->final_worst, "%s", spec.table.p[k].name);
        }
    }
    /* a final.* tensor the table lacks would otherwise go unchecked */
    for (int i = 0; i < f.n; i++)
        if (!strncmp(f.t[i].name, "final.", 6) && !param_table_find(&spec.table, f.t[i].name + 6)) {
            set_status(r, GOLDEN_FAIL, "%s: %s has no parameter in ref's table", path, f.t[i].name);
            goto done;
        }
    r->status = GOLDEN_OK;

done:
    if (m) be->destroy(m);
    free(p64), free(g64), free(got), free(buf), free(tokens);
    model_spec_free(&spec);
    json_decref(train);
    json_decref(meta);
    st_free(&f);
    return r->status;
}
