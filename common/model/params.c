/* params.c: the named parameter table: appending, finding, checking and initialising tensors.
 * Which tensors a model has is decided in spec.c. */
#include "common/model/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/hash.h"
#include "common/base/rng.h"

/* The slot of `name` in t->by_name: where it is, or the empty slot where it would go. */
static int name_slot(const ParamTable *t, const char *name) {
    const unsigned mask = (unsigned)t->name_cap - 1;
    unsigned i = (unsigned)fnv1a64(name, strlen(name), FNV1A64_INIT) & mask;
    while (t->by_name[i] && strcmp(t->p[t->by_name[i] - 1].name, name)) i = (i + 1) & mask;
    return (int)i;
}

/* Keep the name index at most half full (a deep model has thousands of tensors, and a linear
 * search per add made building its table quadratic). */
static int index_names(ParamTable *t) {
    if (2 * (t->n + 1) <= t->name_cap) return 0;
    int cap = t->name_cap ? 2 * t->name_cap : 128;
    int *idx = calloc((size_t)cap, sizeof *idx);
    if (!idx) return vrl_error("out of memory building the parameter table");
    free(t->by_name);
    t->by_name = idx;
    t->name_cap = cap;
    for (int k = 0; k < t->n; k++) t->by_name[name_slot(t, t->p[k].name)] = k + 1;
    return 0;
}

int param_table_add(ParamTable *t, const char *name, int ndim, const int64_t *shape, int decay, InitKind init,
                    double init_value) {
    if (ndim < 1 || ndim > PARAM_MAX_DIM) return vrl_error("parameter %s: %d dimensions", name, ndim);
    if (strlen(name) >= PARAM_NAME_LEN) return vrl_error("parameter name too long: %s", name);
    if (index_names(t) < 0) return -1;
    const int slot = name_slot(t, name);
    if (t->by_name[slot]) return vrl_error("parameter %s defined twice", name);
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        ParamInfo *p = realloc(t->p, (size_t)cap * sizeof *p);
        if (!p) return vrl_error("out of memory building the parameter table");
        t->p = p;
        t->cap = cap;
    }
    /* every product and sum checked: a crafted config must not wrap the table's size */
    size_t numel = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || __builtin_mul_overflow(numel, (size_t)shape[i], &numel) || numel > PARAM_MAX_TOTAL)
            return vrl_error("parameter %s: more than %llu elements", name, (unsigned long long)PARAM_MAX_TOTAL);
    if (t->total + param_padded(numel) > PARAM_MAX_TOTAL)
        return vrl_error("model: more than %llu parameters (at %s)", (unsigned long long)PARAM_MAX_TOTAL, name);
    t->by_name[slot] = t->n + 1;
    ParamInfo *p = &t->p[t->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->numel = numel;
    for (int i = 0; i < ndim; i++) p->shape[i] = shape[i];
    p->offset = t->total; /* a multiple of PARAM_ALIGN: every tensor before took a padded slot */
    p->decay = decay;
    p->init = init;
    p->init_value = init_value;
    p->slot = param_padded(p->numel);
    t->total += p->slot;
    t->count += p->numel;
    return 0;
}

int param_table_pad_rows(ParamTable *t, int64_t rows) {
    ParamInfo *p = &t->p[t->n - 1];
    if (p->ndim != 2 || rows < p->shape[0])
        return vrl_error("parameter %s: cannot pad to %lld rows", p->name, (long long)rows);
    const size_t slot = param_padded((size_t)rows * (size_t)p->shape[1]);
    if (t->total - p->slot + slot > PARAM_MAX_TOTAL)
        return vrl_error("model: more than %llu parameters (at %s)", (unsigned long long)PARAM_MAX_TOTAL, p->name);
    t->total += slot - p->slot;
    p->slot = slot;
    return 0;
}

int param_table_add_values(ParamTable *t, const char *name, int ndim, const int64_t *shape, const double *values) {
    if (param_table_add(t, name, ndim, shape, 0, INIT_VALUES, 0) < 0) return -1;
    ParamInfo *p = &t->p[t->n - 1];
    p->init_values = malloc(p->numel * sizeof *p->init_values);
    if (!p->init_values) return vrl_error("out of memory building the parameter table");
    memcpy(p->init_values, values, p->numel * sizeof *values);
    return 0;
}

void param_table_free(ParamTable *t) {
    for (int i = 0; i < t->n; i++) free(t->p[i].init_values);
    free(t->p);
    free(t->by_name);
    memset(t, 0, sizeof *t);
}

const ParamInfo *param_table_find(const ParamTable *t, const char *name) {
    if (!t->name_cap) return NULL;
    const int k = t->by_name[name_slot(t, name)];
    return k ? &t->p[k - 1] : NULL;
}

int param_table_expect(const ParamTable *t, const char *name, size_t numel, size_t *offset) {
    const ParamInfo *p = param_table_find(t, name);
    if (!p) return vrl_error("model: parameter %s is not in the table", name);
    if (p->numel != numel)
        return vrl_error("model: parameter %s has %zu elements, the config needs %zu", name, p->numel, numel);
    *offset = p->offset;
    return 0;
}

/* The draw of params_init_f64, stored as double into d or rounded to float into f (exactly
 * one of them non-NULL): each value is produced in double either way. */
static void params_init_into(const ParamTable *t, uint64_t seed, double *d, float *f) {
#define PUT(j, v) (d ? (void)(x[j] = (v)) : (void)(y[j] = (float)(v)))
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        double *x = d ? d + p->offset : NULL;
        float *y = f ? f + p->offset : NULL;
        for (size_t j = p->numel; j < p->slot; j++) PUT(j, 0.0); /* the gap */
        if (p->init == INIT_CONST) {
            for (size_t j = 0; j < p->numel; j++) PUT(j, p->init_value);
        } else if (p->init == INIT_EYE || p->init == INIT_ONEHOT) {
            const size_t n = (size_t)p->shape[0];
            for (size_t j = 0; j < p->numel; j++)
                PUT(j, (p->init == INIT_EYE ? j % (n + 1) == 0 : j == p->init_index) ? p->init_value : 0.0);
        } else if (p->init == INIT_VALUES) {
            for (size_t j = 0; j < p->numel; j++) PUT(j, p->init_values[j]);
        } else {
            /* The stream is keyed by the tensor's name, not its position in the table. */
            Rng r;
            rng_seed_stream(&r, seed, fnv1a64(p->name, strlen(p->name), FNV1A64_INIT));
            for (size_t j = 0; j < p->numel; j++) PUT(j, p->init_value * rng_normal(&r));
        }
    }
#undef PUT
}

void params_init_f64(const ParamTable *t, uint64_t seed, double *out) { params_init_into(t, seed, out, NULL); }

void params_init_f32(const ParamTable *t, uint64_t seed, float *out) { params_init_into(t, seed, NULL, out); }
