/* gpt2_ops.cuh: the kernels only GPT-2 needs (fast/gpt2_ops.cu), each the twin of the op with
 * the same name in ref/gpt2.c (LayerNorm, tanh GELU) or of a line of its forward/backward
 * (learned positions, biases). Conventions as fast/ops.cuh: bf16 activations, fp32 statistics
 * and parameter gradients (+=), every reduction in a fixed order (no atomics), each launcher on
 * ops_stream returning 0 or -1 with vrl_error. Shapes: N = B*T rows, C channels, F MLP width. */
#ifndef VRL_FAST_GPT2_OPS_CUH
#define VRL_FAST_GPT2_OPS_CUH

#include "fast/ops.cuh"

FAST_NS_BEGIN

/* out[n] = bf16(wte[tokens[n]] + wpe[n % T]) (summed in fp32, rounded once).
 * out [N,C], tokens [N] (checked on the host), wte [V,C], wpe [max_seq,C] (rows < T read) */
int position_embedding_forward(bf16 *out, const int32_t *tokens, const bf16 *wte, const bf16 *wpe, int N, int T,
                               int C);
/* dwpe[t] += Σ_b dout[b·T + t], b in order.  dwpe [T,C] fp32, dout [B·T,C] fp32 */
int position_embedding_backward(float *dwpe, const float *dout, int B, int T, int C);

/* LayerNorm with the biased variance: out = bf16((x − mean)·rstd·w + b), mean and rstd in
 * fp32 (two passes over the row: the mean, then Σ(x − mean)²).
 * out [N,C], mean/rstd [N] fp32, inp [N,C], w/b [C] */
int layernorm_forward(bf16 *out, float *mean, float *rstd, const bf16 *inp, const bf16 *w, const bf16 *b, int N,
                      int C, float eps);
/* dinp32 += rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dout·w, x̂ = (x − mean)·rstd, and
 * dinp16 = bf16(dinp32) after the add (may be NULL).
 * dinp32/dinp16 [N,C], dout [N,C] fp32, inp [N,C], w [C], mean/rstd [N] */
int layernorm_backward(float *dinp32, bf16 *dinp16, const float *dout, const bf16 *inp, const bf16 *w,
                       const float *mean, const float *rstd, int N, int C);
/* dw += Σ_n dout·x̂, db += Σ_n dout: row chunks of GPT2_ROWS, then the chunks in order.
 * dw/db [C] fp32, partial [ceil(N/GPT2_ROWS), 2C] scratch, dout [N,C] fp32 */
int layernorm_backward_params(float *dw, float *db, float *partial, const float *dout, const bf16 *inp,
                              const float *mean, const float *rstd, int N, int C);
#define GPT2_ROWS 256

/* out = bf16(in32 + bias (+ residual)): a Conv1D's bias, and the residual add after it.
 * out [N,C], in32 [N,C] fp32, bias [C], residual [N,C] or NULL */
int bias_add_forward(bf16 *out, const float *in32, const bf16 *bias, const bf16 *residual, int N, int C);
/* db += Σ_n dout[n] (dout fp32 or bf16): as layernorm_backward_params' two passes.
 * db [C] fp32, partial [ceil(N/GPT2_ROWS), C] scratch, dout [N,C] */
int bias_backward(float *db, float *partial, const float *dout, int N, int C);
int bias_backward_bf16(float *db, float *partial, const bf16 *dout, int N, int C);

/* The MLP's first bias and GELU, tanh form (transformers' gelu_new, the authors' code):
 * pre = bf16(in32 + bias), out = bf16(0.5·u·(1 + tanh(√(2/π)·(u + 0.044715·u³)))) at u = pre.
 * pre/out [N,F], in32 [N,F] fp32, bias [F] */
int gelu_forward(bf16 *pre, bf16 *out, const float *in32, const bf16 *bias, int N, int F);
/* dpre32 = dout·gelu'(pre) (dpre32 may be dout: elementwise), dpre16 = bf16(dpre32) (may be NULL).
 * [n] each */
int gelu_backward(float *dpre32, bf16 *dpre16, const float *dout, const bf16 *pre, size_t n);

FAST_NS_END

#endif
