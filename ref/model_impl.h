/* model_impl.h: the inside of RefModel, shared by model.c, adamw.c and backend.c
 * (nothing outside ref/ includes this; the public API is model.h).
 *
 * Shapes: B batch, T seq, N = B*T, d model width, NH query heads, NKV kv heads,
 * hd head dim, qC = NH*hd, kvC = NKV*hd, F ffn width, V vocab, L layers.
 * Layers are 0-based here (layer l here is layer n = l+1 of SPEC.md). */
#ifndef VRL_REF_MODEL_IMPL_H
#define VRL_REF_MODEL_IMPL_H

#include "common/model/value_path.h"
#include "ref/model.h"
#include "ref/stream.h"

/* One layer's tensors inside a flat buffer (parameters, or their gradients). */
typedef struct {
    real *ln1;   /* input_layernorm.weight            [d] */
    real *wq;    /* self_attn.q_proj.weight           [qC, d]  (NULL where the plan drops it) */
    real *wk;    /* self_attn.k_proj.weight           [kvC, d] (NULL where the plan drops it) */
    real *wv;    /* self_attn.v_proj.weight           [kvC, d] (NULL where the plan drops it) */
    real *lam;   /* self_attn.v_residual_lambda       [n_train] trainable value coefficients, or NULL */
    real *wo;    /* self_attn.o_proj.weight           [d, qC] */
    real *ln2;   /* post_attention_layernorm.weight   [d] */
    real *wgate; /* mlp.gate_proj.weight              [F, d] */
    real *wup;   /* mlp.up_proj.weight                [F, d] */
    real *wdown; /* mlp.down_proj.weight              [d, F] */
} LayerTensors;

/* The model-level tensors inside a flat buffer. */
typedef struct {
    real *wte;     /* model.embed_tokens.weight [V, d] */
    real *lnf;     /* model.norm.weight         [d] */
    real *lm_head; /* lm_head.weight            [V, d] (untied) */
} ModelTensors;

/* What the forward of layer l keeps for the backward and for analysis. */
typedef struct {
    real *x_in;     /* [N,d]   the attention sublayer's input x (owned by the depth mixer, ref/stream.c) */
    real *ln1;      /* [N,d]   RMSNorm(xn) · g1 */
    real *ln1_rstd; /* [N]     */
    real *q;        /* [N,qC]  queries after mixing (Σ cq·Q_i) and RoPE */
    real *k;        /* [N,kvC] keys after mixing (Σ ck·K_i) and RoPE */
    real *v;        /* [N,kvC] raw V_n = ln1 · W_vᵀ, never rotated: what later layers may mix in */
    real *vin;      /* [N,kvC] the value input attention consumes: Σ_i vcoef[l][i] · V_i */
    real *att;      /* [B,NH,T,W] causal softmax A_n; W = 2T for Eq. 2 layers (own keys, then K_m) */
    real *atty;     /* [N,qC]  U_n = P_n · vin (+ corrections), heads concatenated, before W_o */
    real *y_attn;   /* [N,d]   W_o · U_n, the attention sublayer's raw output */
    /* value-path extras (ref/value_path.c, SPEC §4) */
    real *xn;       /* [N,d]   attention norm input hx·x + hh·H_0 (= x but for the hidden residual) */
    real *qraw;     /* [N,qC]  raw Q_n = ln1 · W_qᵀ before mixing and RoPE (unused without q_proj) */
    real *kraw;     /* [N,kvC] raw K_n */
    real *attp;     /* [B,NH,T,W] probabilities applied to the values: Σ_i ca[l][i]·A_i */
    real *corr;     /* [N,kvC] output correction Σ_i ce[l][i]·V_i (kv space) */
    real *h;        /* [N,d]   the MLP sublayer's input (baseline: x + W_o · U_n; owned by the mixer) */
    real *ln2;      /* [N,d]   RMSNorm(h) · g2 */
    real *ln2_rstd; /* [N]     */
    real *gate;     /* [N,F]   ln2 · W_gateᵀ */
    real *up;       /* [N,F]   ln2 · W_upᵀ */
    real *swi;      /* [N,F]   silu(gate) ⊙ up */
    real *y_mlp;    /* [N,d]   W_down · swi, the MLP sublayer's raw output */
    real *out;      /* [N,d]   the next layer's input (baseline: h + W_down · swi; owned by the mixer) */
} LayerActs;

/* Gradient scratch for the backward (reused by every layer, except dv). */
typedef struct {
    real *dxin;    /* [N,d]   dLoss/d(input of the current sublayer), handed to the depth mixer */
    real *dln;     /* [N,d]   d(ln1) or d(ln2) or d(lnf) */
    real *dq;      /* [N,qC]  d(queries before RoPE) */
    real *dqr;     /* [N,qC]  d(queries after RoPE) */
    real *dk;      /* [N,kvC] */
    real *dvin;    /* [N,kvC] d(value input) */
    /* value path (ref/value_path.c): per-layer accumulators, complete once every reader is done */
    real **dqraw;  /* [L] × [N,qC]  d(raw Q_i) */
    real **dkraw;  /* [L] × [N,kvC] d(raw K_i) */
    real **dkrot;  /* [L] × [N,kvC] d(post-RoPE keys of layer i): Eq. 2 reads layer m's */
    real **datt;   /* [L] × [B,NH,T,W] d(A_i) */
    real *dattp;   /* [B,NH,T,2T] d(applied probabilities), scratch */
    real *dcorr;   /* [N,kvC] d(correction), scratch */
    real *dxn;     /* [N,d]   d(attention norm input), scratch */
    real *demb;    /* [N,d]   d(H_0) from hidden residuals, added to the embedding's gradient */
    double *dcoef; /* [L]     Σ dV'·V_i of one layer, for its trainable coefficients */
    real *datty;   /* [N,qC]  */
    real *dswi;    /* [N,F]   */
    real *dgate;   /* [N,F]   */
    real *dup;     /* [N,F]   */
    real *dlogits; /* [N,V]   */
    real **dv;     /* [L] × [N,kvC]: d(raw V_l), complete once every layer reading V_l is done */
} GradActs;

struct RefModel {
    ModelConfig c;
    const ParamTable *t;      /* not owned; must outlive the model */
    int B, T, N, d, NH, NKV, hd, qC, kvC, F, V, L;

    real *params, *grads;     /* [t->total] each, laid out by the table */
    real *exp_avg, *exp_avg_sq; /* AdamW moments, [t->total] each */
    long step;                /* AdamW steps taken (torch's state["step"]) */
    uint64_t drop_seed;       /* dropout key of the next training forward (ref/backend.c): */
    long drop_step, drop_micro; /* run seed, update (1-based), micro-batch */

    LayerTensors *lp, *lg;    /* [L] views of params / grads */
    ModelTensors mp, mg;

    /* Value-path mixing table, [L][L], row l = coefficients of V_0..V_l for layer l's
     * value input (entries above the diagonal unused). The baseline is the identity;
     * the value-residual variants of SPEC §4 fill this table (and may train it). */
    double *vcoef;
    const real **vsrc;        /* [L] the raw values V_0..V_{L-1} (acts[i].v), the mixer's sources */
    ValuePlan plan;           /* the value-path tables (common/model/value_path.h); vcoef = plan.cv with
                               * the trainable entries refreshed from the parameters each forward */
    const real **qsrc, **ksrc, **asrc; /* [L] raw Q_i, raw K_i, A_i: sources of cq, ck, ca */
    void *vp_arena;           /* the value-path buffers above (ref/value_path.c) */

    real *cos_t, *sin_t;      /* RoPE tables [T, hd/2] */
    int32_t *tokens;          /* [N] the last forward's tokens */
    real *emb;                /* [N,d] x_0, the embedding output */
    LayerActs *acts;          /* [L] */
    real **y;                 /* [2L+1] depth-mixer sources: y[0] = emb, y[2l+1] = y_attn, y[2l+2] = y_mlp */
    StreamState *stream;      /* the depth mixer (SPEC §5; plain residuals for the baseline) */
    const real *x_final;      /* [N,d] the head's input (from the mixer) */
    struct Gpt2Acts *gpt2;    /* GPT-2 activations (ref/gpt2.c); NULL for llama */
    real *lnf, *lnf_rstd;     /* [N,d], [N] final RMSNorm */
    real *logits;             /* [N,V] */
    real *losses;             /* [N] per-position loss (0 at each sequence's last position) */
    double *lse;              /* [N] log Σ exp of each logits row, kept for the backward */
    GradActs g;
    int have_forward;         /* backward needs the activations of a forward */

    void *arena;              /* every buffer above is carved from this one allocation */
};

/* Carve n elements of `size` bytes from an arena at *off (64-byte aligned). With base == NULL
 * it only counts, so one layout function sizes and then fills its arena (model.c, value_path.c,
 * gpt2.c). CARVE(ptr, n) uses the caller's `base` and `off`. */
static inline void *ref_carve(char *base, size_t *off, size_t n, size_t size) {
    size_t at = (*off + 63) & ~(size_t)63;
    *off = at + n * size;
    return base ? base + at : NULL;
}
#define CARVE(ptr, n) ((ptr) = ref_carve(base, &off, (size_t)(n), sizeof *(ptr)))

#endif
