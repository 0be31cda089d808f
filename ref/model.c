/* model.c: the baseline LLaMA of formulas.md §1, forward and backward, for one [B,T] shape.
 *
 *   x_0 = embed(tokens)
 *   layer l (0-based):  h  = x + W_o · Attn(q = RoPE(W_q·RMSNorm(x)), k = RoPE(W_k·RMSNorm(x)),
 *                                           v_in = Σ_i vcoef[l][i]·V_i),  V_l = W_v·RMSNorm(x)
 *                       x' = h + W_down · (silu(W_gate·RMSNorm(h)) ⊙ W_up·RMSNorm(h))
 *   logits = lm_head · RMSNorm(x_L);  loss = mean next-token cross-entropy
 *
 * The attention up to U_l is the value path's (ref/value_path.c, its own state): the
 * baseline's tables are the identity (v_in = V_l); the value-residual variants (formulas.md §4) are
 * other tables of the spec's ValuePlan, and this file never knows which runs.
 *
 * The residual stream is the depth mixer's (ref/stream.c): the model hands it each
 * sublayer's raw output y and asks it for the next sublayer's input. The baseline's
 * mixer is x + y (so "h" and "out" above); DenseFormer, AttnRes, HC and mHC (formulas.md §5)
 * are other mixers, and the attention and MLP code below never depends on which. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/arena.h"
#include "ref/model_impl.h"
#include "ref/net.h"
#include "ref/ops.h"

/* ------------------------------------------------------------------ memory layout */

static size_t layout(RefModel *m, char *base) {
    const size_t N = (size_t)m->N, P = m->t->total;
    size_t off = 0;
    CARVE(m->params, P);
    CARVE(m->grads, P);
    CARVE(m->exp_avg, P);
    CARVE(m->exp_avg_sq, P);
    CARVE(m->lp, m->L);
    CARVE(m->lg, m->L);
    CARVE(m->tokens, N);
    CARVE(m->emb, N * m->d);
    CARVE(m->acts, m->L);
    for (int l = 0; l < m->L; l++) {
        LayerActs dummy, *a = base ? &m->acts[l] : &dummy;
        CARVE(a->y_attn, N * m->d);
        CARVE(a->ln2, N * m->d);
        CARVE(a->ln2_rstd, N);
        CARVE(a->gate, N * m->F);
        CARVE(a->up, N * m->F);
        CARVE(a->swi, N * m->F);
        CARVE(a->y_mlp, N * m->d);
    }
    CARVE(m->y, 2 * m->L + 1);
    CARVE(m->lnf, N * m->d);
    CARVE(m->lnf_rstd, N);
    CARVE(m->logits, N * m->V);
    CARVE(m->losses, N);
    CARVE(m->lse, N);
    GradActs *g = &m->g;
    CARVE(g->dxin, N * m->d);
    CARVE(g->dln, N * m->d);
    CARVE(g->datty, N * m->qC);
    CARVE(g->dswi, N * m->F);
    CARVE(g->dgate, N * m->F);
    CARVE(g->dup, N * m->F);
    CARVE(g->dlogits, N * m->V);
    return off;
}
#undef CARVE

/* Point the views of params and grads this file uses at the spec's layout (the value path
 * and the depth mixer bind their own). */
static void bind_tensors(RefModel *m) {
    const ModelLayout *lay = &m->spec->layout;
#define BIND(dst, slot) (m->mp.dst = m->params + (slot).offset, m->mg.dst = m->grads + (slot).offset)
    BIND(wte, lay->embed);
    BIND(lnf, lay->norm);
    BIND(lm_head, lay->head);
#undef BIND
#define BIND(dst, slot) (m->lp[l].dst = m->params + (slot).offset, m->lg[l].dst = m->grads + (slot).offset)
    for (int l = 0; l < m->L; l++) {
        const LayerLayout *ll = &lay->layer[l];
        BIND(wo, ll->wo);
        BIND(ln2, ll->ln2);
        BIND(wgate, ll->wgate);
        BIND(wup, ll->wup);
        BIND(wdown, ll->wdown);
    }
#undef BIND
}

RefModel *model_create(const ModelSpec *spec, int batch, int seq) {
    const ModelConfig *c = &spec->config;
    if (c->arch != ARCH_LLAMA) {
        vrl_error("model: %s is not a llama config (GPT-2 is ref/gpt2.c's model)", config_origin(c));
        return NULL;
    }
    if (batch < 1) {
        vrl_error("model: batch must be >= 1 (got %d)", batch);
        return NULL;
    }
    /* seq >= 2: with one token there is no next-token prediction to average. */
    if (seq < 2 || seq > c->max_seq) {
        vrl_error("model: seq must be in [2, max_position_embeddings = %d] (got %d)", c->max_seq, seq);
        return NULL;
    }
    RefModel *m = calloc(1, sizeof *m);
    if (!m) {
        vrl_error("model: out of memory");
        return NULL;
    }
    m->spec = spec;
    m->t = &spec->table;
    m->eps = c->norm_eps; /* every RMSNorm of the model, the value path's included */
    m->B = batch;
    m->T = seq;
    m->N = batch * seq;
    m->d = c->d_model;
    m->qC = c->n_heads * config_head_dim(c);
    m->F = c->d_ffn;
    m->V = c->vocab_size;
    m->L = c->n_layers;
    size_t bytes = layout(m, NULL);
    m->arena = ref_arena_alloc(bytes); /* parameters and moments start at zero */
    if (!m->arena) {
        vrl_error("model: out of memory (%zu bytes for %d x %d)", bytes, batch, seq);
        free(m);
        return NULL;
    }
    layout(m, m->arena);
    /* The depth mixer's sources: the embedding and every sublayer's raw output. */
    m->y[0] = m->emb;
    for (int l = 0; l < m->L; l++) {
        m->y[2 * l + 1] = m->acts[l].y_attn;
        m->y[2 * l + 2] = m->acts[l].y_mlp;
    }
    bind_tensors(m);
    if (!(m->vp = vp_create(spec, batch, seq, m->params, m->grads, m->emb, m->eps)) ||
        !(m->stream = stream_create(spec, m->N, m->params, m->grads, (const real *const *)m->y))) {
        model_destroy(m);
        return NULL;
    }
    return m;
}

void model_destroy(RefModel *m) {
    if (!m) return;
    stream_destroy(m->stream);
    vp_destroy(m->vp);
    ref_arena_free(m->arena);
    free(m);
}

int model_check_tokens(const int32_t *tokens, int n, int seq, int vocab) {
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return vrl_error("token id %d at batch %d position %d is outside the vocabulary [0, %d)", (int)tokens[i],
                             i / seq, i % seq, vocab);
    return 0;
}

/* ------------------------------------------------------------------ forward */

double model_forward(RefModel *m, const int32_t *tokens) {
    if (model_check_tokens(tokens, m->N, m->T, m->V) < 0) {
        m->have_forward = 0; /* so a following backward adds nothing */
        return NAN;
    }
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, F = m->F, V = m->V;
    const double eps = m->eps;
    memcpy(m->tokens, tokens, (size_t)N * sizeof *tokens);

    embedding_forward(m->emb, tokens, m->mp.wte, N, d);
    for (int l = 0; l < m->L; l++) {
        const LayerTensors *w = &m->lp[l];
        LayerActs *a = &m->acts[l];
        const real *x = stream_forward(m->stream, 2 * l); /* [N,d] the attention sublayer's input */
        a->x_in = (real *)x;
        if (l > 0) m->acts[l - 1].out = a->x_in;
        /* attention sublayer: the value path of formulas.md §4 (ref/value_path.c) up to U, then W_o */
        a->atty = vp_forward(m->vp, l, x);
        matmul_forward(a->y_attn, a->atty, w->wo, N, qC, d);
        a->h = (real *)stream_forward(m->stream, 2 * l + 1); /* baseline: h = x + y_attn */
        /* MLP sublayer */
        rmsnorm_forward(a->ln2, a->ln2_rstd, a->h, w->ln2, N, d, eps);
        matmul_forward(a->gate, a->ln2, w->wgate, N, d, F);
        matmul_forward(a->up, a->ln2, w->wup, N, d, F);
        swiglu_forward(a->swi, a->gate, a->up, (size_t)N * F);
        matmul_forward(a->y_mlp, a->swi, w->wdown, N, F, d);
    }
    const real *x = stream_forward(m->stream, 2 * m->L); /* baseline: x_L = h + y_mlp */
    m->x_final = x;
    m->acts[m->L - 1].out = (real *)x;
    rmsnorm_forward(m->lnf, m->lnf_rstd, x, m->mp.lnf, N, d, eps);
    matmul_forward(m->logits, m->lnf, m->mp.lm_head, N, d, V);
    m->have_forward = 1;
    return crossentropy_forward(m->losses, m->lse, m->logits, tokens, B, T, V);
}

/* ------------------------------------------------------------------ backward */

void model_backward(RefModel *m, double grad_scale) {
    if (!m->have_forward) return; /* nothing to differentiate (a rejected batch) */
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, F = m->F, V = m->V;
    const size_t Nd = (size_t)N * d;
    GradActs *g = &m->g;

    /* head: loss -> logits -> lnf -> residual stream. A scratch gradient's first writer
     * overwrites it (GRAD_SET, the same bits as zeroing it first): the elementwise ops write
     * 0 + g, a BLAS product runs with beta = 0 (it zeroes its output tiles itself). */
    crossentropy_backward(g->dlogits, m->logits, m->lse, m->tokens, B, T, V, grad_scale, GRAD_SET);
    matmul_backward(g->dln, m->mg.lm_head, g->dlogits, m->lnf, m->mp.lm_head, N, d, V, GRAD_SET);
    rmsnorm_backward(g->dxin, m->mg.lnf, g->dln, m->x_final, m->mp.lnf, m->lnf_rstd, N, d, GRAD_SET);
    stream_backward_begin(m->stream);
    const real *dy = stream_backward(m->stream, 2 * m->L, g->dxin); /* [N,d] dLoss/dy_mlp of the last layer */

    vp_backward_begin(m->vp);

    for (int l = m->L - 1; l >= 0; l--) {
        const LayerTensors *w = &m->lp[l];
        LayerTensors *dw = &m->lg[l];
        LayerActs *a = &m->acts[l];
        /* dy = dLoss/d(W_down·swi), complete: only later sublayers' inputs read it. */
        matmul_backward(g->dswi, dw->wdown, dy, a->swi, w->wdown, N, F, d, GRAD_SET);
        swiglu_backward(g->dgate, g->dup, g->dswi, a->gate, a->up, (size_t)N * F, GRAD_SET);
        matmul_backward(g->dln, dw->wgate, g->dgate, a->ln2, w->wgate, N, d, F, GRAD_SET);
        matmul_backward(g->dln, dw->wup, g->dup, a->ln2, w->wup, N, d, F, GRAD_ADD);
        rmsnorm_backward(g->dxin, dw->ln2, g->dln, a->h, w->ln2, a->ln2_rstd, N, d, GRAD_SET);
        dy = stream_backward(m->stream, 2 * l + 1, g->dxin); /* dLoss/d(W_o·U) */
        matmul_backward(g->datty, dw->wo, dy, a->atty, w->wo, N, qC, d, GRAD_SET);
        /* The value path: V_l's (and Q_l's, K_l's, A_l's) gradient is complete here because all
         * later layers, which may read them, ran their backward first. It writes dxin. */
        vp_backward(m->vp, l, g->datty, g->dxin);
        dy = stream_backward(m->stream, 2 * l, g->dxin); /* the previous MLP's output, or (l = 0) the embedding */
    }
    /* Hidden residuals read H_0 = the embedding output: add their share to its gradient. */
    if (dy != g->dxin) memcpy(g->dxin, dy, Nd * sizeof *g->dxin);
    vp_backward_end(m->vp, g->dxin);
    embedding_backward(m->mg.wte, g->dxin, m->tokens, N, d);
}

/* ------------------------------------------------------------------ accessors */

void model_zero_grad(RefModel *m) { zero_fill(m->grads, m->t->total); }
real *model_params(RefModel *m) { return m->params; }
real *model_grads(RefModel *m) { return m->grads; }
real *model_logits(RefModel *m) { return m->logits; }

const real *model_view(const RefModel *m, BackendView what, int index) {
    const real *v = NULL;
    if (what == VIEW_HIDDEN && index >= 0 && index <= m->L)
        v = index == 0 ? m->emb : index == m->L ? m->lnf : m->acts[index - 1].out;
    else if (what == VIEW_DEPTH_WEIGHTS) v = stream_depth_weights(m->stream, index);
    else v = vp_view(m->vp, what, index);
    if (!v) vrl_error("model: variant \"%s\" has no view %d of index %d", m->spec->config.variant, (int)what, index);
    return v;
}

const real *model_stream_input(const RefModel *m, int s) {
    return s == 2 * m->L ? m->x_final : s % 2 ? m->acts[s / 2].h : m->acts[s / 2].x_in;
}
const real *model_sublayer_output(const RefModel *m, int k) { return m->y[k]; }

/* ------------------------------------------------------------------ the RefNet table (ref/net.h) */

static void *net_create(const ModelSpec *s, int batch, int seq) { return model_create(s, batch, seq); }
static void net_destroy(void *m) { model_destroy(m); }
static double net_forward(void *m, const int32_t *tokens) { return model_forward(m, tokens); }
static void net_backward(void *m, double grad_scale) { model_backward(m, grad_scale); }
static RefBuffers net_buffers(void *vm) {
    RefModel *m = vm;
    return (RefBuffers){m->params, m->grads, m->exp_avg, m->exp_avg_sq, m->logits};
}
static const real *net_view(void *m, BackendView what, int index) { return model_view(m, what, index); }

const RefNet ref_net_llama = {
    .create = net_create,
    .destroy = net_destroy,
    .forward = net_forward,
    .backward = net_backward,
    .set_dropout = NULL, /* llama has no dropout (formulas.md §1) */
    .buffers = net_buffers,
    .view = net_view,
};
