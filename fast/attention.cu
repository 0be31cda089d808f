/* attention.cu: fast/'s causal attention on CUDA cores (shapes and contracts in attention.cuh),
 * the fused twin of ref/attn_ops.c's attn_probs_* and attn_apply_*: a flash attention with a
 * group of lanes per query (or key), online softmax in fp32, no [T,T] matrix, no atomics. */
#include <math.h>

#include "fast/ops.cuh" /* ops_stream; includes attention.cuh */

FAST_NS_BEGIN

/* the same one-liner as ops.cu's (an inline function: one definition per program) */
__device__ __forceinline__ float bf(bf16 x) { return __bfloat162float(x); }

/* Tiles: a block owns ATT_BQ consecutive queries (forward, dq) or keys (dk/dv), SPLIT lanes
 * each (below); the other side streams through shared memory ATT_BK (forward, dq) or ATT_BQ2
 * (dk/dv) rows at a time. Rows of q/k/v are HD bf16 = HD/8 16-byte words. */
#define ATT_BQ 64
#define ATT_BK 32
#define ATT_BQ2 16
/* the most head dimensions one lane holds, per kernel (below); at head_dim 64 and 128 it sets
 * how many lanes share a query or key, and so the registers each needs */
#define ATT_FWD_SLICE 16
#define ATT_DQ_SLICE 16
#define ATT_DKDV_SLICE 16
/* the block of a kernel at head_dim HD: ATT_BQ queries or keys of SPLIT lanes (AttShape) */
#define ATT_THREADS(HD, MAXSLICE) (ATT_BQ * ((HD) / ((HD) < (MAXSLICE) ? (HD) : (MAXSLICE))))

/* Head-dimension split (issue 38: at head_dim 64 one thread per key held k, v, dK and dV,
 * 4·64 fp32, and spilled; at 128 every kernel did). A query (forward, dQ) or a key (dK/dV) is
 * owned by SPLIT adjacent lanes of one warp, each holding SLICE of its HD dimensions: its slice
 * of q/k/v/dO and of the accumulators, in registers. A dot product over HD is each lane's
 * partial sum over its slice, then log2(SPLIT) xor-shuffles inside the group (every lane ends
 * with the same bits: a+b = b+a). No product is computed twice. The shared tiles are fp32
 * (converted once on load), each row's slices padded by 16 bytes so the SPLIT lanes of a group,
 * reading 16 bytes each from the same row, hit different banks. */
template <int HD, int MAXSLICE>
struct AttShape {
    static const int SLICE = HD < MAXSLICE ? HD : MAXSLICE; /* dimensions a lane holds */
    static const int SPLIT = HD / SLICE;                    /* lanes per query or key (1, 2, 4 or 8) */
    static const int SS = SLICE + 4;                        /* a slice's fp32 stride in a shared row */
    static const int RS = SPLIT * SS;                       /* a shared row's fp32 stride */
};

/* 8 elements of a row: one 16-byte access of bf16 (32 bytes under fp32 storage, docs/design/precision.md
 * "Checks in bits"); rows of q/k/v/dO/out start on 16 bytes and every offset used is a multiple of 8 */
struct __align__(16) Row8 {
    bf16 e[8];
};
/* 4 fp32 of a shared row: one 16-byte shared load (LDS.128), not one 2-byte load per product */
struct __align__(16) Vec4 {
    float e[4];
};

/* The lanes of this thread's group (SPLIT adjacent lanes) as a warp mask. */
template <int SPLIT>
__device__ __forceinline__ unsigned group_mask() {
    const int first = (threadIdx.x & 31) & ~(SPLIT - 1);
    return (SPLIT == 32 ? 0xffffffffu : ((1u << SPLIT) - 1u)) << first;
}
/* x summed over the group (butterfly; the same bits in every lane) */
template <int SPLIT>
__device__ __forceinline__ float group_sum(float x, unsigned mask) {
#pragma unroll
    for (int o = SPLIT / 2; o > 0; o >>= 1) x += __shfl_xor_sync(mask, x, o);
    return x;
}

/* Rows [r0, r0+R) of one head (R x HD bf16 in memory; src row r at base + r*stride elements) into
 * shared memory as fp32 in the padded layout above, zeros past T; 16 bytes read at a time. */
template <class S>
__device__ __forceinline__ void load_tile(float *dst, const bf16 *base, size_t stride, int r0, int R, int T) {
    const int HD = S::SLICE * S::SPLIT;
    const int W = HD / 8; /* 8-element words per row; a word never straddles a slice (SLICE % 8 == 0) */
    for (int w = threadIdx.x; w < R * W; w += blockDim.x) {
        const int r = w / W, c = w % W * 8;
        Row8 val = {};
        if (r0 + r < T) val = *(const Row8 *)(base + (size_t)(r0 + r) * stride + c);
        float *o = dst + r * S::RS + c / S::SLICE * S::SS + c % S::SLICE;
#pragma unroll
        for (int e = 0; e < 8; e++) o[e] = bf(val.e[e]);
    }
}

/* A lane's N (a multiple of 8) elements of a row into registers (zeros when !valid) */
template <int N>
__device__ __forceinline__ void load_slice(float *dst, const bf16 *src, bool valid) {
#pragma unroll
    for (int w = 0; w < N / 8; w++) {
        Row8 val = {};
        if (valid) val = ((const Row8 *)src)[w];
#pragma unroll
        for (int e = 0; e < 8; e++) dst[w * 8 + e] = bf(val.e[e]);
    }
}
/* ... and back as bf16, 16 bytes at a time */
template <int N>
__device__ __forceinline__ void store_slice(bf16 *dst, const float *src) {
#pragma unroll
    for (int w = 0; w < N / 8; w++) {
        Row8 val;
#pragma unroll
        for (int e = 0; e < 8; e++) val.e[e] = __float2bfloat16(src[w * 8 + e]);
        ((Row8 *)dst)[w] = val;
    }
}
/* Σ_d a[d]·s[d] over a slice, a in registers, s a shared slice read 16 bytes at a time; the
 * order of the sum is d = 0, 1, ... as in ref/ */
template <int N>
__device__ __forceinline__ float dot_slice(const float *a, const float *s) {
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < N / 4; w++) {
        const Vec4 x = ((const Vec4 *)s)[w];
#pragma unroll
        for (int e = 0; e < 4; e++) acc += a[w * 4 + e] * x.e[e];
    }
    return acc;
}
/* acc[d] += c·s[d] over a slice, s shared, read 16 bytes at a time */
template <int N>
__device__ __forceinline__ void axpy_slice(float *acc, float c, const float *s) {
#pragma unroll
    for (int w = 0; w < N / 4; w++) {
        const Vec4 x = ((const Vec4 *)s)[w];
#pragma unroll
        for (int e = 0; e < 4; e++) acc[w * 4 + e] += c * x.e[e];
    }
}

/* grid (T/ATT_BQ, B*NH), block ATT_BQ·SPLIT: a group of SPLIT lanes = query i, its q slice and
 * output accumulator slice in registers; per key tile (fp32 in shared memory), the scores go to
 * shared memory (one column per query, written by the group's first lane), then one rescale of
 * the accumulator per tile (online softmax). */
template <int HD>
__global__ void __launch_bounds__(ATT_THREADS(HD, ATT_FWD_SLICE), 1) attention_forward_kernel(bf16 *out, float *lse,
                                                                                  const bf16 *q, const bf16 *k,
                                                                                  const bf16 *v, AttnLd ld, int T,
                                                                                  int NH, int NKV, float scale) {
    typedef AttShape<HD, ATT_FWD_SLICE> S;
    __shared__ __align__(16) float ks[ATT_BK * S::RS]; /* [ATT_BK, RS] fp32 */
    __shared__ __align__(16) float vs[ATT_BK * S::RS];
    __shared__ float sc[ATT_BK][ATT_BQ];
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int qC = NH * HD;
    const int qi = threadIdx.x / S::SPLIT, sub = threadIdx.x % S::SPLIT, d0 = sub * S::SLICE;
    const unsigned group = group_mask<S::SPLIT>();
    const int i = blockIdx.x * ATT_BQ + qi;
    const int i_last = min((int)(blockIdx.x * ATT_BQ + ATT_BQ), T) - 1; /* keys needed: 0..i_last */
    const bool active = i < T;
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    float qr[S::SLICE], acc[S::SLICE];
    load_slice<S::SLICE>(qr, q + ((size_t)b * T + i) * ld.q + h * HD + d0, active);
#pragma unroll
    for (int d = 0; d < S::SLICE; d++) acc[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 <= i_last; j0 += ATT_BK) {
        __syncthreads(); /* the previous tile is no longer read */
        load_tile<S>(ks, kb, ld.k, j0, ATT_BK, T);
        load_tile<S>(vs, vb, ld.v, j0, ATT_BK, T);
        __syncthreads();
        if (!active || j0 > i) continue; /* every key of this tile is in this query's future (the whole group) */
        const int jn = min(ATT_BK, i - j0 + 1); /* keys j0..i of this tile are visible */
        float tmax = -INFINITY;
        for (int jj = 0; jj < jn; jj++) {
            float s = group_sum<S::SPLIT>(dot_slice<S::SLICE>(qr, ks + jj * S::RS + sub * S::SS), group);
            s *= scale;
            if (sub == 0) sc[jj][qi] = s;
            tmax = fmaxf(tmax, s);
        }
        __syncwarp(group); /* the group's scores are written */
        const float m_new = fmaxf(m, tmax);
        const float corr = expf(m - m_new); /* 0 on the first tile (m = −inf) */
        l *= corr;
#pragma unroll
        for (int d = 0; d < S::SLICE; d++) acc[d] *= corr;
        for (int jj = 0; jj < jn; jj++) {
            const float p = expf(sc[jj][qi] - m_new);
            l += p;
            axpy_slice<S::SLICE>(acc, p, vs + jj * S::RS + sub * S::SS);
        }
        m = m_new;
    }
    if (!active) return;
    const float inv = 1.0f / l;
#pragma unroll
    for (int d = 0; d < S::SLICE; d++) acc[d] *= inv;
    store_slice<S::SLICE>(out + ((size_t)b * T + i) * qC + h * HD + d0, acc);
    if (sub == 0) lse[((size_t)b * NH + h) * T + i] = m + logf(l);
}

/* D[b,h,i] = Σ_d dout·out over the head's hd entries; one thread per (row, head), 16 bytes read at a time */
__global__ void attention_backward_D_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T, int NH,
                                            int hd) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * T * NH) return;
    const int h = (int)(idx % NH);
    const size_t row = idx / NH; /* b*T + t */
    const int b = (int)(row / T), t = (int)(row % T);
    const Row8 *dy = (const Row8 *)(dout + idx * hd), *y = (const Row8 *)(out + idx * hd);
    float s = 0;
    for (int w = 0; w < hd / 8; w++) { /* hd is a multiple of 8 (the launchers' dispatch) */
        const Row8 a = dy[w], c = y[w];
#pragma unroll
        for (int e = 0; e < 8; e++) s += bf(a.e[e]) * bf(c.e[e]);
    }
    D[((size_t)b * NH + h) * T + t] = s;
}

/* grid (T/ATT_BQ, B*NKV), block ATT_BQ·SPLIT: a group of SPLIT lanes = key j of kv head kh, its
 * k, v, dk and dv slices in registers (4·SLICE ≤ 128 fp32); query tiles of q and dO stream
 * through shared memory (fp32), every query head of the group and every query i >= j:
 *   p = exp(s − lse_i), dv += p·dO_i, ds = p·(dO_i·v_j − D_i)·scale, dk += ds·q_i */
template <int HD>
__global__ void __launch_bounds__(ATT_THREADS(HD, ATT_DKDV_SLICE), 1) attention_backward_dkdv_kernel(
    bf16 *dk, AttnDv dv, const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse,
    const float *D, int T, int NH, int NKV, float scale) {
    typedef AttShape<HD, ATT_DKDV_SLICE> S;
    __shared__ __align__(16) float qs[ATT_BQ2 * S::RS]; /* [ATT_BQ2, RS] fp32 */
    __shared__ __align__(16) float dos[ATT_BQ2 * S::RS];
    __shared__ float lses[ATT_BQ2], Ds[ATT_BQ2];
    const int b = blockIdx.y / NKV, kh = blockIdx.y % NKV, group = NH / NKV;
    const int qC = NH * HD, kvC = NKV * HD;
    const int kj = threadIdx.x / S::SPLIT, sub = threadIdx.x % S::SPLIT, d0 = sub * S::SLICE;
    const unsigned lanes = group_mask<S::SPLIT>();
    const int j0 = blockIdx.x * ATT_BQ, j = j0 + kj, tid = threadIdx.x;
    const bool active = j < T;
    float kr[S::SLICE], vr[S::SLICE], dka[S::SLICE], dva[S::SLICE];
    load_slice<S::SLICE>(kr, k + ((size_t)b * T + j) * ld.k + kh * HD + d0, active);
    load_slice<S::SLICE>(vr, v + ((size_t)b * T + j) * ld.v + kh * HD + d0, active);
#pragma unroll
    for (int d = 0; d < S::SLICE; d++) dka[d] = dva[d] = 0.0f;
    for (int h = kh * group; h < (kh + 1) * group; h++) {
        const bf16 *qb = q + (size_t)b * T * ld.q + h * HD, *db = dout + (size_t)b * T * qC + h * HD;
        const float *lb = lse + ((size_t)b * NH + h) * T, *Db = D + ((size_t)b * NH + h) * T;
        for (int i0 = (j0 / ATT_BQ2) * ATT_BQ2; i0 < T; i0 += ATT_BQ2) {
            __syncthreads(); /* previous tile done */
            load_tile<S>(qs, qb, ld.q, i0, ATT_BQ2, T);
            load_tile<S>(dos, db, qC, i0, ATT_BQ2, T);
            if (tid < ATT_BQ2) {
                lses[tid] = i0 + tid < T ? lb[i0 + tid] : 0.0f;
                Ds[tid] = i0 + tid < T ? Db[i0 + tid] : 0.0f;
            }
            __syncthreads();
            if (!active) continue;
            for (int ii = 0; ii < ATT_BQ2; ii++) {
                const int i = i0 + ii;
                if (i < j || i >= T) continue; /* causal: query i sees key j only if j <= i (the whole group) */
                const float *qi = qs + ii * S::RS + sub * S::SS, *doi = dos + ii * S::RS + sub * S::SS;
                const float s = group_sum<S::SPLIT>(dot_slice<S::SLICE>(kr, qi), lanes);
                const float dp = group_sum<S::SPLIT>(dot_slice<S::SLICE>(vr, doi), lanes);
                const float p = expf(s * scale - lses[ii]);
                const float ds = p * (dp - Ds[ii]) * scale;
                axpy_slice<S::SLICE>(dva, p, doi);
                axpy_slice<S::SLICE>(dka, ds, qi);
            }
        }
    }
    if (!active) return;
    const size_t row = (size_t)b * T + j, o = row * kvC + kh * HD + d0; /* fp32 dv: [N, kvC] */
    store_slice<S::SLICE>(dk + row * ld.k + kh * HD + d0, dka);
    if (dv.b16) store_slice<S::SLICE>(dv.b16 + row * ld.v + kh * HD + d0, dva);
    if (dv.f32)
#pragma unroll
        for (int d = 0; d < S::SLICE; d++)
            dv.f32[o + d] = dv.add ? dv.f32[o + d] + dv.scale * dva[d] : dv.scale * dva[d];
}

/* grid (T/ATT_BQ, B*NH), block ATT_BQ·SPLIT: a group of SPLIT lanes = query i; its q, dO and dq
 * slices in registers, keys and values streamed in fp32 tiles:
 *   p = exp(s − lse_i), ds = p·(dO_i·v_j − D_i)·scale, dq += ds·k_j */
template <int HD>
__global__ void __launch_bounds__(ATT_THREADS(HD, ATT_DQ_SLICE), 1) attention_backward_dq_kernel(
    bf16 *dq, const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse,
    const float *D, int T, int NH, int NKV, float scale) {
    typedef AttShape<HD, ATT_DQ_SLICE> S;
    __shared__ __align__(16) float ks[ATT_BK * S::RS]; /* [ATT_BK, RS] fp32 */
    __shared__ __align__(16) float vs[ATT_BK * S::RS];
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int qC = NH * HD;
    const int qi = threadIdx.x / S::SPLIT, sub = threadIdx.x % S::SPLIT, d0 = sub * S::SLICE;
    const unsigned group = group_mask<S::SPLIT>();
    const int i = blockIdx.x * ATT_BQ + qi;
    const int i_last = min((int)(blockIdx.x * ATT_BQ + ATT_BQ), T) - 1;
    const bool active = i < T;
    const size_t qo = ((size_t)b * T + i) * ld.q + h * HD + d0, oo = ((size_t)b * T + i) * qC + h * HD + d0;
    float qr[S::SLICE], dor[S::SLICE], dqa[S::SLICE];
    load_slice<S::SLICE>(qr, q + qo, active);
    load_slice<S::SLICE>(dor, dout + oo, active);
#pragma unroll
    for (int d = 0; d < S::SLICE; d++) dqa[d] = 0.0f;
    const float li = active ? lse[((size_t)b * NH + h) * T + i] : 0.0f;
    const float Di = active ? D[((size_t)b * NH + h) * T + i] : 0.0f;
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    for (int j0 = 0; j0 <= i_last; j0 += ATT_BK) {
        __syncthreads();
        load_tile<S>(ks, kb, ld.k, j0, ATT_BK, T);
        load_tile<S>(vs, vb, ld.v, j0, ATT_BK, T);
        __syncthreads();
        if (!active || j0 > i) continue;
        const int jn = min(ATT_BK, i - j0 + 1);
        for (int jj = 0; jj < jn; jj++) {
            const float *kr = ks + jj * S::RS + sub * S::SS, *vr = vs + jj * S::RS + sub * S::SS;
            const float s = group_sum<S::SPLIT>(dot_slice<S::SLICE>(qr, kr), group);
            const float dp = group_sum<S::SPLIT>(dot_slice<S::SLICE>(dor, vr), group);
            const float p = expf(s * scale - li);
            const float ds = p * (dp - Di) * scale;
            axpy_slice<S::SLICE>(dqa, ds, kr);
        }
    }
    if (!active) return;
    store_slice<S::SLICE>(dq + qo, dqa);
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
#define FWD LAUNCH(attention_forward_kernel<HDc>, grid, ATT_THREADS(HDc, ATT_FWD_SLICE), 0, ops_stream)(out, lse, q, k, v, ld, T, NH, NKV, scale)
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
    LAUNCH(attention_backward_dkdv_kernel<HDc>, gkv, ATT_THREADS(HDc, ATT_DKDV_SLICE), 0, ops_stream)(dk, dv, dout, q, k, v, ld, lse, Dscratch, T, NH, NKV, scale); \
    LAUNCH(attention_backward_dq_kernel<HDc>, gq, ATT_THREADS(HDc, ATT_DQ_SLICE), 0, ops_stream)(dq, dout, q, k, v, ld, lse, Dscratch, T, NH, NKV, scale)
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
