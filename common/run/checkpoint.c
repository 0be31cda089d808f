/* checkpoint.c: model.safetensors and train_state.safetensors of a run folder
 * (layout in checkpoint.h).
 *
 * The two files are written one after the other, each atomically; the state records the
 * FNV-1a 64 hash of the model file's bytes, so loading a state next to a model from a
 * different save (a crash between the two renames) is caught instead of silently
 * resuming with mismatched weights and moments. */
#include "common/run/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/base/hash.h"
#include "common/run/model_record.h"
#include "common/run/ckpt_folder.h"
#include "common/run/run_paths.h"


static int check_run_dtype(DType d) {
    if (d != DT_F32 && d != DT_F64) return vrl_error("checkpoint: dtype %s is not a run precision (F32 or F64)",
                                                   dtype_name(d));
    return 0;
}

/* Element i of a file tensor as a double (the load accepts F32, F64 and BF16). */
static double elem(const StTensor *t, size_t i) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case DT_F32: { float x; memcpy(&x, p + 4 * i, 4); return x; }
    case DT_F64: { double x; memcpy(&x, p + 8 * i, 8); return x; }
    case DT_BF16: {
        uint16_t b;
        memcpy(&b, p + 2 * i, 2);
        uint32_t u = (uint32_t)b << 16;
        float x;
        memcpy(&x, &u, 4);
        return x;
    }
    default: return 0; /* excluded by the dtype check in load_one */
    }
}

/* Copy tensor `name` of file f into out (laid out by ParamInfo p, in dtype). */
static int load_one(const char *path, const StFile *f, const char *name, const ParamInfo *p, DType dtype, void *out) {
    const StTensor *t = st_find(f, name);
    if (!t) return vrl_error("%s: missing tensor %s", path, name);
    int same = t->ndim == p->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = t->shape[d] == p->shape[d];
    if (!same) {
        char got[160] = "", want[160] = "";
        for (int d = 0; d < t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        for (int d = 0; d < p->ndim; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "", (long long)p->shape[d]);
        return vrl_error("%s: tensor %s has shape [%s], the model needs [%s]", path, name, got, want);
    }
    if (t->dtype != DT_F32 && t->dtype != DT_F64 && t->dtype != DT_BF16)
        return vrl_error("%s: tensor %s has dtype %s (F32, F64 or BF16 expected)", path, name, dtype_name(t->dtype));
    if (t->dtype == dtype) {
        memcpy((char *)out + p->offset * dtype_size(dtype), t->data, t->nbytes);
    } else if (dtype == DT_F32) {
        float *o = (float *)out + p->offset;
        for (size_t i = 0; i < p->numel; i++) o[i] = (float)elem(t, i);
    } else {
        double *o = (double *)out + p->offset;
        for (size_t i = 0; i < p->numel; i++) o[i] = elem(t, i);
    }
    /* the padding gap after the tensor (params.h): zero, as params_init leaves it */
    memset((char *)out + (p->offset + p->numel) * dtype_size(dtype), 0,
           (p->slot - p->numel) * dtype_size(dtype));
    return 0;
}

/* Every file tensor must be PREFIX + a table name for one of the prefixes. */
static int check_no_extra(const char *path, const StFile *f, const ParamTable *t, const char *const *prefixes,
                          int n_prefixes) {
    for (int i = 0; i < f->n; i++) {
        const char *name = f->t[i].name;
        int known = 0;
        for (int k = 0; k < n_prefixes && !known; k++) {
            size_t pl = strlen(prefixes[k]);
            known = !strncmp(name, prefixes[k], pl) && param_table_find(t, name + pl);
        }
        if (!known) return vrl_error("%s: unexpected tensor %s (not a parameter of this model)", path, name);
    }
    return 0;
}

/* ------------------------------------------------------------------ model */

int checkpoint_save_model(const char *dir, const ModelConfig *c, const ParamTable *t, DType dtype,
                          const void *params) {
    char path[PATH_MAX];
    if (run_path(path, sizeof path, dir, RUN_MODEL) < 0 || check_run_dtype(dtype) < 0) return -1;
    StFile f;
    st_init(&f);
    int rc = 0;
    for (int i = 0; i < t->n && !rc; i++) {
        const ParamInfo *p = &t->p[i];
        rc = st_add(&f, p->name, dtype, p->ndim, p->shape, (const char *)params + p->offset * dtype_size(dtype));
    }
    /* "format":"pt" is what transformers' from_pretrained looks for. */
    json_t *m = json_pack("{s:s}", "format", "pt");
    if (m && model_record_add(m, c) < 0) json_decref(m), m = NULL; /* every model-defining key */
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (!rc) rc = text ? st_set_metadata(&f, text) : vrl_error("%s: out of memory", path);
    free(text);
    if (!rc) rc = st_write(&f, path);
    st_free(&f);
    return rc;
}

int checkpoint_load_model(const char *run, const ParamTable *t, DType dtype, void *params) {
    char path[PATH_MAX], dir[PATH_MAX];
    if (ckpt_resolve(run, dir, sizeof dir) < 0 || run_path(path, sizeof path, dir, RUN_MODEL) < 0 ||
        check_run_dtype(dtype) < 0)
        return -1;
    StFile f;
    if (st_read(path, &f) < 0) return -1;
    const char *const none[1] = {""};
    int rc = check_no_extra(path, &f, t, none, 1);
    for (int i = 0; i < t->n && !rc; i++) rc = load_one(path, &f, t->p[i].name, &t->p[i], dtype, params);
    st_free(&f);
    return rc;
}

/* ------------------------------------------------------------------ training state */

/* FNV-1a 64 of the file's bytes, read 1 MiB at a time: the model file is as large as the
 * parameters, and reading it whole set vrl train's peak memory (a fourth copy of them). */
static int hash_file(const char *path, uint64_t *h) {
    FILE *f = fopen(path, "rb");
    if (!f) return vrl_error("%s: cannot open: %s", path, strerror(errno));
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK); /* [CHUNK] bytes of the file */
    if (!buf) {
        fclose(f);
        return vrl_error("%s: out of memory for a read buffer", path);
    }
    uint64_t x = FNV1A64_INIT;
    size_t n;
    while ((n = fread(buf, 1, CHUNK, f)) > 0) x = fnv1a64(buf, n, x);
    const int bad = ferror(f);
    free(buf);
    fclose(f);
    if (bad) return vrl_error("%s: read error", path);
    *h = x;
    return 0;
}

static int set_u64(json_t *m, const char *key, uint64_t x) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, x);
    return json_object_set_new(m, key, json_string(buf));
}

/* The state's own checksum: FNV-1a 64 over the moments' bytes in table order
 * (exp_avg then exp_avg_sq of each parameter) and then the metadata without the
 * checksum key, printed with sorted keys. Missing tensors are reported by the load. */
#define STATE_HASH_KEY "state_fnv1a64"
static int state_hash(const char *path, const StFile *f, const ParamTable *t, json_t *meta, uint64_t *h) {
    uint64_t x = FNV1A64_INIT;
    char name[160];
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "%s.%s", k ? "exp_avg_sq" : "exp_avg", t->p[i].name);
            const StTensor *e = st_find(f, name);
            if (e) x = fnv1a64(e->data, e->nbytes, x);
        }
    json_t *copy = json_copy(meta);
    if (copy) json_object_del(copy, STATE_HASH_KEY);
    char *text = copy ? json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(copy);
    if (!text) return vrl_error("%s: out of memory hashing the state", path);
    *h = fnv1a64(text, strlen(text), x);
    free(text);
    return 0;
}

int checkpoint_save_state(const char *dir, const ParamTable *t, DType dtype, const void *m, const void *v,
                          const TrainState *s) {
    char path[PATH_MAX], model[PATH_MAX];
    if (run_path(path, sizeof path, dir, RUN_TRAIN_STATE) < 0 || run_path(model, sizeof model, dir, RUN_MODEL) < 0 ||
        check_run_dtype(dtype) < 0)
        return -1;
    if (s->n_data_pos < 0 || s->n_data_pos > 16) return vrl_error("%s: %d data position words", path, s->n_data_pos);
    if (s->step < 0) return vrl_error("%s: negative step %ld", path, s->step);
    uint64_t mh;
    /* The state pairs with the model file already on disk: save_model comes first. */
    if (hash_file(model, &mh) < 0) return -1;

    json_t *meta = json_object();
    if (!meta) return vrl_error("%s: out of memory", path);
    int rc = json_object_set_new(meta, "format", json_string("pt"));
    rc |= set_u64(meta, "step", (uint64_t)s->step);
    char key[32];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "rng.%d", i);
        rc |= set_u64(meta, key, s->rng.s[i]);
    }
    rc |= set_u64(meta, "n_data_pos", (uint64_t)s->n_data_pos);
    for (int i = 0; i < s->n_data_pos; i++) {
        snprintf(key, sizeof key, "data_pos.%d", i);
        rc |= set_u64(meta, key, s->data_pos[i]);
    }
    rc |= json_object_set_new(meta, "train_args", json_string(s->train_args_json));
    rc |= set_u64(meta, "model_fnv1a64", mh);
    if (rc) {
        json_decref(meta);
        return vrl_error("%s: cannot build metadata (train_args not UTF-8?)", path);
    }

    StFile f;
    st_init(&f);
    char name[160];
    const size_t es = dtype_size(dtype);
    for (int i = 0; i < t->n && !rc; i++) {
        const ParamInfo *p = &t->p[i];
        snprintf(name, sizeof name, "exp_avg.%s", p->name);
        rc = st_add(&f, name, dtype, p->ndim, p->shape, (const char *)m + p->offset * es);
        snprintf(name, sizeof name, "exp_avg_sq.%s", p->name);
        if (!rc) rc = st_add(&f, name, dtype, p->ndim, p->shape, (const char *)v + p->offset * es);
    }
    uint64_t sh;
    if (!rc) rc = state_hash(path, &f, t, meta, &sh);
    if (!rc) rc = set_u64(meta, STATE_HASH_KEY, sh) ? vrl_error("%s: out of memory", path) : 0;
    char *text = rc ? NULL : json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(meta);
    if (!rc) rc = text ? st_set_metadata(&f, text) : vrl_error("%s: out of memory", path);
    free(text);
    if (!rc) rc = st_write(&f, path);
    st_free(&f);
    return rc;
}

/* A metadata value that must be a decimal uint64. */
static int get_u64(const char *path, json_t *meta, const char *key, uint64_t *out) {
    json_t *v = json_object_get(meta, key);
    if (!json_is_string(v)) return vrl_error("%s: metadata %s missing", path, key);
    const char *s = json_string_value(v);
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (!*s || *end || errno || *s == '-') return vrl_error("%s: metadata %s=\"%s\" is not a number", path, key, s);
    *out = x;
    return 0;
}

int checkpoint_load_state(const char *run, const ParamTable *t, DType dtype, void *m, void *v, TrainState *s) {
    char path[PATH_MAX], model[PATH_MAX], dir[PATH_MAX];
    if (ckpt_resolve(run, dir, sizeof dir) < 0 || run_path(path, sizeof path, dir, RUN_TRAIN_STATE) < 0 || run_path(model, sizeof model, dir, RUN_MODEL) < 0 ||
        check_run_dtype(dtype) < 0)
        return -1;
    memset(s, 0, sizeof *s);
    StFile f;
    if (st_read(path, &f) < 0) return -1;
    json_t *meta = NULL;
    int rc = -1;
    if (!f.metadata_json) {
        vrl_error("%s: no __metadata__ (not a vrl training state)", path);
        goto out;
    }
    meta = json_loads(f.metadata_json, 0, NULL);
    uint64_t want, have, x;
    if (!meta) {
        vrl_error("%s: out of memory reading __metadata__", path);
        goto out;
    }
    /* A state written before the checksum existed has none; every newer one must match. */
    if (json_object_get(meta, STATE_HASH_KEY)) {
        uint64_t stored, actual;
        if (get_u64(path, meta, STATE_HASH_KEY, &stored) < 0 || state_hash(path, &f, t, meta, &actual) < 0) goto out;
        if (stored != actual) {
            vrl_error("%s: checksum mismatch (the file is damaged)", path);
            goto out;
        }
    }
    if (get_u64(path, meta, "model_fnv1a64", &want) < 0) goto out;
    if (hash_file(model, &have) < 0) goto out;
    if (want != have) {
        vrl_error("%s: does not belong to %s (interrupted save?)", path, model);
        goto out;
    }
    if (get_u64(path, meta, "step", &x) < 0) goto out;
    if (x > LONG_MAX) {
        vrl_error("%s: metadata step out of range", path);
        goto out;
    }
    s->step = (long)x;
    char key[32];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "rng.%d", i);
        if (get_u64(path, meta, key, &s->rng.s[i]) < 0) goto out;
    }
    if (get_u64(path, meta, "n_data_pos", &x) < 0) goto out;
    if (x > 16) {
        vrl_error("%s: metadata n_data_pos %llu exceeds 16", path, (unsigned long long)x);
        goto out;
    }
    s->n_data_pos = (int)x;
    for (int i = 0; i < s->n_data_pos; i++) {
        snprintf(key, sizeof key, "data_pos.%d", i);
        if (get_u64(path, meta, key, &s->data_pos[i]) < 0) goto out;
    }
    json_t *args = json_object_get(meta, "train_args");
    if (!json_is_string(args)) {
        vrl_error("%s: metadata train_args missing", path);
        goto out;
    }
    if (strlen(json_string_value(args)) >= sizeof s->train_args_json) {
        vrl_error("%s: metadata train_args too long", path);
        goto out;
    }
    snprintf(s->train_args_json, sizeof s->train_args_json, "%s", json_string_value(args));

    const char *const prefixes[2] = {"exp_avg.", "exp_avg_sq."};
    if (check_no_extra(path, &f, t, prefixes, 2) < 0) goto out;
    char name[160];
    for (int i = 0; m && v && i < t->n; i++) { /* m = v = NULL: the metadata alone */
        snprintf(name, sizeof name, "exp_avg.%s", t->p[i].name);
        if (load_one(path, &f, name, &t->p[i], dtype, m) < 0) goto out;
        snprintf(name, sizeof name, "exp_avg_sq.%s", t->p[i].name);
        if (load_one(path, &f, name, &t->p[i], dtype, v) < 0) goto out;
    }
    rc = 0;
out:
    if (rc) memset(s, 0, sizeof *s);
    json_decref(meta);
    st_free(&f);
    return rc;
}

/* The train_args object of RUN's published state, or NULL (no state, a damaged one: the
 * full load reports that). */
static json_t *stored_train_args(const char *run) {
    char dir[PATH_MAX], path[PATH_MAX];
    if (ckpt_resolve(run, dir, sizeof dir) < 0 || run_path(path, sizeof path, dir, RUN_TRAIN_STATE) < 0) return NULL;
    StFile f;
    if (!file_exists(path) || st_read(path, &f) < 0) {
        vrl_clear_error(); /* no state or a damaged one: the resume itself says which */
        return NULL;
    }
    json_t *meta = f.metadata_json ? json_loads(f.metadata_json, 0, NULL) : NULL;
    const char *text = json_string_value(json_object_get(meta, "train_args"));
    json_t *args = text ? json_loads(text, 0, NULL) : NULL;
    json_decref(meta);
    st_free(&f);
    return args;
}

int checkpoint_stored_backend(const char *run, char *name, size_t n) {
    name[0] = '\0';
    json_t *args = stored_train_args(run);
    const char *be = json_string_value(json_object_get(args, "backend"));
    if (be) snprintf(name, n, "%s", be);
    json_decref(args);
    return 0;
}
