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
 * reaches that layer. V_1 is never detached.
 *
 * Shortcuts (VpShortcuts, chosen once from the plan in vp_create): the sums above stay the
 * definition, but the baseline and most variants have identity rows (one source, coefficient
 * exactly 1) and all-zero rows, where the generic mix would copy a tensor, add zeros or
 * zero a buffer the next op fills. Each shortcut below computes the same bits as the
 * generic code (1·x == x and 0 + x == x for the values that occur; see each one's comment);
 * docs/design/cpu-reference-speed.md ("Fewer passes over memory") says how that was checked.
 *
 * Shapes: B batch, T seq, N = B*T, d width, NH/NKV query/kv heads, hd head dim, qC = NH*hd,
 * kvC = NKV*hd, W = T (2T for Eq. 2 layers), L layers (0-based). */
#include "ref/value_path.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/arena.h"
#include "ref/attn_ops.h"
#include "ref/ops.h"
#include "ref/stream.h"

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
    const real *xn; /* [N,d]   attention norm input hx·x + hh·H_0 (aliases x without a hidden residual) */
    real *ln1;      /* [N,d]   RMSNorm(xn) · g1 */
    real *ln1_rstd; /* [N]     */
    real *qraw;     /* [N,qC]  raw Q_l = ln1 · W_qᵀ before mixing and RoPE */
    real *kraw;     /* [N,kvC] raw K_l */
    real *v;        /* [N,kvC] raw V_l = ln1 · W_vᵀ, never rotated: what later layers may mix in */
    real *q;        /* [N,qC]  queries after mixing (Σ cq·Q_i) and RoPE */
    real *k;        /* [N,kvC] keys after mixing (Σ ck·K_i) and RoPE */
    const real *vin;  /* [N,kvC] the value input attention consumes: Σ_i vcoef[l][i] · V_i (may alias V_i) */
    real *xn_buf, *vin_buf, *attp_buf; /* storage of xn, vin, attp where the generic mix runs (else empty) */
    real *att;        /* [B,NH,T,W] causal softmax A_l (own keys, then K_m for Eq. 2) */
    const real *attp; /* [B,NH,T,W] probabilities applied to the values: Σ_i ca[l][i]·A_i (may alias A_i) */
    real *corr;       /* [N,kvC] output correction Σ_i ce[l][i]·V_i (kv space; empty without corrections) */
    real *atty;     /* [N,qC]  U_l = P_l · vin (+ corrections), heads concatenated */
} VpActs;

/* Layer l's special cases of the generic mixes, read off the plan once. An "identity" row has
 * one source with coefficient exactly 1 and the rest 0; a gradient accumulator is "fresh" at
 * layer l when no other layer adds into it before layer l's backward writes it (no later
 * reader, no correction of the layer's own V): layer l's op may then write it directly,
 * instead of writing a scratch buffer that the identity mix would add into it. */
typedef struct {
    int x_only;     /* hx = 1, hh = 0: xn is x itself (no hidden residual) */
    int q_from;     /* cq row is the identity on Q_i: i, else -1 */
    int k_from;     /* ck row likewise on K_i */
    int v_from;     /* cv row likewise on V_i with no trainable entry */
    int a_from;     /* ca row likewise on A_i */
    int corr;       /* some ce entry is non-zero: there is an output correction */
    int dq_fresh;   /* q_from = l and d(Q_l) fresh: RoPE's backward writes it (GRAD_SET, no zeroing) */
    int dk_fresh;   /* k_from = l and d(K_l) fresh: likewise */
    int dv_fresh;   /* v_from = l and d(V_l) fresh: attention's backward writes it directly */
    int da_fresh;   /* a_from = l and d(A_l) fresh: likewise */
} VpShortcuts;

struct VpState {
    const ValuePlan *plan; /* the spec's, not owned */
    int B, T, N, d, NH, NKV, hd, qC, kvC, L;
    double eps;
    const real *emb;       /* [N,d] H_0, the model's */
    VpTensors *w, *dw;     /* [L] views of params / grads */
    VpActs *a;             /* [L] */
    double *vcoef;         /* [L,L] plan->cv with the trainable entries refreshed each forward */
    VpShortcuts *sc;       /* [L] the special cases of each layer's mixes */
    const real **qsrc, **ksrc, **vsrc, **asrc; /* [L] raw Q_i, K_i, V_i, A_i: sources of cq, ck, cv/ce, ca */
    real *cos_t, *sin_t;   /* RoPE tables [T, hd/2] */
    /* backward: per-layer accumulators, complete once every reader is done */
    real **dqraw;          /* [L] × [N,qC]  d(raw Q_i) */
    real **dkraw;          /* [L] × [N,kvC] d(raw K_i) */
    real **dkrot;          /* [L] × [N,kvC] d(post-RoPE keys of layer i): Eq. 2 reads layer m's */
    real **dv;             /* [L] × [N,kvC] d(raw V_i) */
    real **datt;           /* [L] × [B,NH,T,W] d(A_i) */
    real *demb;            /* [N,d]   d(H_0) from hidden residuals (empty without them) */
    /* backward scratch, reused by every layer */
    real *dattp;           /* [B,NH,T,W] d(applied probabilities), W of the widest generic layer */
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
    /* backward scratch only where some layer runs the generic mix (size 0 otherwise) */
    size_t wattp = 0, ncorr = 0, nvin = 0, nq = 0, nk = 0, nxn = 0, nemb = 0;
    for (int l = 0; l < vp->L; l++) {
        const VpShortcuts *sc = &vp->sc[l];
        if (vp->plan->hh[l] != 0) nemb = N * vp->d;
        if (!sc->da_fresh && (size_t)width(vp, l) > wattp) wattp = (size_t)width(vp, l);
        if (sc->corr) ncorr = N * vp->kvC;
        if (!sc->dv_fresh) nvin = N * vp->kvC;
        if (!sc->dq_fresh) nq = N * vp->qC;
        if (!sc->dk_fresh) nk = N * vp->kvC;
        if (!sc->x_only) nxn = N * vp->d;
    }
    CARVE(vp->demb, nemb);
    CARVE(vp->dattp, BHT * wattp);
    CARVE(vp->dcorr, ncorr);
    CARVE(vp->dvin, nvin);
    CARVE(vp->dqr, N * vp->qC);
    CARVE(vp->dq, nq);
    CARVE(vp->dk, nk);
    CARVE(vp->dln, N * vp->d);
    CARVE(vp->dxn, nxn);
    CARVE(vp->dcoef, L);
    for (int l = 0; l < vp->L; l++) {
        const VpShortcuts *sc = &vp->sc[l];
        VpActs dummy, *a = base ? &vp->a[l] : &dummy;
        real *dummies[5], **dq = base ? &vp->dqraw[l] : &dummies[0], **dk = base ? &vp->dkraw[l] : &dummies[1],
                          **dkr = base ? &vp->dkrot[l] : &dummies[2], **dv = base ? &vp->dv[l] : &dummies[3],
                          **da = base ? &vp->datt[l] : &dummies[4];
        const size_t W = (size_t)width(vp, l);
        CARVE(a->xn_buf, sc->x_only ? 0 : N * vp->d);
        CARVE(a->ln1, N * vp->d);
        CARVE(a->ln1_rstd, N);
        CARVE(a->qraw, N * vp->qC);
        CARVE(a->kraw, N * vp->kvC);
        CARVE(a->v, N * vp->kvC);
        CARVE(a->q, N * vp->qC);
        CARVE(a->k, N * vp->kvC);
        CARVE(a->vin_buf, sc->v_from >= 0 ? 0 : N * vp->kvC);
        CARVE(a->att, BHT * W);
        CARVE(a->attp_buf, sc->a_from >= 0 ? 0 : BHT * W);
        CARVE(a->corr, sc->corr ? N * vp->kvC : 0);
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

/* The source i of an identity row (row[i] == 1 exactly, every other entry 0), else -1. */
static int identity_source(const double *row, int n) {
    int from = -1;
    for (int i = 0; i < n; i++) {
        if (row[i] == 0) continue;
        if (row[i] != 1 || from >= 0) return -1;
        from = i;
    }
    return from;
}

/* 1 if a layer after l adds into d(V_l): a value mix (fixed or trainable entry), a
 * correction, or an Eq. 2 layer reading layer l's values. */
static int value_read_later(const ValuePlan *p, int l) {
    if (value_plan_read_later(p, p->cv, l) || value_plan_read_later(p, p->ce, l)) return 1;
    for (int m = l + 1; m < p->L; m++) {
        if (p->cross[m] == l) return 1;
        for (int j = 0; j < p->n_train[m]; j++)
            if (p->train_src[(size_t)m * p->L + j] == l) return 1;
    }
    return 0;
}

static void choose_shortcuts(VpState *vp) {
    const ValuePlan *p = vp->plan;
    const int L = vp->L;
    for (int l = 0; l < L; l++) {
        VpShortcuts *sc = &vp->sc[l];
        const double *cq = p->cq + (size_t)l * L, *ck = p->ck + (size_t)l * L, *cv = p->cv + (size_t)l * L,
                     *ce = p->ce + (size_t)l * L, *ca = p->ca + (size_t)l * L;
        sc->x_only = p->hx[l] == 1 && p->hh[l] == 0;
        sc->q_from = identity_source(cq, l + 1);
        sc->k_from = identity_source(ck, l + 1);
        sc->v_from = p->n_train[l] ? -1 : identity_source(cv, l + 1);
        sc->a_from = identity_source(ca, l + 1);
        sc->corr = 0;
        for (int i = 0; i <= l; i++) sc->corr |= ce[i] != 0;
        sc->dq_fresh = sc->q_from == l && !value_plan_read_later(p, p->cq, l);
        sc->dk_fresh = sc->k_from == l && !value_plan_read_later(p, p->ck, l);
        sc->dv_fresh = sc->v_from == l && ce[l] == 0 && !value_read_later(p, l);
        sc->da_fresh = sc->a_from == l && !value_plan_read_later(p, p->ca, l);
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
    if (!(vp->sc = calloc((size_t)vp->L, sizeof *vp->sc))) {
        vrl_error("model: out of memory for the value path");
        free(vp);
        return NULL;
    }
    choose_shortcuts(vp);
    const size_t bytes = vp_layout(vp, NULL);
    if (!(vp->arena = ref_arena_alloc(bytes))) {
        vrl_error("model: out of memory for the value path (%zu bytes)", bytes);
        free(vp->sc);
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
    ref_arena_free(vp->arena);
    free(vp->sc);
    free(vp);
}

const real *vp_forward(VpState *vp, int l, const real *x) {
    const ValuePlan *p = vp->plan;
    const VpTensors *w = &vp->w[l];
    const VpShortcuts *sc = &vp->sc[l];
    VpActs *a = &vp->a[l];
    const int B = vp->B, T = vp->T, N = vp->N, d = vp->d, qC = vp->qC, kvC = vp->kvC, L = vp->L, mp = p->cross[l];
    const size_t row = (size_t)l * L;
    a->x = x;
    /* attention norm input [N,d]: the hidden residual mixes in H_0; the stream is unchanged */
    if (sc->x_only) a->xn = x; /* shortcut: 1·x + 0·H_0 is x, the mix would copy it */
    else {
        const real *hsrc[2] = {x, vp->emb};
        const double hc[2] = {p->hx[l], p->hh[l]};
        mix_forward(a->xn_buf, hsrc, hc, 2, (size_t)N * d);
        a->xn = a->xn_buf;
    }
    rmsnorm_forward(a->ln1, a->ln1_rstd, a->xn, w->ln1, N, d, vp->eps);
    if (w->wq) matmul_forward(a->qraw, a->ln1, w->wq, N, d, qC);
    if (w->wk) matmul_forward(a->kraw, a->ln1, w->wk, N, d, kvC);
    if (w->wv) matmul_forward(a->v, a->ln1, w->wv, N, d, kvC);
    /* trainable coefficients: this forward uses the parameters' current values */
    for (int j = 0; j < p->n_train[l]; j++) vp->vcoef[row + p->train_src[row + j]] = w->lam[j];
    /* q = RoPE(Σ cq·Q_i), k likewise; shortcut: an identity row rotates Q_i itself (no copy) */
    const real *qin = a->q, *kin = a->k;
    if (sc->q_from >= 0) qin = vp->qsrc[sc->q_from];
    else mix_forward(a->q, vp->qsrc, p->cq + row, l + 1, (size_t)N * qC);
    if (sc->k_from >= 0) kin = vp->ksrc[sc->k_from];
    else mix_forward(a->k, vp->ksrc, p->ck + row, l + 1, (size_t)N * kvC);
    rope_forward(a->q, qin, vp->cos_t, vp->sin_t, B, T, vp->NH, vp->hd);
    rope_forward(a->k, kin, vp->cos_t, vp->sin_t, B, T, vp->NKV, vp->hd);
    /* V' = Σ cv·V_i; shortcut: an identity row is V_i itself */
    if (sc->v_from >= 0) a->vin = vp->vsrc[sc->v_from];
    else {
        mix_forward(a->vin_buf, vp->vsrc, vp->vcoef + row, l + 1, (size_t)N * kvC);
        a->vin = a->vin_buf;
    }
    /* A_l over its own keys (and layer m's post-RoPE keys for Eq. 2), then P = Σ ca·A_i;
     * shortcut: an identity row (no attention residual) is A_i itself */
    const real *k2 = mp >= 0 ? vp->a[mp].k : NULL, *v2 = mp >= 0 ? vp->a[mp].v : NULL;
    attn_probs_forward(a->att, a->q, a->k, k2, B, T, vp->NH, vp->NKV, vp->hd);
    if (sc->a_from >= 0) a->attp = vp->asrc[sc->a_from];
    else {
        mix_forward(a->attp_buf, vp->asrc, p->ca + row, l + 1, (size_t)B * vp->NH * T * width(vp, l));
        a->attp = a->attp_buf;
    }
    attn_apply_forward(a->atty, a->attp, a->vin, v2, B, T, vp->NH, vp->NKV, vp->hd);
    /* U += repeat_kv(Σ ce·V_i): NeuTRENO and Eq. 6 corrections, in kv space. Shortcut: with
     * no correction, adding zeros is skipped (U += 0 changes no bit: U never holds -0.0, being
     * a BLAS product accumulated from +0) */
    if (sc->corr) {
        mix_forward(a->corr, vp->vsrc, p->ce + row, l + 1, (size_t)N * kvC);
        repeat_kv_add_forward(a->atty, a->corr, N, vp->NH, vp->NKV, vp->hd);
    }
    return a->atty;
}

void vp_backward_begin(VpState *vp) {
    const size_t N = (size_t)vp->N, BHT = (size_t)vp->B * vp->NH * vp->T;
    int hidden = 0;
    for (int l = 0; l < vp->L; l++) {
        zero_fill(vp->dv[l], N * vp->kvC);
        /* a fresh d(Q_l), d(K_l) is written over by RoPE's backward (GRAD_SET) */
        if (!vp->sc[l].dq_fresh) zero_fill(vp->dqraw[l], N * vp->qC);
        if (!vp->sc[l].dk_fresh) zero_fill(vp->dkraw[l], N * vp->kvC);
        zero_fill(vp->dkrot[l], N * vp->kvC);
        /* a fresh d(A_l) is written over by attention's backward (GRAD_SET); its masked entries
         * stay the arena's zeros, and nothing reads them */
        if (!vp->sc[l].da_fresh) zero_fill(vp->datt[l], BHT * width(vp, l));
        hidden |= vp->plan->hh[l] != 0;
    }
    if (hidden) zero_fill(vp->demb, N * vp->d);
}

void vp_backward(VpState *vp, int l, const real *datty, real *dx) {
    const ValuePlan *p = vp->plan;
    const VpTensors *w = &vp->w[l];
    VpTensors *dw = &vp->dw[l];
    const VpActs *a = &vp->a[l];
    const VpShortcuts *sc = &vp->sc[l];
    const int B = vp->B, T = vp->T, N = vp->N, d = vp->d, qC = vp->qC, kvC = vp->kvC, L = vp->L, mp = p->cross[l];
    const size_t row = (size_t)l * L, natt = (size_t)B * vp->NH * T * width(vp, l);
    const real *k2 = mp >= 0 ? vp->a[mp].k : NULL, *v2 = mp >= 0 ? vp->a[mp].v : NULL;
    /* A "fresh" accumulator still holds its zeros (VpShortcuts), so where a mix is the identity
     * onto it, the op writes it directly: 0 + (0 + g) and 0 + g are the same bits, since a sum
     * started at +0 never yields -0.0. The scratch, its zeroing and the mix's pass go. */
    /* corrections: d(Σ ce·V_i) = the query heads' gradients summed per kv head (none: skipped) */
    if (sc->corr) {
        zero_fill(vp->dcorr, (size_t)N * kvC);
        repeat_kv_add_backward(vp->dcorr, datty, N, vp->NH, vp->NKV, vp->hd);
        mix_backward(vp->dv, NULL, vp->dcorr, vp->vsrc, p->ce + row, l + 1, (size_t)N * kvC);
    }
    /* U = P·[V'; V_m]: d(P) to every A_i mixed in, d(V') below, d(V_m) straight to layer m */
    real *dattp = sc->da_fresh ? vp->datt[l] : vp->dattp; /* [B,NH,T,W] d(P) */
    real *dvin = sc->dv_fresh ? vp->dv[l] : vp->dvin;     /* [N,kvC] d(V') */
    if (!sc->da_fresh) zero_fill(dattp, natt);
    if (!sc->dv_fresh) zero_fill(dvin, (size_t)N * kvC);
    attn_apply_backward(dattp, dvin, mp >= 0 ? vp->dv[mp] : NULL, datty, a->attp, a->vin, v2, B, T, vp->NH, vp->NKV,
                        vp->hd, sc->da_fresh ? GRAD_SET : GRAD_ADD);
    if (!sc->da_fresh) mix_backward(vp->datt, NULL, dattp, vp->asrc, p->ca + row, l + 1, natt);
    /* V' = Σ cv·V_i; a trainable entry gets Σ dV'·V_i */
    if (!sc->dv_fresh) {
        double *dcoef = p->n_train[l] ? vp->dcoef : NULL;
        if (dcoef) memset(dcoef, 0, (size_t)L * sizeof *dcoef);
        mix_backward(vp->dv, dcoef, dvin, vp->vsrc, vp->vcoef + row, l + 1, (size_t)N * kvC);
        for (int j = 0; j < p->n_train[l]; j++) {
            const int src = p->train_src[row + j];
            if (!stream_magnitudes()) {
                dw->lam[j] += (real)dcoef[src];
            } else { /* the tests' conditioning rule (stream.h): Σ|dV'·V_i|, the scale of its rounding */
                double s = 0;
                for (size_t i = 0; i < (size_t)N * kvC; i++) s += fabs((double)dvin[i] * (double)vp->vsrc[src][i]);
                dw->lam[j] += (real)s;
            }
        }
    }
    /* A_l's softmax: d(A_l) is complete (later layers that mix it in ran first) */
    zero_fill(vp->dqr, (size_t)N * qC);
    attn_probs_backward(vp->dqr, vp->dkrot[l], mp >= 0 ? vp->dkrot[mp] : NULL, vp->datt[l], a->att, a->q, a->k, k2,
                        B, T, vp->NH, vp->NKV, vp->hd);
    /* RoPE, then the Q/K mixes back to the raw projections they read */
    real *dq = sc->dq_fresh ? vp->dqraw[l] : vp->dq; /* [N,qC]  d(queries before RoPE) */
    real *dk = sc->dk_fresh ? vp->dkraw[l] : vp->dk; /* [N,kvC] d(keys before RoPE) */
    rope_backward(dq, vp->dqr, vp->cos_t, vp->sin_t, B, T, vp->NH, vp->hd, GRAD_SET);
    rope_backward(dk, vp->dkrot[l], vp->cos_t, vp->sin_t, B, T, vp->NKV, vp->hd, GRAD_SET);
    if (!sc->dq_fresh) mix_backward(vp->dqraw, NULL, dq, vp->qsrc, p->cq + row, l + 1, (size_t)N * qC);
    if (!sc->dk_fresh) mix_backward(vp->dkraw, NULL, dk, vp->ksrc, p->ck + row, l + 1, (size_t)N * kvC);
    /* this layer's projections: their raw outputs' gradients are complete now */
    GradWrite dln_how = GRAD_SET; /* the first product writes d(ln1), the others add */
    if (w->wq) {
        matmul_backward(vp->dln, dw->wq, vp->dqraw[l], a->ln1, w->wq, N, d, qC, dln_how);
        dln_how = GRAD_ADD;
    }
    if (w->wk) {
        matmul_backward(vp->dln, dw->wk, vp->dkraw[l], a->ln1, w->wk, N, d, kvC, dln_how);
        dln_how = GRAD_ADD;
    }
    if (w->wv) {
        matmul_backward(vp->dln, dw->wv, vp->dv[l], a->ln1, w->wv, N, d, kvC, dln_how);
        dln_how = GRAD_ADD;
    }
    if (dln_how == GRAD_SET) zero_fill(vp->dln, (size_t)N * d); /* no projection at all */
    /* xn = hx·x + hh·H_0; shortcut: xn is x, so the norm's backward writes dx directly */
    if (sc->x_only) {
        rmsnorm_backward(dx, dw->ln1, vp->dln, a->xn, w->ln1, a->ln1_rstd, N, d, GRAD_SET);
        return;
    }
    rmsnorm_backward(vp->dxn, dw->ln1, vp->dln, a->xn, w->ln1, a->ln1_rstd, N, d, GRAD_SET);
    zero_fill(dx, (size_t)N * d);
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
