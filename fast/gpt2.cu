/* gpt2.cu: the GPT-2 baseline of formulas.md §1 on CUDA, forward and backward, the twin of
 * ref/gpt2.c (same ops in the same order, same names), in bf16 with fp32 statistics.
 *
 *   x_0 = wte[tok] + wpe[t]
 *   layer l: a = LN_1(x);  [q|k|v] = a·W_attn + b_attn    (Conv1D: W [in, out]; q|k|v one [N,3d] buffer)
 *            U = softmax(q kᵀ/√hd, causal)·v              (fast's mma or flash kernels on strided views)
 *            h = x + U·W_proj + b_proj
 *            x' = h + gelu_tanh(LN_2(h)·W_fc + b_fc)·W_mproj + b_mproj
 *   logits = LN_f(x_L)·lm_headᵀ (untied, as ref)
 *
 * It is a FastModel (model.cuh) with its own tensors (FastGpt2): the parameters, optimizer,
 * upload, head (bf16 logits chunks and the single-read cross-entropy), loss bookkeeping, state
 * copies and graphs are model.cu's and adamw.cu's, which reach this file at four points:
 * create (gpt2_bind, gpt2_layout), the trunk, the head's final norm and the backward.
 * No dropout: fast_capabilities refuses GPT-2 with dropout > 0 (ref's masks are keyed per
 * element of the [T,T] probabilities, which the attention kernels never form).
 *
 * Precision as the llama step: activations bf16; each Conv1D's product is fp32 (cuBLASLt),
 * its bias (and the residual after it) added in fp32 and rounded once; LayerNorm statistics,
 * GELU's argument, softmax and the loss fp32; parameter and residual-stream gradients fp32;
 * gradients that feed a GEMM get a bf16 copy. */
#include "fast/decode.cuh"
#include "fast/gpt2.cuh"
#include "fast/gpt2_ops.cuh"

extern "C" {
#include "common/base/procgroup.h"
#include "fast/fast.h"
}

FAST_NS_BEGIN

/* Per-layer tensor order of ref/gpt2.c's lnames: offsets off[l][k] in the table. */
enum { LN1W, LN1B, AW, AB, PW, PB, LN2W, LN2B, FW, FB, MW, MB, GPT2_LAYER_TENSORS };
static const char *lnames[GPT2_LAYER_TENSORS] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};

/* What one layer's forward keeps for the backward (device pointers into the arena). */
typedef struct {
    const bf16 *x_in;       /* [N,d]  the layer's input: the embeddings or the previous layer's out */
    bf16 *ln1;              /* [N,d]  LN_1(x) */
    float *mean1, *rstd1;   /* [N]    */
    bf16 *qkv;              /* [N,3d] ln1·W_attn + b_attn, rows q | k | v */
    bf16 *atty;             /* [N,d]  attention output U */
    float *lse;             /* [B,NH,T] softmax log-sum-exp per query row */
    bf16 *h;                /* [N,d]  x + U·W_proj + b_proj */
    bf16 *ln2;              /* [N,d]  LN_2(h) */
    float *mean2, *rstd2;   /* [N]    */
    bf16 *fc;               /* [N,F]  ln2·W_fc + b_fc, GELU's argument */
    bf16 *gel;              /* [N,F]  gelu_tanh(fc) */
    bf16 *out;              /* [N,d]  h + gel·W_mproj + b_mproj, the layer's output */
} Gpt2Acts;

struct FastGpt2 {
    size_t (*off)[GPT2_LAYER_TENSORS]; /* host [L][12] offsets of each layer's tensors */
    Gpt2Acts *acts;                    /* host [L] */
    size_t o_wpe, o_lnfb;              /* transformer.wpe.weight, transformer.ln_f.bias */
    int W;                             /* max(3d, F): the widest Conv1D output */
    const bf16 *x_last;                /* [N,d] the last layer's output, LN_f's input */
    float *lnf_mean;                   /* [N] LN_f's means (its rstd is m->lnf_rstd) */
    float *y32;                        /* [N,W] a Conv1D's fp32 product; in the backward d(gel), d(fc) */
    bf16 *d16;                         /* [N,W] bf16 gradients feeding GEMMs: d(fc), d(q|k|v) */
    float *partial;                    /* [ceil(N/GPT2_ROWS), max(W, 2d)] column-sum partials */
};

#define CARVE(ptr, n) ((ptr) = (__typeof__(ptr))fast_carve(base, &off, (size_t)(n), sizeof *(ptr)))

size_t gpt2_layout(FastModel *m, char *base) {
    FastGpt2 *g = m->gpt2;
    const size_t N = m->N, d = m->d, F = m->F, W = g->W;
    const size_t att_rows = (size_t)m->B * m->NH * m->T;
    size_t off = layout_optimizer(m, base), mark = off; /* what adamw.cu and the state copies read */
    /* activations: the upload's buffers, each layer's, the head's */
    off = layout_upload(m, base, off);
    CARVE(m->emb, N * d);
    for (int l = 0; l < m->L; l++) {
        Gpt2Acts dummy, *a = base ? &g->acts[l] : &dummy;
        CARVE(a->ln1, N * d);
        CARVE(a->mean1, N);
        CARVE(a->rstd1, N);
        CARVE(a->qkv, N * 3 * d);
        CARVE(a->atty, N * d);
        CARVE(a->lse, att_rows);
        CARVE(a->h, N * d);
        CARVE(a->ln2, N * d);
        CARVE(a->mean2, N);
        CARVE(a->rstd2, N);
        CARVE(a->fc, N * F);
        CARVE(a->gel, N * F);
        CARVE(a->out, N * d);
    }
    off = layout_head(m, base, off);
    CARVE(g->lnf_mean, N);
    m->bytes_acts = off - mark, mark = off;
    /* scratch (poisoned before each micro-batch in the CPU layer's check build) */
    off = layout_head_scratch(m, base, off);
    CARVE(m->datty, N * d);
    CARVE(m->attD, att_rows);
    CARVE(g->y32, N * W);
    CARVE(g->d16, N * W);
    CARVE(g->partial, (size_t)cdiv(N, GPT2_ROWS) * (W > 2 * d ? W : 2 * d));
    m->bytes_scratch = off - mark;
    return off;
}
#undef CARVE

/* ------------------------------------------------------------------ create */

int gpt2_bind(FastModel *m, const ModelSpec *spec) {
    const ParamTable *t = &spec->table;
    const size_t L = (size_t)m->L, d = m->d, F = m->F, V = m->V;
    if (dist_world() > 1) /* zero.cu's buckets follow the llama layers */
        return vrl_error("fast model: GPT-2 on CUDA trains in one process (no data parallelism yet; run without mpirun)");
    if (fast_attention_kind() == FAST_ATTENTION_CUDNN) /* model.cu wires cuDNN into the llama layers only */
        return vrl_error("fast model: GPT-2 on CUDA runs fast/'s own attention kernels only (--attention mma, wgmma or flash)");
    FastGpt2 *g = (FastGpt2 *)calloc(1, sizeof *g + L * (sizeof *g->off + sizeof *g->acts));
    if (!g) return vrl_error("fast model: out of host memory");
    m->gpt2 = g; /* freed by fast_model_destroy */
    g->acts = (Gpt2Acts *)(g + 1);
    g->off = (size_t(*)[GPT2_LAYER_TENSORS])(g->acts + L);
    g->W = (int)(3 * d > F ? 3 * d : F);
    m->NKV = m->NH, m->qC = m->kvC = (int)d; /* the attention kernels' view: no GQA */
    m->recompute = 0; /* VRL_FAST_RECOMPUTE: GPT-2 keeps every activation */
    /* the offsets by name, as ref/gpt2.c binds them */
    int rc = param_table_expect(t, "transformer.wte.weight", V * d, &m->o_wte);
    if (!rc) rc = param_table_expect(t, "transformer.wpe.weight", (size_t)m->c.max_seq * d, &g->o_wpe);
    if (!rc) rc = param_table_expect(t, "transformer.ln_f.weight", d, &m->o_lnf);
    if (!rc) rc = param_table_expect(t, "transformer.ln_f.bias", d, &g->o_lnfb);
    if (!rc) rc = param_table_expect(t, "lm_head.weight", V * d, &m->o_lm_head);
    if (!rc) rc = fast_check_head_slot(m);
    const size_t numel[GPT2_LAYER_TENSORS] = {d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * F, F, F * d, d};
    char name[PARAM_NAME_LEN];
    for (size_t l = 0; l < L && !rc; l++)
        for (int k = 0; k < GPT2_LAYER_TENSORS && !rc; k++) {
            snprintf(name, sizeof name, "transformer.h.%zu.%s", l, lnames[k]);
            rc = param_table_expect(t, name, numel[k], &g->off[l][k]);
        }
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ forward */

#define W16(off) (m->params16 + (off))
#define G32(off) (m->grads + (off))
#define TRY(call) \
    if ((call) < 0) return -1

/* The embeddings, every layer, and LN_f into m->lnf (the head's input). */
int gpt2_trunk_forward(FastModel *m) {
    FastGpt2 *g = m->gpt2;
    const int N = m->N, d = m->d, F = m->F;
    const float eps = (float)m->c.norm_eps;
    const AttnLd ld = {3 * d, 3 * d, 3 * d}; /* q, k, v: strided views of the packed projection */
    Blas *bl = &m->blas;
    TRY(position_embedding_forward(m->emb, m->tokens, W16(m->o_wte), W16(g->o_wpe), N, m->T, d));
    const bf16 *x = m->emb;
    for (int l = 0; l < m->L; l++) {
        const size_t *o = g->off[l];
        Gpt2Acts *a = &g->acts[l];
        a->x_in = x;
        TRY(layernorm_forward(a->ln1, a->mean1, a->rstd1, x, W16(o[LN1W]), W16(o[LN1B]), N, d, eps));
        TRY(conv1d_forward(bl, g->y32, a->ln1, W16(o[AW]), N, d, 3 * d));
        TRY(bias_add_forward(a->qkv, g->y32, W16(o[AB]), NULL, N, 3 * d));
        /* GPT-2 has no RoPE: no rope tables; --attention wgmma runs the mma kernels here */
        if (m->attention == FAST_ATTENTION_MMA || m->attention == FAST_ATTENTION_WGMMA) {
            TRY(attention_mma_forward(a->atty, a->lse, a->qkv, a->qkv + d, a->qkv + 2 * d, ld, m->B, m->T, m->NH, m->NH,
                                      m->hd, NULL));
        } else {
            TRY(attention_forward(a->atty, a->lse, a->qkv, a->qkv + d, a->qkv + 2 * d, ld, m->B, m->T, m->NH, m->NH,
                                  m->hd));
        }
        TRY(conv1d_forward(bl, g->y32, a->atty, W16(o[PW]), N, d, d));
        TRY(bias_add_forward(a->h, g->y32, W16(o[PB]), x, N, d)); /* h = x + (U·W_proj + b_proj) */
        TRY(layernorm_forward(a->ln2, a->mean2, a->rstd2, a->h, W16(o[LN2W]), W16(o[LN2B]), N, d, eps));
        TRY(conv1d_forward(bl, g->y32, a->ln2, W16(o[FW]), N, d, F));
        TRY(gelu_forward(a->fc, a->gel, g->y32, W16(o[FB]), N, F));
        TRY(conv1d_forward(bl, g->y32, a->gel, W16(o[MW]), N, F, d));
        TRY(bias_add_forward(a->out, g->y32, W16(o[MB]), a->h, N, d)); /* x' = h + (gel·W_mproj + b_mproj) */
        x = a->out;
    }
    g->x_last = x;
    return layernorm_forward(m->lnf, g->lnf_mean, m->lnf_rstd, x, W16(m->o_lnf), W16(g->o_lnfb), N, d, eps);
}

/* One position p of B sequences through the KV cache (decode.cuh): the trunk above on B rows of
 * one token each, the attention over the cached positions instead of the causal flash kernel. */
int gpt2_decode_forward(FastModel *m, bf16 *const *kc, bf16 *const *vc, int Tmax, int p) {
    FastGpt2 *g = m->gpt2;
    const int B = m->N, d = m->d, F = m->F;
    const float eps = (float)m->c.norm_eps;
    Blas *bl = &m->blas;
    /* wpe's row p: the table from p with T = 1 */
    TRY(position_embedding_forward(m->emb, m->tokens, W16(m->o_wte), W16(g->o_wpe) + (size_t)p * d, B, 1, d));
    const bf16 *x = m->emb;
    for (int l = 0; l < m->L; l++) {
        const size_t *o = g->off[l];
        Gpt2Acts *a = &g->acts[l];
        TRY(layernorm_forward(a->ln1, a->mean1, a->rstd1, x, W16(o[LN1W]), W16(o[LN1B]), B, d, eps));
        TRY(conv1d_forward(bl, g->y32, a->ln1, W16(o[AW]), B, d, 3 * d));
        TRY(bias_add_forward(a->qkv, g->y32, W16(o[AB]), NULL, B, 3 * d));
        TRY(decode_cache_append(kc[l], a->qkv + d, 3 * d, B, 1, Tmax, d, p));
        TRY(decode_cache_append(vc[l], a->qkv + 2 * d, 3 * d, B, 1, Tmax, d, p));
        TRY(decode_attention(a->atty, a->qkv, 3 * d, kc[l], vc[l], d, B, Tmax, p + 1, m->NH, m->NH, m->hd));
        TRY(conv1d_forward(bl, g->y32, a->atty, W16(o[PW]), B, d, d));
        TRY(bias_add_forward(a->h, g->y32, W16(o[PB]), x, B, d));
        TRY(layernorm_forward(a->ln2, a->mean2, a->rstd2, a->h, W16(o[LN2W]), W16(o[LN2B]), B, d, eps));
        TRY(conv1d_forward(bl, g->y32, a->ln2, W16(o[FW]), B, d, F));
        TRY(gelu_forward(a->fc, a->gel, g->y32, W16(o[FB]), B, F));
        TRY(conv1d_forward(bl, g->y32, a->gel, W16(o[MW]), B, F, d));
        TRY(bias_add_forward(a->out, g->y32, W16(o[MB]), a->h, B, d));
        x = a->out;
    }
    return layernorm_forward(m->lnf, g->lnf_mean, m->lnf_rstd, x, W16(m->o_lnf), W16(g->o_lnfb), B, d, eps);
}

int gpt2_decode_prefill(FastModel *m, bf16 *const *kc, bf16 *const *vc, int Tmax) {
    const int d = m->d;
    for (int l = 0; l < m->L; l++) {
        const bf16 *qkv = m->gpt2->acts[l].qkv; /* [B·T, 3d] rows q | k | v */
        TRY(decode_cache_append(kc[l], qkv + d, 3 * d, m->B, m->T, Tmax, d, 0));
        TRY(decode_cache_append(vc[l], qkv + 2 * d, 3 * d, m->B, m->T, Tmax, d, 0));
    }
    return 0;
}

/* ------------------------------------------------------------------ backward */

/* A LayerNorm's backward: d(inp) added into the residual-stream gradient dres32 (and its bf16
 * copy), its weight's and bias' gradients; dout = m->dln32. */
static int norm_backward(FastModel *m, const bf16 *inp, size_t w, size_t b, const float *mean, const float *rstd) {
    FastGpt2 *g = m->gpt2;
    TRY(layernorm_backward(m->dres32, m->dres16, m->dln32, inp, W16(w), mean, rstd, m->N, m->d));
    return layernorm_backward_params(G32(w), G32(b), g->partial, m->dln32, inp, mean, rstd, m->N, m->d);
}

/* Layer l, from dres = dLoss/d(out_l) to dres = dLoss/d(x_in). */
static int layer_backward(FastModel *m, int l) {
    FastGpt2 *g = m->gpt2;
    const int N = m->N, d = m->d, F = m->F;
    const size_t *o = g->off[l];
    const Gpt2Acts *a = &g->acts[l];
    const AttnLd ld = {3 * d, 3 * d, 3 * d};
    Blas *bl = &m->blas;
    /* x' = h + gel·W_mproj + b_mproj */
    TRY(bias_backward(G32(o[MB]), g->partial, m->dres32, N, d));
    TRY(conv1d_backward(bl, g->y32, 0, NULL, G32(o[MW]), m->dres16, a->gel, W16(o[MW]), N, F, d));
    TRY(gelu_backward(g->y32, g->d16, g->y32, a->fc, (size_t)N * F)); /* d(gel) -> d(fc), in place */
    TRY(bias_backward(G32(o[FB]), g->partial, g->y32, N, F));
    TRY(conv1d_backward(bl, m->dln32, 0, NULL, G32(o[FW]), g->d16, a->ln2, W16(o[FW]), N, d, F));
    TRY(norm_backward(m, a->h, o[LN2W], o[LN2B], a->mean2, a->rstd2));
    /* h = x + U·W_proj + b_proj */
    TRY(bias_backward(G32(o[PB]), g->partial, m->dres32, N, d));
    TRY(conv1d_backward(bl, NULL, 0, m->datty, G32(o[PW]), m->dres16, a->atty, W16(o[PW]), N, d, d));
    /* d(q|k|v) into d16 with the packed rows' stride: one Conv1D backward reads them all */
    const AttnDv dv = {NULL, 1.0f, 0, g->d16 + 2 * d};
    if (m->attention == FAST_ATTENTION_MMA || m->attention == FAST_ATTENTION_WGMMA) {
        TRY(attention_mma_backward(g->d16, g->d16 + d, dv, m->attD, m->datty, a->atty, a->qkv, a->qkv + d,
                                   a->qkv + 2 * d, ld, a->lse, m->B, m->T, m->NH, m->NH, m->hd, NULL));
    } else {
        TRY(attention_backward(g->d16, g->d16 + d, dv, m->attD, m->datty, a->atty, a->qkv, a->qkv + d, a->qkv + 2 * d,
                               ld, a->lse, m->B, m->T, m->NH, m->NH, m->hd));
    }
    TRY(bias_backward_bf16(G32(o[AB]), g->partial, g->d16, N, 3 * d));
    TRY(conv1d_backward(bl, m->dln32, 0, NULL, G32(o[AW]), g->d16, a->ln1, W16(o[AW]), N, d, 3 * d));
    return norm_backward(m, a->x_in, o[LN1W], o[LN1B], a->mean1, a->rstd1);
}

/* The whole backward, after the head's chunks left d(lnf) in m->dln32. */
int gpt2_backward(FastModel *m) {
    FastGpt2 *g = m->gpt2;
    const int N = m->N, d = m->d;
    CUDA_CHECK(cudaMemsetAsync(m->dres32, 0, (size_t)N * d * sizeof(float), m->stream));
    TRY(norm_backward(m, g->x_last, m->o_lnf, g->o_lnfb, g->lnf_mean, m->lnf_rstd));
    for (int l = m->L - 1; l >= 0; l--) TRY(layer_backward(m, l));
    /* x_0 = wte[tok] + wpe[t]: at most min(N, V) distinct tokens (model.cu's upload plan) */
    TRY(embedding_backward(G32(m->o_wte), m->dres32, m->emb_uniq, m->emb_offsets, m->emb_pos, m->emb_count,
                           N < m->V ? N : m->V, d));
    return position_embedding_backward(G32(g->o_wpe), m->dres32, m->B, m->T, d);
}

FAST_NS_END
