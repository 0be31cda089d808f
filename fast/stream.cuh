/* stream.cuh: what each sublayer of the CUDA model reads (fast/stream.cu): the residual
 * stream of formulas.md §5 (plain, DenseFormer, AttnRes full and block, HC, mHC) and the hidden
 * residual of §4, forward and backward. The twin of ref/stream.c plus ref/value_path.c's
 * hidden-residual mix; model.cu's layers never see which stream runs.
 *
 * Numbering as ref/stream.h: step s = 0..2L forms the input of sublayer s (s = 2l: layer l's
 * attention, 2l+1: its MLP, 2L: the head); y_0 is the embedding, y_k sublayer k−1's output.
 *
 * The layer keeps its fused residual add (W_o·U + x, W_down·swi + h) where the stream has one:
 * plain and DenseFormer (inside a block) pass the sublayer input as its residual too, so
 * acts[l].h and acts[l].out are h and X_{l+1}; AttnRes, HC and mHC have none (residual NULL),
 * so they are the raw outputs y_{2l+1}, y_{2l+2} the depth sums and the streams read.
 *
 * Backward, per step, in the model's dres32 [N,d] (fp32) and dres16 (its bf16 copy):
 *   stream_norm_backward(s) is the sublayer's pre-norm backward into dres32 (which holds the
 *     sublayer output's gradient; with a residual it passes on to the input unchanged);
 *   stream_backward(s) then turns d(input of step s) into the gradient of what the previous
 *     sublayer wrote (complete: only steps >= s read it), adding the mixing parameters'
 *     gradients into m->grads. */
#ifndef VRL_FAST_STREAM_CUH
#define VRL_FAST_STREAM_CUH

#include "fast/model.cuh"

FAST_NS_BEGIN

#define STREAM_MAX_STEPS (2 * FAST_MAX_LAYERS + 1)

/* The mixer's state: its own device buffers (one allocation), fixed for the model's life. */
typedef struct FastStream {
    StreamKind kind;           /* PLAIN, DENSEFORMER, ATTNRES, HC or MHC */
    const StreamPlan *plan;    /* the spec's, not owned */
    float eps;                 /* the config's norm eps (AttnRes' RMSNorm of each source) */
    void *arena;
    size_t bytes;
    /* hidden residual (formulas.md §4): layer l's attention norm reads hx·x + hh·H_0 */
    float hx[FAST_MAX_LAYERS], hh[FAST_MAX_LAYERS];
    bf16 *xn[FAST_MAX_LAYERS]; /* [N,d] that mix, kept for the norm's backward; NULL where hx = 1, hh = 0 */
    float *dnorm;              /* [N,d] d(attention norm input) before hx/hh split it (NULL: no hidden residual) */
    float *demb;               /* [N,d] dLoss/dH_0 gathered from the hidden residuals */
    /* DENSEFORMER: X_0 = embedding, X_j = acts[j-1].out; D_j the DWA after block j */
    bf16 *D[FAST_MAX_LAYERS + 1];   /* [N,d] D_j where block j has a DWA (j >= 1), else NULL (D_j = X_j) */
    float *dX[FAST_MAX_LAYERS + 1]; /* [N,d] dLoss/dX_j gathered from the DWAs reading X_j, j = 0..L */
    const bf16 **dwa_src;      /* device [L][L+1]: the X read by the DWA after block j+1 */
    float **dwa_dsrc;          /* device [L][L+1]: their dX accumulators */
    size_t alpha_off[FAST_MAX_LAYERS]; /* the DWA weights' offsets in the table */
    float *partial;            /* [FAST_MAX_LAYERS, LAMBDA_BLOCKS] the weights' gradient partial sums */
    /* ATTNRES: y_0 = embedding, y_{2l+1} = acts[l].h, y_{2l+2} = acts[l].out */
    const bf16 **y;            /* device [2L+1] */
    int *lo, *hi;              /* device [2L+1][2L+1] step s's source g sums y_lo .. y_{hi-1} */
    size_t q_off[STREAM_MAX_STEPS]; /* step s's query w_s [d] in the table */
    bf16 *in[STREAM_MAX_STEPS];     /* [N,d] input of step s (the norm's input, kept for the backward) */
    float *dy[STREAM_MAX_STEPS];    /* [N,d] dLoss/dy_k accumulated over the steps reading y_k */
    float **dyp;               /* device [2L+1]: the dy addresses, for the kernels */
    float *dwtok;              /* [N,d] one step's query gradient per token, before the sum over tokens */
    float *colpart;            /* [ceil(N/256), max(d, n²)] that sum's row-chunk partials */
    /* HC / MHC: y as AttnRes'; n streams H_s per token, the maps of step s from H_s (ref/stream.c) */
    int n, iters;              /* streams; mHC's Sinkhorn-Knopp iterations */
    size_t po[STREAM_MAX_STEPS][STREAM_STEP_TENSORS]; /* step s's map tensors (HC_* / MH_*, stream.h) */
    bf16 *H[STREAM_MAX_STEPS]; /* [N,n,d] the streams entering step s */
    float *nrm[STREAM_MAX_STEPS]; /* [N,n] HC: rstd of each stream; mHC: [N] rstd of vec H */
    float *amap[STREAM_MAX_STEPS], *rmap[STREAM_MAX_STEPS], *bmap[STREAM_MAX_STEPS]; /* [N,n], [N,n,n] (row = source), [N,n] */
    float *aux[STREAM_MAX_STEPS]; /* [N, 2n+n²] HC: tanh of (m, b, r) per stream; mHC: projections (pre, post, res) */
    float *dHbuf[2];           /* [N,n,d] dLoss/dH_s, by the parity of s (the other: dH_{s-1}) */
    float *da, *dR, *db;       /* [N,n], [N,n,n], [N,n] the maps' gradients at the current step */
    float *zrow;               /* HC [N·n, 2+n] d(pre-tanh) per stream; mHC [N, 2n+n²] d(projections) */
    float *sab;                /* HC [N·n, 2] each stream's share of d(scale_alpha), d(scale_beta); mHC [N, 3] d(alpha_*) */
    float *sk;                 /* mHC [N, (2·iters+1)·n² + 2n²] Sinkhorn replay and its gradient, per token */
} FastStream;

/* The mixer of spec for m (after m's arena is laid out: it reads the activations' addresses).
 * 0, or -1 with vrl_error. */
int stream_create(FastModel *m, const ModelSpec *spec);
void stream_destroy(FastModel *m);
/* Step s's input: s < 2L sets layer s/2's norm input and residual (acts x_in/x_res for the
 * attention, h_in/h_res for the MLP); s = 2L returns the head's input in *head (else unused). */
int stream_forward(FastModel *m, int s, const bf16 **head);
/* Zero the backward accumulators; before stream_backward(m, 2L). */
int stream_backward_begin(FastModel *m);
/* The pre-norm backward of sublayer s < 2L from d(norm output) in m->dln16 (see above), the
 * norm's gain gradient added into dweight [d] in the same pass (m->norm_scratch its partials). */
int stream_norm_backward(FastModel *m, int s, const bf16 *norm_weight, const float *rstd, float *dweight);
int stream_backward(FastModel *m, int s);

FAST_NS_END

#endif
