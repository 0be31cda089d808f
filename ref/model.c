/* model.c: the baseline LLaMA of SPEC.md §1, forward and backward, for one [B,T] shape.
 *
 *   x_0 = embed(tokens)
 *   layer l (0-based):  h  = x + W_o · Attn(q = RoPE(W_q·RMSNorm(x)), k = RoPE(W_k·RMSNorm(x)),
 *                                           v_in = Σ_i vcoef[l][i]·V_i),  V_l = W_v·RMSNorm(x)
 *                       x' = h + W_down · (silu(W_gate·RMSNorm(h)) ⊙ W_up·RMSNorm(h))
 *   logits = lm_head · RMSNorm(x_L);  loss = mean next-token cross-entropy
 *
 * The baseline's vcoef is the identity (v_in = V_l). Keeping the raw V_l of every layer
 * and the separate v_in buffer is what lets the value-residual variants (SPEC §4) be a
 * different vcoef table: the backward already routes d(v_in) to every V_i it read.
 *
 * The residual stream is the depth mixer's (ref/stream.c): the model hands it each
 * sublayer's raw output y and asks it for the next sublayer's input. The baseline's
 * mixer is x + y (so "h" and "out" above); DenseFormer, AttnRes, HC and mHC (SPEC §5)
 * are other mixers, and the attention and MLP code below never depends on which. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/gpt2.h"
#include "ref/model_impl.h"
#include "ref/ops.h"
#include "ref/value_path.h"

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
    CARVE(m->vcoef, (size_t)m->L * m->L);
    CARVE(m->vsrc, m->L);
    CARVE(m->cos_t, (size_t)m->T * (m->hd / 2));
    CARVE(m->sin_t, (size_t)m->T * (m->hd / 2));
    CARVE(m->tokens, N);
    CARVE(m->emb, N * m->d);
    CARVE(m->acts, m->L);
    for (int l = 0; l < m->L; l++) {
        LayerActs dummy, *a = base ? &m->acts[l] : &dummy;
        CARVE(a->ln1, N * m->d);
        CARVE(a->ln1_rstd, N);
        CARVE(a->q, N * m->qC);
        CARVE(a->k, N * m->kvC);
        CARVE(a->v, N * m->kvC);
        CARVE(a->vin, N * m->kvC);
        CARVE(a->att, (size_t)m->B * m->NH * m->T * m->T);
        CARVE(a->atty, N * m->qC);
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
    CARVE(g->dq, N * m->qC);
    CARVE(g->dqr, N * m->qC);
    CARVE(g->dk, N * m->kvC);
    CARVE(g->dvin, N * m->kvC);
    CARVE(g->datty, N * m->qC);
    CARVE(g->dswi, N * m->F);
    CARVE(g->dgate, N * m->F);
    CARVE(g->dup, N * m->F);
    CARVE(g->dlogits, N * m->V);
    CARVE(g->dv, m->L);
    for (int l = 0; l < m->L; l++) {
        real *dummy, **p = base ? &g->dv[l] : &dummy;
        CARVE(*p, N * m->kvC);
    }
    return off;
}
#undef CARVE

/* Offset of a tensor the model needs, checked against the expected element count, so
 * a table built for another config is an error rather than a wrong read. */
static int lookup(const ParamTable *t, const char *name, size_t numel, size_t *offset) {
    const ParamInfo *p = param_table_find(t, name);
    if (!p) return vrl_error("model: parameter %s is not in the table", name);
    if (p->numel != numel)
        return vrl_error("model: parameter %s has %zu elements, the config needs %zu", name, p->numel, numel);
    *offset = p->offset;
    return 0;
}

/* Fill the per-layer views of params and grads, looking every name up once. */
static int bind_tensors(RefModel *m) {
    const ParamTable *t = m->t;
    const size_t d = m->d, V = m->V, F = m->F, qC = m->qC;
    size_t o;
    char name[PARAM_NAME_LEN];
#define BIND(field, nm, numel)                                                                                   \
    do {                                                                                                              \
        if (lookup(t, nm, numel, &o)) return -1;                                                                      \
        m->mp.field = m->params + o;                                                                                  \
        m->mg.field = m->grads + o;                                                                                   \
    } while (0)
    BIND(wte, "model.embed_tokens.weight", V * d);
    BIND(lnf, "model.norm.weight", d);
    BIND(lm_head, "lm_head.weight", V * d);
#undef BIND
    for (int l = 0; l < m->L; l++) {
#define BIND(field, suffix, numel)                                                                                    \
    do {                                                                                                              \
        snprintf(name, sizeof name, "model.layers.%d.%s", l, suffix);                                                 \
        if (lookup(t, name, numel, &o)) return -1;                                                                    \
        m->lp[l].field = m->params + o;                                                                               \
        m->lg[l].field = m->grads + o;                                                                                \
    } while (0)
        BIND(ln1, "input_layernorm.weight", d);
        /* q/k/v_proj and v_residual_lambda depend on the variant: vp_model_init binds them */
        BIND(wo, "self_attn.o_proj.weight", d * qC);
        BIND(ln2, "post_attention_layernorm.weight", d);
        BIND(wgate, "mlp.gate_proj.weight", F * d);
        BIND(wup, "mlp.up_proj.weight", F * d);
        BIND(wdown, "mlp.down_proj.weight", d * F);
#undef BIND
    }
    return 0;
}

RefModel *model_create(const ModelConfig *c, const ParamTable *t, int batch, int seq) {
    if (config_validate(c, c->preset[0] ? c->preset : "config") < 0) return NULL;
    if (batch < 1) {
        vrl_error("model: batch must be >= 1 (got %d)", batch);
        return NULL;
    }
    /* seq >= 2: with one token there is no next-token prediction to average. */
    if (seq < 2 || seq > c->max_seq) {
        vrl_error("model: seq must be in [2, max_position_embeddings = %d] (got %d)", c->max_seq, seq);
        return NULL;
    }
    if (c->arch == ARCH_GPT2) return gpt2_create(c, t, batch, seq);
    RefModel *m = calloc(1, sizeof *m);
    if (!m) {
        vrl_error("model: out of memory");
        return NULL;
    }
    m->c = *c;
    m->t = t;
    m->B = batch;
    m->T = seq;
    m->N = batch * seq;
    m->d = c->d_model;
    m->NH = c->n_heads;
    m->NKV = c->n_kv_heads;
    m->hd = config_head_dim(c);
    m->qC = m->NH * m->hd;
    m->kvC = m->NKV * m->hd;
    m->F = c->d_ffn;
    m->V = c->vocab_size;
    m->L = c->n_layers;
    size_t bytes = layout(m, NULL);
    m->arena = calloc(1, bytes); /* parameters, moments and step start at zero */
    if (!m->arena) {
        vrl_error("model: out of memory (%zu bytes for %d x %d)", bytes, batch, seq);
        free(m);
        return NULL;
    }
    layout(m, m->arena);
    /* The value path (SPEC §4) fills vcoef, vsrc and the variant's own tensors. */
    if (bind_tensors(m) < 0 || vp_model_init(m) < 0) {
        model_destroy(m);
        return NULL;
    }
    /* The depth mixer's sources: the embedding and every sublayer's raw output. */
    m->y[0] = m->emb;
    for (int l = 0; l < m->L; l++) {
        m->y[2 * l + 1] = m->acts[l].y_attn;
        m->y[2 * l + 2] = m->acts[l].y_mlp;
    }
    if (!(m->stream = stream_create(m))) {
        model_destroy(m);
        return NULL;
    }
    rope_tables(m->cos_t, m->sin_t, m->T, m->hd, c->rope_theta);
    return m;
}

void model_destroy(RefModel *m) {
    if (!m) return;
    stream_destroy(m->stream);
    if (m->gpt2) gpt2_destroy(m->gpt2);
    vp_model_free(m);
    free(m->arena);
    free(m);
}

int model_check_tokens(const RefModel *m, const int32_t *tokens) {
    for (int n = 0; n < m->N; n++)
        if (tokens[n] < 0 || tokens[n] >= m->V)
            return vrl_error("token id %d at batch %d position %d is outside the vocabulary [0, %d)", (int)tokens[n],
                             n / m->T, n % m->T, m->V);
    return 0;
}

/* ------------------------------------------------------------------ forward */

double model_forward(RefModel *m, const int32_t *tokens) {
    if (model_check_tokens(m, tokens) < 0) {
        m->have_forward = 0; /* so a following backward adds nothing */
        return NAN;
    }
    if (m->gpt2) return gpt2_forward(m, tokens);
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, F = m->F, V = m->V;
    const double eps = m->c.norm_eps;
    memcpy(m->tokens, tokens, (size_t)N * sizeof *tokens);

    embedding_forward(m->emb, tokens, m->mp.wte, N, d);
    for (int l = 0; l < m->L; l++) {
        const LayerTensors *w = &m->lp[l];
        LayerActs *a = &m->acts[l];
        const real *x = stream_forward(m, 2 * l); /* [N,d] the attention sublayer's input */
        a->x_in = (real *)x;
        if (l > 0) m->acts[l - 1].out = a->x_in;
        /* attention sublayer: the value path of SPEC §4 (ref/value_path.c) up to U, then W_o */
        vp_attention_forward(m, l, x);
        matmul_forward(a->y_attn, a->atty, w->wo, N, qC, d);
        a->h = (real *)stream_forward(m, 2 * l + 1); /* baseline: h = x + y_attn */
        /* MLP sublayer */
        rmsnorm_forward(a->ln2, a->ln2_rstd, a->h, w->ln2, N, d, eps);
        matmul_forward(a->gate, a->ln2, w->wgate, N, d, F);
        matmul_forward(a->up, a->ln2, w->wup, N, d, F);
        swiglu_forward(a->swi, a->gate, a->up, (size_t)N * F);
        matmul_forward(a->y_mlp, a->swi, w->wdown, N, F, d);
    }
    const real *x = stream_forward(m, 2 * m->L); /* baseline: x_L = h + y_mlp */
    m->x_final = x;
    m->acts[m->L - 1].out = (real *)x;
    rmsnorm_forward(m->lnf, m->lnf_rstd, x, m->mp.lnf, N, d, eps);
    matmul_forward(m->logits, m->lnf, m->mp.lm_head, N, d, V);
    m->have_forward = 1;
    return crossentropy_forward(m->losses, m->lse, m->logits, tokens, B, T, V);
}

/* ------------------------------------------------------------------ backward */

static void zero(real *p, size_t n) { memset(p, 0, n * sizeof *p); }

void model_backward(RefModel *m, double grad_scale) {
    if (!m->have_forward) return; /* nothing to differentiate (a rejected batch) */
    if (m->gpt2) {
        gpt2_backward(m, grad_scale);
        return;
    }
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, F = m->F, V = m->V;
    const size_t Nd = (size_t)N * d;
    GradActs *g = &m->g;

    /* head: loss -> logits -> lnf -> residual stream */
    zero(g->dlogits, (size_t)N * V);
    crossentropy_backward(g->dlogits, m->logits, m->lse, m->tokens, B, T, V, grad_scale);
    zero(g->dln, Nd);
    matmul_backward(g->dln, m->mg.lm_head, g->dlogits, m->lnf, m->mp.lm_head, N, d, V);
    zero(g->dxin, Nd);
    rmsnorm_backward(g->dxin, m->mg.lnf, g->dln, m->x_final, m->mp.lnf, m->lnf_rstd, N, d);
    stream_backward_begin(m);
    const real *dy = stream_backward(m, 2 * m->L, g->dxin); /* [N,d] dLoss/dy_mlp of the last layer */

    vp_backward_begin(m);

    for (int l = m->L - 1; l >= 0; l--) {
        const LayerTensors *w = &m->lp[l];
        LayerTensors *dw = &m->lg[l];
        LayerActs *a = &m->acts[l];
        /* dy = dLoss/d(W_down·swi), complete: only later sublayers' inputs read it. */
        zero(g->dswi, (size_t)N * F);
        matmul_backward(g->dswi, dw->wdown, dy, a->swi, w->wdown, N, F, d);
        zero(g->dgate, (size_t)N * F);
        zero(g->dup, (size_t)N * F);
        swiglu_backward(g->dgate, g->dup, g->dswi, a->gate, a->up, (size_t)N * F);
        zero(g->dln, Nd);
        matmul_backward(g->dln, dw->wgate, g->dgate, a->ln2, w->wgate, N, d, F);
        matmul_backward(g->dln, dw->wup, g->dup, a->ln2, w->wup, N, d, F);
        zero(g->dxin, Nd);
        rmsnorm_backward(g->dxin, dw->ln2, g->dln, a->h, w->ln2, a->ln2_rstd, N, d);
        dy = stream_backward(m, 2 * l + 1, g->dxin); /* dLoss/d(W_o·U) */
        zero(g->datty, (size_t)N * qC);
        matmul_backward(g->datty, dw->wo, dy, a->atty, w->wo, N, qC, d);
        /* The value path: V_l's (and Q_l's, K_l's, A_l's) gradient is complete here because all
         * later layers, which may read them, ran their backward first. */
        zero(g->dxin, Nd);
        vp_attention_backward(m, l, g->dxin);
        dy = stream_backward(m, 2 * l, g->dxin); /* the previous MLP's output, or (l = 0) the embedding */
    }
    /* Hidden residuals read H_0 = the embedding output: add their share to its gradient. */
    if (dy != g->dxin) memcpy(g->dxin, dy, Nd * sizeof *g->dxin);
    vp_backward_end(m, g->dxin);
    embedding_backward(m->mg.wte, g->dxin, m->tokens, N, d);
}

/* ------------------------------------------------------------------ accessors */

void model_zero_grad(RefModel *m) { zero(m->grads, m->t->total); }
real *model_params(RefModel *m) { return m->params; }
real *model_grads(RefModel *m) { return m->grads; }
real *model_logits(RefModel *m) { return m->logits; }
real *model_exp_avg(RefModel *m) { return m->exp_avg; }
real *model_exp_avg_sq(RefModel *m) { return m->exp_avg_sq; }
long model_step_count(const RefModel *m) { return m->step; }
void model_set_step_count(RefModel *m, long step) { m->step = step; }
const real *model_attention(const RefModel *m, int layer) { return m->acts[layer].att; }
const real *model_values(const RefModel *m, int layer) { return m->acts[layer].v; }
void model_set_dropout(RefModel *m, int training, uint64_t seed, uint64_t step, uint64_t micro) {
    if (m->gpt2) gpt2_set_dropout(m, training, seed, step, micro); /* llama has no dropout (SPEC §1) */
}
const real *model_hidden(const RefModel *m, int s) {
    return s == 0 ? m->emb : s == m->L ? m->lnf : m->acts[s - 1].out;
}
const real *model_keys(const RefModel *m, int layer) { return m->acts[layer].k; }
const real *model_queries(const RefModel *m, int layer) { return m->acts[layer].q; }
