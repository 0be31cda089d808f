/* attention_mma_forward.cu: causal flash attention forward on tensor cores (`--attention mma`),
 * FlashAttention-2's schedule: the same contract as attention.cu's attention_forward (strided
 * Q/K/V views, GQA, out [B,T,NH·hd] bf16, lse [B,NH,T] fp32; attention.cuh), so the CUDA-core
 * backward can consume its lse.
 *
 * Tiling (docs/fast.md, "Attention on tensor cores"): a block of MMA_WARPS = 4 warps owns
 * MMA_BQ = 64 consecutive queries of one head, 16 per warp = one m16 row tile of
 * mma.m16n8k16. Keys and values stream through shared memory MMA_BK = 64 rows at a time. Per
 * key tile each warp computes S = Q·Kᵀ (16 x 64, fp32 accumulators in registers, Q's A
 * fragments loaded once), rescales by the online softmax, turns P = exp(S − m) into bf16 A
 * fragments straight from S's accumulator layout (the C layout of two n-tiles is the A
 * layout of one k-step, as FA2 does: no shared-memory round trip) and accumulates O += P·V.
 * A warp's rows never leave its registers, so it needs no barrier but the block's two per
 * tile (tile loaded, tile no longer read). Shared rows are HD + 8 bf16 long: 16-byte aligned
 * for ldmatrix, and the 8 rows of one 8x8 matrix start 16 bytes apart modulo 128, so an
 * ldmatrix phase touches 32 distinct banks.
 *
 * Deterministic: every sum has a fixed order (the tensor core's, the quad's xor shuffles,
 * the key tiles in order); no atomics. The fp32-storage CPU build (VRL_CUDA_CPU_FP32) has no
 * packed bf16 pairs to form fragments from: there the launcher refuses with an error. */
#include <math.h>

#include "fast/mma.cuh"
#include "fast/ops.cuh" /* ops_stream; attention.cuh */

FAST_NS_BEGIN

#if !VRL_CUDA_CPU_FP32

#define MMA_WARPS 4
#define MMA_BQ (16 * MMA_WARPS) /* queries per block: one m16 tile per warp */
#define MMA_BK 64               /* keys per shared-memory tile */
#define MMA_PAD 8               /* bf16 of padding per shared row (16 bytes) */

/* Head dims under 16 (the tiny model's 8) are zero-padded to the mma's k = 16 in shared memory. */
template <int HD> struct MmaDims {
    static constexpr int HDP = HD < 16 ? 16 : HD; /* dims stored per shared row */
    static constexpr int RS = HDP + MMA_PAD;      /* shared row stride (elements) */
};

/* Rows [r0, r0+R) of one head (R x HD bf16, src row r at base + r·stride) into shared memory
 * with row stride RS, zeros past T and in the pad dims [HD, HDP); 16-byte words, the block's
 * threads in turn. */
template <int HD>
__device__ __forceinline__ void mma_load_rows(bf16 *dst, const bf16 *base, size_t stride, int r0, int R, int T) {
    const int W = MmaDims<HD>::HDP / 8; /* 16-byte words per row */
    for (int w = threadIdx.x; w < R * W; w += blockDim.x) {
        const int r = w / W, c = w % W;
        int4 val = make_int4(0, 0, 0, 0);
        if (r0 + r < T && c < HD / 8) val = *(const int4 *)(base + (size_t)(r0 + r) * stride + c * 8);
        *(int4 *)(dst + r * MmaDims<HD>::RS + c * 8) = val;
    }
}

/* Two floats rounded to bf16, packed as one fragment register (lo in the low 16 bits). */
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}

/* grid (cdiv(T, MMA_BQ), B·NH), block 32·MMA_WARPS. Fragment indices (mma.cuh): lane =
 * 4g + t; this lane's accumulators hold rows g and g+8 of its warp's 16, columns 2t, 2t+1
 * of each 8-wide n-tile. */
template <int HD>
__global__ void __launch_bounds__(32 * MMA_WARPS) attention_mma_forward_kernel(bf16 *out, float *lse, const bf16 *q,
                                                                             const bf16 *k, const bf16 *v, AttnLd ld,
                                                                             int T, int NH, int NKV, float scale) {
    constexpr int RS = MmaDims<HD>::RS;        /* shared row stride (elements) */
    constexpr int KSTEPS = MmaDims<HD>::HDP / 16; /* k-steps of S = Q·Kᵀ */
    constexpr int SN = MMA_BK / 8;    /* n-tiles of S: 8 keys each */
    constexpr int ON = HD / 8;        /* n-tiles of O: 8 dims each */
    static_assert(MMA_BQ <= MMA_BK, "Q is staged through the K tile");
    __shared__ __align__(16) bf16 ks[MMA_BK * RS]; /* K tile [MMA_BK][HD] (first: Q's [MMA_BQ][HD]) */
    __shared__ __align__(16) bf16 vs[MMA_BK * RS]; /* V tile [MMA_BK][HD] */
    const int qblock = gridDim.x - 1 - blockIdx.x; /* the longest causal rows are scheduled first */
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int q0 = qblock * MMA_BQ, w0 = q0 + 16 * warp; /* first query of the block, of the warp */
    const int row_lo = w0 + g, row_hi = w0 + g + 8;      /* this lane's two query rows */
    const int last = min(q0 + MMA_BQ, T) - 1;            /* the block needs keys 0..last */
    const bool warp_live = w0 < T;                        /* warp-uniform: has a real row */
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    /* ldmatrix.x4 row address of this lane: matrix mi = lane/8, its row mr = lane%8 */
    const int mi = lane >> 3, mr = lane & 7;

    /* Q's A fragments, once: staged through ks, x4 = the 16x16 tile's four quarters
     * (top-left, bottom-left, top-right, bottom-right) */
    mma_load_rows<HD>(ks, q + (size_t)b * T * ld.q + h * HD, ld.q, q0, MMA_BQ, T);
    __syncthreads();
    uint32_t qa[KSTEPS][4];
#pragma unroll
    for (int s = 0; s < KSTEPS; s++)
        ldmatrix_x4(qa[s], ks + (16 * warp + mr + (mi & 1) * 8) * RS + 16 * s + (mi >> 1) * 8);

    float o[ON][4]; /* O accumulator: rows g, g+8; dims 8n + 2t, +1 */
#pragma unroll
    for (int n = 0; n < ON; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f; /* l: this lane's columns only */

    for (int j0 = 0; j0 <= last; j0 += MMA_BK) {
        __syncthreads(); /* Q's staging, or the previous tile, is no longer read */
        mma_load_rows<HD>(ks, kb, ld.k, j0, MMA_BK, T);
        mma_load_rows<HD>(vs, vb, ld.v, j0, MMA_BK, T);
        __syncthreads();
        if (!warp_live || j0 > w0 + 15) continue; /* warp-uniform: every key here is in all its rows' future */

        /* S = Q·Kᵀ: B[d][key] = K[key][d], K stored [key][d] = [n][k]-major: ldmatrix without .trans */
        float sc[SN][4];
#pragma unroll
        for (int n = 0; n < SN; n++) {
            sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
            const bf16 *krow = ks + (8 * n + mr) * RS;
            if constexpr (KSTEPS == 1) { /* HD 8, 16: one k-step, two 8-dim halves */
                uint32_t kf[2];
                ldmatrix_x2(kf, krow + (mi & 1) * 8);
                mma_m16n8k16_bf16(sc[n], qa[0], kf, sc[n]);
            } else { /* two k-steps per x4: dims 16s + 8·mi */
#pragma unroll
                for (int s = 0; s < KSTEPS; s += 2) {
                    uint32_t kf[4];
                    ldmatrix_x4(kf, krow + 16 * s + 8 * mi);
                    mma_m16n8k16_bf16(sc[n], qa[s], kf, sc[n]);
                    mma_m16n8k16_bf16(sc[n], qa[s + 1], kf + 2, sc[n]);
                }
            }
        }

        /* scale, causal mask (only where a key can pass the warp's first row), row maxima */
        const bool diagonal = j0 + MMA_BK - 1 > w0;
        float tmax_lo = -INFINITY, tmax_hi = -INFINITY;
#pragma unroll
        for (int n = 0; n < SN; n++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int key = j0 + 8 * n + 2 * t + (e & 1), row = e < 2 ? row_lo : row_hi;
                float s = sc[n][e] * scale;
                if (diagonal && key > row) s = -INFINITY;
                sc[n][e] = s;
            }
            tmax_lo = fmaxf(tmax_lo, fmaxf(sc[n][0], sc[n][1]));
            tmax_hi = fmaxf(tmax_hi, fmaxf(sc[n][2], sc[n][3]));
        }
        /* the quad (lanes 4g..4g+3) shares rows g, g+8: xor 1 then 2 */
        tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, 1));
        tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, 2));
        tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, 1));
        tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, 2));
        /* key 0 is in the first tile and visible to every row, so m is finite from then on */
        const float mn_lo = fmaxf(m_lo, tmax_lo), mn_hi = fmaxf(m_hi, tmax_hi);
        const float corr_lo = expf(m_lo - mn_lo), corr_hi = expf(m_hi - mn_hi); /* 0 on the first tile */
        m_lo = mn_lo, m_hi = mn_hi;
        l_lo *= corr_lo, l_hi *= corr_hi;
#pragma unroll
        for (int n = 0; n < ON; n++) o[n][0] *= corr_lo, o[n][1] *= corr_lo, o[n][2] *= corr_hi, o[n][3] *= corr_hi;
#pragma unroll
        for (int n = 0; n < SN; n++) {
            sc[n][0] = expf(sc[n][0] - m_lo), sc[n][1] = expf(sc[n][1] - m_lo);
            sc[n][2] = expf(sc[n][2] - m_hi), sc[n][3] = expf(sc[n][3] - m_hi);
            l_lo += sc[n][0] + sc[n][1], l_hi += sc[n][2] + sc[n][3];
        }

        /* O += P·V, k-step kk = keys 16kk..16kk+15 = S's n-tiles 2kk and 2kk+1, whose C
         * fragments are P's A fragment; B[key][d] = V[key][d] is [k][n]-major: ldmatrix .trans,
         * x4 = keys +0..7 and +8..15 of dims 8n.., then of dims 8(n+1).. */
#pragma unroll
        for (int kk = 0; kk < MMA_BK / 16; kk++) {
            const uint32_t pa[4] = {pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]),
                                    pack_bf16x2(sc[2 * kk][2], sc[2 * kk][3]),
                                    pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                                    pack_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
            const bf16 *vrow = vs + (16 * kk + (mi & 1) * 8 + mr) * RS + (mi >> 1) * 8;
            if constexpr (ON == 1) { /* HD 8: one n-tile, keys +0..7 and +8..15 */
                uint32_t vf[2];
                ldmatrix_x2_trans(vf, vrow);
                mma_m16n8k16_bf16(o[0], pa, vf, o[0]);
            } else {
#pragma unroll
                for (int n = 0; n < ON; n += 2) {
                    uint32_t vf[4];
                    ldmatrix_x4_trans(vf, vrow + 8 * n);
                    mma_m16n8k16_bf16(o[n], pa, vf, o[n]);
                    mma_m16n8k16_bf16(o[n + 1], pa, vf + 2, o[n + 1]);
                }
            }
        }
    }
    if (!warp_live) return;
    /* the row sums over the quad, in a fixed order */
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
    const int qC = NH * HD;
    const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;
    bf16 *olo = out + ((size_t)b * T + row_lo) * qC + h * HD + 2 * t; /* row g, dims 8n + 2t, +1 */
    bf16 *ohi = out + ((size_t)b * T + row_hi) * qC + h * HD + 2 * t; /* row g + 8 */
#pragma unroll
    for (int n = 0; n < ON; n++) {
        if (row_lo < T) {
            olo[8 * n] = __float2bfloat16(o[n][0] * inv_lo);
            olo[8 * n + 1] = __float2bfloat16(o[n][1] * inv_lo);
        }
        if (row_hi < T) {
            ohi[8 * n] = __float2bfloat16(o[n][2] * inv_hi);
            ohi[8 * n + 1] = __float2bfloat16(o[n][3] * inv_hi);
        }
    }
    float *lrow = lse + ((size_t)b * NH + h) * T;
    if (t == 0 && row_lo < T) lrow[row_lo] = m_lo + logf(l_lo);
    if (t == 0 && row_hi < T) lrow[row_hi] = m_hi + logf(l_hi);
}

int attention_mma_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B, int T,
                          int NH, int NKV, int hd) {
    const float scale = 1.0f / sqrtf((float)hd);
    const dim3 grid(cdiv(T, MMA_BQ), B * NH);
#define MMA_FWD(HD_VALUE)                                                                                         \
    case HD_VALUE:                                                                                                \
        LAUNCH(attention_mma_forward_kernel<HD_VALUE>, grid, 32 * MMA_WARPS, 0, ops_stream)(out, lse, q, k, v, ld, T, \
                                                                                           NH, NKV, scale);       \
        break;
    switch (hd) {
        MMA_FWD(8)
        MMA_FWD(16)
        MMA_FWD(32)
        MMA_FWD(64)
        MMA_FWD(128)
    default: return vrl_error("fast: --attention mma supports head_dim 8, 16, 32, 64 or 128 (got %d)", hd);
    }
#undef MMA_FWD
    LAUNCH_CHECK();
    return 0;
}

#else /* VRL_CUDA_CPU_FP32: bf16 is an fp32 wrapper here, two of them do not pack into a register */

int attention_mma_forward(bf16 *, float *, const bf16 *, const bf16 *, const bf16 *, AttnLd, int, int, int, int, int) {
    return vrl_error("fast: --attention mma needs packed bf16 fragments, which the fp32-storage build "
                     "(VRL_CUDA_CPU_FP32) does not have");
}

#endif

FAST_NS_END
