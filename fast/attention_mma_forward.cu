/* attention_mma_forward.cu: causal flash attention forward on tensor cores (`--attention mma`),
 * FlashAttention-2's schedule: the same contract as attention.cu's attention_forward (strided
 * Q/K/V views, GQA, out [B,T,NH·hd] bf16, lse [B,NH,T] fp32; attention.cuh), so the CUDA-core
 * backward can consume its lse.
 *
 * Tiling (docs/design/kernels.md, "Attention on tensor cores"): a block of MMA_WARPS = 4 warps owns
 * MMA_BQ = 64 consecutive queries of one head, 16 per warp = one m16 row tile of
 * mma.m16n8k16. Keys and values stream through shared memory BK rows at a time (64; 32 at
 * hd 128), double-buffered: tile j + 1's K and V are copied by cp.async while tile j is
 * computed, one barrier a tile (mma_next_tile). Per key tile each warp computes S = Q·Kᵀ
 * (16 x BK, fp32 accumulators in registers, Q's A fragments loaded once), rescales by the
 * online softmax in base 2 (the scale folded into one FFMA before ex2.approx), turns P into
 * bf16 A fragments straight from S's accumulator layout (the C layout of two n-tiles is the A
 * layout of one k-step, as FA2 does: no shared-memory round trip) and accumulates O += P·V.
 * The causal mask is code only in the block's diagonal tiles, after the loop over the tiles
 * below them. A warp's rows never leave its registers, so it needs no barrier but the
 * block's one per tile. Shared rows are HD + 8 bf16 long: 16-byte aligned for ldmatrix and
 * cp.async, and the 8 rows of one 8x8 matrix start 16 bytes apart modulo 128, so an ldmatrix
 * phase touches 32 distinct banks.
 *
 * Deterministic: every sum has a fixed order (the tensor core's, the quad's xor shuffles,
 * the key tiles in order); no atomics. The fp32-storage CPU build (VRL_CUDA_CPU_FP32) has no
 * packed bf16 pairs to form fragments from: there the launcher refuses with an error. */
#include <math.h>

#include "fast/attention_mma_rope.cuh" /* mma_k_rows_async, mma_rope_k_rows: the keys' RoPE at their loads */
#include "fast/mma.cuh"
#include "fast/ops.cuh" /* ops_stream; attention.cuh */
#include "fast/vec.cuh" /* load_pack, store_pack: the rotated queries' write-back */

FAST_NS_BEGIN

#if !VRL_CUDA_CPU_FP32

#define MMA_WARPS 4
#define MMA_THREADS (32 * MMA_WARPS)
#define MMA_BQ (16 * MMA_WARPS) /* queries per block: one m16 tile per warp */
#define MMA_PAD 8               /* bf16 of padding per shared row (16 bytes) */

/* Head dims under 16 (the tiny model's 8) are zero-padded to the mma's k = 16 in shared memory.
 * BK keys a tile: two stages of a K and a V tile stay within 48 KiB of static shared memory
 * (36 KiB at hd 64, 34 KiB at hd 128 with 32-key tiles). */
template <int HD> struct MmaDims {
    static constexpr int HDP = HD < 16 ? 16 : HD; /* dims stored per shared row */
    static constexpr int RS = HDP + MMA_PAD;      /* shared row stride (elements) */
    static constexpr int BK = HDP <= 64 ? 64 : 32; /* keys per shared-memory tile */
    static_assert(2 * 2 * BK * RS * 2 <= 48 * 1024, "two stages of K and V fit in static shared memory");
    static_assert(MMA_BQ % BK == 0 && MMA_BQ <= 2 * BK, "diagonal tiles per block; Q staged through one stage");
};

/* Rows [r0, r0+R) of one head (R x HD bf16, src row r at base + r·stride) into shared memory
 * with row stride RS by cp.async, 16-byte words, the block's threads in turn (R·HDP/8 is a
 * multiple of the block: a fixed number each, unrolled, at offsets known at compile time).
 * Rows past T repeat row T − 1: real values (so no predicate and no zero fill in the loop), whose
 * keys the causal mask removes and whose queries are never stored. The pad dims [HD, HDP) of
 * HD 8 are zero-filled (source size 0: nothing is read). */
template <int HD, int R>
__device__ __forceinline__ void mma_load_rows_async(bf16 *dst, const bf16 *base, int stride, int r0, int T) {
    constexpr int W = MmaDims<HD>::HDP / 8; /* 16-byte words per row */
    constexpr int RSTEP = MMA_THREADS / W;  /* rows between one thread's words */
    static_assert(R * W % MMA_THREADS == 0, "every thread copies the same number of words");
    const int r = threadIdx.x / W, c = threadIdx.x % W;
    const int bytes = c < HD / 8 ? 16 : 0;
    /* byte addresses as one 32 x 32 -> 64-bit multiply-add a word (IMAD.WIDE.U32): rows and the
     * pitch are non-negative ints */
    const char *col = (const char *)(base + c * 8);
    const unsigned pitch = 2u * (unsigned)stride;
#pragma unroll
    for (int i = 0; i < R * W / MMA_THREADS; i++) {
        const unsigned row = (unsigned)min(r0 + r + i * RSTEP, T - 1);
        cp_async_16(dst + (r + i * RSTEP) * MmaDims<HD>::RS + c * 8, col + (size_t)row * pitch, bytes);
    }
}

/* RoPE on the block's staged queries [MMA_BQ][RS] in shared memory (AttnRope.q), rope_forward's
 * arithmetic and rounding: each pair (x_i, x_{i+HD/2}), i < HD/2, becomes bf16(x_i c − x_{i+HD/2} s),
 * bf16(x_{i+HD/2} c + x_i s), c, s = cos_t, sin_t [position][i] (8-byte aligned); row r is position
 * min(q0 + r, T − 1), as the staging repeats row T − 1 past T. Two consecutive i a thread a step
 * (one 64-bit load per table, one 32-bit word per half), the block's threads in turn; the
 * caller's barrier orders the rows before anyone reads them. */
template <int HD>
__device__ __forceinline__ void mma_rope_staged_rows(bf16 *qs, const float *cos_t, const float *sin_t, int q0, int T) {
    constexpr int H2 = HD / 2, WPR = H2 / 2; /* two-pair steps a row */
    static_assert(MMA_BQ * WPR % MMA_THREADS == 0, "every thread rotates the same number of pairs");
#pragma unroll
    for (int k = 0; k < MMA_BQ * WPR / MMA_THREADS; k++) {
        const int w = threadIdx.x + k * MMA_THREADS, r = w / WPR, i0 = w % WPR * 2;
        const size_t o = (size_t)min(q0 + r, T - 1) * H2 + i0;
        const RopePair c = *(const RopePair *)(cos_t + o), s = *(const RopePair *)(sin_t + o);
        /* the bf16 pairs (i0, i0+1) and (i0+H2, i0+H2+1): 4-byte words of the shared row (i0 and
         * H2 even, rows 16-byte aligned) */
        bf16 *row = qs + r * MmaDims<HD>::RS;
        uint32_t *lo = (uint32_t *)(row + i0), *hi = (uint32_t *)(row + i0 + H2);
        const uint32_t a = *lo, b = *hi;
        float y1[2], y2[2];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const float x1 = __bfloat162float(__ushort_as_bfloat16((unsigned short)(a >> 16 * e)));
            const float x2 = __bfloat162float(__ushort_as_bfloat16((unsigned short)(b >> 16 * e)));
            rope_rotate(x1, x2, c.e[e], s.e[e], y1[e], y2[e]);
        }
        *lo = pack_bf16x2(y1[0], y1[1]);
        *hi = pack_bf16x2(y2[0], y2[1]);
    }
}

/* The block's rotated queries back to q, in place (rows below T, the real dims: 16-byte words).
 * Each row is this block's alone (no other block reads or writes it). */
template <int HD>
__device__ __forceinline__ void mma_store_staged_rows(bf16 *dst, const bf16 *qs, int stride, int q0, int T) {
    constexpr int W = MmaDims<HD>::HDP / 8; /* 16-byte words a shared row */
#pragma unroll
    for (int k = 0; k < MMA_BQ * W / MMA_THREADS; k++) {
        const int w = threadIdx.x + k * MMA_THREADS, r = w / W, c = w % W;
        if (c < HD / 8 && q0 + r < T)
            store_pack(dst + (size_t)(q0 + r) * stride + c * 8, load_pack(qs + r * MmaDims<HD>::RS + c * 8));
    }
}

/* One warp's 16 query rows between key tiles: the O accumulator and the online softmax's
 * state, all in registers. Lane = 4g + t holds rows g and g+8 (lo, hi), columns 2t, 2t+1 of
 * each 8-wide n-tile (mma.cuh). m is the running maximum of the raw scores Q·Kᵀ (the scale is
 * positive, so it commutes with the maximum); l sums this lane's columns of P only. */
template <int HD> struct MmaRows {
    static constexpr int KSTEPS = MmaDims<HD>::HDP / 16; /* k-steps of S = Q·Kᵀ */
    static constexpr int BK = MmaDims<HD>::BK;
    static constexpr int RS = MmaDims<HD>::RS;
    static constexpr int SN = BK / 8; /* n-tiles of S: 8 keys each */
    static constexpr int ON = HD / 8; /* n-tiles of O: 8 dims each */
    float o[ON][4];                   /* rows g, g+8; dims 8n + 2t, +1 */
    float m_lo, m_hi, l_lo, l_hi;

    /* Keys j0.. of the tile in ks, vs ([BK][RS] each). MASK: the causal mask, only on the
     * block's diagonal tiles (below them every key precedes every row). sl2 = scale·log2(e):
     * exp(scale·(s − m)) = 2^(s·sl2 − m·sl2), one FFMA and one MUFU.EX2 a score. */
    template <bool MASK>
    __device__ __forceinline__ void tile(const uint32_t (&qa)[KSTEPS][4], const bf16 *ks, const bf16 *vs, int j0,
                                         int row_lo, int row_hi, float sl2) {
        const int lane = threadIdx.x % 32, t = lane & 3;
        /* ldmatrix.x4 row address of this lane: matrix mi = lane/8, its row mr = lane%8 */
        const int mi = lane >> 3, mr = lane & 7;

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

        /* causal mask (diagonal tiles only), row maxima of the raw scores */
        float tmax_lo = -INFINITY, tmax_hi = -INFINITY;
#pragma unroll
        for (int n = 0; n < SN; n++) {
            if constexpr (MASK) {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (j0 + 8 * n + 2 * t + (e & 1) > (e < 2 ? row_lo : row_hi)) sc[n][e] = -INFINITY;
            }
            tmax_lo = fmaxf(tmax_lo, fmaxf(sc[n][0], sc[n][1]));
            tmax_hi = fmaxf(tmax_hi, fmaxf(sc[n][2], sc[n][3]));
        }
        /* the quad (lanes 4g..4g+3) shares rows g, g+8: xor 1 then 2 */
        tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, 1));
        tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, 2));
        tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, 1));
        tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, 2));
        /* key 0 is in the first tile and visible to every row, so m is finite from then on;
         * on the first tile m = −inf and corr = 2^−inf = 0 */
        const float mn_lo = fmaxf(m_lo, tmax_lo), mn_hi = fmaxf(m_hi, tmax_hi);
        const float corr_lo = ex2_approx_ftz((m_lo - mn_lo) * sl2), corr_hi = ex2_approx_ftz((m_hi - mn_hi) * sl2);
        m_lo = mn_lo, m_hi = mn_hi;
        const float ms_lo = mn_lo * sl2, ms_hi = mn_hi * sl2; /* the exponent's offset, once a row */
        l_lo *= corr_lo, l_hi *= corr_hi;
#pragma unroll
        for (int n = 0; n < ON; n++) o[n][0] *= corr_lo, o[n][1] *= corr_lo, o[n][2] *= corr_hi, o[n][3] *= corr_hi;
#pragma unroll
        for (int n = 0; n < SN; n++) { /* a masked score: 2^−inf = 0 */
            sc[n][0] = ex2_approx_ftz(fmaf(sc[n][0], sl2, -ms_lo)), sc[n][1] = ex2_approx_ftz(fmaf(sc[n][1], sl2, -ms_lo));
            sc[n][2] = ex2_approx_ftz(fmaf(sc[n][2], sl2, -ms_hi)), sc[n][3] = ex2_approx_ftz(fmaf(sc[n][3], sl2, -ms_hi));
            l_lo += sc[n][0] + sc[n][1], l_hi += sc[n][2] + sc[n][3];
        }

        /* O += P·V, k-step kk = keys 16kk..16kk+15 = S's n-tiles 2kk and 2kk+1, whose C
         * fragments are P's A fragment; B[key][d] = V[key][d] is [k][n]-major: ldmatrix .trans,
         * x4 = keys +0..7 and +8..15 of dims 8n.., then of dims 8(n+1).. */
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
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
};

/* The top of key tile j: every thread's copies of tile j (stage j & 1) have landed and are
 * visible, and every warp has finished tile j − 1, so tile j + 1's K and V go to that stage
 * (its copies in flight during tile j's math). The barrier is block-uniform: every thread
 * runs every tile. With kcos (AttnRope.k: k holds the keys before RoPE) each thread first rotates
 * the K words it copied (mma_rope_k_rows); the barrier publishes them. */
template <int HD>
__device__ __forceinline__ void mma_next_tile(bf16 (*tiles)[2][MmaDims<HD>::BK * MmaDims<HD>::RS], const bf16 *kb,
                                              const bf16 *vb, AttnLd ld, int j, int ntiles, int T, const float *kcos,
                                              const float *ksin) {
    constexpr int BK = MmaDims<HD>::BK;
    cp_async_wait<0>();
    if (kcos) mma_rope_k_rows<HD, BK>(tiles[j & 1][0], kcos, ksin, j * BK, T, 1.0f);
    __syncthreads();
    if (j + 1 < ntiles) {
        mma_k_rows_async<HD, BK, false>(tiles[(j + 1) & 1][0], kb, ld.k, (j + 1) * BK, T);
        mma_load_rows_async<HD, BK>(tiles[(j + 1) & 1][1], vb, ld.v, (j + 1) * BK, T);
        cp_async_commit();
    }
}

/* grid (cdiv(T, MMA_BQ), B·NH), block MMA_THREADS. */
template <int HD>
__global__ void __launch_bounds__(MMA_THREADS) attention_mma_forward_kernel(bf16 *out, float *lse, bf16 *q,
                                                                          const bf16 *k, const bf16 *v, AttnLd ld,
                                                                          int T, int NH, int NKV, float scale,
                                                                          float scale_log2, const float *rope_cos,
                                                                          const float *rope_sin, const float *kcos,
                                                                          const float *ksin) {
    constexpr int RS = MmaDims<HD>::RS, BK = MmaDims<HD>::BK;
    constexpr int KSTEPS = MmaRows<HD>::KSTEPS, ON = MmaRows<HD>::ON;
    /* [stage][K, V][BK][RS]: tile j in stage j & 1; first Q's [MMA_BQ][RS] from tiles[1][0] on */
    __shared__ __align__(16) bf16 tiles[2][2][BK * RS];
    const int qblock = gridDim.x - 1 - blockIdx.x; /* the longest causal rows are scheduled first */
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    const int q0 = qblock * MMA_BQ, w0 = q0 + 16 * warp; /* first query of the block, of the warp */
    const int row_lo = w0 + g, row_hi = w0 + g + 8;      /* this lane's two query rows */
    const int last = min(q0 + MMA_BQ, T) - 1;            /* the block needs keys 0..last */
    const int ntiles = last / BK + 1, nfull = q0 / BK;   /* tiles; those below the diagonal */
    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    const int mi = lane >> 3, mr = lane & 7;

    /* Q (staged in stage 1), K and V of tile 0 (stage 0): one group, one wait */
    /* Q's staging runs over stage 1's K and V (at hd 128 it is two tiles long): addressed from a
     * pointer to stage 1, not by indexing tiles[1][0] past its own bound */
    bf16 *const qstage = &tiles[1][0][0];
    mma_load_rows_async<HD, MMA_BQ>(qstage, q + (size_t)b * T * ld.q + h * HD, ld.q, q0, T);
    mma_k_rows_async<HD, BK, false>(tiles[0][0], kb, ld.k, 0, T); /* rotated (kcos) in tile 0's mma_next_tile */
    mma_load_rows_async<HD, BK>(tiles[0][1], vb, ld.v, 0, T);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    if (rope_cos) { /* block-uniform: q holds the queries before RoPE (AttnRope.q) */
        mma_rope_staged_rows<HD>(qstage, rope_cos, rope_sin, q0, T);
        __syncthreads();
        mma_store_staged_rows<HD>(q + (size_t)b * T * ld.q + h * HD, qstage, ld.q, q0, T);
    }
    /* Q's A fragments, once: x4 = the 16x16 tile's four quarters (top-left, bottom-left,
     * top-right, bottom-right); tile 0's barrier (mma_next_tile) orders them before tile 1's
     * copies overwrite the staging */
    uint32_t qa[KSTEPS][4];
#pragma unroll
    for (int s = 0; s < KSTEPS; s++)
        ldmatrix_x4(qa[s], qstage + (16 * warp + mr + (mi & 1) * 8) * RS + 16 * s + (mi >> 1) * 8);

    MmaRows<HD> rows;
#pragma unroll
    for (int n = 0; n < ON; n++) rows.o[n][0] = rows.o[n][1] = rows.o[n][2] = rows.o[n][3] = 0.0f;
    rows.m_lo = rows.m_hi = -INFINITY, rows.l_lo = rows.l_hi = 0.0f;

    /* the tiles below the diagonal: no mask (rows past T compute on a copy of row T − 1, never stored) */
    for (int j = 0; j < nfull; j++) {
        mma_next_tile<HD>(tiles, kb, vb, ld, j, ntiles, T, kcos, ksin);
        rows.template tile<false>(qa, tiles[j & 1][0], tiles[j & 1][1], j * BK, row_lo, row_hi, scale_log2);
    }
    /* the block's diagonal tiles (MMA_BQ / BK of them, fewer at the end of T), masked; a tile
     * whose every key is in all of a warp's rows' future is skipped (warp-uniform) */
#pragma unroll
    for (int d = 0; d < MMA_BQ / BK; d++) {
        const int j = nfull + d;
        if (j >= ntiles) break;
        mma_next_tile<HD>(tiles, kb, vb, ld, j, ntiles, T, kcos, ksin);
        if (j * BK <= w0 + 15)
            rows.template tile<true>(qa, tiles[j & 1][0], tiles[j & 1][1], j * BK, row_lo, row_hi, scale_log2);
    }
    if (w0 >= T) return; /* warp-uniform: no real row */
    /* the row sums over the quad, in a fixed order */
    float l_lo = rows.l_lo, l_hi = rows.l_hi;
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
            olo[8 * n] = __float2bfloat16(rows.o[n][0] * inv_lo);
            olo[8 * n + 1] = __float2bfloat16(rows.o[n][1] * inv_lo);
        }
        if (row_hi < T) {
            ohi[8 * n] = __float2bfloat16(rows.o[n][2] * inv_hi);
            ohi[8 * n + 1] = __float2bfloat16(rows.o[n][3] * inv_hi);
        }
    }
    /* the natural log-sum-exp of the scaled scores, as the backward kernels read it */
    float *lrow = lse + ((size_t)b * NH + h) * T;
    if (t == 0 && row_lo < T) lrow[row_lo] = rows.m_lo * scale + logf(l_lo);
    if (t == 0 && row_hi < T) lrow[row_hi] = rows.m_hi * scale + logf(l_hi);
}

int attention_mma_forward(bf16 *out, float *lse, bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B, int T,
                          int NH, int NKV, int hd, const AttnRope *rope) {
    const bool rq = rope && rope->q, rk = rope && rope->k;
    if ((rq || rk) && (!rope->cos_t || !rope->sin_t || ((uintptr_t)rope->cos_t | (uintptr_t)rope->sin_t) % 8))
        return vrl_error("fast: attention_mma_forward's RoPE tables are missing or not 8-byte aligned");
    const float *cq = rq ? rope->cos_t : NULL, *sq = rq ? rope->sin_t : NULL; /* NULL: q as given */
    const float *ck = rk ? rope->cos_t : NULL, *sk = rk ? rope->sin_t : NULL; /* NULL: k as given */
    const float scale = 1.0f / sqrtf((float)hd);
    const float scale_log2 = scale * 1.4426950408889634f; /* log2(e): exp(x) = 2^(x·log2(e)) */
    const dim3 grid(cdiv(T, MMA_BQ), B * NH);
#define MMA_FWD(HD_VALUE)                                                                                         \
    case HD_VALUE:                                                                                                \
        LAUNCH(attention_mma_forward_kernel<HD_VALUE>, grid, MMA_THREADS, 0, ops_stream)(out, lse, q, k, v, ld, T, \
                                                                                        NH, NKV, scale, scale_log2, \
                                                                                        cq, sq, ck, sk);           \
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

int attention_mma_forward(bf16 *, float *, bf16 *, const bf16 *, const bf16 *, AttnLd, int, int, int, int, int,
                          const AttnRope *) {
    return vrl_error("fast: --attention mma needs packed bf16 fragments, which the fp32-storage build "
                     "(VRL_CUDA_CPU_FP32) does not have");
}

#endif

FAST_NS_END
