/* value_path.c (ref): the attention sublayer of formulas.md §4, one path for every variant.
 *
 * For layer l (0-based), with the tables of common/model/value_path.h (c = the plan):
 *
 *   xn   = hx·x + hh·H_0                       [N,d]    (hidden residual; x otherwise)
 *   Q_l, K_l, V_l = RMSNorm(xn)·W_{q,k,v}ᵀ     raw, kept for later layers (absent weights: unused)
 *   q = RoPE(Σ cq·Q_i)   k = RoPE(Σ ck·K_i)   V' = Σ cv·V_i   (cv's trainable entries = lambda)
 *   A_l = softmax(q·[k; k_m]ᵀ/√hd)             [B,NH,T,W]  (k_m only for Eq. 2 layers)
 *   P = Σ ca·A_i                               (attention-matrix residual)
 *   U = P·[V'; V_m] + repeat_kv(Σ ce·V_i)      [N,qC]
 *
 * Every mix is mix_forward/mix_backward of ops.c: the backward of a weighted sum is the same
 * weighted sum of gradients, so d(V_1) (and d(Q_1), d(K_1), d(A_1), d(H_0)) accumulate from
 * every layer that reads them; the accumulators are per layer and complete when the backward
 * reaches that layer. V_1 is never detached. With the baseline's identity tables each mix is
 * a copy and the numbers are those of plain attention.
 *
 * Shapes: B batch, T seq, N = B*T, d width, NH/NKV query/kv heads, hd head dim, qC = NH*hd,
 * kvC = NKV*hd, W = T (2T for Eq. 2 layers), L layers (0-based). */
#include "ref/value_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/arena.h"
#include "ref/attn_ops.h"
#include "ref/ops.h"

/* Layer l's tensors inside a flat buffer (parameters, or their gradients). */
typedef struct {
    real *ln1; /* attention norm [d] */
    real *wq;  /* W_q [qC, d]  (NULL where the plan drops it) */
    real *wk;  /* W_k [kvC, d] (NULL where the plan drops it) */
    real *wv;  /* W_v [kvC, d] (NULL where the plan drops it) */
    real *lam; /* [n_train] trainable value coefficients, or NULL */
} VpTensors;

/* What layer l's forward keeps for the backward, for later layers and for analysis. */
typedef struct {
    const real *x;  /* [N,d]   the layer input (the depth mixer's) */
    real *xn;       /* [N,d]   attention norm input hx·x + hh·H_0 (= x but for the hidden residual) */
    real *ln1;      /* [N,d]   RMSNorm(xn) · g1 */
    real *ln1_rstd; /* [N]     */
    real *qraw;     /* [N,qC]  raw Q_l = ln1 · W_qᵀ before mixing and RoPE */
    real *kraw;     /* [N,kvC] raw K_l */
    real *v;        /* [N,kvC] raw V_l = ln1 · W_vᵀ, never rotated: what later layers may mix in */
    real *q;        /* [N,qC]  queries after mixing (Σ cq·Q_i) and RoPE */
    real *k;        /* [N,kvC] keys after mixing (Σ ck·K_i) and RoPE */
    real *vin;      /* [N,kvC] the value input attention consumes: Σ_i vcoef[l][i] · V_i */
    real *att;      /* [B,NH,T,W] causal softmax A_l (own keys, then K_m for Eq. 2) */
    real *attp;     /* [B,NH,T,W] probabilities applied to the values: Σ_i ca[l][i]·A_i */
    real *corr;     /* [N,kvC] output correction Σ_i ce[l][i]·V_i (kv space) */
    real *atty;     /* [N,qC]  U_l = P_l · vin (+ corrections), heads concatenated */
} VpActs;

struct VpState {
    const ValuePlan *plan; /* the spec's, not owned */
    int B, T, N, d, NH, NKV, hd, qC, kvC, L;
    double eps;
    const real *emb;       /* [N,d] H_0, the model's */
    VpTensors *w, *dw;     /* [L] views of params / grads */
    VpActs *a;             /* [L] */
    double *vcoef;         /* [L,L] plan->cv with the trainable entries refreshed each forward */
    const real **qsrc, **ksrc, **vsrc, **asrc; /* [L] raw Q_i, K_i, V_i, A_i: sources of cq, ck, cv/ce, ca */
    real *cos_t, *sin_t;   /* RoPE tables [T, hd/2] */
    /* backward: per-layer accumulators, complete once every reader is done */
    real **dqraw;          /* [L] × [N,qC]  d(raw Q_i) */
    real **dkraw;          /* [L] × [N,kvC] d(raw K_i) */
    real **dkrot;          /* [L] × [N,kvC] d(post-RoPE keys of layer i): Eq. 2 reads layer m's */
    real **dv;             /* [L] × [N,kvC] d(raw V_i) */
    real **datt;           /* [L] × [B,NH,T,W] d(A_i) */
    real *demb;            /* [N,d]   d(H_0) from hidden residuals */
    /* backward scratch, reused by every layer */
    real *dattp;           /* [B,NH,T,2T] d(applied probabilities) */
    real *dcorr;           /* [N,kvC] d(correction) */
    real *dvin;            /* [N,kvC] d(value input) */
    real *dqr;             /* [N,qC]  d(queries after RoPE) */
    real *dq;              /* [N,qC]  d(queries before RoPE) */
    real *dk;              /* [N,kvC] d(keys before RoPE) */
    real *dln;             /* [N,d]   d(ln1) */
    real *dxn;             /* [N,d]   d(attention norm input) */
    double *dcoef;         /* [L]     Σ dV'·V_i of one layer, for its trainable coefficients */
    void *arena;           /* every buffer above */
};

static void zero(real *p, size_t n) { memset(p, 0, n * sizeof *p); }

/* Width of layer l's attention rows: 2T for Eq. 2 layers. */
static int width(const VpState *vp, int l) { return vp->plan->cross[l] >= 0 ? 2 * vp->T : vp->T; }

static size_t vp_layout(VpState *vp, char *base) {
    const size_t N = (size_t)vp->N, BHT = (size_t)vp->B * vp->NH * vp->T, L = (size_t)vp->L;
    size_t off = 0;
    CARVE(vp->w, L);
    CARVE(vp->dw, L);
    CARVE(vp->a, L);
    CARVE(vp->vcoef, L * L);
    CARVE(vp->qsrc, L);
    CARVE(vp->ksrc, L);
    CARVE(vp->vsrc, L);
    CARVE(vp->asrc, L);
    CARVE(vp->cos_t, (size_t)vp->T * (vp->hd / 2));
    CARVE(vp->sin_t, (size_t)vp->T * (vp->hd / 2));
    CARVE(vp->dqraw, L);
    CARVE(vp->dkraw, L);
    CARVE(vp->dkrot, L);
    CARVE(vp->dv, L);
    CARVE(vp->datt, L);
    CARVE(vp->demb, N * vp->d);
    CARVE(vp->dattp, BHT * 2 * vp->T);
    CARVE(vp->dcorr, N * vp->kvC);
    CARVE(vp->dvin, N * vp->kvC);
    CARVE(vp->dqr, N * vp->qC);
    CARVE(vp->dq, N * vp->qC);
    CARVE(vp->dk, N * vp->kvC);
    CARVE(vp->dln, N * vp->d);
    CARVE(vp->dxn, N * vp->d);
    CARVE(vp->dcoef, L);
    for (int l = 0; l < vp->L; l++) {
        VpActs dummy, *a = base ? &vp->a[l] : &dummy;
        real *dummies[5], **dq = base ? &vp->dqraw[l] : &dummies[0], **dk = base ? &vp->dkraw[l] : &dummies[1],
                          **dkr = base ? &vp->dkrot[l] : &dummies[2], **dv = base ? &vp->dv[l] : &dummies[3],
                          **da = base ? &vp->datt[l] : &dummies[4];
        const size_t W = (size_t)width(vp, l);
        CARVE(a->xn, N * vp->d);
        CARVE(a->ln1, N * vp->d);
        CARVE(a->ln1_rstd, N);
        CARVE(a->qraw, N * vp->qC);
        CARVE(a->kraw, N * vp->kvC);
        CARVE(a->v, N * vp->kvC);
        CARVE(a->q, N * vp->qC);
        CARVE(a->k, N * vp->kvC);
        CARVE(a->vin, N * vp->kvC);
        CARVE(a->att, BHT * W);
        CARVE(a->attp, BHT * W);
        CARVE(a->corr, N * vp->kvC);
        CARVE(a->atty, N * vp->qC);
        CARVE(*dq, N * vp->qC);
        CARVE(*dk, N * vp->kvC);
        CARVE(*dkr, N * vp->kvC);
        CARVE(*dv, N * vp->kvC);
        CARVE(*da, BHT * W);
    }
    return off;
}
#undef CARVE

/* Bind layer l's tensors at the spec's offsets; a tensor the plan drops stays NULL. */
static void bind_layer(VpState *vp, const LayerLayout *ll, int l, real *params, real *grads) {
    const TensorSlot *slot[5] = {&ll->ln1, &ll->wq, &ll->wk, &ll->wv, &ll->lam};
    real **pp[5] = {&vp->w[l].ln1, &vp->w[l].wq, &vp->w[l].wk, &vp->w[l].wv, &vp->w[l].lam};
    real **gp[5] = {&vp->dw[l].ln1, &vp->dw[l].wq, &vp->dw[l].wk, &vp->dw[l].wv, &vp->dw[l].lam};
    for (int j = 0; j < 5; j++) {
        const int have = slot[j]->numel > 0;
        *pp[j] = have ? params + slot[j]->offset : NULL;
        *gp[j] = have ? grads + slot[j]->offset : NULL;
    }
}

VpState *vp_create(const ModelSpec *spec, int B, int T, real *params, real *grads, const real *emb, double eps) {
    const ModelConfig *c = &spec->config;
    VpState *vp = calloc(1, sizeof *vp);
    if (!vp) {
        vrl_error("model: out of memory for the value path");
        return NULL;
    }
    vp->plan = &spec->value;
    vp->B = B, vp->T = T, vp->N = B * T, vp->d = c->d_model, vp->NH = c->n_heads, vp->NKV = c->n_kv_heads;
    vp->hd = config_head_dim(c), vp->qC = vp->NH * vp->hd, vp->kvC = vp->NKV * vp->hd, vp->L = c->n_layers;
    vp->eps = eps;
    vp->emb = emb;
    const size_t bytes = vp_layout(vp, NULL);
    if (!(vp->arena = calloc(1, bytes))) {
        vrl_error("model: out of memory for the value path (%zu bytes)", bytes);
        free(vp);
        return NULL;
    }
    vp_layout(vp, vp->arena);
    const ValuePlan *p = vp->plan;
    for (int l = 0; l < vp->L; l++) {
        bind_layer(vp, &spec->layout.layer[l], l, params, grads);
        const VpActs *a = &vp->a[l];
        vp->qsrc[l] = p->has_q[l] ? a->qraw : NULL;
        vp->ksrc[l] = p->has_k[l] ? a->kraw : NULL;
        vp->vsrc[l] = p->has_v[l] ? a->v : NULL;
        vp->asrc[l] = a->att;
    }
    memcpy(vp->vcoef, p->cv, (size_t)vp->L * vp->L * sizeof *vp->vcoef);
    rope_tables(vp->cos_t, vp->sin_t, T, vp->hd, c->rope_theta);
    return vp;
}

void vp_destroy(VpState *vp) {
    if (!vp) return;
    free(vp->arena);
    free(vp);
}

const real *vp_forward(VpState *vp, int l, const real *x) {
    const ValuePlan *p = vp->plan;
    const VpTensors *w = &vp->w[l];
    VpActs *a = &vp->a[l];
    const int B = vp->B, T = vp->T, N = vp->N, d = vp->d, qC = vp->qC, kvC = vp->kvC, L = vp->L, mp = p->cross[l];
    const size_t row = (size_t)l * L;
    a->x = x;
    /* attention norm input [N,d]: the hidden residual mixes in H_0; the stream is unchanged */
    const real *hsrc[2] = {x, vp->emb};
    const double hc[2] = {p->hx[l], p->hh[l]};
    mix_forward(a->xn, hsrc, hc, 2, (size_t)N * d);
    rmsnorm_forward(a->ln1, a->ln1_rstd, a->xn, w->ln1, N, d, vp->eps);
    if (w->wq) matmul_forward(a->qraw, a->ln1, w->wq, N, d, qC);
    if (w->wk) matmul_forward(a->kraw, a->ln1, w->wk, N, d, kvC);
    if (w->wv) matmul_forward(a->v, a->ln1, w->wv, N, d, kvC);
    /* trainable coefficients: this forward uses the parameters' current values */
    for (int j = 0; j < p->n_train[l]; j++) vp->vcoef[row + p->train_src[row + j]] = w->lam[j];
    mix_forward(a->q, vp->qsrc, p->cq + row, l + 1, (size_t)N * qC);
    mix_forward(a->k, vp->ksrc, p->ck + row, l + 1, (size_t)N * kvC);
    mix_forward(a->vin, vp->vsrc, vp->vcoef + row, l + 1, (size_t)N * kvC);
    rope_forward(a->q, a->q, vp->cos_t, vp->sin_t, B, T, vp->NH, vp->hd);
    rope_forward(a->k, a->k, vp->cos_t, vp->sin_t, B, T, vp->NKV, vp->hd);
    /* A_l over its own keys (and layer m's post-RoPE keys for Eq. 2), then P = Σ ca·A_i */
    const real *k2 = mp >= 0 ? vp->a[mp].k : NULL, *v2 = mp >= 0 ? vp->a[mp].v : NULL;
    attn_probs_forward(a->att, a->q, a->k, k2, B, T, vp->NH, vp->NKV, vp->hd);
    mix_forward(a->attp, vp->asrc, p->ca + row, l + 1, (size_t)B * vp->NH * T * width(vp, l));
    attn_apply_forward(a->atty, a->attp, a->vin, v2, B, T, vp->NH, vp->NKV, vp->hd);
    /* U += repeat_kv(Σ ce·V_i): NeuTRENO and Eq. 6 corrections, in kv space */
    mix_forward(a->corr, vp->vsrc, p->ce + row, l + 1, (size_t)N * kvC);
    repeat_kv_add_forward(a->atty, a->corr, N, vp->NH, vp->NKV, vp->hd);
    return a->atty;
}

void vp_backward_begin(VpState *vp) {
    const size_t N = (size_t)vp->N, BHT = (size_t)vp->B * vp->NH * vp->T;
    for (int l = 0; l < vp->L; l++) {
        zero(vp->dv[l], N * vp->kvC);
        zero(vp->dqraw[l], N * vp->qC);
        zero(vp->dkraw[l], N * vp->kvC);
        zero(vp->dkrot[l], N * vp->kvC);
        zero(vp->datt[l], BHT * width(vp, l));
    }
    zero(vp->demb, N * vp->d);
}

void vp_backward(VpState *vp, int l, const real *datty, real *dx) {
    const ValuePlan *p = vp->plan;
    const VpTensors *w = &vp->w[l];
    VpTensors *dw = &vp->dw[l];
    const VpActs *a = &vp->a[l];
    const int B = vp->B, T = vp->T, N = vp->N, d = vp->d, qC = vp->qC, kvC = vp->kvC, L = vp->L, mp = p->cross[l];
    const size_t row = (size_t)l * L, natt = (size_t)B * vp->NH * T * width(vp, l);
    const real *k2 = mp >= 0 ? vp->a[mp].k : NULL, *v2 = mp >= 0 ? vp->a[mp].v : NULL;
    /* corrections: d(Σ ce·V_i) = the query heads' gradients summed per kv head */
    zero(vp->dcorr, (size_t)N * kvC);
    repeat_kv_add_backward(vp->dcorr, datty, N, vp->NH, vp->NKV, vp->hd);
    mix_backward(vp->dv, NULL, vp->dcorr, vp->vsrc, p->ce + row, l + 1, (size_t)N * kvC);
    /* U = P·[V'; V_m]: d(P) to every A_i mixed in, d(V') below, d(V_m) straight to layer m */
    zero(vp->dattp, natt);
    zero(vp->dvin, (size_t)N * kvC);
    attn_apply_backward(vp->dattp, vp->dvin, mp >= 0 ? vp->dv[mp] : NULL, datty, a->attp, a->vin, v2, B, T, vp->NH,
                        vp->NKV, vp->hd);
    mix_backward(vp->datt, NULL, vp->dattp, vp->asrc, p->ca + row, l + 1, natt);
    /* V' = Σ cv·V_i; a trainable entry gets Σ dV'·V_i */
    double *dcoef = p->n_train[l] ? vp->dcoef : NULL;
    if (dcoef) memset(dcoef, 0, (size_t)L * sizeof *dcoef);
    mix_backward(vp->dv, dcoef, vp->dvin, vp->vsrc, vp->vcoef + row, l + 1, (size_t)N * kvC);
    for (int j = 0; j < p->n_train[l]; j++) dw->lam[j] += (real)dcoef[p->train_src[row + j]];
    /* A_l's softmax: d(A_l) is complete (later layers that mix it in ran first) */
    zero(vp->dqr, (size_t)N * qC);
    attn_probs_backward(vp->dqr, vp->dkrot[l], mp >= 0 ? vp->dkrot[mp] : NULL, vp->datt[l], a->att, a->q, a->k, k2,
                        B, T, vp->NH, vp->NKV, vp->hd);
    /* RoPE, then the Q/K mixes back to the raw projections they read */
    zero(vp->dq, (size_t)N * qC);
    zero(vp->dk, (size_t)N * kvC);
    rope_backward(vp->dq, vp->dqr, vp->cos_t, vp->sin_t, B, T, vp->NH, vp->hd);
    rope_backward(vp->dk, vp->dkrot[l], vp->cos_t, vp->sin_t, B, T, vp->NKV, vp->hd);
    mix_backward(vp->dqraw, NULL, vp->dq, vp->qsrc, p->cq + row, l + 1, (size_t)N * qC);
    mix_backward(vp->dkraw, NULL, vp->dk, vp->ksrc, p->ck + row, l + 1, (size_t)N * kvC);
    /* this layer's projections: their raw outputs' gradients are complete now */
    zero(vp->dln, (size_t)N * d);
    if (w->wq) matmul_backward(vp->dln, dw->wq, vp->dqraw[l], a->ln1, w->wq, N, d, qC);
    if (w->wk) matmul_backward(vp->dln, dw->wk, vp->dkraw[l], a->ln1, w->wk, N, d, kvC);
    if (w->wv) matmul_backward(vp->dln, dw->wv, vp->dv[l], a->ln1, w->wv, N, d, kvC);
    zero(vp->dxn, (size_t)N * d);
    rmsnorm_backward(vp->dxn, dw->ln1, vp->dln, a->xn, w->ln1, a->ln1_rstd, N, d);
    /* xn = hx·x + hh·H_0 */
    real *dh[2] = {dx, vp->demb};
    const real *hsrc[2] = {a->x, vp->emb};
    const double hc[2] = {p->hx[l], p->hh[l]};
    mix_backward(dh, NULL, vp->dxn, hsrc, hc, 2, (size_t)N * d);
}

void vp_backward_end(VpState *vp, real *demb) {
    for (int l = 0; l < vp->L; l++)
        if (vp->plan->hh[l] != 0) {
            residual_backward(demb, NULL, vp->demb, (size_t)vp->N * vp->d);
            return;
        }
}

const real *vp_view(const VpState *vp, BackendView what, int l) {
    if (l < 0 || l >= vp->L) return NULL;
    switch (what) {
    case VIEW_ATTENTION: return vp->a[l].att;
    case VIEW_QUERIES: return vp->a[l].q;
    case VIEW_KEYS: return vp->a[l].k;
    case VIEW_VALUES: return vp->a[l].v;
    default: return NULL;
    }
}
