/* value_path.c: turning a value-family variant (formulas.md §4) into a ValuePlan.
 *
 * Each variant is a few lines filling the tables of value_path.h from its options; the
 * projections that exist follow from the tables (a raw Q_i/K_i/V_i nobody reads has no
 * weight). Layer numbers in option strings are 1-based (layer n), as in the paper; the
 * tables are 0-based (l = n - 1). docs/variants.md gives every formula and its source. */
#include "common/model/value_path.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/variant.h"

#define AT(tab, l, i) ((tab)[(size_t)(l) * p->L + (i)])

void value_plan_lambda_name(int l, char *out, size_t n) {
    snprintf(out, n, "model.layers.%d.self_attn.v_residual_lambda", l);
}

void value_plan_free(ValuePlan *p) {
    free(p->has_q);
    free(p->cq);
    free(p->hx);
    free(p->cross);
    memset(p, 0, sizeof *p);
}

/* One allocation per element type: ints [4L + L²], tables [5L²], doubles [2L]. */
static int plan_alloc(ValuePlan *p, int L) {
    memset(p, 0, sizeof *p);
    p->L = L;
    const size_t LL = (size_t)L * L;
    p->has_q = calloc(3 * (size_t)L, sizeof(int));
    p->cq = calloc(5 * LL, sizeof(double));
    p->hx = calloc(2 * (size_t)L, sizeof(double));
    p->cross = calloc(2 * (size_t)L + LL, sizeof(int));
    if (!p->has_q || !p->cq || !p->hx || !p->cross) {
        value_plan_free(p);
        return vrl_error("out of memory for the value-path plan");
    }
    p->has_k = p->has_q + L;
    p->has_v = p->has_q + 2 * L;
    p->ck = p->cq + LL;
    p->cv = p->cq + 2 * LL;
    p->ce = p->cq + 3 * LL;
    p->ca = p->cq + 4 * LL;
    p->hh = p->hx + L;
    p->n_train = p->cross + L;
    p->train_src = p->cross + 2 * L;
    /* the baseline: every layer reads its own Q, K, V and A, no corrections */
    for (int l = 0; l < L; l++) {
        AT(p->cq, l, l) = AT(p->ck, l, l) = AT(p->cv, l, l) = AT(p->ca, l, l) = 1;
        p->hx[l] = 1;
        p->cross[l] = -1;
    }
    snprintf(p->name, sizeof p->name, "baseline");
    return 0;
}

int value_plan_read_later(const ValuePlan *p, const double *tab, int i) {
    for (int n = i + 1; n < p->L; n++)
        if (AT(tab, n, i) != 0) return 1;
    return 0;
}

/* ------------------------------------------------------------------ option helpers */

/* "0.3,0.7,1.5" -> exactly `want` numbers. */
static int parse_list(const char *origin, const char *part, const char *key, const char *s, double *out, int want) {
    int n = 0;
    const char *q = s;
    while (*q) {
        char *end;
        errno = 0;
        double v = strtod(q, &end);
        if (errno || end == q || (*end && *end != ',') || !isfinite(v))
            return vrl_error("%s: variant %s: %s=\"%s\" is not a list of numbers", origin, part, key, s);
        if (n < want) out[n] = v;
        n++;
        q = *end ? end + 1 : end;
    }
    if (n != want)
        return vrl_error("%s: variant %s: %s has %d values, the model needs %d (one per layer 2..L)", origin, part,
                         key, n, want);
    return 0;
}

/* "3-4", "6,7,8" or "1,3" (1-based, each in [lo, L]) -> set[l] = 1 for l = n - 1. */
static int parse_layers(const char *origin, const char *part, const char *key, const char *s, int lo, int L,
                        int *set) {
    const char *q = s;
    if (!*q) return vrl_error("%s: variant %s: %s is empty", origin, part, key);
    while (*q) {
        char *end;
        long a = strtol(q, &end, 10), b = a;
        if (end == q) return vrl_error("%s: variant %s: %s=\"%s\" is not a layer list like 3-4 or 1,3", origin, part, key, s);
        if (*end == '-') {
            const char *r = end + 1;
            b = strtol(r, &end, 10);
            if (end == r || b < a)
                return vrl_error("%s: variant %s: %s=\"%s\" is not a layer list like 3-4 or 1,3", origin, part, key, s);
        }
        if (*end && *end != ',')
            return vrl_error("%s: variant %s: %s=\"%s\" is not a layer list like 3-4 or 1,3", origin, part, key, s);
        if (a < lo || b > L)
            return vrl_error("%s: variant %s: %s=\"%s\" names layers outside %d..%d of this %d-layer model", origin,
                             part, key, s, lo, L, L);
        for (long n = a; n <= b; n++) set[n - 1] = 1;
        q = *end ? end + 1 : end;
    }
    return 0;
}

/* Add `w` of the residual source of layer l to table row l: V_1 (source=1), V_{n-1} (prev),
 * the mean of V_1..V_{n-1} (mean) or V_k (k). Returns 0 where the source does not apply
 * (layer n <= k for source=k): that layer stays plain. */
typedef struct {
    int kind; /* 0: layer k (k = 1 is the paper's V_1), 1: prev, 2: mean */
    int k;    /* 0-based source layer for kind 0 */
} Source;

static int add_source(ValuePlan *p, double *tab, const Source *s, int l, double w) {
    if (s->kind == 1) AT(tab, l, l - 1) += w;
    else if (s->kind == 2)
        for (int i = 0; i < l; i++) AT(tab, l, i) += w / l;
    else if (s->k < l) AT(tab, l, s->k) += w;
    else return 0;
    return 1;
}

/* ------------------------------------------------------------------ the variants */

static int plan_resformer(ValuePlan *p, VariantPart *v, const char *o) {
    const int L = p->L;
    const char *mode = "identity", *src = "1";
    variant_opt_str(v, "mode", &mode);
    int have_src = variant_opt_str(v, "source", &src);
    Source s = {0, 0};
    if (!strcmp(src, "prev")) s.kind = 1;
    else if (!strcmp(src, "mean")) s.kind = 2;
    else {
        char *end;
        long k = strtol(src, &end, 10);
        if (end == src || *end || k < 1 || k > L)
            return vrl_error("%s: variant resformer: source=\"%s\" is not prev, mean or a layer 1..%d", o, src, L);
        s.k = (int)k - 1;
    }
    const int trainable = !strcmp(mode, "learnable") || !strcmp(mode, "learnable-plus") || !strcmp(mode, "dense");
    if (trainable && have_src && !(s.kind == 0 && s.k == 0))
        return vrl_error("%s: variant resformer: source=%s needs a fixed mode (identity, general, constant, sparse), "
                         "not mode=%s", o, src, mode);
    double *l1 = NULL, *l2 = NULL;
    int *on = calloc((size_t)L, sizeof *on), rc = 0;
    if (!on) return vrl_error("out of memory");
    for (int l = 1; l < L; l++) on[l] = 1;

    /* (a, b) per layer: V'_n = a·source + b·V_n on the layers that are on */
    double a = 0.5, b = 0.5;
    if (!strcmp(mode, "identity")) {
        /* [C] value = 0.5·V_1 + 0.5·V_n */
    } else if (!strcmp(mode, "general")) {
        const char *s1 = NULL, *s2 = NULL;
        l1 = malloc((size_t)L * sizeof *l1);
        l2 = malloc((size_t)L * sizeof *l2);
        if (!l1 || !l2) rc = vrl_error("out of memory");
        else if (variant_opt_str(v, "lambda1", &s1) != 1 || variant_opt_str(v, "lambda2", &s2) != 1)
            rc = vrl_error("%s: variant resformer: mode=general needs lambda1=... and lambda2=... (one value per "
                           "layer 2..%d)", o, L);
        else if (parse_list(o, "resformer", "lambda1", s1, l1, L - 1) || parse_list(o, "resformer", "lambda2", s2, l2, L - 1))
            rc = -1;
    } else if (!strcmp(mode, "constant") || !strcmp(mode, "sparse")) {
        /* [P] λ_{n,1} = λ, λ_{n,2} = 1; sparse on the chosen layers only */
        a = !strcmp(mode, "constant") ? 2.0 : 5.0;
        b = 1.0;
        if (variant_opt_double(v, "lambda", &a, o) < 0) rc = -1;
        if (!rc && !strcmp(mode, "sparse")) {
            const char *ls = NULL;
            if (variant_opt_str(v, "layers", &ls) != 1)
                rc = vrl_error("%s: variant resformer: mode=sparse needs layers=... (e.g. layers=6-8)", o);
            else {
                memset(on, 0, (size_t)L * sizeof *on);
                rc = parse_layers(o, "resformer", "layers", ls, 2, L, on);
            }
        }
    } else if (!strcmp(mode, "learnable") || !strcmp(mode, "dense")) {
        /* [A] init as identity ResFormer; dense also carries λ_{n,i}, 1 < i < n, at 0 */
        for (int l = 1; l < L; l++) {
            const int dense = !strcmp(mode, "dense");
            p->n_train[l] = dense ? l + 1 : 2;
            for (int j = 0; j < p->n_train[l]; j++) AT(p->train_src, l, j) = dense ? j : (j ? l : 0);
        }
    } else if (!strcmp(mode, "learnable-plus")) {
        /* [A] trainable like learnable; V_1's initial weight grows linearly with depth from
         * lambda1_first (n = 2) to lambda1_last (n = L); V_n's starts at lambda2. */
        double first = 0.5, last = 2.0, own = 0.5;
        if (variant_opt_double(v, "lambda1_first", &first, o) < 0 || variant_opt_double(v, "lambda1_last", &last, o) < 0 ||
            variant_opt_double(v, "lambda2", &own, o) < 0)
            rc = -1;
        for (int l = 1; l < L && !rc; l++) {
            p->n_train[l] = 2;
            AT(p->train_src, l, 0) = 0;
            AT(p->train_src, l, 1) = l;
            AT(p->cv, l, l) = own;
            AT(p->cv, l, 0) = L > 2 ? first + (last - first) * (l - 1) / (L - 2) : first;
        }
    } else {
        rc = vrl_error("%s: variant resformer: unknown mode \"%s\" (identity, general, constant, sparse, learnable, "
                       "learnable-plus, dense)", o, mode);
    }
    if (!rc && strcmp(mode, "learnable-plus")) {
        for (int l = 1; l < L; l++) {
            if (!on[l]) continue;
            if (l1) a = l1[l - 1], b = l2[l - 1];
            double own = AT(p->cv, l, l);
            AT(p->cv, l, l) = 0;
            if (add_source(p, p->cv, &s, l, a)) AT(p->cv, l, l) += b;
            else AT(p->cv, l, l) = own; /* source=k at n <= k: plain */
        }
    }
    free(on);
    free(l1);
    free(l2);
    return rc;
}

static int plan_svformer(ValuePlan *p, VariantPart *v, const char *o) {
    const char *as = "1";
    int *anchor = calloc((size_t)p->L, sizeof *anchor), rc = 0;
    if (!anchor) return vrl_error("out of memory");
    variant_opt_str(v, "anchors", &as);
    if (parse_layers(o, "svformer", "anchors", as, 1, p->L, anchor)) rc = -1;
    else if (!anchor[0]) rc = vrl_error("%s: variant svformer: anchors=\"%s\" must include layer 1 (it stores V_1)", o, as);
    /* [C] layer n reads V_1; [A] with anchors, the V of the nearest anchor <= n */
    for (int l = 1, a = 0; l < p->L && !rc; l++) {
        if (anchor[l]) a = l;
        AT(p->cv, l, l) = 0;
        AT(p->cv, l, a) = 1;
    }
    free(anchor);
    return rc;
}

static int plan_neutreno(ValuePlan *p, VariantPart *v, const char *o, int with_resformer) {
    double lam = with_resformer ? 0.2 : 0.4; /* [C] the authors' two models */
    if (variant_opt_double(v, "lambda", &lam, o) < 0) return -1;
    for (int l = 1; l < p->L; l++) {
        /* V' = w·V_1 + (1 − w)·V_n;  U = A·V' + λ·(V_1 − V') = A·V' + λ(1 − w)·(V_1 − V_n) */
        const double w = with_resformer ? 0.5 : 0.0;
        AT(p->cv, l, 0) += w;
        AT(p->cv, l, l) -= w;
        AT(p->ce, l, 0) += lam * (1 - w);
        AT(p->ce, l, l) -= lam * (1 - w);
    }
    return 0;
}

static int plan_simple(ValuePlan *p, VariantPart *v, const char *o) {
    const char *nm = v->name;
    for (int l = 1; l < p->L; l++) {
        if (!strcmp(nm, "cla")) {
            /* [P] layers share K and V in pairs: layer 2k reuses layer 2k−1's (0-based: odd l) */
            if (l % 2 == 1) {
                AT(p->ck, l, l) = AT(p->cv, l, l) = 0;
                AT(p->ck, l, l - 1) = AT(p->cv, l, l - 1) = 1;
            }
        } else if (!strcmp(nm, "query_residual") || !strcmp(nm, "key_residual") || !strcmp(nm, "attn_residual")) {
            double *tab = nm[0] == 'q' ? p->cq : nm[0] == 'k' ? p->ck : p->ca;
            AT(tab, l, 0) = AT(tab, l, l) = 0.5;
        } else if (!strcmp(nm, "shared_q") || !strcmp(nm, "shared_k")) {
            double *tab = nm[7] == 'q' ? p->cq : p->ck;
            AT(tab, l, l) = 0;
            AT(tab, l, 0) = 1;
        } else if (!strcmp(nm, "hidden_residual")) {
            p->hx[l] = p->hh[l] = 0.5;
        } else if (!strcmp(nm, "identity_mapping")) {
            /* Eq. 6: U_n = A_n V_n + (1/(n−1))·Σ_{i<n} V_i */
            for (int i = 0; i < l; i++) AT(p->ce, l, i) = 1.0 / l;
        } else {
            return vrl_error("%s: variant %s has no value-path plan", o, nm); /* the table and this function disagree */
        }
    }
    return 0;
}

static int plan_neutreno_plain(ValuePlan *p, VariantPart *v, const char *o) { return plan_neutreno(p, v, o, 0); }
static int plan_neutreno_resformer(ValuePlan *p, VariantPart *v, const char *o) { return plan_neutreno(p, v, o, 1); }

static int plan_cross_layer(ValuePlan *p, VariantPart *v, const char *o) {
    const char *m = "1";
    variant_opt_str(v, "m", &m);
    if (strcmp(m, "1") && strcmp(m, "prev"))
        return vrl_error("%s: variant cross_layer: m=\"%s\" is not 1 or prev", o, m);
    for (int l = 1; l < p->L; l++) p->cross[l] = !strcmp(m, "1") ? 0 : l - 1;
    return 0;
}

/* The projections that exist: a raw output some layer reads (a trainable entry counts as read). */
static void derive_projections(ValuePlan *p) {
    for (int i = 0; i < p->L; i++) {
        int q = 0, k = 0, vv = 0;
        for (int n = i; n < p->L; n++) {
            q |= AT(p->cq, n, i) != 0;
            k |= AT(p->ck, n, i) != 0;
            vv |= AT(p->cv, n, i) != 0 || AT(p->ce, n, i) != 0 || p->cross[n] == i;
            for (int j = 0; j < p->n_train[n]; j++) vv |= AT(p->train_src, n, j) == i;
        }
        p->has_q[i] = q;
        p->has_k[i] = k;
        p->has_v[i] = vv;
    }
}

/* ------------------------------------------------------------------ the table of variants */

/* Each value-path variant: its name and summary (variant.h's registry) and the function that
 * fills the baseline's tables for it. A new variant is one row and one function here. */
typedef struct {
    VariantInfo info;
    int (*plan)(ValuePlan *p, VariantPart *v, const char *origin);
} ValueVariant;

static const ValueVariant value_variants[] = {
    {{"resformer", FAMILY_VALUE, "V_1 residual: identity, general, constant, sparse, learnable, learnable-plus, dense; "
                                 "V source ablations"}, plan_resformer},
    {{"svformer", FAMILY_VALUE, "layers >= 2 reuse V_1 (optionally refreshed at anchor layers) and carry no W^V"},
     plan_svformer},
    {{"neutreno", FAMILY_VALUE, "U_n = A_n V_n + lambda (V_1 - V_n)"}, plan_neutreno_plain},
    {{"neutreno_resformer", FAMILY_VALUE, "NeuTRENO on top of identity ResFormer"}, plan_neutreno_resformer},
    {{"cla", FAMILY_VALUE, "cross-layer attention: layer 2k reuses layer 2k-1's K and V"}, plan_simple},
    {{"query_residual", FAMILY_VALUE, "ablation: 0.5 Q_1 + 0.5 Q_n"}, plan_simple},
    {{"key_residual", FAMILY_VALUE, "ablation: 0.5 K_1 + 0.5 K_n"}, plan_simple},
    {{"attn_residual", FAMILY_VALUE, "ablation: 0.5 A_1 + 0.5 A_n"}, plan_simple},
    {{"hidden_residual", FAMILY_VALUE, "ablation: attention input RMSNorm(0.5 x_{n-1} + 0.5 H_0)"}, plan_simple},
    {{"shared_q", FAMILY_VALUE, "ablation: every layer uses layer 1's Q"}, plan_simple},
    {{"shared_k", FAMILY_VALUE, "ablation: every layer uses layer 1's K"}, plan_simple},
    {{"cross_layer", FAMILY_VALUE, "Eq. 2: attend over [K_n; K_m], [V_n; V_m], m = 1 or n-1"}, plan_cross_layer},
    {{"identity_mapping", FAMILY_VALUE, "Eq. 6: U_n = A_n V_n + mean of earlier V_i"}, plan_simple},
};
#define N_VALUE_VARIANTS (int)(sizeof value_variants / sizeof value_variants[0])

const VariantInfo *value_variant_info(int i) { return i >= 0 && i < N_VALUE_VARIANTS ? &value_variants[i].info : NULL; }

int value_plan_build(VariantPart *v, const ModelConfig *c, ValuePlan *p, const char *origin) {
    if (plan_alloc(p, c->n_layers) < 0) return -1;
    int rc = 0;
    if (v) {
        const ValueVariant *row = NULL;
        for (int i = 0; i < N_VALUE_VARIANTS && !row; i++)
            if (!strcmp(value_variants[i].info.name, v->name)) row = &value_variants[i];
        snprintf(p->name, sizeof p->name, "%s", v->name);
        if (!row) rc = vrl_error("%s: variant %s has no value-path plan", origin, v->name);
        else if (c->arch != ARCH_LLAMA)
            rc = vrl_error("%s: variant %s: value-path variants are implemented for the llama architecture only",
                           origin, v->name);
        else rc = row->plan(p, v, origin);
        /* only this part's options: the residual-stream part is checked by its own code */
        for (int j = 0; !rc && j < v->n_opts; j++)
            if (!v->opts[j].used)
                rc = vrl_error("%s: variant %s has no option \"%s\"%s", origin, v->name, v->opts[j].key,
                               !strcmp(v->name, "resformer") ? " for this mode" : "");
    }
    if (!rc) derive_projections(p);
    /* Eq. 2 rows are [T, 2T] wide; a mix of attention matrices needs every row [T, T] */
    for (int l = 0; l < p->L && !rc; l++)
        for (int i = 0; i < l && !rc; i++)
            if (p->cross[l] >= 0 && AT(p->ca, l, i) != 0)
                rc = vrl_error("%s: variant \"%s\": Eq. 2 layers cannot mix attention matrices", origin, c->variant);
    if (rc) value_plan_free(p);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ parameters */

int value_plan_add_params(const ValuePlan *p, const ModelConfig *c, int l, ParamTable *t, LayerLayout *out) {
    const int64_t d = c->d_model, hd = config_head_dim(c);
    const int64_t q_dim = (int64_t)c->n_heads * hd, kv_dim = (int64_t)c->n_kv_heads * hd;
    char name[PARAM_NAME_LEN];
    int64_t shape[2];
#define LINEAR(slot, suffix, rows, cols)                                                                              \
    (snprintf(name, sizeof name, "model.layers.%d.self_attn." suffix, l), shape[0] = (rows), shape[1] = (cols),       \
     rc = rc ? rc : param_table_add(t, name, 2, shape, 1, INIT_NORMAL, c->init_std),                                  \
     out->slot = rc ? out->slot : param_table_last_slot(t))
    int rc = 0;
    /* projections nobody reads do not exist (SVFormer, CLA, shared Q/K) */
    if (p->has_q[l]) LINEAR(wq, "q_proj.weight", q_dim, d);
    if (p->has_k[l]) LINEAR(wk, "k_proj.weight", kv_dim, d);
    if (p->has_v[l]) LINEAR(wv, "v_proj.weight", kv_dim, d);
    LINEAR(wo, "o_proj.weight", d, q_dim);
#undef LINEAR
    if (!rc && p->n_train[l]) { /* trainable value coefficients, starting at the plan's values */
        double *init = malloc((size_t)p->n_train[l] * sizeof *init);
        if (!init) return vrl_error("out of memory building the parameter table");
        for (int j = 0; j < p->n_train[l]; j++) init[j] = AT(p->cv, l, AT(p->train_src, l, j));
        shape[0] = p->n_train[l];
        value_plan_lambda_name(l, name, sizeof name);
        rc = param_table_add_values(t, name, 1, shape, init);
        if (!rc) out->lam = param_table_last_slot(t);
        free(init);
    }
    return rc ? -1 : 0;
}
