/* gpt2_decode.c (ref): GPT-2 one position at a time with a KV cache (gpt2_decode.h).
 *
 * For the token at position p of each sequence (B sequences, one token each):
 *
 *   x    = wte[tok] + wpe[p]                                    [B,d]
 *   layer l: a = LN_1(x); [q|k|v] = a·W_attn + b_attn           [B,3d]  (k, v -> cache [b,p])
 *            A[t] = softmax_t(q·k_t/√hd), t ≤ p; U = Σ_t A[t]·v_t   per head of hd
 *            x += U·W_proj + b_proj;  x += gelu_tanh(LN_2(x)·W_fc + b_fc)·W_mproj + b_mproj
 *   logits = LN_f(x)·lm_headᵀ                                   [B,V]
 *
 * The same operations as gpt2_forward at evaluation (no dropout); sums over cached positions run
 * in double, as ref/decode.c's. */
#include "ref/gpt2_decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/gpt2.h"
#include "ref/ops.h"

enum { LN1W, LN1B, AW, AB, PW, PB, LN2W, LN2B, FW, FB, MW, MB, NW };
static const char *const weight_names[NW] = {"ln_1.weight",        "ln_1.bias",       "attn.c_attn.weight",
                                             "attn.c_attn.bias",   "attn.c_proj.weight", "attn.c_proj.bias",
                                             "ln_2.weight",        "ln_2.bias",       "mlp.c_fc.weight",
                                             "mlp.c_fc.bias",      "mlp.c_proj.weight", "mlp.c_proj.bias"};

struct Gpt2KvCache {
    int B, Tmax, d, NH, hd, F, V, L;
    double eps;
    const real *wte, *wpe, *lnfw, *lnfb, *lm_head; /* [V,d], [max_seq,d], [d], [d], [V,d] */
    const real *(*w)[NW];                          /* [L] each layer's weights, weight_names' order */
    real **kc, **vc;                               /* [L] caches [B,Tmax,d] */
    /* one token's scratch */
    real *x, *ln, *mean, *rstd; /* [B,d] residual stream, [B,d] a LayerNorm's output, [B], [B] */
    real *qkv, *atty, *y;       /* [B,3d], [B,d], [B,d] */
    real *fc, *gel;             /* [B,F] */
    double *score, *acc;        /* [Tmax], [hd] */
};

void gpt2_kv_free(Gpt2KvCache *kv) {
    if (!kv) return;
    for (int l = 0; l < kv->L && kv->kc; l++) {
        free(kv->kc[l]);
        free(kv->vc[l]);
    }
    void *bufs[] = {kv->w,    kv->kc,  kv->vc, kv->x,  kv->ln,  kv->mean,  kv->rstd,
                    kv->qkv,  kv->atty, kv->y, kv->fc, kv->gel, kv->score, kv->acc};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(kv);
}

static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }
#define ALLOC(p, n) (((p) = zalloc((size_t)(n), sizeof *(p))) != NULL)

Gpt2KvCache *gpt2_kv_create(const ModelSpec *spec, const real *params, int batch, int max_seq) {
    const ModelConfig *c = &spec->config;
    Gpt2KvCache *kv = calloc(1, sizeof *kv);
    if (!kv) {
        vrl_error("decode: out of memory");
        return NULL;
    }
    kv->B = batch, kv->Tmax = max_seq, kv->d = c->d_model, kv->NH = c->n_heads, kv->hd = c->d_model / c->n_heads;
    kv->F = c->d_ffn, kv->V = c->vocab_size, kv->L = c->n_layers, kv->eps = c->norm_eps;
    const int B = batch, L = kv->L, d = kv->d, F = kv->F;
    const size_t BT = (size_t)B * max_seq;
    int ok = ALLOC(kv->w, L) && ALLOC(kv->kc, L) && ALLOC(kv->vc, L) && ALLOC(kv->x, (size_t)B * d) &&
             ALLOC(kv->ln, (size_t)B * d) && ALLOC(kv->mean, B) && ALLOC(kv->rstd, B) &&
             ALLOC(kv->qkv, (size_t)B * 3 * d) && ALLOC(kv->atty, (size_t)B * d) && ALLOC(kv->y, (size_t)B * d) &&
             ALLOC(kv->fc, (size_t)B * F) && ALLOC(kv->gel, (size_t)B * F) && ALLOC(kv->score, max_seq) &&
             ALLOC(kv->acc, kv->hd);
    for (int l = 0; l < L && ok; l++) ok = ALLOC(kv->kc[l], BT * d) && ALLOC(kv->vc[l], BT * d);
    if (!ok) {
        vrl_error("decode: out of memory for a %d x %d cache", batch, max_seq);
        gpt2_kv_free(kv);
        return NULL;
    }
    /* weights at the table's offsets, as gpt2_create binds them */
    const ParamTable *t = &spec->table;
    const size_t V = (size_t)kv->V, ud = (size_t)d, uF = (size_t)F;
    size_t o = 0;
    int rc = 0;
#define BIND(dst, name, numel) (rc = rc ? rc : param_table_expect(t, name, (numel), &o), dst = params + o)
    BIND(kv->wte, "transformer.wte.weight", V * ud);
    BIND(kv->wpe, "transformer.wpe.weight", (size_t)c->max_seq * ud);
    BIND(kv->lnfw, "transformer.ln_f.weight", ud);
    BIND(kv->lnfb, "transformer.ln_f.bias", ud);
    BIND(kv->lm_head, "lm_head.weight", V * ud);
    const size_t numel[NW] = {ud, ud, ud * 3 * ud, 3 * ud, ud * ud, ud, ud, ud, ud * uF, uF, uF * ud, ud};
    char name[PARAM_NAME_LEN];
    for (int l = 0; l < L && !rc; l++)
        for (int k = 0; k < NW && !rc; k++) {
            snprintf(name, sizeof name, "transformer.h.%d.%s", l, weight_names[k]);
            BIND(kv->w[l][k], name, numel[k]);
        }
#undef BIND
    if (rc) {
        gpt2_kv_free(kv);
        return NULL;
    }
    return kv;
}

/* out = inp·W + b (Conv1D).  out [N,OC], inp [N,C], W [C,OC], b [OC] */
static void conv1d(real *out, const real *inp, const real *W, const real *b, int N, int C, int OC) {
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, OC, C, 1, inp, C, W, OC, 0, out, OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) out[(size_t)n * OC + o] += b[o];
}

/* Causal attention of this token over the cache: qkv [B,3d] (q of position p) -> atty [B,d]. */
static void attend(Gpt2KvCache *kv, int l, int p) {
    const int d = kv->d, hd = kv->hd;
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < kv->B; b++) {
        const real *kb = kv->kc[l] + (size_t)b * kv->Tmax * d, *vb = kv->vc[l] + (size_t)b * kv->Tmax * d;
        for (int h = 0; h < kv->NH; h++) {
            const real *q = kv->qkv + (size_t)b * 3 * d + h * hd;
            double mx = -INFINITY, z = 0;
            for (int t = 0; t <= p; t++) {
                double s = 0;
                for (int e = 0; e < hd; e++) s += (double)q[e] * kb[(size_t)t * d + h * hd + e];
                kv->score[t] = s * scale;
                if (kv->score[t] > mx) mx = kv->score[t];
            }
            for (int t = 0; t <= p; t++) z += (kv->score[t] = exp(kv->score[t] - mx));
            for (int e = 0; e < hd; e++) kv->acc[e] = 0;
            for (int t = 0; t <= p; t++)
                for (int e = 0; e < hd; e++) kv->acc[e] += kv->score[t] / z * vb[(size_t)t * d + h * hd + e];
            for (int e = 0; e < hd; e++) kv->atty[(size_t)b * d + h * hd + e] = (real)kv->acc[e];
        }
    }
}

void gpt2_kv_step(Gpt2KvCache *kv, const int32_t *tokens, int p, real *logits) {
    const int B = kv->B, d = kv->d, F = kv->F;
    const size_t Bd = (size_t)B * d;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < d; i++)
            kv->x[(size_t)b * d + i] = kv->wte[(size_t)tokens[b] * d + i] + kv->wpe[(size_t)p * d + i];
    for (int l = 0; l < kv->L; l++) {
        const real *const *w = kv->w[l];
        gpt2_layernorm_forward(kv->ln, kv->mean, kv->rstd, kv->x, w[LN1W], w[LN1B], B, d, kv->eps);
        conv1d(kv->qkv, kv->ln, w[AW], w[AB], B, d, 3 * d);
        for (int b = 0; b < B; b++) {
            const size_t at = ((size_t)b * kv->Tmax + p) * d;
            memcpy(kv->kc[l] + at, kv->qkv + (size_t)b * 3 * d + d, (size_t)d * sizeof(real));
            memcpy(kv->vc[l] + at, kv->qkv + (size_t)b * 3 * d + 2 * d, (size_t)d * sizeof(real));
        }
        attend(kv, l, p);
        conv1d(kv->y, kv->atty, w[PW], w[PB], B, d, d);
        for (size_t i = 0; i < Bd; i++) kv->x[i] += kv->y[i];
        gpt2_layernorm_forward(kv->ln, kv->mean, kv->rstd, kv->x, w[LN2W], w[LN2B], B, d, kv->eps);
        conv1d(kv->fc, kv->ln, w[FW], w[FB], B, d, F);
        gpt2_gelu_forward(kv->gel, kv->fc, (size_t)B * F);
        conv1d(kv->y, kv->gel, w[MW], w[MB], B, F, d);
        for (size_t i = 0; i < Bd; i++) kv->x[i] += kv->y[i];
    }
    gpt2_layernorm_forward(kv->ln, kv->mean, kv->rstd, kv->x, kv->lnfw, kv->lnfb, B, d, kv->eps);
    matmul_forward(logits, kv->ln, kv->lm_head, B, d, kv->V);
}
