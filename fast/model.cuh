/* model.cuh: the inside of FastModel, shared by model.cu, adamw.cu and bench.cu.
 *
 * Shapes: B batch, T seq, N = B*T, d width, NH query heads, NKV kv heads, hd head dim,
 * qC = NH*hd, kvC = NKV*hd, F ffn width, V vocab, L layers (0-based: layer l here is
 * layer n = l+1 of formulas.md). P = parameters in the table. All pointers are device memory
 * carved from one cudaMalloc arena unless marked host. */
#ifndef VRL_FAST_MODEL_CUH
#define VRL_FAST_MODEL_CUH

#include "fast/exact_sumsq.h" /* EXACT_SUMSQ_WORDS: the norm's buffers */
#include "fast/ops.cuh"

extern "C" {
#include "common/model/backend.h"
}

FAST_NS_BEGIN

/* Offsets of one layer's tensors in the flat parameter table. */
typedef struct ZeroState ZeroState;
typedef struct FastStream FastStream;
typedef struct FastGpt2 FastGpt2; /* GPT-2's tensors (fast/gpt2.cu) */
typedef struct FastAttnMix FastAttnMix;

/* wq, wk, wv: (size_t)-1 where the plan drops the projection (SVFormer, CLA); lam: the
 * layer's trainable value coefficients [n_train[l]], or (size_t)-1. */
typedef struct {
    size_t ln1, wq, wk, wv, wo, ln2, wgate, wup, wdown, lam;
} LayerOffsets;

/* What one kind of raw projection (Q, K or V) of the value plan is used for, per layer i.
 * "Reads" means a non-zero constant coefficient, a trainable one (V), or a correction (V). */
typedef struct {
    int needed[FAST_MAX_LAYERS];   /* some layer n >= i reads X_i: the projection exists */
    int later[FAST_MAX_LAYERS];    /* some layer n > i reads X_i: its gradient outlives layer i */
    int identity[FAST_MAX_LAYERS]; /* row i is exactly X_i with a constant 1 */
} SourceFlags;

/* How layer l's value input v_in = Σ_i cv[l][i]·V_i is made (model.cu's value_flags;
 * docs/design/kernels.md, "Variants"). */
typedef enum {
    VIN_MIX,   /* mix_forward over the row's sources: trainable λ, or no own term to fold */
    VIN_ALIAS, /* the row is exactly V_j with a constant 1 (baseline, CLA: j = l or the layer whose
                * V it shares; SVFormer: j = 0): v_in is V_j's buffer, no pass, no memory */
    VIN_FOLD,  /* only this row reads V_l, with a constant: v_in = cv[l][l]·ln1·W_vᵀ + β·C on one
                * GEMM, C the other sources (ResFormer: β = λ1, C = V_1); raw V_l never exists */
} VinKind;

/* What the forward of layer l keeps for the backward. */
typedef struct {
    const bf16 *x_in; /* [N,d]   the attention norm's input (stream.cuh: the stream's x, or the hidden residual's mix) */
    const bf16 *x_res;/* [N,d]   added to W_o·U: the stream's x, or NULL (AttnRes: h is the raw output) */
    const bf16 *h_in; /* [N,d]   the MLP norm's input: h, or AttnRes' depth sum */
    const bf16 *h_res;/* [N,d]   added to W_down·swi: h, or NULL (AttnRes: out is the raw output) */
    bf16 *ln1;        /* [N,d]   RMSNorm(x)·g1 (a shared scratch when recomputing) */
    float *ln1_rstd;  /* [N]     */
    bf16 *qraw;       /* [N,qC]  raw Q_l = ln1·W_qᵀ where a mix reads it (else NULL: q is made in place) */
    bf16 *kraw;       /* [N,kvC] raw K_l, likewise */
    bf16 *q;          /* [N,qC]  queries after mixing (Σ_i cq[l][i]·Q_i) and RoPE */
    bf16 *k;          /* [N,kvC] keys after mixing (Σ_i ck[l][i]·K_i) and RoPE */
    bf16 *v;          /* [N,kvC] raw V_l (NULL when no layer reads it, e.g. SVFormer n >= 2, or when
                       * the row folds it into v_in, VIN_FOLD) */
    bf16 *vin;        /* [N,kvC] Σ_i c[l][i]·V_i; V_j's own buffer when the row is VIN_ALIAS */
    bf16 *atty;       /* [N,qC]  P_l·V'_l, the attention output */
    bf16 *u;          /* [N,qC]  U_l = atty + repeat_kv(Σ_i ce[l][i]·V_i), W_o's input (= atty without corrections) */
    float *lse;       /* [B,NH,T] softmax log-sum-exp per query row */
    bf16 *h;          /* [N,d]   x_res + W_o·U */
    bf16 *ln2;        /* [N,d]   (scratch when recomputing) */
    float *ln2_rstd;  /* [N]     */
    bf16 *gu;         /* [N,2F]  the fused gate|up GEMM: ln2·[W_gate;W_up]ᵀ, gate in columns [0,F), up in [F,2F) */
    bf16 *swi;        /* [N,F]   silu(gate)⊙up (scratch when recomputing) */
    bf16 *out;        /* [N,d]   h_res + W_down·swi, the layer's output */
} FastActs;

/* AdamW's per-step scalars (adamw.cu), in device memory so a captured update reads the
 * current step's learning rate and bias corrections (formulas as ref/adamw.c, rounded on
 * the host exactly as before). */
typedef struct {
    float step_size, bc2_sqrt, decay, w1, b2, w2, eps;
    double max_norm; /* the clip threshold; <= 0: no clipping */
} AdamWScalars;

/* One captured piece of the step (model.cu's run_step_graph): the instantiated graph, the
 * key it was captured for (a value baked into its launches), and whether a call with that
 * key already ran uncaptured (the warm-up before the capture). */
typedef struct {
    cudaGraphExec_t exec;
    double key;
    int warm;
} StepGraph;

/* What the update's one wait brings back (pinned host memory). */
#define FAST_MAX_MICRO 4096 /* micro-batches per update whose losses the device keeps */
typedef struct {
    double norm_sq;                /* the pre-clip squared global norm */
    double forward_loss_sum;       /* a forward-only call's Σ losses */
    double loss[FAST_MAX_MICRO];   /* each micro-batch's mean loss, in order */
} FastReadback;

typedef struct FastModel {
    ModelConfig c;
    const ModelSpec *spec; /* not owned: the decoder (fast/decode.cu) makes its own model of it */
    const ParamTable *t; /* not owned */
    int B, T, N, d, NH, NKV, hd, qC, kvC, F, V, L;
    int Vp;              /* V rounded up to a multiple of FAST_VOCAB_PAD: the logits' row stride */
    int recompute;       /* VRL_FAST_RECOMPUTE=1: ln1, ln2, swi recomputed in the backward */
    int ce_rows;         /* rows of the logits chunk (the whole batch unless over CE_CHUNK_BYTES or VRL_FAST_CE_ROWS) */
    int attention;       /* FAST_ATTENTION_MMA, _FLASH or _CUDNN: fast_attention_kind() at create (--attention) */
    int gemm;            /* FAST_GEMM_CUBLASLT or _WGMMA: fast_gemm_kind() at create (--gemm) */
    void *cudnn;         /* --attention cudnn: the CudnnAttention (handle, graph cache); else NULL */
    int decoder;         /* fast/decode.cu's model: its prefill reads every acts[l].k as RoPE'd keys into the
                          * KV cache, so the keys keep rope_forward's pass (rope_k_at_loads) */

    /* parameters and optimizer, flat in table order */
    float *params32;     /* [P] fp32 master weights */
    bf16 *params16;      /* [P] bf16 copy every kernel and GEMM reads */
    float *grads;        /* [P] fp32, accumulated over micro-batches */
    float *exp_avg, *exp_avg_sq; /* [P] fp32 AdamW moments */
    uint64_t *norm_words;        /* [ADAMW_NORM_BLOCKS + 1][EXACT_SUMSQ_WORDS]: the blocks' exact
                                  * sums of squares (fast/exact_sumsq.h), then their normalized total */
    double *norm_state;          /* [2] the squared norm (the total rounded once), the clip
                                  * coefficient (0: no clipping) */
    double *loss_sum;            /* [1] Σ losses of the last forward, summed on the device */
    double *micro_loss;          /* [FAST_MAX_MICRO] the update's micro-batch mean losses, in order */
    int32_t *micro_count;        /* [1] micro-batches of this update so far (the next loss's slot) */
    AdamWScalars *adamw_scalars; /* [1] this step's AdamW scalars */

    /* the step's structure (docs/design/kernels.md, "The step"): one non-blocking stream; the micro-batch
     * forward+backward and the update each captured once as a CUDA graph and replayed */
    cudaStream_t stream;
    int graph_on;                /* VRL_FAST_GRAPH, default 1; 0 queues every kernel each time */
    StepGraph micro_graph;       /* forward+backward of a micro-batch; key: the gradient scale */
    StepGraph micro_graph_first; /* the same for the first micro-batch after zero_grad (grads_first) */
    StepGraph update_graph;      /* norm, clip coefficient and AdamW; key: weight decay on or off */
    cudaEvent_t uploaded;        /* the last host→device input copies are done: pinned inputs may change */
    FastReadback *h_read;        /* pinned host: what the update's wait copies back */
    AdamWScalars *h_adamw;       /* pinned host: the scalars' source */
    int n_micro;                 /* host: forward_backward calls since zero_grad */
    int read_valid;              /* h_read holds this update's losses (set by step's wait) */
    /* zero_grad without a pass over every gradient (issue 51): in the first micro-batch after
     * it, each weight gradient a GEMM writes is overwritten by its first writer (β = 0,
     * grad_dw_beta), so zero_grad zeroes only the gaps between those ranges (the embedding's
     * gradient, the norms' gains, the mixing parameters, padding), learned in the first such
     * micro-batch (until then it zeroes everything) */
    int grads_first;             /* host: the next micro-batch is the first since zero_grad */
    int grads_stale;             /* host: zero_grad left the GEMM ranges as they were and no micro-batch has written them */
    int n_dw, n_dw_known;        /* host: GEMM-written ranges of this first micro-batch; of the learned set (-1: none yet) */
    size_t *dw_off, *dw_len;     /* host [t->n + 1] each: this first micro-batch's ranges (offset, floats), in writing order */
    size_t *dw_known;            /* host [2 (t->n + 1)]: the learned set, (offset, floats) in writing order */
    int n_gaps;                  /* ranges zero_grad zeroes (-1: not uploaded yet) */
    size_t gap_max;              /* the longest of them, floats */
    size_t *gaps;                /* device [t->n + 2][2]: (offset, floats) of each */
    LayerOffsets *lo;    /* host [L] */
    size_t o_wte, o_lnf, o_lm_head;

    /* value path (formulas.md §4): the spec's plan and what it implies, host */
    const ValuePlan *plan; /* not owned */
    SourceFlags qf, kf, vf; /* raw Q, K, V (vf counts the corrections' reads too) */
    int has_corr[FAST_MAX_LAYERS]; /* row l of ce is not all zero */
    VinKind vin_kind[FAST_MAX_LAYERS]; /* how v_in is made */
    int vin_src[FAST_MAX_LAYERS];      /* VIN_ALIAS: the j whose V_j v_in is; VIN_FOLD: its one other
                                        * source, when there is exactly one (ResFormer: 0); else -1 */
    int dv_direct[FAST_MAX_LAYERS];    /* attention's dV is V_l's whole gradient (the baseline): the
                                        * backward writes it as bf16 straight into dv16 */
    int fuse_cols[FAST_MAX_LAYERS];    /* width of layer l's fused projection GEMM over its adjacent
                                        * weights: qC+2kvC (Q, K, V), qC+kvC (Q, K; V mixed or
                                        * folded), the row stride of its q/k(/v) views; 0: one GEMM each */

    /* activations */
    int32_t *tokens, *targets; /* [N] each; target −1 at each sequence's last position */
    int32_t *emb_uniq, *emb_offsets, *emb_pos; /* [N], [N+1], [N] embedding backward plan */
    int32_t *emb_count;        /* [1] distinct tokens of the batch (the plan's U) */
    /* host mirrors, pinned (the async copies' sources): tokens, targets, uniq [N], offsets [N+1],
     * pos [N], emb_count [1]; h_count [V] plain host scratch */
    int32_t *h_tokens, *h_targets, *h_uniq, *h_offsets, *h_pos, *h_emb_count, *h_count;
    float *h_score_lp;        /* host [N]: score_lp as copied back */
    uint8_t *h_score_greedy;  /* host [N]: score_greedy as copied back */
    float *cos_t, *sin_t; /* [T, hd/2] */
    bf16 *emb;            /* [N,d] */
    FastActs *acts;       /* host [L] */
    bf16 *lnf;            /* [N,d] */
    float *lnf_rstd;      /* [N] */
    float *losses;        /* [N] fp32 per position */
    int32_t *score_targets; /* [N] a scoring forward's targets (vrl eval), −1 where nothing is scored */
    float *score_lp;      /* [N] fp32 log p(target) of a scoring forward */
    uint8_t *score_greedy; /* [N] 1 where the target is the argmax, of a scoring forward */
    bf16 *logits;         /* [ce_rows,Vp] bf16 chunk: the lm_head GEMM's logits, then (training) their gradient,
                           * written over them by the cross-entropy; pad columns [V, Vp) never enter the loss */

    /* backward scratch */
    float *dres32;        /* [N,d] residual-stream gradient */
    bf16 *dres16;         /* [N,d] its bf16 copy for the GEMMs */
    bf16 *dln16;          /* [N,d] d(ln1|ln2|lnf): its GEMMs write it (the later ones add into it) in bf16 */
    float *dln32;         /* [N,d] GPT-2's d(ln_1|ln_2|ln_f) in fp32 (fast/gpt2.cu); NULL for llama */
    bf16 *dswi;           /* [N,F] */
    bf16 *dgu;            /* [N,2F] d(gate|up), laid out as acts' gu: the fused dX and dW GEMMs' input */
    bf16 *datty;          /* [N,qC] */
    bf16 *dqkv;           /* [N,qC+2kvC] a fused layer's d(q|k(|v)) rows, one GEMM's input */
    bf16 *dq, *dk;        /* [N,qC], [N,kvC] views into dqkv for an unfused layer */
    float *dvin;          /* [N,kvC] d(value input) from attention, for a mix's sources (NULL when no
                           * row needs it: attention adds dV where it belongs, value_dv_targets) */
    bf16 *dv16;           /* [N,kvC] d(V_l) (VIN_FOLD: d(v_in)) for the W_v GEMMs, the last view into
                           * dqkv (a layer fused with V has its own inside the fused rows) */
    float *dv_own;        /* [N,kvC] d(V_l) when only layer l reads V_l through more than its
                           * attention (a mix or a correction; NULL when no layer needs it) */
    float **dv_keep;      /* host [L]; [N,kvC] each where vf.later, else NULL */
    float *dq_own, *dk_own; /* [N,qC], [N,kvC] d(raw Q_l), d(raw K_l) of a mixing layer when only it reads them (else NULL) */
    float *dq_keep[FAST_MAX_LAYERS]; /* [N,qC] each where qf.later, else NULL */
    float *dk_keep[FAST_MAX_LAYERS]; /* [N,kvC] each where kf.later, else NULL */
    float *lam_partial;   /* [L, LAMBDA_BLOCKS] partial sums of the trainable coefficients' gradients */
    float *attD;          /* [B,NH,T] */
    float *norm_scratch;  /* [ceil(N/256), d] RMSNorm weight-gradient partials */

    Blas blas;
    void *arena;
    size_t arena_bytes;
    size_t bytes_params, bytes_grads, bytes_opt, bytes_acts, bytes_scratch;
    int have_forward;
    struct ZeroState *zero; /* NULL, or data parallelism over NCCL (zero.cuh) */
    FastStream *mix;        /* what each sublayer reads: the residual stream and the hidden residual (stream.cuh) */
    FastGpt2 *gpt2;         /* host: GPT-2's offsets and activations (fast/gpt2.cu), or NULL for llama */
    FastAttnMix *amix;      /* attention-matrix residual and Eq. 2 layers (attention_mix.cuh), or NULL before create */
} FastModel;

/* The models fast/decode.cu runs: a decoding step's (batch rows of one token each, seq 1, which
 * training refuses) and the prompt's prefill (seq = the prompt's length); no memory report. NULL
 * with vrl_error (model.cu). */
FastModel *fast_model_create_decoder(const ModelSpec *spec, int batch, int seq);
/* The forward without the loss over tokens [B,T]: the trunk, then the final norm into m->lnf
 * (fast_model_get_logits reads it); every layer's activations kept. 0 or -1 (model.cu). */
int fast_model_trunk(FastModel *m, const int32_t *tokens);

/* Carve n elements of `size` bytes at *off of an arena at base (NULL: only count), 256-byte
 * aligned, with the CPU layer's guard zone after it where that build has them (model.cu). */
void *fast_carve(char *base, size_t *off, size_t n, size_t size);

/* The lm_head GEMMs run over Vp rows: 0 when lm_head's slot holds them (common/model/spec.c
 * pads it, for llama and GPT-2), else -1 with vrl_error (model.cu). */
int fast_check_head_slot(const FastModel *m);

/* Row strides of layer l's q, k and v_in as attention reads them: views into the fused
 * projection's [N, fuse_cols] rows, or tensors of their own. */
static inline AttnLd fast_attn_ld(const FastModel *m, int l) {
    const int S = m->fuse_cols[l];
    const AttnLd ld = {S ? S : m->qC, S ? S : m->kvC, S == m->qC + 2 * m->kvC ? S : m->kvC};
    return ld;
}

/* The arena's first part, the same for every model: parameters, gradients, AdamW's state and the
 * loss slots (bytes_params, _grads, _opt set); returns the offset after it. Then the upload's
 * device buffers (tokens, targets, the embedding-gradient plan) from off; returns the new offset. */
size_t layout_optimizer(FastModel *m, char *base);
size_t layout_upload(FastModel *m, char *base, size_t off);
/* The head's activations (lnf, its rstd, the losses, the scoring outputs) and its scratch (the
 * logits chunk, the residual-stream and norm-input gradients), each from off; the new offset. */
size_t layout_head(FastModel *m, char *base, size_t off);
size_t layout_head_scratch(FastModel *m, char *base, size_t off);

#define ADAMW_NORM_BLOCKS 1024
/* The vocabulary inside fast/ is padded to a multiple of this (cuBLASLt's aligned kernels want
 * 16-byte-aligned rows; 128 also makes whole tiles): the logits' rows, and the three lm_head
 * GEMMs' extent, whose weight and gradient rows past V are the zero rows of lm_head's slot in
 * the parameter table (common/model/params.h). Checkpoints, get_logits and the tensors' shapes
 * keep the unpadded [V, d] Hugging Face tensors. */
#define FAST_VOCAB_PAD PARAM_VOCAB_PAD

/* AdamW (adamw.cu). fast_adamw_scalars: this step's scalars into h_adamw (host only).
 * fast_adamw_queue: queue the norm, the clip coefficient and the update on m->stream,
 * reading the scalars from m->adamw_scalars (capturable without data parallelism; with it
 * the ranks' norms meet on the host, which writes the global squared norm back). 0 or -1. */
void fast_adamw_scalars(FastModel *m, const AdamWConfig *opt, double lr, long t);
int fast_adamw_queue(FastModel *m, const AdamWConfig *opt);
/* The squared norm's slot in device memory (read back by the step's one wait). */
static inline double *fast_adamw_norm_sq(FastModel *m) { return m->norm_state; }
/* The exact total of this rank's squares, normalized (device; ranks merge it on the host). */
static inline uint64_t *fast_adamw_norm_sum(FastModel *m) {
    return m->norm_words + (size_t)ADAMW_NORM_BLOCKS * EXACT_SUMSQ_WORDS;
}

FAST_NS_END

#endif
