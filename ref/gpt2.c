/* gpt2.c: the GPT-2 baseline of formulas.md §1 (transformers' GPT2LMHeadModel), forward and
 * backward, its own model behind the ref backend (ref/net.h's RefNet table): the trainer,
 * checkpoints and optimizer see only its flat buffers. Compiled twice (real.h).
 *
 *   x_0 = drop(wte[tok] + wpe[t])
 *   layer l (0-based): a = LN_1(x);  [q|k|v] = a·W_attn + b_attn   (Conv1D: W [in, out])
 *                      U = drop_A(softmax(q kᵀ/√hd, causal))·v      (heads of hd = d/NH)
 *                      h = x + drop(U·W_proj + b_proj)
 *                      x' = h + drop(gelu_tanh(LN_2(h)·W_fc + b_fc)·W_mproj + b_mproj)
 *   logits = LN_f(x_L)·lm_headᵀ (untied);  LN: (x − mean)/sqrt(var + eps)·w + b, eps 1e-5
 *
 * The attention is the value path's (attn_ops.h): P = attn_probs(q, k), U = attn_apply(P ⊙ M, v)
 * with M the dropout mask of P, on q, k, v split from the packed projection.
 *
 * Dropout (rate c.dropout, all three places, as the official runs): only in training
 * forwards (gpt2_set_dropout), inverted scaling 1/(1 − p). The mask element i of site
 * `site` is keep ⇔ u ≥ p with u = uniform(splitmix64-mix of (seed, step, micro, site, i)),
 * so a mask is a pure function of its key: reproducible, independent of thread order, and
 * the same in forward, backward and a finite-difference check. Sites: 0 = embeddings,
 * 1 + 3l = attention probabilities, 2 + 3l = attention residual, 3 + 3l = MLP residual. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/rng.h"
#include "ref/attn_ops.h"
#include "ref/arena.h"
#include "ref/gpt2.h"
#include "ref/model.h"
#include "ref/ops.h"

/* Shapes: B batch, T seq, N = B*T, d width, NH heads, hd = d/NH, F MLP width, V vocab, L layers. */
struct Gpt2Model {
    const ModelSpec *spec;                               /* not owned */
    int B, T, N, d, NH, hd, F, V, L;
    double eps, p_drop;                                  /* LayerNorm eps, dropout rate */
    real *params, *grads, *exp_avg, *exp_avg_sq;         /* [table.total] each */
    int32_t *tokens;                                     /* [N] the last forward's tokens */
    real *logits, *losses;                               /* [N,V], [N] */
    double *lse;                                         /* [N] log Σ exp of each logits row */
    int have_forward;
    void *arena;                                         /* every buffer of the model */
    real *wte, *wpe, *lnfw, *lnfb, *lm_head;            /* param views */
    real *x0, *m0;                                       /* [N,d] embeddings after dropout, mask */
    real **x, **ln1, **mean1, **rstd1, **q, **k, **v, **att, **mA, **atty, **ya, **mya, **h;
    real **ln2, **mean2, **rstd2, **fc, **gel, **ym, **mym;
    real *lnf, *meanf, *rstdf;
    real *qkv;                                           /* [N,3d] the packed projection, or its gradient */
    real *attd, *datt;                                   /* [B,NH,T,T] P ⊙ mask, and a gradient */
    real *dx, *dln, *dq, *dk, *dv, *datty, *dy, *dfc, *dgel, *dlogits;
    size_t (*off)[12];                                   /* per layer param offsets */
    uint64_t seed, step, micro;
    int training;
};

enum { LN1W, LN1B, AW, AB, PW, PB, LN2W, LN2B, FW, FB, MW, MB };
static const char *lnames[12] = {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                 "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                 "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};

/* ------------------------------------------------------------------ ops (GPT-2 only; the LayerNorm and GELU
 * ones exported for fast/'s kernel tests, gpt2.h) */

/* out = inp·W + b (Conv1D).  out [N,OC], inp [N,C], W [C,OC], b [OC] */
static void conv1d_forward(real *out, const real *inp, const real *W, const real *b, int N, int C, int OC) {
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, OC, C, 1, inp, C, W, OC, 0, out, OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) out[(size_t)n * OC + o] += b[o];
}
/* dinp += dout·Wᵀ, dW += inpᵀ·dout, db += Σ_n dout. */
static void conv1d_backward(real *dinp, real *dW, real *db, const real *dout, const real *inp, const real *W, int N,
                            int C, int OC) {
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, C, OC, 1, dout, OC, W, OC, 1, dinp, C);
    cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, OC, N, 1, inp, C, dout, OC, 1, dW, OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) db[o] += dout[(size_t)n * OC + o];
}

/* LayerNorm (biased variance).  out [N,C], mean/rstd [N], inp [N,C], w/b [C] */
void gpt2_layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w, const real *b, int N,
                              int C, double eps) {
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        double mu = 0, var = 0;
        for (int i = 0; i < C; i++) mu += x[i];
        mu /= C;
        for (int i = 0; i < C; i++) var += (x[i] - mu) * (x[i] - mu);
        const double r = 1.0 / sqrt(var / C + eps);
        for (int i = 0; i < C; i++) out[(size_t)n * C + i] = (real)((x[i] - mu) * r) * w[i] + b[i];
        mean[n] = (real)mu;
        rstd[n] = (real)r;
    }
}
/* dx = r·(g − mean(g) − x̂·mean(g·x̂)), g = dout·w; dw += dout·x̂; db += dout. */
void gpt2_layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                               const real *mean, const real *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C, *g = dout + (size_t)n * C;
        const double mu = mean[n], r = rstd[n];
        double mg = 0, mgx = 0;
        for (int i = 0; i < C; i++) {
            const double xh = (x[i] - mu) * r, gi = (double)g[i] * w[i];
            mg += gi;
            mgx += gi * xh;
            dw[i] += (real)(g[i] * xh);
            db[i] += g[i];
        }
        mg /= C;
        mgx /= C;
        for (int i = 0; i < C; i++) {
            const double xh = (x[i] - mu) * r;
            dinp[(size_t)n * C + i] += (real)(r * ((double)g[i] * w[i] - mg - xh * mgx));
        }
    }
}

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
void gpt2_gelu_forward(real *out, const real *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const double u = x[i];
        out[i] = (real)(0.5 * u * (1 + tanh(GELU_K * (u + 0.044715 * u * u * u))));
    }
}
void gpt2_gelu_backward(real *dx, const real *dout, const real *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const double u = x[i], th = tanh(GELU_K * (u + 0.044715 * u * u * u));
        const double dth = (1 - th * th) * GELU_K * (1 + 3 * 0.044715 * u * u);
        dx[i] += (real)(dout[i] * (0.5 * (1 + th) + 0.5 * u * dth));
    }
}

/* Mask of a dropout site: 1/(1−p) kept, 0 dropped; all 1 when not training or p = 0. */
static void dropout_mask(const Gpt2Model *g, real *mask, size_t n, int site, double p) {
    if (!g->training || p <= 0) {
        for (size_t i = 0; i < n; i++) mask[i] = 1;
        return;
    }
    const uint64_t key = rng_mix64(rng_mix64(rng_mix64(rng_mix64(g->seed) ^ g->step) ^ g->micro) ^ (uint64_t)site);
    const real keep = (real)(1.0 / (1.0 - p));
    for (size_t i = 0; i < n; i++)
        mask[i] = (double)(rng_mix64(key ^ (i * 0x9e3779b97f4a7c15ULL)) >> 11) * 0x1.0p-53 < p ? 0 : keep;
}
static void mul(real *out, const real *a, const real *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}

/* The projection writes q|k|v packed per row [N,3d]; the attention ops (attn_ops.h) read
 * q, k, v as three [N,d] tensors. split: qkv -> q, k, v; pack: the reverse (gradients). */
static void split_qkv(real *q, real *k, real *v, const real *qkv, int N, int d) {
    for (int n = 0; n < N; n++) {
        const real *row = qkv + (size_t)n * 3 * d;
        memcpy(q + (size_t)n * d, row, (size_t)d * sizeof *row);
        memcpy(k + (size_t)n * d, row + d, (size_t)d * sizeof *row);
        memcpy(v + (size_t)n * d, row + 2 * d, (size_t)d * sizeof *row);
    }
}
static void pack_qkv(real *qkv, const real *q, const real *k, const real *v, int N, int d) {
    for (int n = 0; n < N; n++) {
        real *row = qkv + (size_t)n * 3 * d;
        memcpy(row, q + (size_t)n * d, (size_t)d * sizeof *row);
        memcpy(row + d, k + (size_t)n * d, (size_t)d * sizeof *row);
        memcpy(row + 2 * d, v + (size_t)n * d, (size_t)d * sizeof *row);
    }
}

/* ------------------------------------------------------------------ model */

/* Every buffer of the model, carved twice (ref/arena.h): once to size the arena, once to
 * fill it. */
static size_t layout(Gpt2Model *m, char *base) {
    Gpt2Model *g = m; /* activations and state live in one struct; g-> marks the activations */
    const size_t N = m->N, d = m->d, F = m->F, V = m->V, P = m->spec->table.total;
    const size_t att = (size_t)m->B * m->NH * m->T * m->T;
    size_t off = 0;
#define R(n) ref_carve(base, &off, (n), sizeof(real))
    m->params = R(P), m->grads = R(P), m->exp_avg = R(P), m->exp_avg_sq = R(P);
    m->tokens = ref_carve(base, &off, N, sizeof(int32_t));
    m->logits = R(N * V), m->losses = R(N);
    m->lse = ref_carve(base, &off, N, sizeof(double));
    g->x0 = R(N * d), g->m0 = R(N * d);
    for (int l = 0; l < m->L; l++) {
        g->ln1[l] = R(N * d), g->mean1[l] = R(N), g->rstd1[l] = R(N), g->q[l] = R(N * d), g->k[l] = R(N * d);
        g->v[l] = R(N * d), g->att[l] = R(att);
        g->mA[l] = R(att), g->atty[l] = R(N * d), g->ya[l] = R(N * d), g->mya[l] = R(N * d), g->h[l] = R(N * d);
        g->ln2[l] = R(N * d), g->mean2[l] = R(N), g->rstd2[l] = R(N), g->fc[l] = R(N * F), g->gel[l] = R(N * F);
        g->ym[l] = R(N * d), g->mym[l] = R(N * d), g->x[l] = R(N * d);
    }
    g->lnf = R(N * d), g->meanf = R(N), g->rstdf = R(N);
    g->qkv = R(N * 3 * d), g->attd = R(att), g->datt = R(att);
    g->dx = R(N * d), g->dln = R(N * d), g->dq = R(N * d), g->dk = R(N * d), g->dv = R(N * d);
    g->datty = R(N * d), g->dy = R(N * d), g->dfc = R(N * F), g->dgel = R(N * F), g->dlogits = R(N * V);
#undef R
    return off;
}

void gpt2_destroy(Gpt2Model *m) {
    if (!m) return;
    ref_arena_free(m->arena);
    free(m);
}

Gpt2Model *gpt2_create(const ModelSpec *spec, int batch, int seq) {
    const ModelConfig *c = &spec->config;
    if (c->arch != ARCH_GPT2) {
        vrl_error("model: %s is not a gpt2 config", config_origin(c));
        return NULL;
    }
    if (batch < 1 || seq < 2 || seq > c->max_seq) {
        vrl_error("model: need batch >= 1 and seq in [2, max_position_embeddings = %d] (got %d x %d)", c->max_seq,
                  batch, seq);
        return NULL;
    }
    const size_t L = (size_t)c->n_layers;
    /* the model's struct, its per-layer pointer arrays and offsets in one block */
    Gpt2Model *m = calloc(1, sizeof *m + L * (20 * sizeof(real *) + sizeof(size_t[12])));
    if (!m) {
        vrl_error("model: out of memory");
        return NULL;
    }
    Gpt2Model *g = m;
    real ***arrays[20] = {&g->x,   &g->ln1, &g->mean1, &g->rstd1, &g->q,   &g->k,     &g->v,
                          &g->att, &g->mA,  &g->atty,  &g->ya,    &g->mya, &g->h,     &g->ln2,
                          &g->mean2, &g->rstd2, &g->fc, &g->gel, &g->ym, &g->mym};
    real **next = (real **)(g + 1);
    for (int k = 0; k < 20; k++, next += L) *arrays[k] = next;
    g->off = (size_t(*)[12])next;
    m->spec = spec, m->B = batch, m->T = seq, m->N = batch * seq, m->d = c->d_model, m->NH = c->n_heads;
    m->hd = c->d_model / c->n_heads, m->F = c->d_ffn, m->V = c->vocab_size, m->L = c->n_layers;
    m->eps = c->norm_eps, m->p_drop = c->dropout;
    const size_t V = m->V, d = m->d, F = m->F;
    size_t bytes = layout(m, NULL);
    if (!(m->arena = ref_arena_alloc(bytes))) {
        vrl_error("model: out of memory (%zu bytes for %d x %d)", bytes, batch, seq);
        gpt2_destroy(m);
        return NULL;
    }
    layout(m, m->arena);
    const ParamTable *t = &spec->table;
    char name[PARAM_NAME_LEN];
    size_t o = 0; /* read only after param_table_expect set it; clang cannot tell */
    int rc = 0;
#define VIEW(dst, nm, cnt) (rc = rc ? rc : param_table_expect(t, nm, (cnt), &o), dst = m->params + o)
    VIEW(g->wte, "transformer.wte.weight", V * d);
    VIEW(g->wpe, "transformer.wpe.weight", (size_t)c->max_seq * d);
    VIEW(g->lnfw, "transformer.ln_f.weight", d);
    VIEW(g->lnfb, "transformer.ln_f.bias", d);
    VIEW(g->lm_head, "lm_head.weight", V * d);
#undef VIEW
    const size_t numel[12] = {d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * F, F, F * d, d};
    for (size_t l = 0; l < L && !rc; l++)
        for (int k = 0; k < 12 && !rc; k++) {
            snprintf(name, sizeof name, "transformer.h.%zu.%s", l, lnames[k]);
            rc = param_table_expect(t, name, numel[k], &g->off[l][k]);
        }
    if (rc) {
        gpt2_destroy(m);
        return NULL;
    }
    return m;
}

void gpt2_set_dropout(Gpt2Model *g, int training, uint64_t seed, uint64_t step, uint64_t micro) {
    g->training = training, g->seed = seed, g->step = step, g->micro = micro;
}

double gpt2_forward(Gpt2Model *m, const int32_t *tokens) {
    Gpt2Model *g = m;
    if (model_check_tokens(tokens, m->N, m->T, m->V) < 0) {
        m->have_forward = 0; /* so a following backward adds nothing */
        return NAN;
    }
    const int B = m->B, T = m->T, N = m->N, d = m->d, F = m->F, V = m->V, NH = m->NH, hd = m->hd;
    const size_t Nd = (size_t)N * d, att = (size_t)B * NH * T * T;
    const double eps = m->eps, p = m->p_drop;
    memcpy(m->tokens, tokens, (size_t)N * sizeof *tokens);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < d; i++)
            g->x0[(size_t)n * d + i] = g->wte[(size_t)tokens[n] * d + i] + g->wpe[(size_t)(n % T) * d + i];
    dropout_mask(g, g->m0, Nd, 0, p);
    mul(g->x0, g->x0, g->m0, Nd); /* in place: the backward needs only the mask */
    const real *x = g->x0;
    for (int l = 0; l < m->L; l++) {
        const real *W = m->params;
        const size_t *o = g->off[l];
        gpt2_layernorm_forward(g->ln1[l], g->mean1[l], g->rstd1[l], x, W + o[LN1W], W + o[LN1B], N, d, eps);
        conv1d_forward(g->qkv, g->ln1[l], W + o[AW], W + o[AB], N, d, 3 * d);
        split_qkv(g->q[l], g->k[l], g->v[l], g->qkv, N, d);
        attn_probs_forward(g->att[l], g->q[l], g->k[l], NULL, B, T, NH, NH, hd); /* P */
        dropout_mask(g, g->mA[l], att, 1 + 3 * l, p);
        mul(g->attd, g->att[l], g->mA[l], att);
        attn_apply_forward(g->atty[l], g->attd, g->v[l], NULL, B, T, NH, NH, hd); /* (P ⊙ mask)·v */
        conv1d_forward(g->ya[l], g->atty[l], W + o[PW], W + o[PB], N, d, d);
        dropout_mask(g, g->mya[l], Nd, 2 + 3 * l, p);
        for (size_t i = 0; i < Nd; i++) g->h[l][i] = x[i] + g->ya[l][i] * g->mya[l][i];
        gpt2_layernorm_forward(g->ln2[l], g->mean2[l], g->rstd2[l], g->h[l], W + o[LN2W], W + o[LN2B], N, d, eps);
        conv1d_forward(g->fc[l], g->ln2[l], W + o[FW], W + o[FB], N, d, F);
        gpt2_gelu_forward(g->gel[l], g->fc[l], (size_t)N * F);
        conv1d_forward(g->ym[l], g->gel[l], W + o[MW], W + o[MB], N, F, d);
        dropout_mask(g, g->mym[l], Nd, 3 + 3 * l, p);
        for (size_t i = 0; i < Nd; i++) g->x[l][i] = g->h[l][i] + g->ym[l][i] * g->mym[l][i];
        x = g->x[l];
    }
    gpt2_layernorm_forward(g->lnf, g->meanf, g->rstdf, x, g->lnfw, g->lnfb, N, d, eps);
    matmul_forward(m->logits, g->lnf, g->lm_head, N, d, V);
    m->have_forward = 1;
    return crossentropy_forward(m->losses, m->lse, m->logits, tokens, B, T, V);
}

void gpt2_backward(Gpt2Model *m, double grad_scale) {
    Gpt2Model *g = m;
    if (!m->have_forward) return; /* a rejected batch */
    const int B = m->B, T = m->T, N = m->N, d = m->d, F = m->F, V = m->V, NH = m->NH, hd = m->hd;
    const size_t Nd = (size_t)N * d, att = (size_t)B * NH * T * T;
    real *G = m->grads;
    const real *W = m->params;
    const size_t lnf_w = (size_t)(g->lnfw - m->params), lnf_b = (size_t)(g->lnfb - m->params);
    memset(g->dlogits, 0, (size_t)N * V * sizeof(real));
    crossentropy_backward(g->dlogits, m->logits, m->lse, m->tokens, B, T, V, grad_scale, GRAD_ADD);
    memset(g->dln, 0, Nd * sizeof(real));
    matmul_backward(g->dln, G + (g->lm_head - m->params), g->dlogits, g->lnf, g->lm_head, N, d, V, GRAD_ADD);
    memset(g->dx, 0, Nd * sizeof(real)); /* dLoss/d(residual stream), carried down */
    gpt2_layernorm_backward(g->dx, G + lnf_w, G + lnf_b, g->dln, m->L ? g->x[m->L - 1] : g->x0, g->lnfw, g->meanf,
                       g->rstdf, N, d);
    for (int l = m->L - 1; l >= 0; l--) {
        const size_t *o = g->off[l];
        const real *x = l ? g->x[l - 1] : g->x0;
        /* x' = h + drop(ym): d(ym) = dx ⊙ mask */
        mul(g->dy, g->dx, g->mym[l], Nd);
        memset(g->dgel, 0, (size_t)N * F * sizeof(real));
        conv1d_backward(g->dgel, G + o[MW], G + o[MB], g->dy, g->gel[l], W + o[MW], N, F, d);
        memset(g->dfc, 0, (size_t)N * F * sizeof(real));
        gpt2_gelu_backward(g->dfc, g->dgel, g->fc[l], (size_t)N * F);
        memset(g->dln, 0, Nd * sizeof(real));
        conv1d_backward(g->dln, G + o[FW], G + o[FB], g->dfc, g->ln2[l], W + o[FW], N, d, F);
        gpt2_layernorm_backward(g->dx, G + o[LN2W], G + o[LN2B], g->dln, g->h[l], W + o[LN2W], g->mean2[l], g->rstd2[l], N, d);
        /* h = x + drop(ya) */
        mul(g->dy, g->dx, g->mya[l], Nd);
        memset(g->datty, 0, Nd * sizeof(real));
        conv1d_backward(g->datty, G + o[PW], G + o[PB], g->dy, g->atty[l], W + o[PW], N, d, d);
        mul(g->attd, g->att[l], g->mA[l], att); /* P ⊙ mask again (the forward's was overwritten) */
        memset(g->datt, 0, att * sizeof(real));
        memset(g->dv, 0, Nd * sizeof(real));
        attn_apply_backward(g->datt, g->dv, NULL, g->datty, g->attd, g->v[l], NULL, B, T, NH, NH, hd, GRAD_ADD);
        mul(g->datt, g->datt, g->mA[l], att); /* d(P ⊙ mask) -> dP */
        memset(g->dq, 0, Nd * sizeof(real));
        memset(g->dk, 0, Nd * sizeof(real));
        attn_probs_backward(g->dq, g->dk, NULL, g->datt, g->att[l], g->q[l], g->k[l], NULL, B, T, NH, NH, hd);
        pack_qkv(g->qkv, g->dq, g->dk, g->dv, N, d);
        memset(g->dln, 0, Nd * sizeof(real));
        conv1d_backward(g->dln, G + o[AW], G + o[AB], g->qkv, g->ln1[l], W + o[AW], N, d, 3 * d);
        gpt2_layernorm_backward(g->dx, G + o[LN1W], G + o[LN1B], g->dln, x, W + o[LN1W], g->mean1[l], g->rstd1[l], N, d);
    }
    /* x_0 = drop(wte[tok] + wpe[t]) */
    real *dwte = G + (g->wte - m->params), *dwpe = G + (g->wpe - m->params);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < d; i++) {
            const real v = g->dx[(size_t)n * d + i] * g->m0[(size_t)n * d + i];
            dwte[(size_t)m->tokens[n] * d + i] += v;
            dwpe[(size_t)(n % T) * d + i] += v;
        }
}

/* ------------------------------------------------------------------ the RefNet table (ref/net.h) */

static void *net_create(const ModelSpec *s, int batch, int seq) { return gpt2_create(s, batch, seq); }
static void net_destroy(void *m) { gpt2_destroy(m); }
static double net_forward(void *m, const int32_t *tokens) { return gpt2_forward(m, tokens); }
static void net_backward(void *m, double grad_scale) { gpt2_backward(m, grad_scale); }
static void net_set_dropout(void *m, int training, uint64_t seed, uint64_t step, uint64_t micro) {
    gpt2_set_dropout(m, training, seed, step, micro);
}
static RefBuffers net_buffers(void *vm) {
    Gpt2Model *m = vm;
    return (RefBuffers){m->params, m->grads, m->exp_avg, m->exp_avg_sq, m->logits};
}

const RefNet ref_net_gpt2 = {
    .create = net_create,
    .destroy = net_destroy,
    .forward = net_forward,
    .backward = net_backward,
    .set_dropout = net_set_dropout,
    .buffers = net_buffers,
    .view = NULL, /* the formulas.md §6 analysis is defined on the llama block */
};
