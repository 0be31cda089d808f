/* model_impl.h: the inside of the LLaMA RefModel, private to ref/model.c (the public API is
 * model.h; the attention sublayer's state is ref/value_path.c's, the residual stream's
 * ref/stream.c's, GPT-2 is its own model in ref/gpt2.c).
 *
 * Shapes: B batch, T seq, N = B*T, d model width, NH query heads, NKV kv heads,
 * hd head dim, qC = NH*hd, kvC = NKV*hd, F ffn width, V vocab, L layers.
 * Layers are 0-based here (layer l here is layer n = l+1 of formulas.md). */
#ifndef VRL_REF_MODEL_IMPL_H
#define VRL_REF_MODEL_IMPL_H

#include "ref/model.h"
#include "ref/stream.h"
#include "ref/value_path.h"

/* One layer's tensors inside a flat buffer (parameters, or their gradients) outside the
 * value path's (the attention norm, W_q/W_k/W_v, the value coefficients: ref/value_path.c);
 * fields as LayerLayout's (common/model/layout.h). */
typedef struct {
    real *wo;    /* W_o         [d, qC] */
    real *ln2;   /* MLP norm    [d] */
    real *wgate; /* W_gate      [F, d] */
    real *wup;   /* W_up        [F, d] */
    real *wdown; /* W_down      [d, F] */
} LayerTensors;

/* The model-level tensors inside a flat buffer. */
typedef struct {
    real *wte;     /* embedding  [V, d] */
    real *lnf;     /* final norm [d] */
    real *lm_head; /* head       [V, d] (untied) */
} ModelTensors;

/* What the forward of layer l keeps for the backward and for analysis. */
typedef struct {
    real *x_in;     /* [N,d]   the attention sublayer's input x (owned by the depth mixer, ref/stream.c) */
    const real *atty; /* [N,qC] U_l from the value path, heads concatenated, before W_o */
    real *y_attn;   /* [N,d]   W_o · U_l, the attention sublayer's raw output */
    real *h;        /* [N,d]   the MLP sublayer's input (baseline: x + W_o · U_l; owned by the mixer) */
    real *ln2;      /* [N,d]   RMSNorm(h) · g2 */
    real *ln2_rstd; /* [N]     */
    real *gate;     /* [N,F]   ln2 · W_gateᵀ */
    real *up;       /* [N,F]   ln2 · W_upᵀ */
    real *swi;      /* [N,F]   silu(gate) ⊙ up */
    real *y_mlp;    /* [N,d]   W_down · swi, the MLP sublayer's raw output */
    real *out;      /* [N,d]   the next layer's input (baseline: h + W_down · swi; owned by the mixer) */
} LayerActs;

/* Gradient scratch for the backward (reused by every layer). */
typedef struct {
    real *dxin;    /* [N,d]   dLoss/d(input of the current sublayer), handed to the depth mixer */
    real *dln;     /* [N,d]   d(ln2) or d(lnf) */
    real *datty;   /* [N,qC]  dLoss/dU_l, handed to the value path */
    real *dswi;    /* [N,F]   */
    real *dgate;   /* [N,F]   */
    real *dup;     /* [N,F]   */
    real *dlogits; /* [N,V]   */
} GradActs;

struct RefModel {
    const ModelSpec *spec;    /* not owned; must outlive the model */
    const ParamTable *t;      /* &spec->table */
    double eps;               /* the config's norm eps */
    int B, T, N, d, qC, F, V, L;

    real *params, *grads;     /* [t->total] each, laid out by the table */
    real *exp_avg, *exp_avg_sq; /* AdamW moments, [t->total] each */

    LayerTensors *lp, *lg;    /* [L] views of params / grads */
    ModelTensors mp, mg;

    int32_t *tokens;          /* [N] the last forward's tokens */
    real *emb;                /* [N,d] x_0, the embedding output */
    LayerActs *acts;          /* [L] */
    real **y;                 /* [2L+1] depth-mixer sources: y[0] = emb, y[2l+1] = y_attn, y[2l+2] = y_mlp */
    VpState *vp;              /* the attention sublayers (formulas.md §4; plain attention for the baseline) */
    StreamState *stream;      /* the depth mixer (formulas.md §5; plain residuals for the baseline) */
    const real *x_final;      /* [N,d] the head's input (from the mixer) */
    real *lnf, *lnf_rstd;     /* [N,d], [N] final RMSNorm */
    real *logits;             /* [N,V] */
    real *losses;             /* [N] per-position loss (0 at each sequence's last position) */
    double *lse;              /* [N] log Σ exp of each logits row, kept for the backward */
    GradActs g;
    int have_forward;         /* backward needs the activations of a forward */

    void *arena;              /* every buffer above is carved from this one allocation */
};

#endif
