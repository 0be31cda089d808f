/* attention.cu: fast/'s causal attention on CUDA cores (shapes and contracts in attention.cuh),
 * the fused twin of ref/attn_ops.c's attn_probs_* and attn_apply_*: a one-thread-per-query
 * (or per-key) flash attention, online softmax in fp32, no [T,T] matrix, no atomics. */
#include <math.h>

#include "fast/ops.cuh" /* ops_stream; includes attention.cuh */

FAST_NS_BEGIN

/* the same one-liner as ops.cu's (an inline function: one definition per program) */
__device__ __forceinline__ float bf(bf16 x) { return __bfloat162float(x); }

/* Tiles: a block of ATT_BQ threads owns ATT_BQ consecutive queries (forward, dq) or keys
 * (dk/dv); the other side streams through shared memory ATT_BK (forward, dq) or ATT_BQ2
 * (dk/dv) rows at a time. Rows of q/k/v are HD bf16 = HD/8 16-byte words. */
#define ATT_BQ 64
#define ATT_BK 32
#define ATT_BQ2 16

/* Copy rows [r0, r0+R) of one head (R x HD bf16) into shared memory, zeros past T.
 * src row r starts at base + r*stride (elements). */
#if VRL_CUDA_CPU_FP32
struct Row8 {
    bf16 e[8];
};
#endif
template <int HD>
__device__ __forceinline__ void load_tile(bf16 *dst, const bf16 *base, size_t stride, int r0, int R, int T) {
    const int W = HD / 8; /* 16-byte words per row */
    for (int w = threadIdx.x; w < R * W; w += blockDim.x) {
        const int r = w / W, c = w % W;
#if VRL_CUDA_CPU_FP32 /* fp32 storage (docs/fast.md, "Checks in bits"): 8 elements are 32 bytes */
        Row8 val = {};
        if (r0 + r < T) val = *(const Row8 *)(base + (size_t)(r0 + r) * stride + c * 8);
        *(Row8 *)(dst + r * HD + c * 8) = val;
#else
        int4 val = make_int4(0, 0, 0, 0);
        if (r0 + r < T) val = *(const int4 *)(base + (size_t)(r0 + r) * stride + c * 8);
        *(int4 *)(dst + r * HD + c * 8) = val;
#endif
    }
}

/* grid (T/ATT_BQ, B*NH), block ATT_BQ: thread = query i, q and the output accumulator in
 * registers; per key tile, scores go to shared memory (one column per thread), then one
 * rescale of the accumulator per tile (online softmax). */
template <int HD>
__global__ void __launch_bounds__(ATT_BQ) attention_forward_kernel(bf16 *out, float *lse, const bf16 *q,
                                                                   const bf16 *k, const bf16 *v, AttnLd ld, int T,
                                                                   int NH, int NKV, float scale) {
    __shared__ __align__(16) bf16 ks[ATT_BK * HD];
    __shared__ __align__(16) bf16 vs[ATT_BK * HD];
    __shared__ float sc[ATT_BK][ATT_BQ];
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int qC = NH * HD;
    const int i = blockIdx.x * ATT_BQ + threadIdx.x, tid = threadIdx.x;
    const int i_last = min((int)(blockIdx.x * ATT_BQ + ATT_BQ), T) - 1; /* keys needed: 0..i_last */
    const bool active = i < T;
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    float qr[HD], acc[HD];
#pragma unroll
    for (int d = 0; d < HD; d++) {
        qr[d] = active ? bf(q[((size_t)b * T + i) * ld.q + h * HD + d]) : 0.0f;
        acc[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 <= i_last; j0 += ATT_BK) {
        __syncthreads(); /* the previous tile is no longer read */
        load_tile<HD>(ks, kb, ld.k, j0, ATT_BK, T);
        load_tile<HD>(vs, vb, ld.v, j0, ATT_BK, T);
        __syncthreads();
        if (!active || j0 > i) continue; /* every key of this tile is in this query's future */
        const int jn = min(ATT_BK, i - j0 + 1); /* keys j0..i of this tile are visible */
        float tmax = -INFINITY;
        for (int jj = 0; jj < jn; jj++) {
            const bf16 *kr = ks + jj * HD;
            float s = 0.0f;
#pragma unroll
            for (int d = 0; d < HD; d++) s += qr[d] * bf(kr[d]);
            s *= scale;
            sc[jj][tid] = s;
            tmax = fmaxf(tmax, s);
        }
        const float m_new = fmaxf(m, tmax);
        const float corr = expf(m - m_new); /* 0 on the first tile (m = −inf) */
        l *= corr;
#pragma unroll
        for (int d = 0; d < HD; d++) acc[d] *= corr;
        for (int jj = 0; jj < jn; jj++) {
            const float p = expf(sc[jj][tid] - m_new);
            const bf16 *vr = vs + jj * HD;
            l += p;
#pragma unroll
            for (int d = 0; d < HD; d++) acc[d] += p * bf(vr[d]);
        }
        m = m_new;
    }
    if (!active) return;
    const float inv = 1.0f / l;
    bf16 *o = out + ((size_t)b * T + i) * qC + h * HD;
#pragma unroll
    for (int d = 0; d < HD; d++) o[d] = __float2bfloat16(acc[d] * inv);
    lse[((size_t)b * NH + h) * T + i] = m + logf(l);
}

/* D[b,h,i] = Σ_d dout·out over the head's HD entries; one thread per (row, head) */
__global__ void attention_backward_D_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T, int NH,
                                            int hd) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * T * NH) return;
    const int h = (int)(idx % NH);
    const size_t row = idx / NH; /* b*T + t */
    const int b = (int)(row / T), t = (int)(row % T);
    const bf16 *dy = dout + idx * hd, *y = out + idx * hd;
    float s = 0;
    for (int d = 0; d < hd; d++) s += bf(dy[d]) * bf(y[d]);
    D[((size_t)b * NH + h) * T + t] = s;
}

/* grid (T/ATT_BQ, B*NKV), block ATT_BQ: thread = key j of kv head kh. Its k and v rows
 * sit in shared memory (row stride HD+2, an odd number of words, so a warp reading
 * its own rows hits 32 different banks); dk and dv accumulate in registers over every
 * query head of the group and every query i >= j:
 *   p = exp(s − lse_i), dv += p·dO_i, ds = p·(dO_i·v_j − D_i)·scale, dk += ds·q_i */
template <int HD>
__global__ void __launch_bounds__(ATT_BQ) attention_backward_dkdv_kernel(bf16 *dk, AttnDv dv, const bf16 *dout,
                                                                         const bf16 *q, const bf16 *k,
                                                                         const bf16 *v, AttnLd ld, const float *lse,
                                                                         const float *D, int T, int NH, int NKV,
                                                                         float scale) {
    const int RS = HD + 2;
    __shared__ __align__(16) bf16 kown[ATT_BQ * (HD + 2)];
    __shared__ __align__(16) bf16 vown[ATT_BQ * (HD + 2)];
    __shared__ __align__(16) bf16 qs[ATT_BQ2 * HD];
    __shared__ __align__(16) bf16 dos[ATT_BQ2 * HD];
    __shared__ float lses[ATT_BQ2], Ds[ATT_BQ2];
    const int b = blockIdx.y / NKV, kh = blockIdx.y % NKV, group = NH / NKV;
    const int qC = NH * HD, kvC = NKV * HD;
    const int j0 = blockIdx.x * ATT_BQ, j = j0 + threadIdx.x, tid = threadIdx.x;
    const bool active = j < T;
    for (int d = 0; d < HD; d++) {
        kown[tid * RS + d] = active ? k[((size_t)b * T + j) * ld.k + kh * HD + d] : __float2bfloat16(0.0f);
        vown[tid * RS + d] = active ? v[((size_t)b * T + j) * ld.v + kh * HD + d] : __float2bfloat16(0.0f);
    }
    float dka[HD], dva[HD];
#pragma unroll
    for (int d = 0; d < HD; d++) dka[d] = dva[d] = 0.0f;
    const bf16 *kr = kown + tid * RS, *vr = vown + tid * RS;
    for (int h = kh * group; h < (kh + 1) * group; h++) {
        const bf16 *qb = q + (size_t)b * T * ld.q + h * HD, *db = dout + (size_t)b * T * qC + h * HD;
        const float *lb = lse + ((size_t)b * NH + h) * T, *Db = D + ((size_t)b * NH + h) * T;
        for (int i0 = (j0 / ATT_BQ2) * ATT_BQ2; i0 < T; i0 += ATT_BQ2) {
            __syncthreads(); /* previous tile done (and own rows written, first time) */
            load_tile<HD>(qs, qb, ld.q, i0, ATT_BQ2, T);
            load_tile<HD>(dos, db, qC, i0, ATT_BQ2, T);
            if (tid < ATT_BQ2) {
                lses[tid] = i0 + tid < T ? lb[i0 + tid] : 0.0f;
                Ds[tid] = i0 + tid < T ? Db[i0 + tid] : 0.0f;
            }
            __syncthreads();
            if (!active) continue;
            for (int ii = 0; ii < ATT_BQ2; ii++) {
                const int i = i0 + ii;
                if (i < j || i >= T) continue; /* causal: query i sees key j only if j <= i */
                const bf16 *qi = qs + ii * HD, *doi = dos + ii * HD;
                float s = 0.0f, dp = 0.0f;
#pragma unroll
                for (int d = 0; d < HD; d++) {
                    s += bf(qi[d]) * bf(kr[d]);
                    dp += bf(doi[d]) * bf(vr[d]);
                }
                const float p = expf(s * scale - lses[ii]);
                const float ds = p * (dp - Ds[ii]) * scale;
#pragma unroll
                for (int d = 0; d < HD; d++) {
                    dva[d] += p * bf(doi[d]);
                    dka[d] += ds * bf(qi[d]);
                }
            }
        }
    }
    if (!active) return;
    const size_t row = (size_t)b * T + j, o = row * kvC + kh * HD; /* fp32 dv: [N, kvC] */
#pragma unroll
    for (int d = 0; d < HD; d++) {
        dk[row * ld.k + kh * HD + d] = __float2bfloat16(dka[d]);
        if (dv.f32) dv.f32[o + d] = dv.add ? dv.f32[o + d] + dv.scale * dva[d] : dv.scale * dva[d];
        if (dv.b16) dv.b16[row * ld.v + kh * HD + d] = __float2bfloat16(dva[d]);
    }
}

/* grid (T/ATT_BQ, B*NH), block ATT_BQ: thread = query i; q and dq in registers, dO's
 * row in shared memory (padded like above), keys and values streamed in tiles:
 *   p = exp(s − lse_i), ds = p·(dO_i·v_j − D_i)·scale, dq += ds·k_j */
template <int HD>
__global__ void __launch_bounds__(ATT_BQ) attention_backward_dq_kernel(bf16 *dq, const bf16 *dout, const bf16 *q,
                                                                       const bf16 *k, const bf16 *v, AttnLd ld,
                                                                       const float *lse, const float *D, int T,
                                                                       int NH, int NKV, float scale) {
    const int RS = HD + 2;
    __shared__ __align__(16) bf16 doown[ATT_BQ * (HD + 2)];
    __shared__ __align__(16) bf16 ks[ATT_BK * HD];
    __shared__ __align__(16) bf16 vs[ATT_BK * HD];
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int qC = NH * HD;
    const int i = blockIdx.x * ATT_BQ + threadIdx.x, tid = threadIdx.x;
    const int i_last = min((int)(blockIdx.x * ATT_BQ + ATT_BQ), T) - 1;
    const bool active = i < T;
    const size_t qo = ((size_t)b * T + i) * ld.q + h * HD, oo = ((size_t)b * T + i) * qC + h * HD;
    float qr[HD], dqa[HD];
#pragma unroll
    for (int d = 0; d < HD; d++) {
        qr[d] = active ? bf(q[qo + d]) : 0.0f;
        dqa[d] = 0.0f;
        doown[tid * RS + d] = active ? dout[oo + d] : __float2bfloat16(0.0f);
    }
    const float li = active ? lse[((size_t)b * NH + h) * T + i] : 0.0f;
    const float Di = active ? D[((size_t)b * NH + h) * T + i] : 0.0f;
    const bf16 *dor = doown + tid * RS;
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    for (int j0 = 0; j0 <= i_last; j0 += ATT_BK) {
        __syncthreads();
        load_tile<HD>(ks, kb, ld.k, j0, ATT_BK, T);
        load_tile<HD>(vs, vb, ld.v, j0, ATT_BK, T);
        __syncthreads();
        if (!active || j0 > i) continue;
        const int jn = min(ATT_BK, i - j0 + 1);
        for (int jj = 0; jj < jn; jj++) {
            const bf16 *kr = ks + jj * HD, *vr = vs + jj * HD;
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int d = 0; d < HD; d++) {
                s += qr[d] * bf(kr[d]);
                dp += bf(dor[d]) * bf(vr[d]);
            }
            const float p = expf(s * scale - li);
            const float ds = p * (dp - Di) * scale;
#pragma unroll
            for (int d = 0; d < HD; d++) dqa[d] += ds * bf(kr[d]);
        }
    }
    if (!active) return;
#pragma unroll
    for (int d = 0; d < HD; d++) dq[qo + d] = __float2bfloat16(dqa[d]);
}

#define ATT_DISPATCH(HD_VALUE, CALL) \
    case HD_VALUE: {                 \
        const int HDc = HD_VALUE;    \
        CALL;                        \
        break;                       \
    }

int attention_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B, int T,
                      int NH, int NKV, int hd) {
    const float scale = 1.0f / sqrtf((float)hd);
    const dim3 grid(cdiv(T, ATT_BQ), B * NH);
#define FWD LAUNCH(attention_forward_kernel<HDc>, grid, ATT_BQ, 0, ops_stream)(out, lse, q, k, v, ld, T, NH, NKV, scale)
    switch (hd) {
        ATT_DISPATCH(8, FWD)
        ATT_DISPATCH(16, FWD)
        ATT_DISPATCH(32, FWD)
        ATT_DISPATCH(64, FWD)
        ATT_DISPATCH(128, FWD)
    default: return vrl_error("fast: attention supports head_dim 8, 16, 32, 64 or 128 (got %d)", hd);
    }
#undef FWD
    LAUNCH_CHECK();
    return 0;
}

int attention_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch,
                       const bf16 *dout, const bf16 *out, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld,
                       const float *lse, int B, int T, int NH, int NKV, int hd) {
    if (!dv.f32 && !dv.b16) return vrl_error("fast: attention_backward needs a dv output (fp32 or bf16)");
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t rows = (size_t)B * T * NH;
    LAUNCH(attention_backward_D_kernel, cdiv(rows, 256), 256, 0, ops_stream)(Dscratch, dout, out, B, T, NH, hd);
    LAUNCH_CHECK();
    const dim3 gkv(cdiv(T, ATT_BQ), B * NKV), gq(cdiv(T, ATT_BQ), B * NH);
#define BWD                                                                                                   \
    LAUNCH(attention_backward_dkdv_kernel<HDc>, gkv, ATT_BQ, 0, ops_stream)(dk, dv, dout, q, k, v, ld, lse, Dscratch, T, NH, NKV, scale); \
    LAUNCH(attention_backward_dq_kernel<HDc>, gq, ATT_BQ, 0, ops_stream)(dq, dout, q, k, v, ld, lse, Dscratch, T, NH, NKV, scale)
    switch (hd) {
        ATT_DISPATCH(8, BWD)
        ATT_DISPATCH(16, BWD)
        ATT_DISPATCH(32, BWD)
        ATT_DISPATCH(64, BWD)
        ATT_DISPATCH(128, BWD)
    default: return vrl_error("fast: attention supports head_dim 8, 16, 32, 64 or 128 (got %d)", hd);
    }
#undef BWD
    LAUNCH_CHECK();
    return 0;
}

/* One thread per element of dV [N,kvC]: the dK/dV kernel's epilogue on a dV read from memory. */
__global__ void attention_dv_scatter_kernel(AttnDv dv, const bf16 *src, int ld_v, int kvC, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const size_t row = i / kvC, c = i % kvC;
    const bf16 g = src[i];
    if (dv.f32) dv.f32[i] = dv.add ? dv.f32[i] + dv.scale * bf(g) : dv.scale * bf(g);
    if (dv.b16) dv.b16[row * ld_v + c] = g;
}

int attention_dv_scatter(AttnDv dv, const bf16 *src, int ld_v, int N, int kvC) {
    if (!dv.f32 && !dv.b16) return vrl_error("fast: attention_dv_scatter needs a dv output (fp32 or bf16)");
    if (ld_v < kvC) return vrl_error("fast: attention_dv_scatter: row stride %d under the width %d", ld_v, kvC);
    const size_t n = (size_t)N * kvC;
    if (!n) return 0;
    LAUNCH(attention_dv_scatter_kernel, cdiv(n, 256), 256, 0, ops_stream)(dv, src, ld_v, kvC, n);
    LAUNCH_CHECK();
    return 0;
}

FAST_NS_END
