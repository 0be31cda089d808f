/* stream.c: residual-stream variant strings → depth-mixing plans and their parameters
 * (stream.h; formulas in docs/variants.md, arithmetic in ref/stream.c). */
#include "common/model/stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/variant.h"

const char *stream_kind_name(StreamKind k) {
    static const char *names[] = {"plain", "denseformer", "attnres", "hc", "mhc"};
    return names[k];
}

void stream_plan_free(StreamPlan *p) {
    free(p->dwa_n);
    free(p->dwa_src);
    free(p->n_src);
    free(p->src);
    memset(p, 0, sizeof *p);
}

/* An integer option with a default and a lower bound. */
static int opt_int(VariantPart *vp, const char *key, int *v, int lo, const char *origin) {
    if (variant_opt_int(vp, key, v, origin) < 0) return -1;
    if (*v < lo) return vrl_error("%s: variant %s: %s=%d must be >= %d", origin, vp->name, key, *v, lo);
    return 0;
}

/* Only this part's options: the value-path part is checked by its own code. */
static int check_used(const VariantPart *vp, const char *origin) {
    for (int j = 0; j < vp->n_opts; j++)
        if (!vp->opts[j].used) return vrl_error("%s: variant %s has no option \"%s\"", origin, vp->name, vp->opts[j].key);
    return 0;
}

static int plan_denseformer(StreamPlan *p, VariantPart *vp, const char *origin) {
    p->dilation = p->period = 1;
    if (opt_int(vp, "dilation", &p->dilation, 1, origin) < 0 || opt_int(vp, "period", &p->period, 1, origin) < 0)
        return -1;
    const int L = p->L;
    p->dwa_n = calloc((size_t)L, sizeof *p->dwa_n);
    p->dwa_src = calloc((size_t)L * (L + 1), sizeof *p->dwa_src);
    if (!p->dwa_n || !p->dwa_src) return vrl_error("out of memory");
    /* A DWA after every period-th block and always after the last one; block j's DWA
     * mixes X_i for i ≤ j with (j − i) mod dilation = 0 (golden README's reading). */
    for (int j = 1; j <= L; j++) {
        if (j % p->period && j != L) continue;
        int *src = p->dwa_src + (size_t)(j - 1) * (L + 1), n = 0;
        for (int i = 0; i <= j; i++)
            if ((j - i) % p->dilation == 0) src[n++] = i;
        p->dwa_n[j - 1] = n;
    }
    return 0;
}

static int plan_attnres(StreamPlan *p, VariantPart *vp, const char *origin) {
    const char *mode = "full";
    variant_opt_str(vp, "mode", &mode);
    int full = !strcmp(mode, "full");
    if (!full && strcmp(mode, "block")) return vrl_error("%s: variant attnres: mode=%s is not full or block", origin, mode);
    p->block = 2;
    if (opt_int(vp, "size", &p->block, 1, origin) < 0) return -1;
    if (full && variant_opt_str(vp, "size", &mode))
        return vrl_error("%s: variant attnres: size= only applies to mode=block", origin);
    if (full) p->block = 0;
    const int S = 2 * p->L + 1;
    p->n_src = calloc((size_t)S, sizeof *p->n_src);
    p->src = calloc((size_t)S * S, sizeof *p->src);
    if (!p->n_src || !p->src) return vrl_error("out of memory");
    for (int s = 0; s < S; s++) {
        /* step s reads y_0 .. y_s (1-based sublayer outputs y_1..y_s are done) */
        StreamRange *r = p->src + (size_t)s * S;
        int n = 0;
        r[n++] = (StreamRange){0, 1}; /* the embedding is its own block */
        if (full) {
            for (int k = 1; k <= s; k++) r[n++] = (StreamRange){k, k + 1};
        } else {
            /* finished blocks of m sublayers, then the partial sum of the current one */
            const int m = p->block, done = s / m;
            for (int b = 0; b < done; b++) r[n++] = (StreamRange){1 + b * m, 1 + (b + 1) * m};
            if (1 + done * m <= s) r[n++] = (StreamRange){1 + done * m, s + 1};
        }
        p->n_src[s] = n;
    }
    return 0;
}

static int plan_hc(StreamPlan *p, VariantPart *vp, const char *origin) {
    const int mhc = p->kind == STREAM_MHC;
    p->n_streams = 4;
    p->iters = 20;
    /* mHC's b_pre = −ln(n−1) (σ = 1/n) needs n ≥ 2; HC with n = 1 is the baseline. */
    int rc = opt_int(vp, "n", &p->n_streams, mhc ? 2 : 1, origin);
    if (!rc && p->n_streams > 16) rc = vrl_error("%s: variant %s: n=%d streams (at most 16)", origin, vp->name, p->n_streams);
    if (!rc && mhc) rc = opt_int(vp, "iters", &p->iters, 1, origin);
    return rc;
}

/* ------------------------------------------------------------------ the table of variants */

/* Each residual-stream variant: its name and summary (variant.h's registry), the plan kind
 * ref/stream.c executes, and the function that fills the plan from the options. */
typedef struct {
    VariantInfo info;
    StreamKind kind;
    int (*plan)(StreamPlan *p, VariantPart *vp, const char *origin);
} StreamVariant;

static const StreamVariant stream_variants[] = {
    {{"denseformer", FAMILY_STREAM, "depth-weighted averages of block outputs (dilation, period)"}, STREAM_DENSEFORMER,
     plan_denseformer},
    {{"attnres", FAMILY_STREAM, "Attention Residuals, full or block: softmax over earlier sublayer outputs"},
     STREAM_ATTNRES, plan_attnres},
    {{"hc", FAMILY_STREAM, "Hyper-Connections: n streams, static and dynamic maps"}, STREAM_HC, plan_hc},
    {{"mhc", FAMILY_STREAM, "manifold-constrained HC: sigmoid maps, Sinkhorn-Knopp residual map"}, STREAM_MHC, plan_hc},
};
#define N_STREAM_VARIANTS (int)(sizeof stream_variants / sizeof stream_variants[0])

const VariantInfo *stream_variant_info(int i) {
    return i >= 0 && i < N_STREAM_VARIANTS ? &stream_variants[i].info : NULL;
}

int stream_plan_build(VariantPart *vp, const ModelConfig *c, StreamPlan *p, const char *origin) {
    memset(p, 0, sizeof *p);
    p->L = c->n_layers;
    if (!vp) return 0;
    const StreamVariant *row = NULL;
    for (int i = 0; i < N_STREAM_VARIANTS && !row; i++)
        if (!strcmp(stream_variants[i].info.name, vp->name)) row = &stream_variants[i];
    if (!row) return vrl_error("%s: residual-stream variant %s has no plan", origin, vp->name);
    p->kind = row->kind;
    int rc = row->plan(p, vp, origin);
    if (!rc) rc = check_used(vp, origin);
    if (rc) stream_plan_free(p);
    return rc;
}

/* ------------------------------------------------------------------ parameters */

/* Append one mixing tensor (no decay) and record its slot. */
static int add(ParamTable *t, TensorSlot *slot, const char *name, int ndim, int64_t a, int64_t b, InitKind init, double v) {
    int64_t shape[2] = {a, b};
    if (param_table_add(t, name, ndim, shape, 0, init, v) < 0) return -1;
    *slot = param_table_last_slot(t);
    return 0;
}

static int add_onehot(ParamTable *t, TensorSlot *slot, const char *name, int64_t n, size_t at, double v) {
    if (add(t, slot, name, 1, n, 0, INIT_ONEHOT, v) < 0) return -1;
    t->p[t->n - 1].init_index = at;
    return 0;
}

void stream_layout_free(StreamLayout *l) {
    free(l->at);
    memset(l, 0, sizeof *l);
}

int stream_add_params(const StreamPlan *p, const ModelConfig *c, ParamTable *t, StreamLayout *out) {
    const int64_t d = c->d_model, n = p->n_streams;
    char name[PARAM_NAME_LEN];
    out->steps = 2 * p->L + 1;
    out->at = calloc((size_t)out->steps, sizeof *out->at);
    if (!out->at) return vrl_error("out of memory building the parameter table");
    int rc = 0;
    switch (p->kind) {
    case STREAM_PLAIN: break;
    case STREAM_DENSEFORMER:
        for (int j = 0; j < p->L && !rc; j++) {
            if (!p->dwa_n[j]) continue;
            snprintf(name, sizeof name, "model.dwa.%d.alpha", j);
            rc = add_onehot(t, &out->at[j][0], name, p->dwa_n[j], (size_t)p->dwa_n[j] - 1, 1.0); /* identity: 1 on X_{j+1} */
        }
        break;
    case STREAM_ATTNRES:
        for (int i = 0; i < p->L && !rc; i++) {
            snprintf(name, sizeof name, "model.layers.%d.attn_res_query", i);
            rc |= add(t, &out->at[2 * i][0], name, 1, d, 0, INIT_CONST, 0.0);
            snprintf(name, sizeof name, "model.layers.%d.mlp_res_query", i);
            rc |= add(t, &out->at[2 * i + 1][0], name, 1, d, 0, INIT_CONST, 0.0);
        }
        if (!rc) rc = add(t, &out->at[2 * p->L][0], "model.final_res_query", 1, d, 0, INIT_CONST, 0.0);
        break;
    case STREAM_HC:
        for (int s = 0; s < 2 * p->L && !rc; s++) {
            const char *sub = s % 2 ? "hc_mlp" : "hc_attn";
#define NAME(x) (snprintf(name, sizeof name, "model.layers.%d.%s." x, s / 2, sub), name)
            rc |= add_onehot(t, &out->at[s][HC_AM], NAME("alpha_m"), n, (size_t)(s % n), 1.0); /* 0-based sublayer index mod n */
            rc |= add(t, &out->at[s][HC_AR], NAME("alpha_r"), 2, n, n, INIT_EYE, 1.0);
            rc |= add(t, &out->at[s][HC_B], NAME("beta"), 1, n, 0, INIT_CONST, 1.0);
            rc |= add(t, &out->at[s][HC_WM], NAME("dyn_alpha_m"), 1, d, 0, INIT_CONST, 0.0);
            rc |= add(t, &out->at[s][HC_WR], NAME("dyn_alpha_r"), 2, d, n, INIT_CONST, 0.0);
            rc |= add(t, &out->at[s][HC_WB], NAME("dyn_beta"), 1, d, 0, INIT_CONST, 0.0);
            rc |= add(t, &out->at[s][HC_SA], NAME("scale_alpha"), 1, 1, 0, INIT_CONST, 0.01);
            rc |= add(t, &out->at[s][HC_SB], NAME("scale_beta"), 1, 1, 0, INIT_CONST, 0.01);
        }
        break;
    case STREAM_MHC:
        for (int s = 0; s < 2 * p->L && !rc; s++) {
            const char *sub = s % 2 ? "mhc_mlp" : "mhc_attn";
            rc |= add(t, &out->at[s][MH_PHI_PRE], NAME("phi_pre"), 2, n * d, n, INIT_CONST, 0.0);
            rc |= add(t, &out->at[s][MH_PHI_POST], NAME("phi_post"), 2, n * d, n, INIT_CONST, 0.0);
            rc |= add(t, &out->at[s][MH_PHI_RES], NAME("phi_res"), 2, n * d, n * n, INIT_CONST, 0.0);
            rc |= add(t, &out->at[s][MH_B_PRE], NAME("b_pre"), 1, n, 0, INIT_CONST, -log((double)(n - 1))); /* σ = 1/n: mean of streams */
            rc |= add(t, &out->at[s][MH_B_POST], NAME("b_post"), 1, n, 0, INIT_CONST, 0.0);                  /* 2σ(0) = 1 */
            rc |= add(t, &out->at[s][MH_B_RES], NAME("b_res"), 2, n, n, INIT_EYE, 4.0);                     /* Sinkhorn ≈ 0.95 on the diagonal */
            rc |= add(t, &out->at[s][MH_A_PRE], NAME("alpha_pre"), 1, 1, 0, INIT_CONST, 0.01);
            rc |= add(t, &out->at[s][MH_A_POST], NAME("alpha_post"), 1, 1, 0, INIT_CONST, 0.01);
            rc |= add(t, &out->at[s][MH_A_RES], NAME("alpha_res"), 1, 1, 0, INIT_CONST, 0.01);
#undef NAME
        }
        break;
    }
    return rc ? -1 : 0;
}
