/* ops.h: the reference operations of the baseline LLaMA block (formulas.md §1), one
 * forward and one backward function per op, in the style of llm.c's train_gpt2.c.
 *
 * Conventions:
 *  - Every tensor is a flat row-major array; its shape is written next to it.
 *    N = B*T positions, C channels, OC output channels, V vocabulary, F ffn width,
 *    NH query heads, NKV key/value heads, hd head dim.
 *  - Backward functions ADD into their gradient outputs (+=), like PyTorch's
 *    autograd accumulation; the caller zeroes a gradient buffer once before use.
 *    A NULL gradient output is skipped. The elementwise ones and matmul_backward's dinp take
 *    a GradWrite: GRAD_SET is for a buffer's first writer and saves the zeroing pass;
 *    zero_fill zeroes the others on the threads.
 *  - Compiled twice (real.h): the plain names below map to _f32 / _f64.
 * Attention is in attn_ops.h (probabilities and their application, two ops). fast/ops.cuh has a
 * launcher of the same name for each op here; fast/attention.cuh has one fused
 * attention_forward/_backward. */
#ifndef VRL_REF_OPS_H
#define VRL_REF_OPS_H

#include <stdint.h>

#include "ref/real.h"

#define matmul_forward REF(matmul_forward)
#define matmul_backward REF(matmul_backward)
#define embedding_forward REF(embedding_forward)
#define embedding_backward REF(embedding_backward)
#define rmsnorm_forward REF(rmsnorm_forward)
#define rmsnorm_backward REF(rmsnorm_backward)
#define rope_tables REF(rope_tables)
#define rope_forward REF(rope_forward)
#define rope_backward REF(rope_backward)
#define swiglu_forward REF(swiglu_forward)
#define swiglu_backward REF(swiglu_backward)
#define crossentropy_forward REF(crossentropy_forward)
#define crossentropy_backward REF(crossentropy_backward)
#define token_logprobs_forward REF(token_logprobs_forward)
#define zero_fill REF(zero_fill)
#define residual_forward REF(residual_forward)
#define residual_backward REF(residual_backward)
#define mix_forward REF(mix_forward)
#define mix_backward REF(mix_backward)

/* How a backward writes a gradient output: GRAD_ADD adds into it (g_out += g); GRAD_SET
 * writes 0 + g, exactly what zeroing the buffer and adding gives (+0.0 where g is -0.0),
 * without reading or zeroing it first. */
typedef enum { GRAD_ADD, GRAD_SET } GradWrite;

/* p [n] = 0, shared among the threads (a gradient buffer before its first accumulation) */
void zero_fill(real *p, size_t n);

/* out = inp · weightᵀ (a bias-free nn.Linear).
 * out [N,OC], inp [N,C], weight [OC,C] */
void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC);
/* dinp (+)= dout · weight (as `dinp_how` says: GRAD_SET is BLAS's beta = 0, which zeroes the
 * output inside the product, tile by tile on the threads: the bits of a zeroed buffer),
 * dweight += doutᵀ · inp.
 * dinp [N,C] (or NULL), dweight [OC,C] (or NULL), dout [N,OC], inp [N,C], weight [OC,C] */
void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight, int N,
                     int C, int OC, GradWrite dinp_how);

/* out[n] = wte[tokens[n]]; tokens must already be checked to lie in [0, V).
 * out [N,C], tokens [N], wte [V,C] */
void embedding_forward(real *out, const int32_t *tokens, const real *wte, int N, int C);
/* dwte[tokens[n]] += dout[n].  dwte [V,C], dout [N,C], tokens [N] */
void embedding_backward(real *dwte, const real *dout, const int32_t *tokens, int N, int C);

/* out = inp · rsqrt(mean(inp²) + eps) · weight, row by row; rstd keeps the rsqrt.
 * out [N,C], rstd [N], inp [N,C], weight [C] */
void rmsnorm_forward(real *out, real *rstd, const real *inp, const real *weight, int N, int C, double eps);
/* dinp [N,C] (or NULL; written as `how` says), dweight [C] (or NULL; added into), dout [N,C],
 * inp [N,C], weight [C], rstd [N] */
void rmsnorm_backward(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight,
                      const real *rstd, int N, int C, GradWrite how);

/* RoPE tables for positions 0..T-1: angle(t, i) = t · theta^(-2i/hd), i < hd/2, computed
 * in double and rounded once to real.  cos_t [T,hd/2], sin_t [T,hd/2] */
void rope_tables(real *cos_t, real *sin_t, int T, int hd, double theta);
/* NeoX half-split rotation of every head: for i < hd/2, with x1 = x[i], x2 = x[i+hd/2],
 * out[i] = x1·cos − x2·sin, out[i+hd/2] = x2·cos + x1·sin (q·cos + rotate_half(q)·sin).
 * out may equal inp.  out [B,T,NHX*hd], inp [B,T,NHX*hd], cos_t/sin_t [T,hd/2]
 * (NHX is NH for queries, NKV for keys). */
void rope_forward(real *out, const real *inp, const real *cos_t, const real *sin_t, int B, int T, int NHX, int hd);
/* dinp += Rᵀ · dout (the rotation is linear; no input needed), or = with GRAD_SET. dinp must
 * not alias dout.  dinp [B,T,NHX*hd], dout [B,T,NHX*hd], cos_t/sin_t [T,hd/2] */
void rope_backward(real *dinp, const real *dout, const real *cos_t, const real *sin_t, int B, int T, int NHX,
                   int hd, GradWrite how);

/* out = silu(gate) ⊙ up.  out [N,F], gate [N,F], up [N,F] (passed as n = N*F) */
void swiglu_forward(real *out, const real *gate, const real *up, size_t n);
/* dgate [N,F] += ..., dup [N,F] += ... (both required; = with GRAD_SET), dout [N,F], gate [N,F],
 * up [N,F] */
void swiglu_backward(real *dgate, real *dup, const real *dout, const real *gate, const real *up, size_t n,
                     GradWrite how);

/* Next-token cross-entropy inside each sequence: position t < T-1 predicts
 * tokens[b, t+1]; the last position of every sequence has no target (loss 0).
 * Log-softmax with the max subtracted, accumulated in double; lse keeps each row's
 * log Σ exp for the backward (the exps are most of the reference's time at a 50k vocab).
 * Returns the mean over the B·(T−1) predictions.
 * losses [B,T], lse [B,T] (double), logits [B,T,V], tokens [B,T] */
double crossentropy_forward(real *losses, double *lse, const real *logits, const int32_t *tokens, int B, int T,
                            int V);
/* dlogits += scale · d(mean loss)/dlogits = scale · (softmax − onehot) / (B·(T−1)),
 * zero contribution at each sequence's last position (GRAD_SET: = , those rows zeroed).
 * dlogits [B,T,V], logits [B,T,V], lse [B,T] from the forward, tokens [B,T] */
void crossentropy_backward(real *dlogits, const real *logits, const double *lse, const int32_t *tokens, int B, int T,
                           int V, double scale, GradWrite how);

/* Scoring (vrl eval, Backend.token_logprobs): at every row n with targets[n] >= 0,
 * logprob[n] = x[t] − max − log Σ exp(x − max) (accumulated in double) and greedy[n] = 1 if t
 * is the argmax of the row, the lowest index among equal maxima (torch.argmax's rule, which
 * lm-eval's is_greedy compares with); rows with targets[n] < 0 are left as they are. Forward
 * only. logprob [N] (double), greedy [N], logits [N,V], targets [N] */
void token_logprobs_forward(double *logprob, uint8_t *greedy, const real *logits, const int32_t *targets, size_t N,
                            int V);

/* out = a + b.  out [n], a [n], b [n] (out may alias a or b) */
void residual_forward(real *out, const real *a, const real *b, size_t n);
/* da += dout, db += dout.  da [n], db [n], dout [n] (either may be NULL) */
void residual_backward(real *da, real *db, const real *dout, size_t n);

/* Weighted sum of same-shaped sources: out = Σ_i coef[i] · src[i]; sources with a
 * zero coefficient are skipped (they may be NULL). This is the value-path mixer
 * V'_n = Σ_i c[n][i] · V_i of DESIGN-NOTES; the baseline uses c = identity.
 * out [n], src[i] [n], coef [nsrc] */
void mix_forward(real *out, const real *const *src, const double *coef, int nsrc, size_t n);
/* dsrc[i] += coef[i] · dout for every non-zero coef (dsrc[i] may be NULL to skip);
 * dcoef[i] += Σ dout ⊙ src[i] when dcoef is not NULL (trainable coefficients, double).
 * dsrc[i] [n], dcoef [nsrc], dout [n], src[i] [n] */
void mix_backward(real *const *dsrc, double *dcoef, const real *dout, const real *const *src, const double *coef,
                  int nsrc, size_t n);

#endif
