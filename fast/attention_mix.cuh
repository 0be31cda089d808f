/* attention_mix.cuh: attention that reads another layer's softmax or keys (fast/attention_mix.cu),
 * by composing the model's attention kernels of attention.cuh (mma or flash); no
 * [T,T] matrix is formed. The twin of the ca and cross parts of ref/value_path.c:
 *
 *   attention-matrix residual (plan row ca, e.g. attn_residual's 0.5·A_1 + 0.5·A_n):
 *     U_l = Σ_i ca[l][i]·A_i·V'_l, each term A_i·V'_l an attention of layer i's queries and
 *     keys (after their mixes and RoPE) over this layer's values; its row statistics (lse) are
 *     recomputed from q_i, k_i. Backward of each term: attention_backward with dout = ca·dU
 *     and the term's own output (D = Σ dout⊙out is the term's), giving d(q_i), d(k_i) (kept in
 *     fp32 for layer i's backward, which runs later) and d(V'_l) (summed over the terms).
 *   Eq. 2 cross-layer attention (plan cross[l] = m):
 *     U_l = softmax(q_l·[k_l; k_m]ᵀ/√hd)·[V'_l; V_m], causal within each half: two attention passes
 *     (over k_l, V'_l and over k_m, V_m) merged by their lse: L = log(e^{L_a} + e^{L_b}),
 *     O = e^{L_a−L}·O_a + e^{L_b−L}·O_b. Backward: attention_backward once per half with the
 *     MERGED O and L, so that exp(s − L) is the joint softmax and Σ dout⊙O its joint D: exact
 *     d(q_l) (the halves' sum), d(k_l), d(V'_l), and d(k_m), d(V_m) for layer m.
 *
 * Layers 0-based as everywhere in fast/. Shapes: N = B*T, qC = NH*hd, kvC = NKV*hd. */
#ifndef VRL_FAST_ATTENTION_MIX_CUH
#define VRL_FAST_ATTENTION_MIX_CUH

#include "fast/model.cuh"

FAST_NS_BEGIN

/* The mixer's state: its own device buffers (one allocation), fixed for the model's life. */
typedef struct FastAttnMix {
    void *arena;
    size_t bytes;
    int mixes[FAST_MAX_LAYERS];  /* layer l's ca row is not the identity: the residual runs here */
    int n_src[FAST_MAX_LAYERS];  /* its other sources i != l with ca[l][i] != 0 */
    int src[FAST_MAX_LAYERS][FAST_MAX_LAYERS]; /* [l][j] those sources, in layer order */
    bf16 *term[FAST_MAX_LAYERS][FAST_MAX_LAYERS]; /* [l][j] [N,qC] A_src·V'_l, kept for the backward's D */
    float *term_lse[FAST_MAX_LAYERS][FAST_MAX_LAYERS]; /* [l][j] [B,NH,T] its lse (= layer src's own) */
    bf16 *own[FAST_MAX_LAYERS];  /* [N,qC] A_l·V'_l where the layer mixes (its acts' atty holds Σ ca·terms) */
    float *dq_keep[FAST_MAX_LAYERS]; /* [N,qC] d(q_i after RoPE) from later layers' terms, or NULL */
    float *dk_keep[FAST_MAX_LAYERS]; /* [N,kvC] d(k_i after RoPE) from later layers (terms, Eq. 2), or NULL */
    bf16 *half_out;              /* [N,qC] Eq. 2: the second half's output before the merge (forward) */
    float *half_lse;             /* [B,NH,T] its lse */
    bf16 *dout_scaled;           /* [N,qC] ca·dU for one term */
    float *dv_sum;               /* [N,kvC] d(V'_l) summed over a mixing layer's terms */
    bf16 *dq_tmp, *dk_tmp;       /* [N,qC+2kvC] each: another layer's d(q), d(k) at its row stride */
} FastAttnMix;

/* 1 if layer l runs here (its attention mixes softmaxes or is an Eq. 2 layer). */
int amix_layer(const FastModel *m, int l);
/* The mixer of m's plan (after m's arena is laid out and value_flags ran: it reads V_m's buffer).
 * Nothing is allocated for a plan without ca mixing or Eq. 2. 0, or -1 with vrl_error. */
int amix_create(FastModel *m);
void amix_destroy(FastModel *m);
/* Layer l's attention into acts[l].atty (Σ ca·terms, or the merged Eq. 2 output) and its
 * own softmax's lse (Eq. 2: the merged lse) into acts[l].lse. */
int amix_forward(FastModel *m, int l);
/* Zero the kept d(q), d(k) accumulators; before the last layer's backward. */
int amix_backward_begin(FastModel *m);
/* Layer l's attention backward from m->datty: d(q_l), d(k_l) into dq, dk (bf16, layer l's row
 * strides, written), d(V'_l) into dv as attention_backward puts it; other layers' shares into
 * their keeps (and m->dv_keep for Eq. 2's V_m). */
int amix_backward(FastModel *m, int l, bf16 *dq, bf16 *dk, AttnDv dv);
/* After layer l's own attention backward wrote dq, dk: add what later layers kept for them
 * (dq = bf16(dq + keep)); nothing where no later layer read layer l's queries or keys. */
int amix_add_kept(FastModel *m, int l, bf16 *dq, bf16 *dk);

FAST_NS_END

#endif
