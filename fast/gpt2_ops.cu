/* gpt2_ops.cu: GPT-2's own kernels (contracts in gpt2_ops.cuh), twins of ref/gpt2.c's ops.
 * Kept plain as fast/ops.cu's: one thread per element for elementwise ops, one warp per row for
 * a row's statistics, and column sums over rows in two passes (chunks of GPT2_ROWS rows, then
 * the chunks in order), so every reduction has a fixed order and a run repeats bit for bit. */
#include <math.h>

#include "fast/gpt2_ops.cuh"

FAST_NS_BEGIN

__device__ __forceinline__ float g2_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float g2f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float g2f(float x) { return x; } /* the column sums read fp32 or bf16 */

/* ================================================================== learned positions */

__global__ void position_embedding_forward_kernel(bf16 *out, const int32_t *tokens, const bf16 *wte,
                                                  const bf16 *wpe, int N, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N * C) return;
    const size_t n = i / C, c = i % C;
    out[i] = __float2bfloat16(g2f(wte[(size_t)tokens[n] * C + c]) + g2f(wpe[(n % T) * C + c]));
}

int position_embedding_forward(bf16 *out, const int32_t *tokens, const bf16 *wte, const bf16 *wpe, int N, int T,
                               int C) {
    LAUNCH(position_embedding_forward_kernel, cdiv((size_t)N * C, 256), 256, 0, ops_stream)(out, tokens, wte, wpe, N,
                                                                                            T, C);
    LAUNCH_CHECK();
    return 0;
}

/* one thread per (t, c): the B rows holding position t, in batch order */
__global__ void position_embedding_backward_kernel(float *dwpe, const float *dout, int B, int T, int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float s = 0;
    for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + i];
    dwpe[i] += s;
}

int position_embedding_backward(float *dwpe, const float *dout, int B, int T, int C) {
    LAUNCH(position_embedding_backward_kernel, cdiv((size_t)T * C, 256), 256, 0, ops_stream)(dwpe, dout, B, T, C);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== layernorm */

/* one warp per row; 8 rows per 256-thread block */
__global__ void layernorm_forward_kernel(bf16 *out, float *mean, float *rstd, const bf16 *inp, const bf16 *w,
                                         const bf16 *b, int N, int C, float eps) {
    const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const bf16 *x = inp + (size_t)row * C;
    bf16 *y = out + (size_t)row * C;
    float s = 0;
    for (int i = lane; i < C; i += 32) s += g2f(x[i]);
    const float mu = g2_warp_sum(s) / C;
    float v = 0;
    for (int i = lane; i < C; i += 32) {
        const float e = g2f(x[i]) - mu;
        v += e * e;
    }
    const float r = 1.0f / sqrtf(g2_warp_sum(v) / C + eps);
    for (int i = lane; i < C; i += 32) {
        const float xh = (g2f(x[i]) - mu) * r; /* ref's order: x̂, then ·w + b */
        y[i] = __float2bfloat16(xh * g2f(w[i]) + g2f(b[i]));
    }
    if (lane == 0) mean[row] = mu, rstd[row] = r;
}

int layernorm_forward(bf16 *out, float *mean, float *rstd, const bf16 *inp, const bf16 *w, const bf16 *b, int N,
                      int C, float eps) {
    LAUNCH(layernorm_forward_kernel, cdiv(N, 8), 256, 0, ops_stream)(out, mean, rstd, inp, w, b, N, C, eps);
    LAUNCH_CHECK();
    return 0;
}

/* one warp per row: the row's two means, then each element */
__global__ void layernorm_backward_kernel(float *dinp32, bf16 *dinp16, const float *dout, const bf16 *inp,
                                          const bf16 *w, const float *mean, const float *rstd, int N, int C) {
    const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const size_t o = (size_t)row * C;
    const float mu = mean[row], r = rstd[row];
    float mg = 0, mgx = 0;
    for (int i = lane; i < C; i += 32) {
        const float g = dout[o + i] * g2f(w[i]), xh = (g2f(inp[o + i]) - mu) * r;
        mg += g, mgx += g * xh;
    }
    mg = g2_warp_sum(mg) / C, mgx = g2_warp_sum(mgx) / C;
    for (int i = lane; i < C; i += 32) {
        const float g = dout[o + i] * g2f(w[i]), xh = (g2f(inp[o + i]) - mu) * r;
        const float d = dinp32[o + i] + r * (g - mg - xh * mgx);
        dinp32[o + i] = d;
        if (dinp16) dinp16[o + i] = __float2bfloat16(d);
    }
}

int layernorm_backward(float *dinp32, bf16 *dinp16, const float *dout, const bf16 *inp, const bf16 *w,
                       const float *mean, const float *rstd, int N, int C) {
    LAUNCH(layernorm_backward_kernel, cdiv(N, 8), 256, 0, ops_stream)(dinp32, dinp16, dout, inp, w, mean, rstd, N, C);
    LAUNCH_CHECK();
    return 0;
}

/* pass 1 of the column sums: a block of 32 columns x 8 row lanes sums chunk blockIdx.y's rows,
 * partial[chunk, c] (and with inp, partial[chunk, C + c] the bias' sum of dout alone: the
 * LayerNorm's pair) */
template <typename G>
__global__ void column_partial_kernel(float *partial, const G *dout, const bf16 *inp, const float *mean,
                                      const float *rstd, int N, int C) {
    __shared__ float sh[2][8][33];
    const int c = blockIdx.x * 32 + threadIdx.x, chunk = blockIdx.y;
    const int r0 = chunk * GPT2_ROWS, r1 = min(r0 + GPT2_ROWS, N);
    float sx = 0, s = 0;
    if (c < C)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) {
            const float g = g2f(dout[(size_t)r * C + c]);
            s += g;
            if (inp) sx += g * ((g2f(inp[(size_t)r * C + c]) - mean[r]) * rstd[r]);
        }
    sh[0][threadIdx.y][threadIdx.x] = sx, sh[1][threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float tx = 0, t = 0;
        for (int y = 0; y < 8; y++) tx += sh[0][y][threadIdx.x], t += sh[1][y][threadIdx.x];
        const size_t W = inp ? 2 * (size_t)C : (size_t)C; /* the row width of partial */
        if (inp) partial[chunk * W + c] = tx, partial[chunk * W + C + c] = t;
        else partial[chunk * W + c] = t;
    }
}

/* pass 2: out[c] += Σ_chunk partial[chunk, c] for c < C, chunks in order; partial's rows W apart */
__global__ void column_reduce_kernel(float *out, const float *partial, int chunks, int C, int W) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float t = 0;
    for (int k = 0; k < chunks; k++) t += partial[(size_t)k * W + c];
    out[c] += t;
}

template <typename G>
static int column_sums(float *out0, float *out1, float *partial, const G *dout, const bf16 *inp, const float *mean,
                       const float *rstd, int N, int C) {
    const int chunks = (int)cdiv(N, GPT2_ROWS), W = inp ? 2 * C : C;
    LAUNCH(column_partial_kernel<G>, dim3(cdiv(C, 32), chunks), dim3(32, 8), 0, ops_stream)(partial, dout, inp, mean,
                                                                                         rstd, N, C);
    LAUNCH_CHECK();
    if (!inp) {
        LAUNCH(column_reduce_kernel, cdiv(C, 256), 256, 0, ops_stream)(out0, partial, chunks, C, W);
        LAUNCH_CHECK();
        return 0;
    }
    /* dw from columns [0, C), db from [C, 2C) of the same partial rows */
    LAUNCH(column_reduce_kernel, cdiv(C, 256), 256, 0, ops_stream)(out0, partial, chunks, C, W);
    LAUNCH_CHECK();
    LAUNCH(column_reduce_kernel, cdiv(C, 256), 256, 0, ops_stream)(out1, partial + C, chunks, C, W);
    LAUNCH_CHECK();
    return 0;
}

int layernorm_backward_params(float *dw, float *db, float *partial, const float *dout, const bf16 *inp,
                              const float *mean, const float *rstd, int N, int C) {
    return column_sums<float>(dw, db, partial, dout, inp, mean, rstd, N, C);
}

/* ================================================================== biases */

__global__ void bias_add_forward_kernel(bf16 *out, const float *in32, const bf16 *bias, const bf16 *residual, int N,
                                        int C) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N * C) return;
    float y = in32[i] + g2f(bias[i % C]); /* ref: y = inp·W + b, then x + y */
    if (residual) y = g2f(residual[i]) + y;
    out[i] = __float2bfloat16(y);
}

int bias_add_forward(bf16 *out, const float *in32, const bf16 *bias, const bf16 *residual, int N, int C) {
    LAUNCH(bias_add_forward_kernel, cdiv((size_t)N * C, 256), 256, 0, ops_stream)(out, in32, bias, residual, N, C);
    LAUNCH_CHECK();
    return 0;
}

int bias_backward(float *db, float *partial, const float *dout, int N, int C) {
    return column_sums<float>(db, NULL, partial, dout, NULL, NULL, NULL, N, C);
}

int bias_backward_bf16(float *db, float *partial, const bf16 *dout, int N, int C) {
    return column_sums<bf16>(db, NULL, partial, dout, NULL, NULL, NULL, N, C);
}

/* ================================================================== gelu (tanh form) */

#define GELU_K 0.7978845608028654f /* √(2/π) */
#define GELU_C 0.044715f

__global__ void gelu_forward_kernel(bf16 *pre, bf16 *out, const float *in32, const bf16 *bias, int N, int F) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N * F) return;
    const bf16 p = __float2bfloat16(in32[i] + g2f(bias[i % F]));
    const float u = g2f(p);
    pre[i] = p;
    out[i] = __float2bfloat16(0.5f * u * (1.0f + tanhf(GELU_K * (u + GELU_C * u * u * u))));
}

int gelu_forward(bf16 *pre, bf16 *out, const float *in32, const bf16 *bias, int N, int F) {
    LAUNCH(gelu_forward_kernel, cdiv((size_t)N * F, 256), 256, 0, ops_stream)(pre, out, in32, bias, N, F);
    LAUNCH_CHECK();
    return 0;
}

__global__ void gelu_backward_kernel(float *dpre32, bf16 *dpre16, const float *dout, const bf16 *pre, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float u = g2f(pre[i]), th = tanhf(GELU_K * (u + GELU_C * u * u * u));
    const float dth = (1.0f - th * th) * GELU_K * (1.0f + 3.0f * GELU_C * u * u);
    const float d = dout[i] * (0.5f * (1.0f + th) + 0.5f * u * dth);
    dpre32[i] = d;
    if (dpre16) dpre16[i] = __float2bfloat16(d);
}

int gelu_backward(float *dpre32, bf16 *dpre16, const float *dout, const bf16 *pre, size_t n) {
    LAUNCH(gelu_backward_kernel, cdiv(n, 256), 256, 0, ops_stream)(dpre32, dpre16, dout, pre, n);
    LAUNCH_CHECK();
    return 0;
}

FAST_NS_END
