/* attention_mma_backward.cu: the causal flash attention's backward on tensor cores
 * (--attention mma), FlashAttention-2's structure on bf16 mma.sync.m16n8k16 with fp32
 * accumulation (fast/mma.cuh). The twin of attention_backward (the CUDA-core kernels, the
 * oracle and fallback): same arguments, strided views, lse layout and dV destinations.
 *
 * Three kernels, no atomics, every output element written once by one lane, so a run
 * repeats bit for bit:
 *   D    = Σ_d dO⊙O per (row, head): attention_backward_D_kernel, shared with the CUDA cores;
 *   dK/dV: a block owns 64 keys of one kv head, 16 per warp, and walks every query head of
 *        the group in order, then every query tile at or after its keys: P^T = exp(K·Q^T·scale
 *        − lse) recomputed, dP^T = V·dO^T, dS^T = P^T∘(dP^T − D)·scale, dV += P^T·dO,
 *        dK += dS^T·Q, the accumulators in registers (C fragments);
 *   dQ:  a block owns 64 queries of one head, 16 per warp, walking the key tiles up to its
 *        last query: P and dS again, dQ += dS·K.
 * Scores and probabilities stay in registers: an mma's C fragment (rows g and g+8, columns
 * 2t, 2t+1 of each 8-wide n-tile) of two adjacent n-tiles is, packed to bf16 pairs, the
 * A fragment of the next product's 16-wide k-step. Operands come from shared memory by
 * ldmatrix: A (16 rows x 16 of a row-major tile) by .x4, B from a tile stored [n][k]
 * (Q or dO rows against K or V rows) by .x4, from one stored [k][n] (dO, Q, K rows as
 * the right-hand factor) by .x4.trans. Rows are padded to HDP+8 bf16 (HDP: hd, 16 for hd 8)
 * so that the eight 16-byte rows of one ldmatrix phase fall in distinct banks.
 *
 * Not in the fp32-storage CPU build (VRL_CUDA_CPU_FP32): bf16 there is a float, there are no
 * bf16 pairs to feed mma, so the launcher refuses. */
#include <math.h>

#include "fast/ops.cuh" /* ops_stream; includes attention.cuh */
#include "fast/mma.cuh"

FAST_NS_BEGIN

#if !VRL_CUDA_CPU_FP32

/* fast/attention.cu's D = Σ_d dO⊙O per (row, head), the first pass of both backwards */
__global__ void attention_backward_D_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T, int NH, int hd);

#define MMA_BWD_WARPS 4
#define MMA_BWD_OWN (16 * MMA_BWD_WARPS) /* rows a block owns: keys (dK/dV) or queries (dQ) */
#define MMA_BWD_PAD 8                    /* bf16 of padding per shared row: 16 bytes */

/* Head dims under 16 (the tiny model's 8) are zero-padded to the mma's k = 16 in shared memory.
 * The streamed side's tile: 32 rows, 16 at head_dim 128 (the static 48 KiB of shared memory
 * holds 2·64 own rows + 2·16 streamed ones of 136 bf16). */
template <int HD> struct MmaBwdTile {
    static const int HDP = HD < 16 ? 16 : HD;  /* dims per shared row, and computed */
    static const int R = HDP >= 128 ? 16 : 32; /* rows per streamed tile */
    static const int RS = HDP + MMA_BWD_PAD;   /* shared row stride (elements) */
    /* __launch_bounds__' blocks per SM, i.e. a register cap of 65536 / (128·that): 128 where
     * the kernel fits (without it ptxas picked 96 for dQ at hd 64 and spilled), 255 for dK/dV
     * at hd 128 (its two 16x128 fp32 accumulators alone are 128 registers a lane) */
    static const int MIN_BLOCKS_DKDV = HD >= 128 ? 2 : 4;
};

/* Rows [r0, r0+R) of one head (R x HD bf16; src row r at base + r*stride) into shared memory
 * with row stride HDP+8, zeros past T and in the pad dims [HD, HDP), 16 bytes per load and store. */
template <int HD, int R>
__device__ __forceinline__ void mma_bwd_load_rows(bf16 *dst, const bf16 *base, size_t stride, int r0, int T) {
    const int W = MmaBwdTile<HD>::HDP / 8; /* 16-byte words per shared row */
    for (int w = threadIdx.x; w < R * W; w += blockDim.x) {
        const int r = w / W, c = w % W;
        int4 val = make_int4(0, 0, 0, 0);
        if (r0 + r < T && c < HD / 8) val = *(const int4 *)(base + (size_t)(r0 + r) * stride + c * 8);
        *(int4 *)(dst + r * MmaBwdTile<HD>::RS + c * 8) = val;
    }
}

/* A fragment of the 16x16 block at column c0 of a row-major shared tile (row stride rs):
 * lane 8m+j names row j + 8(m&1), column c0 + 8(m>>1) (the quarters TL, BL, TR, BR). */
__device__ __forceinline__ void frag_a_rows(uint32_t a[4], const bf16 *tile, int rs, int c0, int lane) {
    const int m = lane >> 3, j = lane & 7;
    ldmatrix_x4(a, tile + (j + (m & 1) * 8) * rs + c0 + (m >> 1) * 8);
}

/* B fragments of two n-tiles from a tile stored [n][k] (rows n = 0..15, k = c0..c0+15):
 * b[0..1] for n 0..7, b[2..3] for n 8..15; lane 8m+j names row j + 8(m>>1), column c0 + 8(m&1). */
__device__ __forceinline__ void frag_b_nk(uint32_t b[4], const bf16 *tile, int rs, int c0, int lane) {
    const int m = lane >> 3, j = lane & 7;
    ldmatrix_x4(b, tile + (j + (m >> 1) * 8) * rs + c0 + (m & 1) * 8);
}

/* B fragments of two n-tiles from a tile stored [k][n] (rows k = 0..15, columns n0..n0+15),
 * read transposed: lane 8m+j names row j + 8(m&1), column n0 + 8(m>>1). */
__device__ __forceinline__ void frag_b_kn(uint32_t b[4], const bf16 *tile, int rs, int n0, int lane) {
    const int m = lane >> 3, j = lane & 7;
    ldmatrix_x4_trans(b, tile + (j + (m & 1) * 8) * rs + n0 + (m >> 1) * 8);
}

/* Two floats as a bf16 pair (round to nearest), the lower-indexed element in the low half. */
__device__ __forceinline__ uint32_t bf16_pair(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}

/* C fragments of n-tiles 2kk and 2kk+1 ([16][16] of a score-like tile) as the A fragment of
 * one 16-wide k-step: a[0] row g cols 2t.., a[1] row g+8, a[2] row g cols 2t+8.., a[3] row g+8. */
__device__ __forceinline__ void c_to_a(uint32_t a[4], const float lo[4], const float hi[4]) {
    a[0] = bf16_pair(lo[0], lo[1]);
    a[1] = bf16_pair(lo[2], lo[3]);
    a[2] = bf16_pair(hi[0], hi[1]);
    a[3] = bf16_pair(hi[2], hi[3]);
}

/* The two score-like products of a warp's 16 own rows against R streamed rows, over HDP:
 * x = A1·B1ᵀ and y = A2·B2ᵀ, [16][R] as C fragments (n-tile n: streamed rows 8n..8n+7), with
 * a1, a2 the warp's own rows and b1, b2 the streamed tiles, all row stride HDP+8:
 * dK/dV: Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ; dQ: S = Q·Kᵀ, dP = dO·Vᵀ. */
template <int HD, int R>
__device__ __forceinline__ void two_row_products(float x[R / 8][4], float y[R / 8][4], const bf16 *a1,
                                                 const bf16 *b1, const bf16 *a2, const bf16 *b2, int lane) {
    const int RS = MmaBwdTile<HD>::RS;
#pragma unroll
    for (int n = 0; n < R / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) x[n][e] = y[n][e] = 0.0f;
#pragma unroll
    for (int c0 = 0; c0 < MmaBwdTile<HD>::HDP; c0 += 16) {
        uint32_t fa1[4], fa2[4];
        frag_a_rows(fa1, a1, RS, c0, lane);
        frag_a_rows(fa2, a2, RS, c0, lane);
#pragma unroll
        for (int n = 0; n < R / 8; n += 2) {
            uint32_t fb1[4], fb2[4];
            frag_b_nk(fb1, b1 + n * 8 * RS, RS, c0, lane);
            frag_b_nk(fb2, b2 + n * 8 * RS, RS, c0, lane);
            mma_m16n8k16_bf16(x[n], fa1, fb1, x[n]);
            mma_m16n8k16_bf16(x[n + 1], fa1, fb1 + 2, x[n + 1]);
            mma_m16n8k16_bf16(y[n], fa2, fb2, y[n]);
            mma_m16n8k16_bf16(y[n + 1], fa2, fb2 + 2, y[n + 1]);
        }
    }
}

/* acc [16][HDP] (C fragments) += a [16][16] (an A fragment: 16 rows, one k-step of the
 * streamed side) · tile [16][HDP], the streamed rows stored [k][n] (row stride HDP+8):
 * dV += Pᵀ·dO, dK += dSᵀ·Q, dQ += dS·K. */
template <int HD>
__device__ __forceinline__ void add_product_kn(float acc[][4], const uint32_t a[4], const bf16 *tile, int lane) {
#pragma unroll
    for (int n = 0; n < MmaBwdTile<HD>::HDP / 8; n += 2) {
        uint32_t f[4];
        frag_b_kn(f, tile, MmaBwdTile<HD>::RS, n * 8, lane);
        mma_m16n8k16_bf16(acc[n], a, f, acc[n]);
        mma_m16n8k16_bf16(acc[n + 1], a, f + 2, acc[n + 1]);
    }
}

/* grid (cdiv(T, 64), B*NKV), block 128: warp w owns keys jw = j0 + 16w .. jw+15 of kv head kh,
 * its K and V rows in shared memory ks, vs [64][HD+8]; query tiles qs, dos [R][HD+8] stream
 * through, for each query head of the group in order. Per tile and warp:
 *   st, dpt [16 keys][R queries] (C fragments)  = K·Q^T, V·dO^T
 *   dva, dka [16 keys][HD] (C fragments)       += P^T·dO, dS^T·Q */
template <int HD>
__global__ void __launch_bounds__(32 * MMA_BWD_WARPS, MmaBwdTile<HD>::MIN_BLOCKS_DKDV)
    attention_mma_backward_dkdv_kernel(bf16 *dk, AttnDv dv, const bf16 *dout, const bf16 *q, const bf16 *k,
                                       const bf16 *v, AttnLd ld, const float *lse, const float *D, int T, int NH,
                                       int NKV, float scale) {
    const int R = MmaBwdTile<HD>::R, RS = MmaBwdTile<HD>::RS, HN = MmaBwdTile<HD>::HDP / 8; /* n-tiles of a row */
    __shared__ __align__(16) bf16 ks[MMA_BWD_OWN * RS];
    __shared__ __align__(16) bf16 vs[MMA_BWD_OWN * RS];
    __shared__ __align__(16) bf16 qs[R * RS];
    __shared__ __align__(16) bf16 dos[R * RS];
    __shared__ float lses[R], Ds[R];
    const int b = blockIdx.y / NKV, kh = blockIdx.y % NKV, group = NH / NKV;
    const int qC = NH * HD, kvC = NKV * HD;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int j0 = blockIdx.x * MMA_BWD_OWN, jw = j0 + warp * 16; /* the block's first key, the warp's */
    mma_bwd_load_rows<HD, MMA_BWD_OWN>(ks, k + (size_t)b * T * ld.k + kh * HD, ld.k, j0, T);
    mma_bwd_load_rows<HD, MMA_BWD_OWN>(vs, v + (size_t)b * T * ld.v + kh * HD, ld.v, j0, T);
    const bf16 *kw = ks + warp * 16 * RS, *vw = vs + warp * 16 * RS;
    float dka[HN][4], dva[HN][4];
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dka[n][e] = dva[n][e] = 0.0f;
    for (int h = kh * group; h < (kh + 1) * group; h++) {
        const bf16 *qb = q + (size_t)b * T * ld.q + h * HD, *db = dout + (size_t)b * T * qC + h * HD;
        const float *lb = lse + ((size_t)b * NH + h) * T, *Db = D + ((size_t)b * NH + h) * T;
        for (int i0 = j0; i0 < T; i0 += R) { /* queries before j0 see none of the block's keys */
            __syncthreads(); /* the previous tile is no longer read (and ks, vs are written) */
            mma_bwd_load_rows<HD, R>(qs, qb, ld.q, i0, T);
            mma_bwd_load_rows<HD, R>(dos, db, qC, i0, T);
            if (tid < R) {
                lses[tid] = i0 + tid < T ? lb[i0 + tid] : 0.0f;
                Ds[tid] = i0 + tid < T ? Db[i0 + tid] : 0.0f;
            }
            __syncthreads();
            /* warp-uniform: every query of the tile precedes the warp's keys, or all its keys are past T */
            if (i0 + R <= jw || jw >= T) continue;
            float st[R / 8][4], dpt[R / 8][4];
            two_row_products<HD, R>(st, dpt, kw, qs, vw, dos, lane);
            /* P^T and dS^T in place: element e of n-tile n is key jw + g + 8(e>>1), query
             * i0 + 8n + 2t + (e&1); causal and past-T entries are 0 */
#pragma unroll
            for (int n = 0; n < R / 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int j = jw + g + (e >> 1) * 8, ii = n * 8 + 2 * t + (e & 1), i = i0 + ii;
                    const float p = (i < j || i >= T) ? 0.0f : expf(st[n][e] * scale - lses[ii]);
                    st[n][e] = p;
                    dpt[n][e] = p * (dpt[n][e] - Ds[ii]) * scale;
                }
#pragma unroll
            for (int kk = 0; kk < R / 16; kk++) {
                uint32_t pa[4], dsa[4];
                c_to_a(pa, st[2 * kk], st[2 * kk + 1]);
                c_to_a(dsa, dpt[2 * kk], dpt[2 * kk + 1]);
                add_product_kn<HD>(dva, pa, dos + kk * 16 * RS, lane);
                add_product_kn<HD>(dka, dsa, qs + kk * 16 * RS, lane);
            }
        }
    }
    /* element e of n-tile n: key jw + g + 8(e>>1), column 8n + 2t + (e&1) */
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int j = jw + g + (e >> 1) * 8, d = n * 8 + 2 * t + (e & 1);
            if (j >= T || d >= HD) continue; /* past T, or a pad dim */
            const size_t row = (size_t)b * T + j, o = row * kvC + kh * HD + d; /* fp32 dv: [N, kvC] */
            dk[row * ld.k + kh * HD + d] = __float2bfloat16(dka[n][e]);
            if (dv.f32) dv.f32[o] = dv.add ? dv.f32[o] + dv.scale * dva[n][e] : dv.scale * dva[n][e];
            if (dv.b16) dv.b16[row * ld.v + kh * HD + d] = __float2bfloat16(dva[n][e]);
        }
}

/* grid (cdiv(T, 64), B*NH), block 128: warp w owns queries iw = i0 + 16w .. iw+15 of head h,
 * their Q and dO rows in shared memory qs, dos [64][HD+8]; key tiles ks, vs [R][HD+8] stream
 * through up to the block's last query. Per tile and warp:
 *   s, dp [16 queries][R keys] (C fragments) = Q·K^T, dO·V^T
 *   dqa [16 queries][HD] (C fragments)      += dS·K */
template <int HD>
__global__ void __launch_bounds__(32 * MMA_BWD_WARPS, 4)
    attention_mma_backward_dq_kernel(bf16 *dq, const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v,
                                     AttnLd ld, const float *lse, const float *D, int T, int NH, int NKV,
                                     float scale) {
    const int R = MmaBwdTile<HD>::R, RS = MmaBwdTile<HD>::RS, HN = MmaBwdTile<HD>::HDP / 8; /* n-tiles of a row */
    __shared__ __align__(16) bf16 qs[MMA_BWD_OWN * RS];
    __shared__ __align__(16) bf16 dos[MMA_BWD_OWN * RS];
    __shared__ __align__(16) bf16 ks[R * RS];
    __shared__ __align__(16) bf16 vs[R * RS];
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int qC = NH * HD;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int i0 = blockIdx.x * MMA_BWD_OWN, iw = i0 + warp * 16; /* the block's first query, the warp's */
    const int i_last = min(i0 + MMA_BWD_OWN, T) - 1;                /* keys needed: 0..i_last */
    mma_bwd_load_rows<HD, MMA_BWD_OWN>(qs, q + (size_t)b * T * ld.q + h * HD, ld.q, i0, T);
    mma_bwd_load_rows<HD, MMA_BWD_OWN>(dos, dout + (size_t)b * T * qC + h * HD, qC, i0, T);
    const bf16 *qw = qs + warp * 16 * RS, *dw = dos + warp * 16 * RS;
    /* lse and D of the lane's two rows, iw + g and iw + g + 8 (0 past T: those rows are not written) */
    const float *lh = lse + ((size_t)b * NH + h) * T, *Dh = D + ((size_t)b * NH + h) * T;
    const int ia = iw + g, ib = iw + g + 8;
    const float la = ia < T ? lh[ia] : 0.0f, lb = ib < T ? lh[ib] : 0.0f;
    const float Da = ia < T ? Dh[ia] : 0.0f, Db = ib < T ? Dh[ib] : 0.0f;
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    float dqa[HN][4];
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dqa[n][e] = 0.0f;
    for (int j0 = 0; j0 <= i_last; j0 += R) {
        __syncthreads(); /* the previous tile is no longer read (and qs, dos are written) */
        mma_bwd_load_rows<HD, R>(ks, kb, ld.k, j0, T);
        mma_bwd_load_rows<HD, R>(vs, vb, ld.v, j0, T);
        __syncthreads();
        /* warp-uniform: every key of the tile follows the warp's queries, or all its queries are past T */
        if (j0 > iw + 15 || iw >= T) continue;
        float s[R / 8][4], dp[R / 8][4];
        two_row_products<HD, R>(s, dp, qw, ks, dw, vs, lane);
        /* dS in place: element e of n-tile n is query iw + g + 8(e>>1), key j0 + 8n + 2t + (e&1);
         * keys after the query are 0 */
#pragma unroll
        for (int n = 0; n < R / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = iw + g + (e >> 1) * 8, j = j0 + n * 8 + 2 * t + (e & 1);
                const float p = j > i ? 0.0f : expf(s[n][e] * scale - (e < 2 ? la : lb));
                dp[n][e] = p * (dp[n][e] - (e < 2 ? Da : Db)) * scale;
            }
#pragma unroll
        for (int kk = 0; kk < R / 16; kk++) {
            uint32_t dsa[4];
            c_to_a(dsa, dp[2 * kk], dp[2 * kk + 1]);
            add_product_kn<HD>(dqa, dsa, ks + kk * 16 * RS, lane);
        }
    }
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = iw + g + (e >> 1) * 8, d = n * 8 + 2 * t + (e & 1);
            if (i < T && d < HD) dq[((size_t)b * T + i) * ld.q + h * HD + d] = __float2bfloat16(dqa[n][e]);
        }
}

#endif /* !VRL_CUDA_CPU_FP32 */

int attention_mma_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                           const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T,
                           int NH, int NKV, int hd) {
#if VRL_CUDA_CPU_FP32
    (void)dq, (void)dk, (void)dv, (void)Dscratch, (void)dout, (void)out, (void)q, (void)k, (void)v, (void)ld;
    (void)lse, (void)B, (void)T, (void)NH, (void)NKV, (void)hd;
    return vrl_error("fast: the tensor-core attention needs bf16 storage (not the fp32-storage CPU build)");
#else
    if (!dv.f32 && !dv.b16) return vrl_error("fast: attention_mma_backward needs a dv output (fp32 or bf16)");
    if (hd != 8 && hd != 16 && hd != 32 && hd != 64 && hd != 128)
        return vrl_error("fast: --attention mma supports head_dim 8, 16, 32, 64 or 128 (got %d)", hd);
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t rows = (size_t)B * T * NH;
    LAUNCH(attention_backward_D_kernel, cdiv(rows, 256), 256, 0, ops_stream)(Dscratch, dout, out, B, T, NH, hd);
    LAUNCH_CHECK();
    const dim3 gkv(cdiv(T, MMA_BWD_OWN), B * NKV), gq(cdiv(T, MMA_BWD_OWN), B * NH), block(32 * MMA_BWD_WARPS);
#define MMA_BWD(HDc)                                                                                                \
    LAUNCH(attention_mma_backward_dkdv_kernel<HDc>, gkv, block, 0, ops_stream)(dk, dv, dout, q, k, v, ld, lse,     \
                                                                               Dscratch, T, NH, NKV, scale);      \
    LAUNCH(attention_mma_backward_dq_kernel<HDc>, gq, block, 0, ops_stream)(dq, dout, q, k, v, ld, lse, Dscratch, \
                                                                            T, NH, NKV, scale)
    if (hd == 8) {
        MMA_BWD(8);
    } else if (hd == 16) {
        MMA_BWD(16);
    } else if (hd == 32) {
        MMA_BWD(32);
    } else if (hd == 64) {
        MMA_BWD(64);
    } else {
        MMA_BWD(128);
    }
#undef MMA_BWD
    LAUNCH_CHECK();
    return 0;
#endif
}

FAST_NS_END
