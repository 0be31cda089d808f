/* value_path.c (ref): the attention sublayer of SPEC.md §4, one path for every variant.
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
 * a copy and the numbers are those of plain attention. */
#include "ref/value_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/attn_ops.h"
#include "ref/ops.h"

static void zero(real *p, size_t n) { memset(p, 0, n * sizeof *p); }

/* Width of layer l's attention rows: 2T for Eq. 2 layers. */
static int width(const RefModel *m, int l) { return m->plan.cross[l] >= 0 ? 2 * m->T : m->T; }

static size_t vp_layout(RefModel *m, char *base) {
    const size_t N = (size_t)m->N, BHT = (size_t)m->B * m->NH * m->T;
    size_t off = 0;
    GradActs *g = &m->g;
    CARVE(m->qsrc, m->L);
    CARVE(m->ksrc, m->L);
    CARVE(m->asrc, m->L);
    CARVE(g->dqraw, m->L);
    CARVE(g->dkraw, m->L);
    CARVE(g->dkrot, m->L);
    CARVE(g->datt, m->L);
    CARVE(g->dattp, BHT * 2 * m->T);
    CARVE(g->dcorr, N * m->kvC);
    CARVE(g->dxn, N * m->d);
    CARVE(g->demb, N * m->d);
    CARVE(g->dcoef, m->L);
    for (int l = 0; l < m->L; l++) {
        LayerActs dummy, *a = base ? &m->acts[l] : &dummy;
        real *dq, *dk, *dkr, *da, *att2 = NULL;
        const size_t W = (size_t)width(m, l);
        CARVE(a->xn, N * m->d);
        CARVE(a->qraw, N * m->qC);
        CARVE(a->kraw, N * m->kvC);
        CARVE(a->attp, BHT * W);
        CARVE(a->corr, N * m->kvC);
        CARVE(dq, N * m->qC);
        CARVE(dk, N * m->kvC);
        CARVE(dkr, N * m->kvC);
        CARVE(da, BHT * W);
        if (W != (size_t)m->T) CARVE(att2, BHT * W); /* Eq. 2 rows replace model.c's [T,T] ones */
        if (base) {
            g->dqraw[l] = dq;
            g->dkraw[l] = dk;
            g->dkrot[l] = dkr;
            g->datt[l] = da;
            if (W != (size_t)m->T) a->att = att2;
        }
    }
    return off;
}
#undef CARVE

int vp_model_init(RefModel *m) {
    const char *origin = m->c.preset[0] ? m->c.preset : "config";
    ValuePlan *p = &m->plan;
    if (value_plan_build(&m->c, p, origin) < 0) return -1;
    const int L = m->L;
    for (int l = 0; l < L; l++)
        for (int i = 0; i < l; i++)
            if (p->cross[l] >= 0 && p->ca[(size_t)l * L + i] != 0)
                return vrl_error("%s: variant \"%s\": Eq. 2 layers cannot mix attention matrices", origin, m->c.variant);
    size_t bytes = vp_layout(m, NULL);
    if (!(m->vp_arena = calloc(1, bytes))) return vrl_error("model: out of memory for the value path");
    vp_layout(m, m->vp_arena);

    /* Projections and coefficients the plan keeps, checked against the table. */
    char name[PARAM_NAME_LEN];
    for (int l = 0; l < L; l++) {
        struct { real **pp, **gp; const char *suffix; size_t numel; int keep; } t[4] = {
            {&m->lp[l].wq, &m->lg[l].wq, "self_attn.q_proj.weight", (size_t)m->qC * m->d, p->has_q[l]},
            {&m->lp[l].wk, &m->lg[l].wk, "self_attn.k_proj.weight", (size_t)m->kvC * m->d, p->has_k[l]},
            {&m->lp[l].wv, &m->lg[l].wv, "self_attn.v_proj.weight", (size_t)m->kvC * m->d, p->has_v[l]},
            {&m->lp[l].lam, &m->lg[l].lam, "self_attn.v_residual_lambda", (size_t)p->n_train[l], p->n_train[l] > 0},
        };
        for (int j = 0; j < 4; j++) {
            snprintf(name, sizeof name, "model.layers.%d.%s", l, t[j].suffix);
            const ParamInfo *pi = param_table_find(m->t, name);
            *t[j].pp = *t[j].gp = NULL;
            if (!t[j].keep && !pi) continue;
            if (!t[j].keep) return vrl_error("model: parameter %s is in the table but variant \"%s\" has none", name, m->c.variant);
            if (!pi) return vrl_error("model: parameter %s is not in the table", name);
            if (pi->numel != t[j].numel)
                return vrl_error("model: parameter %s has %zu elements, the config needs %zu", name, pi->numel, t[j].numel);
            *t[j].pp = m->params + pi->offset;
            *t[j].gp = m->grads + pi->offset;
        }
        LayerActs *a = &m->acts[l];
        m->qsrc[l] = p->has_q[l] ? a->qraw : NULL;
        m->ksrc[l] = p->has_k[l] ? a->kraw : NULL;
        m->vsrc[l] = p->has_v[l] ? a->v : NULL;
        m->asrc[l] = a->att;
    }
    memcpy(m->vcoef, p->cv, (size_t)L * L * sizeof *m->vcoef);
    return 0;
}

void vp_model_free(RefModel *m) {
    value_plan_free(&m->plan);
    free(m->vp_arena);
    m->vp_arena = NULL;
}

void vp_attention_forward(RefModel *m, int l, const real *x) {
    const ValuePlan *p = &m->plan;
    const LayerTensors *w = &m->lp[l];
    LayerActs *a = &m->acts[l];
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, kvC = m->kvC, L = m->L, mp = p->cross[l];
    const size_t row = (size_t)l * L;
    /* attention norm input [N,d]: the hidden residual mixes in H_0; the stream is unchanged */
    const real *hsrc[2] = {x, m->emb};
    const double hc[2] = {p->hx[l], p->hh[l]};
    mix_forward(a->xn, hsrc, hc, 2, (size_t)N * d);
    rmsnorm_forward(a->ln1, a->ln1_rstd, a->xn, w->ln1, N, d, m->c.norm_eps);
    if (w->wq) matmul_forward(a->qraw, a->ln1, w->wq, N, d, qC);
    if (w->wk) matmul_forward(a->kraw, a->ln1, w->wk, N, d, kvC);
    if (w->wv) matmul_forward(a->v, a->ln1, w->wv, N, d, kvC);
    /* trainable coefficients: this forward uses the parameters' current values */
    for (int j = 0; j < p->n_train[l]; j++) m->vcoef[row + p->train_src[row + j]] = w->lam[j];
    mix_forward(a->q, m->qsrc, p->cq + row, l + 1, (size_t)N * qC);
    mix_forward(a->k, m->ksrc, p->ck + row, l + 1, (size_t)N * kvC);
    mix_forward(a->vin, m->vsrc, m->vcoef + row, l + 1, (size_t)N * kvC);
    rope_forward(a->q, a->q, m->cos_t, m->sin_t, B, T, m->NH, m->hd);
    rope_forward(a->k, a->k, m->cos_t, m->sin_t, B, T, m->NKV, m->hd);
    /* A_l over its own keys (and layer m's post-RoPE keys for Eq. 2), then P = Σ ca·A_i */
    const real *k2 = mp >= 0 ? m->acts[mp].k : NULL, *v2 = mp >= 0 ? m->acts[mp].v : NULL;
    attn_probs_forward(a->att, a->q, a->k, k2, B, T, m->NH, m->NKV, m->hd);
    mix_forward(a->attp, m->asrc, p->ca + row, l + 1, (size_t)B * m->NH * T * width(m, l));
    attn_apply_forward(a->atty, a->attp, a->vin, v2, B, T, m->NH, m->NKV, m->hd);
    /* U += repeat_kv(Σ ce·V_i): NeuTRENO and Eq. 6 corrections, in kv space */
    mix_forward(a->corr, m->vsrc, p->ce + row, l + 1, (size_t)N * kvC);
    repeat_kv_add_forward(a->atty, a->corr, N, m->NH, m->NKV, m->hd);
}

void vp_backward_begin(RefModel *m) {
    const size_t N = (size_t)m->N, BHT = (size_t)m->B * m->NH * m->T;
    GradActs *g = &m->g;
    for (int l = 0; l < m->L; l++) {
        zero(g->dv[l], N * m->kvC);
        zero(g->dqraw[l], N * m->qC);
        zero(g->dkraw[l], N * m->kvC);
        zero(g->dkrot[l], N * m->kvC);
        zero(g->datt[l], BHT * width(m, l));
    }
    zero(g->demb, N * m->d);
}

void vp_attention_backward(RefModel *m, int l, real *dx) {
    const ValuePlan *p = &m->plan;
    const LayerTensors *w = &m->lp[l];
    LayerTensors *dw = &m->lg[l];
    LayerActs *a = &m->acts[l];
    GradActs *g = &m->g;
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, kvC = m->kvC, L = m->L, mp = p->cross[l];
    const size_t row = (size_t)l * L, natt = (size_t)B * m->NH * T * width(m, l);
    const real *k2 = mp >= 0 ? m->acts[mp].k : NULL, *v2 = mp >= 0 ? m->acts[mp].v : NULL;
    /* corrections: d(Σ ce·V_i) = the query heads' gradients summed per kv head */
    zero(g->dcorr, (size_t)N * kvC);
    repeat_kv_add_backward(g->dcorr, g->datty, N, m->NH, m->NKV, m->hd);
    mix_backward(g->dv, NULL, g->dcorr, m->vsrc, p->ce + row, l + 1, (size_t)N * kvC);
    /* U = P·[V'; V_m]: d(P) to every A_i mixed in, d(V') below, d(V_m) straight to layer m */
    zero(g->dattp, natt);
    zero(g->dvin, (size_t)N * kvC);
    attn_apply_backward(g->dattp, g->dvin, mp >= 0 ? g->dv[mp] : NULL, g->datty, a->attp, a->vin, v2, B, T, m->NH,
                        m->NKV, m->hd);
    mix_backward(g->datt, NULL, g->dattp, m->asrc, p->ca + row, l + 1, natt);
    /* V' = Σ cv·V_i; a trainable entry gets Σ dV'·V_i */
    double *dcoef = p->n_train[l] ? g->dcoef : NULL;
    if (dcoef) memset(dcoef, 0, (size_t)L * sizeof *dcoef);
    mix_backward(g->dv, dcoef, g->dvin, m->vsrc, m->vcoef + row, l + 1, (size_t)N * kvC);
    for (int j = 0; j < p->n_train[l]; j++) dw->lam[j] += (real)dcoef[p->train_src[row + j]];
    /* A_l's softmax: d(A_l) is complete (later layers that mix it in ran first) */
    zero(g->dqr, (size_t)N * qC);
    attn_probs_backward(g->dqr, g->dkrot[l], mp >= 0 ? g->dkrot[mp] : NULL, g->datt[l], a->att, a->q, a->k, k2, B,
                        T, m->NH, m->NKV, m->hd);
    /* RoPE, then the Q/K mixes back to the raw projections they read */
    zero(g->dq, (size_t)N * qC);
    zero(g->dk, (size_t)N * kvC);
    rope_backward(g->dq, g->dqr, m->cos_t, m->sin_t, B, T, m->NH, m->hd);
    rope_backward(g->dk, g->dkrot[l], m->cos_t, m->sin_t, B, T, m->NKV, m->hd);
    mix_backward(g->dqraw, NULL, g->dq, m->qsrc, p->cq + row, l + 1, (size_t)N * qC);
    mix_backward(g->dkraw, NULL, g->dk, m->ksrc, p->ck + row, l + 1, (size_t)N * kvC);
    /* this layer's projections: their raw outputs' gradients are complete now */
    zero(g->dln, (size_t)N * d);
    if (w->wq) matmul_backward(g->dln, dw->wq, g->dqraw[l], a->ln1, w->wq, N, d, qC);
    if (w->wk) matmul_backward(g->dln, dw->wk, g->dkraw[l], a->ln1, w->wk, N, d, kvC);
    if (w->wv) matmul_backward(g->dln, dw->wv, g->dv[l], a->ln1, w->wv, N, d, kvC);
    zero(g->dxn, (size_t)N * d);
    rmsnorm_backward(g->dxn, dw->ln1, g->dln, a->xn, w->ln1, a->ln1_rstd, N, d);
    /* xn = hx·x + hh·H_0 */
    real *dh[2] = {dx, g->demb};
    const real *hsrc[2] = {a->x_in, m->emb};
    const double hc[2] = {p->hx[l], p->hh[l]};
    mix_backward(dh, NULL, g->dxn, hsrc, hc, 2, (size_t)N * d);
}

void vp_backward_end(RefModel *m, real *demb) {
    for (int l = 0; l < m->L; l++)
        if (m->plan.hh[l] != 0) {
            residual_backward(demb, NULL, m->g.demb, (size_t)m->N * m->d);
            return;
        }
}
