/* ops.cuh: the fast ops, one launcher per op with the name of its ref/ops.h twin.
 *
 * Conventions (differences from ref/ops.h are deliberate and marked):
 *  - Shapes as in ref/ops.h: N = B*T rows, C channels, OC output channels, V vocab,
 *    F ffn width, NH query heads, NKV kv heads, hd head dim.
 *  - Activations are bf16; statistics (RMSNorm rstd, softmax lse, losses) are fp32;
 *    parameter gradients are fp32 and ADDED to (+=), so micro-batches accumulate.
 *  - Activation gradients are WRITTEN (=) unless the comment says +=: each is produced
 *    once per layer, so the ref's zero-then-add is a plain store here.
 *  - Every launcher (kernels and cuBLASLt) issues its work on ops_stream, the calling
 *    model's non-blocking stream (ops_use_stream, set by every model entry point; 0, the
 *    legacy default stream, until one is set), and returns 0, or -1 with vrl_error. */
#ifndef VRL_FAST_OPS_CUH
#define VRL_FAST_OPS_CUH

#include "fast/common.cuh"
#include "fast/attention.cuh" /* attention_forward/backward: their own file pair */

FAST_NS_BEGIN

/* The stream every launcher below issues on. The host drives one model at a time, so one
 * variable serves; a model sets its own stream before it queues anything. */
extern cudaStream_t ops_stream;
static inline void ops_use_stream(cudaStream_t s) { ops_stream = s; }
/* Launches of a memory-bound kernel that took its scalar path, the vector one not fitting
 * (fast/vec.cuh): a test reads it to check that the model's shapes take the vector path. */
extern unsigned long vec_scalar_launches;

/* ------------------------------------------------------------------ matmul (cuBLASLt) */
/* One GEMM shape's cuBLASLt descriptors and the algorithm the heuristic picked for it, made
 * on its first call and reused by every later call with the same key (shape, transposes,
 * leading dimensions, output type, operand alignments): a step makes no descriptor and asks
 * no heuristic after the first. */
#define BLAS_KEY_LEN 14
typedef struct {
    long long key[BLAS_KEY_LEN];
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
} BlasPlan;
#define BLAS_MAX_PLANS 256 /* a model has a few dozen shapes; past this, plans are made per call */

/* One cuBLASLt handle, workspace and plan cache, owned by the model. */
typedef struct {
    cublasLtHandle_t lt;
    void *workspace;
    size_t workspace_bytes;
    BlasPlan *plans; /* host [BLAS_MAX_PLANS] */
    int n_plans;
} Blas;
int blas_create(Blas *b);
void blas_destroy(Blas *b);

/* out = inp · weightᵀ (+ residual).  out [N,OC] bf16, inp [N,C], weight [OC,C],
 * residual [N,OC] or NULL (the residual add rides on the GEMM's beta = 1). */
int matmul_forward(Blas *b, bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *residual, int N, int C,
                   int OC);
/* The same product without a residual, rows ld_out >= OC apart (the logits chunk in the padded
 * vocabulary: columns [OC, ld_out) are not written).  out [N,ld_out] bf16 */
int matmul_forward_ld(Blas *b, bf16 *out, int ld_out, const bf16 *inp, const bf16 *weight, int N, int C, int OC);
/* out = alpha · inp · weightᵀ + beta · c, rounded once (a value mix riding on the W_v GEMM:
 * alpha the layer's own coefficient, c the sum of the other sources, which may be out itself,
 * or NULL for none).  out [N,OC] bf16, c [N,OC] bf16 */
int matmul_forward_scaled(Blas *b, bf16 *out, const bf16 *inp, const bf16 *weight, float alpha, const bf16 *c,
                          float beta, int N, int C, int OC);
/* Input gradient, either dinp32 (fp32) or dinp16 (bf16), = or += by accumulate (a bf16 +=
 * reads dinp16 as the GEMM's C and rounds the fp32 sum once), and
 * dweight = doutᵀ · inp + dw_beta · dweight (fp32; dw_beta 1 adds, 0 overwrites: the first
 * writer after zero_grad, model.cu's grad_dw_beta). Any output may be NULL.
 * dinp [N,C], dweight [OC,C], dout [N,OC], inp [N,C], weight [OC,C] */
int matmul_backward(Blas *b, float *dinp32, int accumulate, bf16 *dinp16, float *dweight, float dw_beta,
                    const bf16 *dout, const bf16 *inp, const bf16 *weight, int N, int C, int OC);
/* The same with dout's rows ld_dout >= OC apart (the padded logits' gradient; columns
 * [OC, ld_dout) are not read).  dout [N,ld_dout] */
int matmul_backward_ld(Blas *b, float *dinp32, int accumulate, bf16 *dinp16, float *dweight, float dw_beta,
                       const bf16 *dout, int ld_dout, const bf16 *inp, const bf16 *weight, int N, int C, int OC);
/* matmul_backward for out = alpha·inp·weightᵀ: dinp16 (= or +=) alpha·dout·weight and
 * dweight = alpha·doutᵀ·inp + dw_beta·dweight, the coefficient on the GEMMs instead of a
 * scaled copy of dout.  dinp16 [N,C] bf16 or NULL, dweight [OC,C] or NULL, dout [N,OC] */
int matmul_backward_scaled(Blas *b, bf16 *dinp16, int accumulate, float *dweight, float dw_beta, const bf16 *dout,
                           const bf16 *inp, const bf16 *weight, float alpha, int N, int C, int OC);
/* bf16 x bf16 -> fp32 GEMM in plain column-major terms, for the peak benchmark. */
int matmul_raw(Blas *b, float *D, const bf16 *A, const bf16 *B_, int m, int n, int k);
/* GPT-2's Conv1D (ref/gpt2.c's conv1d_*), weight [C,OC] (in, out) as transformers stores it:
 * out32 = inp · weight in fp32 (the bias and the rounding to bf16 come after: fast/gpt2_ops.cuh).
 * out32 [N,OC] fp32, inp [N,C], weight [C,OC] */
int conv1d_forward(Blas *b, float *out32, const bf16 *inp, const bf16 *weight, int N, int C, int OC);
/* dinp32 (fp32, = or += by accumulate) or dinp16 (bf16, =) = dout · weightᵀ, and
 * dweight += inpᵀ · dout (fp32). Any output may be NULL.
 * dinp [N,C], dweight [C,OC], dout [N,OC], inp [N,C], weight [C,OC] */
int conv1d_backward(Blas *b, float *dinp32, int accumulate, bf16 *dinp16, float *dweight, const bf16 *dout,
                    const bf16 *inp, const bf16 *weight, int N, int C, int OC);

/* ------------------------------------------------------------------ embedding */
/* out[n] = wte[tokens[n]].  out [N,C], tokens [N] (checked on the host), wte [V,C] */
int embedding_forward(bf16 *out, const int32_t *tokens, const bf16 *wte, int N, int C);
/* dwte[tok] += Σ dout[n] over the positions n holding tok, in position order, one block
 * per distinct token (deterministic; no atomics). The host sorts positions by token:
 * uniq [U] distinct tokens, offsets [U+1] into pos [N] positions; U = *n_uniq is read on
 * the device (max_U >= U blocks are launched, the rest return at once), so one launch
 * serves every batch.  dwte [V,C] fp32, dout [N,C] fp32, n_uniq [1] */
int embedding_backward(float *dwte, const float *dout, const int32_t *uniq, const int32_t *offsets,
                       const int32_t *pos, const int32_t *n_uniq, int max_U, int C);

/* ------------------------------------------------------------------ rmsnorm */
/* out = weight · bf16(inp · rstd) as HF's LlamaRMSNorm in bf16; statistics in fp32.
 * out [N,C], rstd [N] fp32, inp [N,C], weight [C] */
int rmsnorm_forward(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, int N, int C, float eps);
/* dinp32 += dx (fp32 residual-stream gradient) and dinp16 = bf16(dinp32) after the add
 * (the copy the next GEMMs read; may be NULL); with dweight (else NULL), also the gain's
 * gradient dweight += Σ_n dout[n] ⊙ inp[n]·rstd[n] from the same reads of dout and inp (one
 * pass over the rows where C <= RMSNORM_GAIN_MAX_C, then the chunks' partials in order: the
 * bits of rmsnorm_backward_weight's two passes).
 * dout is bf16, as its GEMMs wrote it (an activation gradient like every other between two
 * kernels: 2 bytes an element read here instead of 4; docs/design/kernels.md, "Kernels").
 * dinp32 [N,C], dinp16 [N,C], dweight [C], partial [ceil(N/RMSNORM_WEIGHT_ROWS), C] scratch,
 * dout [N,C] bf16, inp [N,C], weight [C], rstd [N] */
int rmsnorm_backward(float *dinp32, bf16 *dinp16, float *dweight, float *partial, const bf16 *dout, const bf16 *inp,
                     const bf16 *weight, const float *rstd, int N, int C);
/* dweight += Σ_n dout[n] ⊙ inp[n]·rstd[n] in passes of its own, deterministic (row chunks,
 * then chunks in order): the gain's gradient where C > RMSNORM_GAIN_MAX_C, and the tests'
 * reference for the fused pass.  dweight [C], partial [ceil(N/RMSNORM_WEIGHT_ROWS), C]
 * scratch, dout [N,C] bf16, inp [N,C], rstd [N] */
int rmsnorm_backward_weight(float *dweight, float *partial, const bf16 *dout, const bf16 *inp, const float *rstd,
                            int N, int C);
/* rows of one gain chunk: 4 per warp of the fused backward's 8-warp block, so a 468M step's
 * 16384 rows make 512 blocks (enough to fill the GPU's SMs) */
#define RMSNORM_WEIGHT_ROWS 32
/* the widest row whose gain partials the fused block holds in shared memory: [8][C] fp32,
 * 32 KB (the 468M preset's d_model) */
#define RMSNORM_GAIN_MAX_C 1024

/* ------------------------------------------------------------------ gradient ranges */
/* Zero n ranges of base: ranges [n][2] (device) of (offset, floats), the longest max_len
 * floats (zero_grad's gaps between the gradients GEMMs overwrite, model.cu). */
int zero_ranges(float *base, const size_t *ranges, int n, size_t max_len);

/* ------------------------------------------------------------------ rope */
/* In place NeoX half-split rotation of every head, rows ld >= NHX*hd elements apart (a view
 * into the fused [N, qC+kvC(+kvC)] projection).  x [B,T,ld], its first NHX*hd columns rotated;
 * cos_t/sin_t [T,hd/2] fp32 */
int rope_forward(bf16 *x, int ld, const float *cos_t, const float *sin_t, int B, int T, int NHX, int hd);
/* In place dx = Rᵀ · dy (the transpose rotation).  x [B,T,ld] */
int rope_backward(bf16 *x, int ld, const float *cos_t, const float *sin_t, int B, int T, int NHX, int hd);

/* ------------------------------------------------------------------ swiglu */
/* gu is the fused gate|up GEMM's output: row n holds gate in columns [0, F) and up in
 * [F, 2F) (row stride 2F), as W_gate and W_up lie adjacent in the parameter table.
 * out = bf16(bf16(silu(gate)) · up).  out [N,F], gu [N,2F] */
int swiglu_forward(bf16 *out, const bf16 *gu, int N, int F);
/* One element of it from gate g and up u (each already a bf16 value): bf16(bf16(silu(g)) · u)
 * (docs/formulas.md §1, torch's act_fn(gate) * up in bf16). The one definition swiglu_forward
 * and the wgmma GEMM's SwiGLU epilogue (fast/gemm_wgmma.cu) share, so their bits agree. */
static __device__ __forceinline__ bf16 swiglu_value(float g, float u) {
    const bf16 silu = __float2bfloat16(g / (1.0f + expf(-g)));
    return __float2bfloat16(__bfloat162float(silu) * u);
}
/* d(gate) = dout·up·silu'(gate) into columns [0, F) of dgu, d(up) = dout·silu(gate) into
 * [F, 2F) (written): one buffer for the fused dX and dW GEMMs.  dgu [N,2F], dout [N,F], gu [N,2F] */
int swiglu_backward(bf16 *dgu, const bf16 *dout, const bf16 *gu, int N, int F);
/* One element of it: (d gate, d up) from dout dy, gate g and up u (bf16 values), with
 * silu'(g) = σ(g)·(1 + g·(1 − σ(g))). Shared with the wgmma GEMM's epilogue like swiglu_value. */
static __device__ __forceinline__ void swiglu_grad(float dy, float g, float u, bf16 &dg, bf16 &du) {
    const float sig = 1.0f / (1.0f + expf(-g));
    dg = __float2bfloat16(dy * u * sig * (1.0f + g * (1.0f - sig)));
    du = __float2bfloat16(dy * g * sig);
}

/* ------------------------------------------------------------------ value mixing */
/* Up to FAST_MAX_LAYERS sources, passed by value to the kernel. Source k's weight is the
 * constant coef[k], or the bf16 parameter *param[k] when param[k] is not NULL (a trainable
 * ResFormer λ: the kernel reads its current value, so the host never waits for it). */
typedef struct {
    int n;
    const bf16 *src[FAST_MAX_LAYERS];
    float *dsrc[FAST_MAX_LAYERS];
    float coef[FAST_MAX_LAYERS];
    const bf16 *param[FAST_MAX_LAYERS];
} MixArgs;
/* out = Σ_i w_i·src[i], summed in fp32, rounded once.  out [n], src[i] [n] (a flat raw
 * projection: [N, NH*hd] queries or [N, NKV*hd] keys/values, before RoPE and before any
 * GQA head sharing, formulas.md §4) */
int mix_forward(bf16 *out, const MixArgs *a, size_t n);
/* dsrc[i] += w_i·dout for every source.  dsrc[i] [n] fp32, dout [n] fp32 or bf16 */
int mix_backward(const MixArgs *a, const float *dout, size_t n);
int mix_backward_bf16(const MixArgs *a, const bf16 *dout, size_t n);
/* Output corrections (NeuTRENO, formulas.md §4's ce): out = atty + repeat_kv(Σ_i w_i·src[i]),
 * query head h reading kv head h / (NH/NKV).  out, atty [N, NH*hd] bf16 (out may be atty),
 * src[i] [N, NKV*hd] */
int correction_forward(bf16 *out, const bf16 *atty, const MixArgs *a, int N, int NH, int NKV, int hd);
/* dsrc[i] += w_i·Σ_{h in kv head g's group} dout[n, h]: the query heads' gradients summed
 * per kv head, in head order.  dout [N, NH*hd] bf16, dsrc[i] [N, NKV*hd] fp32 */
int correction_backward(const MixArgs *a, const bf16 *dout, int N, int NH, int NKV, int hd);
/* Gradients of trainable mix weights: grad[j] += Σ_i dout[i]·src[j][i] for j < n, over n_el
 * elements, in a fixed order (LAMBDA_BLOCKS partial sums per weight, then summed in index
 * order): deterministic, no atomics.  grad[j] fp32 scalars, dout [n_el] fp32, src[j] [n_el],
 * partial [n, LAMBDA_BLOCKS] fp32 scratch */
#define LAMBDA_BLOCKS 64
typedef struct {
    int n;
    const bf16 *src[FAST_MAX_LAYERS];
    float *grad[FAST_MAX_LAYERS];
} LambdaGradArgs;
int lambda_backward(const LambdaGradArgs *a, const float *dout, size_t n_el, float *partial);

/* ------------------------------------------------------------------ cross-entropy */
/* One block per row of a bf16 logits chunk, each logit read once from memory into registers
 * (32-bit words of two columns, at most CE_MAX_COLUMNS per row): the row's max, then Σ exp(x −
 * max), both in fp32 and reduced in a fixed order, give loss = logsumexp(x) − x[target] over
 * the V real columns (the pad columns [V, ld) of the padded vocabulary are never counted).
 * With backward, w·(softmax(x) − onehot(target)) is written in bf16 over the logits, 0 in the
 * pad columns: one read, one write. target < 0 (each sequence's last position) gives loss 0
 * and (backward) a zero gradient row. ld must be even.
 * losses [R] fp32, logits [R,ld] bf16 (in: logits; out with backward: their gradient), targets [R] */
#define CE_MAX_COLUMNS 57344
int crossentropy_forward_backward(float *losses, bf16 *logits, const int32_t *targets, int R, int V, int ld, float w,
                                  int backward);

/* ------------------------------------------------------------------ scoring (vrl eval) */
/* ref/ops.h's token_logprobs_forward on a logits chunk, one block per row: at a row with
 * targets[r] >= 0, logprob[r] = x[t] − logsumexp(x) (fp32, the cross-entropy kernel's sums,
 * so it is exactly minus that kernel's loss) and greedy[r] = 1 if t is the argmax, the lowest
 * index among equal maxima (ref's and torch.argmax's rule). Only the V real columns count:
 * the pad columns [V, ld) of the padded vocabulary neither enter the sum nor can win the
 * argmax (they are never read). Rows with target < 0 are left as they are.
 * logprob [R] fp32, greedy [R], logits [R,ld] bf16 (the model's chunk), targets [R] */
int token_logprobs_forward(float *logprob, uint8_t *greedy, const bf16 *logits, const int32_t *targets, int R, int V,
                           int ld);

/* *out = Σ_n losses[n] in double, one block, a fixed order (strided per thread, then a
 * fixed tree): the batch's loss stays on the device until the step's end.  losses [n] */
int loss_sum(double *out, const float *losses, int n);
/* slots[*count] = *sum / denom (when *count < capacity), then ++*count: a micro-batch's mean
 * loss kept on the device in micro-batch order until the step reads them all at once.
 * slots [capacity] double, count [1], sum [1] */
int loss_record(double *slots, int32_t *count, int capacity, const double *sum, double denom);

/* ------------------------------------------------------------------ elementwise */
/* out = bf16(inp).  [n] */
int cast_to_bf16(bf16 *out, const float *inp, size_t n);

FAST_NS_END

#endif
