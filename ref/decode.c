/* decode.c (ref): one position at a time through the model with a KV cache (decode.h).
 *
 * For the token at position p of each sequence (shapes per step: B sequences, one token each):
 *
 *   x    = the depth mixer's input of the attention sublayer   [B,d]   (ref/stream.c, per token)
 *   ln   = RMSNorm(hx·x + hh·H_0)·g1                           [B,d]
 *   Q_l  = ln·W_qᵀ (kept for this token: query mixes read it)   [B,qC]
 *   K_l  = RoPE_p(ln·W_kᵀ) -> cache kc[l][b,p]                  [B,kvC]
 *   V_l  = ln·W_vᵀ         -> cache vc[l][b,p]                  [B,kvC]
 *   q    = RoPE_p(Σ cq·Q_i)
 *   A_l[t] = softmax_t(Σ_i ck_i·q·kc[i][t] / √hd), t ≤ p   (Eq. 2: one softmax over own and layer
 *            m's keys, m's keys being Σ ck[m][i]·kc[i])
 *   U    = Σ_t P[t]·(Σ_i cv_i·vc[i][t]) (+ Σ_t P[T+t]·vc[m][t]) + repeat_kv(Σ_i ce_i·vc[i][p]),
 *          P = Σ ca·A_i (this token's rows)
 *
 * RoPE is linear and position-wise, so mixing rotated keys equals rotating mixed keys, and the
 * mixes of K and V distribute over the dot products: the cache keeps only the raw projections
 * that exist (common/model/kv_layout.h) and every variant's mix is formed here, as the value
 * path of ref/value_path.c forms it for a whole sequence. Sums over cached positions run in
 * double. */
#include "ref/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/backend.h"
#include "ref/attn_ops.h"
#include "ref/gpt2_decode.h"
#include "ref/ops.h"
#include "ref/stream.h"

typedef struct {
    const real *ln1, *wq, *wk, *wv, *lam, *wo, *ln2, *wgate, *wup, *wdown;
} DecodeLayer;

struct KvCache {
    ModelConfig c;
    const real *params;
    int B, Tmax, pos, d, NH, NKV, hd, qC, kvC, F, V, L;
    const ValuePlan *plan;    /* the spec's (not owned) */
    double *vcoef;        /* [L,L] plan.cv with the trainable entries read from the weights */
    DecodeLayer *w;       /* [L] */
    const real *wte, *lnf, *lm_head;
    real **kc, **vc;      /* [L] caches [B,Tmax,kvC], NULL where the layer has no W_k / W_v */
    real *cos_t, *sin_t;  /* [Tmax,hd/2] */
    /* one token's scratch */
    int32_t *tok;         /* [B] */
    real *emb;            /* [B,d]  H_0 */
    real *xn, *ln, *rstd; /* [B,d], [B,d], [B] */
    real **qraw;          /* [L] [B,qC] */
    real *q, *kv_tmp;     /* [B,qC], [B,kvC] */
    real **att;           /* [L] [B,NH,2·Tmax] this token's attention rows (Eq. 2: own keys at 0..p,
                           * layer m's at p+1..2p+1) */
    real *attp;           /* [B,NH,2·Tmax] Σ ca·A_i */
    double *acc;          /* [hd] */
    real *atty, *corr;    /* [B,qC], [B,kvC] */
    real **y;             /* [2L+1] depth-mixer sources [B,d]: y[0] = emb, y_attn, y_mlp */
    real *gate, *up, *swi; /* [B,F] */
    real *lnf_out, *logits; /* [B,d], [B,V] */
    StreamState *stream;  /* the depth mixer (ref/stream.c) over N = B tokens, reading y */
    Gpt2KvCache *gpt2;    /* a gpt2 config: its own decoder (ref/gpt2_decode.c), which replaces
                           * everything above but tok and logits */
};

/* A weight at its slot in the spec's layout; NULL where the plan drops it. */
static const real *tensor(const KvCache *kv, TensorSlot slot) { return slot.numel ? kv->params + slot.offset : NULL; }

void kv_cache_free(KvCache *kv) {
    if (!kv) return;
    stream_destroy(kv->stream);
    gpt2_kv_free(kv->gpt2);
    for (int l = 0; l < kv->L && kv->kc; l++) {
        free(kv->kc[l]);
        free(kv->vc[l]);
        free(kv->qraw[l]);
        free(kv->att[l]);
    }
    for (int s = 1; s < 2 * kv->L + 1 && kv->y; s++) free(kv->y[s]);
    void *bufs[] = {kv->vcoef, kv->w, kv->kc, kv->vc, kv->cos_t, kv->sin_t, kv->tok, kv->emb, kv->xn, kv->ln,
                    kv->rstd, kv->qraw, kv->q, kv->kv_tmp, kv->att, kv->attp, kv->acc, kv->atty, kv->corr, kv->y,
                    kv->gate, kv->up, kv->swi, kv->lnf_out, kv->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(kv);
}

static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }
#define ALLOC(p, n) (((p) = zalloc((size_t)(n), sizeof *(p))) != NULL)

KvCache *kv_cache_create(const ModelSpec *spec, const real *params, int batch, int max_seq) {
    const ModelConfig *c = &spec->config;
    if (batch < 1 || max_seq < 1 || max_seq > c->max_seq) {
        vrl_error("decode: batch must be >= 1 and max_seq in [1, %d] (got %d, %d)", c->max_seq, batch, max_seq);
        return NULL;
    }
    KvCache *kv = calloc(1, sizeof *kv);
    if (!kv) {
        vrl_error("decode: out of memory");
        return NULL;
    }
    kv->c = *c;
    kv->plan = &spec->value;
    kv->params = params;
    kv->B = batch;
    kv->Tmax = max_seq;
    kv->d = c->d_model;
    kv->NH = c->n_heads;
    kv->NKV = c->n_kv_heads;
    kv->hd = config_head_dim(c);
    kv->qC = kv->NH * kv->hd;
    kv->kvC = kv->NKV * kv->hd;
    kv->F = c->d_ffn;
    kv->V = c->vocab_size;
    kv->L = c->n_layers;
    if (c->arch == ARCH_GPT2) {
        kv->L = 0; /* no llama layers to free */
        if (!ALLOC(kv->tok, batch) || !ALLOC(kv->logits, (size_t)batch * kv->V)) {
            vrl_error("decode: out of memory for a %d x %d cache", batch, max_seq);
            kv_cache_free(kv);
            return NULL;
        }
        if (!(kv->gpt2 = gpt2_kv_create(spec, params, batch, max_seq))) {
            kv_cache_free(kv);
            return NULL;
        }
        return kv;
    }
    const int B = batch, L = kv->L, d = kv->d;
    const size_t BT = (size_t)B * max_seq, row2 = (size_t)B * kv->NH * 2 * max_seq;
    const ValuePlan *p = kv->plan;
    int ok = ALLOC(kv->vcoef, (size_t)L * L) && ALLOC(kv->w, L) && ALLOC(kv->kc, L) && ALLOC(kv->vc, L) &&
             ALLOC(kv->qraw, L) && ALLOC(kv->att, L) && ALLOC(kv->y, 2 * L + 1) &&
             ALLOC(kv->cos_t, (size_t)max_seq * (kv->hd / 2)) && ALLOC(kv->sin_t, (size_t)max_seq * (kv->hd / 2)) &&
             ALLOC(kv->tok, B) && ALLOC(kv->emb, (size_t)B * d) && ALLOC(kv->xn, (size_t)B * d) &&
             ALLOC(kv->ln, (size_t)B * d) && ALLOC(kv->rstd, B) && ALLOC(kv->q, (size_t)B * kv->qC) &&
             ALLOC(kv->kv_tmp, (size_t)B * kv->kvC) && ALLOC(kv->attp, row2) && ALLOC(kv->acc, kv->hd) &&
             ALLOC(kv->atty, (size_t)B * kv->qC) && ALLOC(kv->corr, (size_t)B * kv->kvC) &&
             ALLOC(kv->gate, (size_t)B * kv->F) && ALLOC(kv->up, (size_t)B * kv->F) &&
             ALLOC(kv->swi, (size_t)B * kv->F) && ALLOC(kv->lnf_out, (size_t)B * d) &&
             ALLOC(kv->logits, (size_t)B * kv->V);
    for (int l = 0; l < L && ok; l++)
        ok = (!p->has_k[l] || ALLOC(kv->kc[l], BT * kv->kvC)) && (!p->has_v[l] || ALLOC(kv->vc[l], BT * kv->kvC)) &&
             ALLOC(kv->qraw[l], (size_t)B * kv->qC) && ALLOC(kv->att[l], row2);
    for (int s = 1; s < 2 * L + 1 && ok; s++) ok = ALLOC(kv->y[s], (size_t)B * d);
    if (!ok) {
        vrl_error("decode: out of memory for a %d x %d cache", batch, max_seq);
        kv_cache_free(kv);
        return NULL;
    }
    kv->y[0] = kv->emb;
    /* weights, at the spec's offsets (as ref/model.c and ref/value_path.c bind them) */
    const ModelLayout *lay = &spec->layout;
    kv->wte = tensor(kv, lay->embed);
    kv->lnf = tensor(kv, lay->norm);
    kv->lm_head = tensor(kv, lay->head);
    for (int l = 0; l < L; l++) {
        const LayerLayout *ll = &lay->layer[l];
        DecodeLayer *w = &kv->w[l];
        w->ln1 = tensor(kv, ll->ln1), w->wq = tensor(kv, ll->wq), w->wk = tensor(kv, ll->wk);
        w->wv = tensor(kv, ll->wv), w->lam = tensor(kv, ll->lam), w->wo = tensor(kv, ll->wo);
        w->ln2 = tensor(kv, ll->ln2), w->wgate = tensor(kv, ll->wgate), w->wup = tensor(kv, ll->wup);
        w->wdown = tensor(kv, ll->wdown);
    }
    rope_tables(kv->cos_t, kv->sin_t, max_seq, kv->hd, c->rope_theta);
    /* the depth mixer runs on one token per sequence (N = B); its forward only reads the
     * weights, and without a backward it needs no gradient buffer */
    if (!(kv->stream = stream_create(spec, B, (real *)params, NULL, (const real *const *)kv->y))) {
        kv_cache_free(kv);
        return NULL;
    }
    return kv;
}

int kv_cache_length(const KvCache *kv) { return kv->pos; }

/* Layer l's attention for this token at position p, from kv->ln [B,d] to kv->atty [B,qC]. */
static void attention_step(KvCache *kv, int l, int p) {
    const ValuePlan *pl = kv->plan;
    const DecodeLayer *w = &kv->w[l];
    const int B = kv->B, L = kv->L, NH = kv->NH, NKV = kv->NKV, hd = kv->hd, qC = kv->qC, kvC = kv->kvC;
    const int h2 = hd / 2, group = NH / NKV, mp = pl->cross[l], W2 = 2 * kv->Tmax;
    const size_t row = (size_t)l * L, pT = (size_t)p * kvC;
    /* raw projections of this token; keys rotated and both appended to the cache */
    if (w->wq) matmul_forward(kv->qraw[l], kv->ln, w->wq, B, kv->d, qC);
    if (w->wk) {
        matmul_forward(kv->kv_tmp, kv->ln, w->wk, B, kv->d, kvC);
        rope_forward(kv->kv_tmp, kv->kv_tmp, kv->cos_t + (size_t)p * h2, kv->sin_t + (size_t)p * h2, B, 1, NKV, hd);
        for (int b = 0; b < B; b++)
            memcpy(kv->kc[l] + (size_t)b * kv->Tmax * kvC + pT, kv->kv_tmp + (size_t)b * kvC, kvC * sizeof(real));
    }
    if (w->wv) {
        matmul_forward(kv->kv_tmp, kv->ln, w->wv, B, kv->d, kvC);
        for (int b = 0; b < B; b++)
            memcpy(kv->vc[l] + (size_t)b * kv->Tmax * kvC + pT, kv->kv_tmp + (size_t)b * kvC, kvC * sizeof(real));
    }
    mix_forward(kv->q, (const real *const *)kv->qraw, pl->cq + row, l + 1, (size_t)B * qC);
    rope_forward(kv->q, kv->q, kv->cos_t + (size_t)p * h2, kv->sin_t + (size_t)p * h2, B, 1, NH, hd);
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / group;
            const real *qt = kv->q + (size_t)b * qC + h * hd;
            real *a = kv->att[l] + ((size_t)b * NH + h) * W2;
            double mx = -INFINITY;
            /* scores: own keys Σ ck[l][i]·K_i at 0..p, then (Eq. 2) layer m's at p+1..2p+1 */
            for (int half = 0; half < (mp >= 0 ? 2 : 1); half++) {
                const double *ck = pl->ck + (size_t)(half ? mp : l) * L;
                for (int t2 = 0; t2 <= p; t2++) {
                    double s = 0;
                    for (int i = 0; i <= (half ? mp : l); i++) {
                        if (ck[i] == 0) continue;
                        const real *kt = kv->kc[i] + ((size_t)b * kv->Tmax + t2) * kvC + kh * hd;
                        double dt = 0;
                        for (int e = 0; e < hd; e++) dt += (double)qt[e] * kt[e];
                        s += ck[i] * dt;
                    }
                    s *= scale;
                    a[half * (p + 1) + t2] = (real)s;
                    if (s > mx) mx = s;
                }
            }
            const int n = (mp >= 0 ? 2 : 1) * (p + 1);
            double z = 0;
            for (int c = 0; c < n; c++) z += exp((double)a[c] - mx);
            for (int c = 0; c < n; c++) a[c] = (real)(exp((double)a[c] - mx) / z);
        }
    /* P = Σ ca·A_i over this token's rows (one row per (b, h), width n) */
    const int n = (mp >= 0 ? 2 : 1) * (p + 1);
    for (size_t r = 0; r < (size_t)B * NH; r++) {
        real *o = kv->attp + r * W2;
        for (int c = 0; c < n; c++) o[c] = 0;
        for (int i = 0; i <= l; i++) {
            const double ca = pl->ca[row + i];
            if (ca == 0) continue;
            const real *a = kv->att[i] + r * W2;
            for (int c = 0; c < n; c++) o[c] += (real)(ca * a[c]);
        }
    }
    /* U = Σ_i cv_i·(P·V_i) (+ P_m·V_m), then the kv-space corrections of this token */
    const double *cv = kv->vcoef + row;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / group;
            const real *pr = kv->attp + ((size_t)b * NH + h) * W2;
            for (int e = 0; e < hd; e++) kv->acc[e] = 0;
            for (int half = 0; half < (mp >= 0 ? 2 : 1); half++)
                for (int i = 0; i <= l; i++) {
                    const double ci = half ? (i == mp) : cv[i];
                    if (ci == 0) continue;
                    for (int t2 = 0; t2 <= p; t2++) {
                        const double pw = ci * pr[half * (p + 1) + t2];
                        const real *vt = kv->vc[i] + ((size_t)b * kv->Tmax + t2) * kvC + kh * hd;
                        for (int e = 0; e < hd; e++) kv->acc[e] += pw * vt[e];
                    }
                }
            real *u = kv->atty + (size_t)b * qC + h * hd;
            for (int e = 0; e < hd; e++) u[e] = (real)kv->acc[e];
        }
    for (int b = 0; b < B; b++) {
        real *cr = kv->corr + (size_t)b * kvC;
        for (int e = 0; e < kvC; e++) cr[e] = 0;
        for (int i = 0; i <= l; i++) {
            const double ce = pl->ce[row + i];
            if (ce == 0) continue;
            const real *vt = kv->vc[i] + ((size_t)b * kv->Tmax + p) * kvC;
            for (int e = 0; e < kvC; e++) cr[e] += (real)(ce * vt[e]);
        }
    }
    repeat_kv_add_forward(kv->atty, kv->corr, B, NH, NKV, hd);
}

/* One position for every sequence: kv->tok [B] in, kv->logits [B,V] out. */
static void decode_step(KvCache *kv) {
    const ValuePlan *pl = kv->plan;
    const int B = kv->B, d = kv->d, F = kv->F, p = kv->pos;
    const double eps = kv->c.norm_eps;
    embedding_forward(kv->emb, kv->tok, kv->wte, B, d);
    for (int l = 0; l < kv->L; l++) {
        const DecodeLayer *w = &kv->w[l];
        const real *x = stream_forward(kv->stream, 2 * l); /* [B,d] */
        const real *hsrc[2] = {x, kv->emb};
        const double hc[2] = {pl->hx[l], pl->hh[l]};
        mix_forward(kv->xn, hsrc, hc, 2, (size_t)B * d);
        rmsnorm_forward(kv->ln, kv->rstd, kv->xn, w->ln1, B, d, eps);
        attention_step(kv, l, p);
        matmul_forward(kv->y[2 * l + 1], kv->atty, w->wo, B, kv->qC, d);
        const real *h = stream_forward(kv->stream, 2 * l + 1);
        rmsnorm_forward(kv->ln, kv->rstd, h, w->ln2, B, d, eps);
        matmul_forward(kv->gate, kv->ln, w->wgate, B, d, F);
        matmul_forward(kv->up, kv->ln, w->wup, B, d, F);
        swiglu_forward(kv->swi, kv->gate, kv->up, (size_t)B * F);
        matmul_forward(kv->y[2 * l + 2], kv->swi, w->wdown, B, F, d);
    }
    const real *x = stream_forward(kv->stream, 2 * kv->L);
    rmsnorm_forward(kv->lnf_out, kv->rstd, x, kv->lnf, B, d, eps);
    matmul_forward(kv->logits, kv->lnf_out, kv->lm_head, B, d, kv->V);
    kv->pos++;
}

int kv_decode(KvCache *kv, const int32_t *tokens, int n_new, real *logits) {
    const int B = kv->B, V = kv->V, L = kv->L;
    if (backend_decode_check(tokens, B, n_new, kv->pos, kv->Tmax, V) < 0) return -1;
    /* trainable value coefficients: their current values, as a forward reads them */
    const ValuePlan *pl = kv->plan;
    if (L) memcpy(kv->vcoef, pl->cv, (size_t)L * L * sizeof *kv->vcoef);
    for (int l = 0; l < L; l++)
        for (int j = 0; j < pl->n_train[l]; j++)
            kv->vcoef[(size_t)l * L + pl->train_src[(size_t)l * L + j]] = kv->w[l].lam[j];
    for (int j = 0; j < n_new; j++) {
        for (int b = 0; b < B; b++) kv->tok[b] = tokens[(size_t)b * n_new + j];
        if (kv->gpt2) gpt2_kv_step(kv->gpt2, kv->tok, kv->pos++, kv->logits);
        else decode_step(kv);
        for (int b = 0; b < B; b++)
            memcpy(logits + ((size_t)b * n_new + j) * V, kv->logits + (size_t)b * V, (size_t)V * sizeof *logits);
    }
    return 0;
}
