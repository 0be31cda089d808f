/* attention_mma_backward.cu: the causal flash attention's backward on tensor cores
 * (--attention mma), FlashAttention-2's structure on bf16 mma.sync.m16n8k16 with fp32
 * accumulation (fast/mma.cuh). The twin of attention_backward (the CUDA-core kernels, the
 * oracle and fallback): same arguments, strided views, lse layout and dV destinations.
 *
 * Three kernels, no atomics, every output element written once by one lane, so a run
 * repeats bit for bit:
 *   D    = Σ_d dO⊙O per (row, head): attention_backward_D_kernel, shared with the CUDA cores;
 *   dK/dV: a block owns 64 keys of one kv head, 16 per warp, and walks every query head of
 *        the group in order, then every query tile at or after its keys: Pᵀ = exp(K·Qᵀ·scale
 *        − lse) recomputed, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ∘(dPᵀ − D)·scale, dV += Pᵀ·dO,
 *        dK += dSᵀ·Q, the accumulators in registers (C fragments);
 *   dQ:  a block owns 64 queries of one head, 16 per warp, walking the key tiles up to its
 *        last query: P and dS again, dQ += dS·K.
 * As the forward (issue 51): the scale folded into ex2.approx (P = 2^(s·scale·log2 e − lse·log2 e),
 * one FFMA and one MUFU a score; lse stays the forward's natural log), dS's scale applied once to
 * dK and dQ at the end, the causal mask only on the streamed tiles that meet the block's own
 * rows, and the streamed tiles (Q and dO, or K and V) double-buffered by cp.async with one
 * barrier a tile. A warp's own rows never change, so their A fragments are loaded once into
 * registers (K and V, or Q and dO; at hd 128 only K, or Q: the second stays in shared memory,
 * the accumulators leave no room): an ldmatrix.x4 moves 512 bytes, and the backward's binding
 * resource is the shared-memory bandwidth (docs/design/roofline.md), so the streamed tiles'
 * fragments are all that is read per tile (hd 64: 256 bytes a HMMA in both kernels, from 320
 * and 341).
 * Scores and probabilities stay in registers: an mma's C fragment (rows g and g+8, columns
 * 2t, 2t+1 of each 8-wide n-tile) of two adjacent n-tiles is, packed to bf16 pairs, the
 * A fragment of the next product's 16-wide k-step. Operands come from shared memory by
 * ldmatrix: A (16 rows x 16 of a row-major tile) by .x4, B from a tile stored [n][k]
 * (Q or dO rows against K or V rows) by .x4, from one stored [k][n] (dO, Q, K rows as
 * the right-hand factor) by .x4.trans. Rows are padded to HDP+8 bf16 (HDP: hd, 16 for hd 8)
 * so that the eight 16-byte rows of one ldmatrix phase fall in distinct banks.
 *
 * Seven products per (query, key) pair, where FlashAttention-2 does five: S and dP are computed
 * in both kernels. Five need dQ += dS·K inside the dK/dV kernel, summed across its key blocks.
 * FA2 does it with fp32 atomicAdd, whose order (and so the bits) changes run to run; the layer's
 * tests compare thread and block orders byte for byte. Deterministic alternatives, at 468M
 * (B 8, T 2048, 16 heads of 64, 24 layers): per-key-block fp32 dQ partials summed in a fixed
 * order by another kernel are 33,792 partial rows per (sequence, head) (16.5 T at 64-key
 * blocks), 1.11 GB written and read per layer, 53 GB a step (~20 ms of an H100's HBM, over
 * issue 51's 35 GB budget alone) to save two of seven products (at most ~2/7 of the backward's
 * tensor time, ~5 ms a step at the roofline's earlier figures); FA3's ordered accumulation (key
 * block n adds after n − 1, a semaphore in global memory) needs the blocks co-resident and
 * spinning, which the CPU layer, running one block at a time in forward, reverse or random
 * order, cannot execute (reverse order deadlocks); int64 fixed-point atomics are
 * order-independent and exact, but change dQ's rounding (each partial to a fixed grid), add a
 * 134 MB accumulator a layer and 277 M 8-byte reductions in L2 a layer, whose cost only a GPU
 * can say. So seven products stay (docs/design/kernels.md, "The backward's products").
 *
 * Not in the fp32-storage CPU build (VRL_CUDA_CPU_FP32): bf16 there is a float, there are no
 * bf16 pairs to feed mma, so the launcher refuses. */
#include <math.h>

#include "fast/ops.cuh" /* ops_stream; includes attention.cuh */
#include "fast/mma.cuh"
#include "fast/attention_mma_rope.cuh" /* mma_k_rows_async, mma_rope_k_rows: the keys' RoPE at their loads */

FAST_NS_BEGIN

#if !VRL_CUDA_CPU_FP32

/* fast/attention.cu's D = Σ_d dO⊙O per (row, head), the first pass of both backwards */
__global__ void attention_backward_D_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T, int NH, int hd);

#define MMA_BWD_WARPS 4
#define MMA_BWD_THREADS (32 * MMA_BWD_WARPS)
#define MMA_BWD_OWN (16 * MMA_BWD_WARPS) /* rows a block owns: keys (dK/dV) or queries (dQ) */
#define MMA_BWD_PAD 8                    /* bf16 of padding per shared row: 16 bytes */

/* Head dims under 16 (the tiny model's 8) are zero-padded to the mma's k = 16 in shared memory.
 * R rows a streamed tile: 32, 16 at head_dim 128. Static shared memory (48 KiB at most): two
 * stages of two streamed tiles [R][RS], which first stage the block's own rows of the first
 * own tensor (K, or Q) and, where it is kept in registers (OWN2_REGS), the second (V, or dO);
 * at hd 128 the second stays in shared memory [64][RS] beside them (34 KiB at hd 128, 18 at 64). */
template <int HD> struct MmaBwdTile {
    static constexpr int HDP = HD < 16 ? 16 : HD;  /* dims per shared row, and computed */
    static constexpr int R = HDP >= 128 ? 16 : 32; /* rows per streamed tile */
    static constexpr int RS = HDP + MMA_BWD_PAD;   /* shared row stride (elements) */
    static constexpr int KS = HDP / 16;            /* k-steps over the head dim */
    static constexpr int DIAG = MMA_BWD_OWN / R;   /* streamed tiles that meet the block's own rows */
    /* the second own tensor's A fragments in registers (KS·4 a lane) where the accumulators leave
     * room: at hd 128 the two 16x128 fp32 accumulators of dK/dV alone are 128 registers a lane */
    static constexpr bool OWN2_REGS = HDP <= 64;
    /* __launch_bounds__' blocks per SM, a register cap of 65536 / (128·that): 168 at 3 for the
     * fragments in registers, 255 at 2 for dK/dV at hd 128 */
    static constexpr int MIN_BLOCKS_DKDV = HD >= 128 ? 2 : 3;
    static constexpr int MIN_BLOCKS_DQ = 3;
    static_assert(2 * R >= MMA_BWD_OWN || !OWN2_REGS, "both own tensors are staged in the two stages");
    static_assert(4 * R >= MMA_BWD_OWN, "the first own tensor is staged in the two stages");
};

/* Rows [r0, r0+R) of one head (R x HD bf16; src row r at base + r*stride) into shared memory with
 * row stride RS by cp.async (16-byte words, the block's threads in turn), zeros (nothing read)
 * past T and in the pad dims [HD, HDP) of hd 8: a zero query row has P = 0 through its lse
 * (+inf, mma_bwd_next_tile), a zero key row is never stored. */
template <int HD, int R>
__device__ __forceinline__ void mma_bwd_rows_async(bf16 *dst, const bf16 *base, size_t stride, int r0, int T) {
    constexpr int W = MmaBwdTile<HD>::HDP / 8; /* 16-byte words per shared row */
#pragma unroll
    for (int i = 0; i < (R * W + MMA_BWD_THREADS - 1) / MMA_BWD_THREADS; i++) {
        const int w = threadIdx.x + i * MMA_BWD_THREADS;
        if (R * W % MMA_BWD_THREADS == 0 || w < R * W) {
            const int r = w / W, c = w % W;
            const bool real = r0 + r < T && c < HD / 8;
            cp_async_16(dst + r * MmaBwdTile<HD>::RS + c * 8, real ? base + (size_t)(r0 + r) * stride + c * 8 : base,
                        real ? 16 : 0);
        }
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

/* RoPE's transpose (rope_backward, formulas.md §RoPE) on the lane's C fragments of a [16][HDP]
 * accumulator whose rows are the positions r0 .. r0+15 of one head, in fp32 before the store:
 * each pair (x_i, x_{i+hd/2}), i < hd/2, becomes (x_i c + x_{i+hd/2} s, x_{i+hd/2} c − x_i s),
 * c, s = cos_t, sin_t [position][i] (the tables rope_kernel reads, [T][hd/2]). Element e of
 * n-tile n is row r0 + g + 8(e>>1), column 8n + 2t + (e&1), so at hd >= 16 (hd/2 a multiple
 * of 8) the partner of n-tile n is n-tile n + hd/16 in the same lane; at hd 8 (one n-tile of
 * real dims, 2t + (e&1) < 8) column c's partner c ± 4 is lane t ± 2's same element: one
 * shuffle (xor 2) a value, all 32 lanes (the pad n-tile stays 0). Rows past T keep their
 * values (never stored): their tables are read at T − 1. */
template <int HD>
__device__ __forceinline__ void rope_transpose_fragments(float acc[][4], const float *cos_t, const float *sin_t,
                                                         int r0, int T, int lane) {
    constexpr int H2 = HD / 2;
    const int g = lane >> 2, t = lane & 3;
    const int pos[2] = {min(r0 + g, T - 1), min(r0 + g + 8, T - 1)}; /* elements 0, 1 and 2, 3 */
    if constexpr (HD >= 16) {
#pragma unroll
        for (int n = 0; n < HD / 16; n++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const size_t o = (size_t)pos[h] * H2 + 8 * n + 2 * t; /* i of element 2h */
                const RopePair c = *(const RopePair *)(cos_t + o), s = *(const RopePair *)(sin_t + o);
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    const float x1 = acc[n][2 * h + k], x2 = acc[n + HD / 16][2 * h + k];
                    rope_rotate(x1, x2, c.e[k], -s.e[k], acc[n][2 * h + k], acc[n + HD / 16][2 * h + k]);
                }
            }
    } else {
        static_assert(HD == 8, "head dims under 16 are 8");
        const bool first = t < 2;             /* columns 2t, 2t+1 < 4: x1 of its pair */
        const int i = (2 * t) & (H2 - 1);     /* the pair's index: 2t, or 2t − 4 */
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const float x = acc[0][e], p = __shfl_xor_sync(0xffffffffu, x, 2); /* the partner column */
            const size_t o = (size_t)pos[e >> 1] * H2 + i + (e & 1);
            float y1, y2; /* x is x1 of its pair in the first two lanes of each four, else x2 */
            rope_rotate(first ? x : p, first ? p : x, cos_t[o], -sin_t[o], y1, y2);
            acc[0][e] = first ? y1 : y2;
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

/* The warp's 16 own rows of a [64][RS] shared tile (row 16·warp on) as KS A fragments, one a k-step. */
template <int HD>
__device__ __forceinline__ void own_fragments(uint32_t a[][4], const bf16 *tile, int warp, int lane) {
#pragma unroll
    for (int s = 0; s < MmaBwdTile<HD>::KS; s++)
        frag_a_rows(a[s], tile + warp * 16 * MmaBwdTile<HD>::RS, MmaBwdTile<HD>::RS, 16 * s, lane);
}

/* The two score-like products of a warp's 16 own rows against a streamed tile's R rows, over HDP:
 * x = A1·B1ᵀ, y = A2·B2ᵀ, [16][R] as C fragments (n-tile n: streamed rows 8n..8n+7). a1 is in
 * registers; a2 too where a2s is null, else the warp's 16 rows of a shared tile (row stride RS);
 * b1, b2 the streamed tiles. dK/dV: Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ; dQ: S = Q·Kᵀ, dP = dO·Vᵀ. */
template <int HD>
__device__ __forceinline__ void two_row_products(float x[][4], float y[][4], const uint32_t a1[][4],
                                                 const uint32_t a2[][4], const bf16 *a2s, const bf16 *b1,
                                                 const bf16 *b2, int lane) {
    constexpr int R = MmaBwdTile<HD>::R, RS = MmaBwdTile<HD>::RS;
#pragma unroll
    for (int n = 0; n < R / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) x[n][e] = y[n][e] = 0.0f;
#pragma unroll
    for (int s = 0; s < MmaBwdTile<HD>::KS; s++) {
        uint32_t f2[4];
        if constexpr (MmaBwdTile<HD>::OWN2_REGS) {
            (void)a2s;
#pragma unroll
            for (int e = 0; e < 4; e++) f2[e] = a2[s][e];
        } else {
            (void)a2;
            frag_a_rows(f2, a2s, RS, 16 * s, lane);
        }
#pragma unroll
        for (int n = 0; n < R / 8; n += 2) {
            uint32_t fb1[4], fb2[4];
            frag_b_nk(fb1, b1 + n * 8 * RS, RS, 16 * s, lane);
            frag_b_nk(fb2, b2 + n * 8 * RS, RS, 16 * s, lane);
            mma_m16n8k16_bf16(x[n], a1[s], fb1, x[n]);
            mma_m16n8k16_bf16(x[n + 1], a1[s], fb1 + 2, x[n + 1]);
            mma_m16n8k16_bf16(y[n], f2, fb2, y[n]);
            mma_m16n8k16_bf16(y[n + 1], f2, fb2 + 2, y[n + 1]);
        }
    }
}

/* One query tile of the dK/dV kernel for one warp: queries i0..i0+R-1 in qs, dos ([R][RS]), their
 * lse·log2(e) (+inf past T) and D in ls, ds; the warp's keys jw..jw+15. MASK: the causal mask,
 * only on the tiles that meet the block's own keys (below them every query follows every key).
 *   st, dpt [16 keys][R queries] (C fragments) = K·Qᵀ, V·dOᵀ
 *   dva, dka [16 keys][HDP] (C fragments)     += Pᵀ·dO, dSᵀ·Q / scale */
template <int HD, bool MASK>
__device__ __forceinline__ void dkdv_tile(float dka[][4], float dva[][4], const uint32_t ka[][4], const uint32_t va[][4],
                                          const bf16 *vw, const bf16 *qs, const bf16 *dos, const float *ls,
                                          const float *ds, int i0, int jw, float sl2, int lane) {
    constexpr int R = MmaBwdTile<HD>::R, RS = MmaBwdTile<HD>::RS;
    const int g = lane >> 2, t = lane & 3;
    float st[R / 8][4], dpt[R / 8][4];
    two_row_products<HD>(st, dpt, ka, va, vw, qs, dos, lane);
    /* Pᵀ and dSᵀ in place: element e of n-tile n is key jw + g + 8(e>>1), query i0 + 8n + 2t + (e&1);
     * P = exp(s·scale − lse) = 2^(s·sl2 − lse·log2(e)), one FFMA and one MUFU.EX2 a score */
#pragma unroll
    for (int n = 0; n < R / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int ii = n * 8 + 2 * t + (e & 1);
            float p = ex2_approx_ftz(fmaf(st[n][e], sl2, -ls[ii]));
            if (MASK && i0 + ii < jw + g + (e >> 1) * 8) p = 0.0f;
            st[n][e] = p;
            dpt[n][e] = p * (dpt[n][e] - ds[ii]); /* dSᵀ / scale: dK's scale is applied once, at the end */
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

/* grid (cdiv(T, 64), B*NKV), block 128: warp w owns keys jw = j0 + 16w .. jw+15 of kv head kh, their
 * K (and, OWN2_REGS, V) A fragments in registers; the block walks the query heads of the group in
 * order, each over the query tiles from j0 on (those before see none of its keys): the DIAG tiles
 * that meet its keys, masked, then the rest. The Q and dO tiles are double-buffered: tile n + 1's
 * cp.async copies (stage (n+1) & 1) fly while tile n is computed, one barrier a tile. */
template <int HD>
__global__ void __launch_bounds__(MMA_BWD_THREADS, MmaBwdTile<HD>::MIN_BLOCKS_DKDV)
    attention_mma_backward_dkdv_kernel(bf16 *dk, AttnDv dv, const bf16 *dout, const bf16 *q, const bf16 *k,
                                       const bf16 *v, AttnLd ld, const float *lse, const float *D, int T, int NH,
                                       int NKV, float scale, float scale_log2, const float *rope_cos,
                                       const float *rope_sin, const float *kcos, const float *ksin) {
    using Tl = MmaBwdTile<HD>;
    constexpr int R = Tl::R, RS = Tl::RS, KS = Tl::KS, HN = Tl::HDP / 8; /* n-tiles of a row */
    /* [stage][Q, dO][R][RS]; first the staging of the block's K [64][RS] (and V [64][RS] after it) */
    __shared__ __align__(16) bf16 stages[4 * R * RS];
    __shared__ __align__(16) bf16 vs[Tl::OWN2_REGS ? 8 : MMA_BWD_OWN * RS]; /* V [64][RS] at hd 128 */
    __shared__ float lses[2][R], Ds[2][R]; /* per stage: lse·log2(e) (+inf past T), D */
    const int b = blockIdx.y / NKV, kh = blockIdx.y % NKV, group = NH / NKV;
    const int qC = NH * HD, kvC = NKV * HD;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int j0 = blockIdx.x * MMA_BWD_OWN, jw = j0 + warp * 16; /* the block's first key, the warp's */
    bf16 *vst = Tl::OWN2_REGS ? stages + MMA_BWD_OWN * RS : vs;
    mma_bwd_rows_async<HD, MMA_BWD_OWN>(stages, k + (size_t)b * T * ld.k + kh * HD, ld.k, j0, T);
    mma_bwd_rows_async<HD, MMA_BWD_OWN>(vst, v + (size_t)b * T * ld.v + kh * HD, ld.v, j0, T);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    /* kcos (AttnRope.k): k holds the keys before RoPE. Once a block, so after the barrier (a thread
     * rotates rows others copied) and a second one; mma_k_rows_async's per-thread pairing here
     * took the hd-64 kernel over its 168-register cap (spills) */
    if (kcos) {
        mma_rope_k_rows<HD, MMA_BWD_OWN>(stages, kcos, ksin, j0, T, 1.0f);
        __syncthreads();
    }
    uint32_t ka[KS][4], va[KS][4];
    own_fragments<HD>(ka, stages, warp, lane);
    if constexpr (Tl::OWN2_REGS) own_fragments<HD>(va, vst, warp, lane);
    /* read only at hd 128; elsewhere vs is a stub whose rows must not even be addressed */
    const bf16 *vw = Tl::OWN2_REGS ? vs : vs + warp * 16 * RS;
    float dka[HN][4], dva[HN][4];
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dka[n][e] = dva[n][e] = 0.0f;
    __syncthreads(); /* the staging is read: tile 0's copies may overwrite it */

    /* the next tile to copy: query head nh, queries ni..ni+R-1 */
    const int hend = (kh + 1) * group;
    int nh = kh * group, ni = j0;
    float nl = INFINITY, nd = 0.0f; /* threads < R: the next tile's lse·log2(e) and D, in flight */
    auto issue = [&](int stage) {
        if (nh >= hend) return;
        bf16 *st = stages + stage * 2 * R * RS;
        mma_bwd_rows_async<HD, R>(st, q + (size_t)b * T * ld.q + nh * HD, ld.q, ni, T);
        mma_bwd_rows_async<HD, R>(st + R * RS, dout + (size_t)b * T * qC + nh * HD, qC, ni, T);
        cp_async_commit();
        if ((int)threadIdx.x < R) { /* plain loads, stored by land() after this tile's math */
            const int i = ni + threadIdx.x;
            const size_t o = ((size_t)b * NH + nh) * T + i;
            nl = i < T ? lse[o] * 1.4426950408889634f : INFINITY;
            nd = i < T ? D[o] : 0.0f;
        }
        ni += R;
        if (ni >= T) ni = j0, nh++;
    };
    /* the stage's lse and D, read after the next barrier; the stage was last read before this one */
    auto land = [&](int stage) {
        if ((int)threadIdx.x < R) lses[stage][threadIdx.x] = nl, Ds[stage][threadIdx.x] = nd;
    };
    issue(0);
    land(0);
    int n = 0; /* tiles begun */
    for (int h = kh * group; h < hend; h++) {
        /* The top of tile n: its copies have landed and are visible, every warp is done with tile
         * n − 1, so tile n + 1 goes to that stage. Block-uniform: every thread runs every tile. */
#pragma unroll
        for (int d = 0; d < Tl::DIAG; d++) {
            const int i0 = j0 + d * R;
            if (i0 >= T) break;
            cp_async_wait<0>();
            __syncthreads();
            issue((n + 1) & 1);
            const bf16 *qs = stages + (n & 1) * 2 * R * RS;
            if (i0 + R > jw) /* warp-uniform: some query of the tile sees some key of the warp */
                dkdv_tile<HD, true>(dka, dva, ka, va, vw, qs, qs + R * RS, lses[n & 1], Ds[n & 1], i0, jw,
                                    scale_log2, lane);
            land((n + 1) & 1);
            n++;
        }
        for (int i0 = j0 + Tl::DIAG * R; i0 < T; i0 += R) {
            cp_async_wait<0>();
            __syncthreads();
            issue((n + 1) & 1);
            const bf16 *qs = stages + (n & 1) * 2 * R * RS;
            dkdv_tile<HD, false>(dka, dva, ka, va, vw, qs, qs + R * RS, lses[n & 1], Ds[n & 1], i0, jw, scale_log2,
                                 lane);
            land((n + 1) & 1);
            n++;
        }
    }
    /* dK leaves as RoPE's transpose applied (rope_cos non-null: the model skips rope_backward) */
    if (rope_cos) rope_transpose_fragments<HD>(dka, rope_cos, rope_sin, jw, T, lane);
    /* element e of n-tile n: key jw + g + 8(e>>1), column 8n + 2t + (e&1) */
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int j = jw + g + (e >> 1) * 8, d = n * 8 + 2 * t + (e & 1);
            if (j >= T || d >= HD) continue; /* past T, or a pad dim */
            const size_t row = (size_t)b * T + j, o = row * kvC + kh * HD + d; /* fp32 dv: [N, kvC] */
            dk[row * ld.k + kh * HD + d] = __float2bfloat16(dka[n][e] * scale);
            if (dv.f32) dv.f32[o] = dv.add ? dv.f32[o] + dv.scale * dva[n][e] : dv.scale * dva[n][e];
            if (dv.b16) dv.b16[row * ld.v + kh * HD + d] = __float2bfloat16(dva[n][e]);
        }
}

/* One key tile of the dQ kernel for one warp: keys j0..j0+R-1 in ks, vs ([R][RS]); the warp's
 * queries iw..iw+15, the lane's rows iw + g (lse·log2(e) l2a, D da_) and iw + g + 8 (l2b, db_).
 * MASK: the causal mask, only on the tiles that meet the block's own queries.
 *   s, dp [16 queries][R keys] (C fragments) = Q·Kᵀ, dO·Vᵀ
 *   dqa [16 queries][HDP] (C fragments)     += dS·K / scale */
template <int HD, bool MASK>
__device__ __forceinline__ void dq_tile(float dqa[][4], const uint32_t qa[][4], const uint32_t oa[][4],
                                        const bf16 *dw, const bf16 *ks, const bf16 *vs, int j0, int iw, float l2a,
                                        float l2b, float da_, float db_, float sl2, int lane) {
    constexpr int R = MmaBwdTile<HD>::R, RS = MmaBwdTile<HD>::RS;
    const int g = lane >> 2, t = lane & 3;
    float s[R / 8][4], dp[R / 8][4];
    two_row_products<HD>(s, dp, qa, oa, dw, ks, vs, lane);
    /* dS in place: element e of n-tile n is query iw + g + 8(e>>1), key j0 + 8n + 2t + (e&1) */
#pragma unroll
    for (int n = 0; n < R / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float p = ex2_approx_ftz(fmaf(s[n][e], sl2, -(e < 2 ? l2a : l2b)));
            if (MASK && j0 + n * 8 + 2 * t + (e & 1) > iw + g + (e >> 1) * 8) p = 0.0f;
            dp[n][e] = p * (dp[n][e] - (e < 2 ? da_ : db_)); /* dS / scale: dQ's scale at the end */
        }
#pragma unroll
    for (int kk = 0; kk < R / 16; kk++) {
        uint32_t dsa[4];
        c_to_a(dsa, dp[2 * kk], dp[2 * kk + 1]);
        add_product_kn<HD>(dqa, dsa, ks + kk * 16 * RS, lane);
    }
}

/* grid (cdiv(T, 64), B*NH), block 128: warp w owns queries iw = i0 + 16w .. iw+15 of head h, their Q
 * (and, OWN2_REGS, dO) A fragments in registers; key tiles stream through up to the block's last
 * query, double-buffered as in the dK/dV kernel: those below the block's queries unmasked, then
 * the DIAG that meet them, masked. */
template <int HD>
__global__ void __launch_bounds__(MMA_BWD_THREADS, MmaBwdTile<HD>::MIN_BLOCKS_DQ)
    attention_mma_backward_dq_kernel(bf16 *dq, const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v,
                                     AttnLd ld, const float *lse, const float *D, int T, int NH, int NKV,
                                     float scale, float scale_log2, const float *rope_cos, const float *rope_sin,
                                     const float *kcos, const float *ksin) {
    using Tl = MmaBwdTile<HD>;
    constexpr int R = Tl::R, RS = Tl::RS, KS = Tl::KS, HN = Tl::HDP / 8; /* n-tiles of a row */
    /* [stage][K, V][R][RS]; first the staging of the block's Q [64][RS] (and dO [64][RS] after it) */
    __shared__ __align__(16) bf16 stages[4 * R * RS];
    __shared__ __align__(16) bf16 dos[Tl::OWN2_REGS ? 8 : MMA_BWD_OWN * RS]; /* dO [64][RS] at hd 128 */
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int qC = NH * HD;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int i0 = blockIdx.x * MMA_BWD_OWN, iw = i0 + warp * 16; /* the block's first query, the warp's */
    const int ntiles = (min(i0 + MMA_BWD_OWN, T) - 1) / R + 1, nfull = i0 / R; /* key tiles; those below i0 */
    bf16 *dst = Tl::OWN2_REGS ? stages + MMA_BWD_OWN * RS : dos;
    mma_bwd_rows_async<HD, MMA_BWD_OWN>(stages, q + (size_t)b * T * ld.q + h * HD, ld.q, i0, T);
    mma_bwd_rows_async<HD, MMA_BWD_OWN>(dst, dout + (size_t)b * T * qC + h * HD, qC, i0, T);
    cp_async_commit();
    /* lse·log2(e) and D of the lane's two rows, iw + g and iw + g + 8 (0 past T: those rows are not written) */
    const float *lh = lse + ((size_t)b * NH + h) * T, *Dh = D + ((size_t)b * NH + h) * T;
    const int ia = iw + g, ib = iw + g + 8;
    const float l2a = ia < T ? lh[ia] * 1.4426950408889634f : 0.0f, l2b = ib < T ? lh[ib] * 1.4426950408889634f : 0.0f;
    const float da_ = ia < T ? Dh[ia] : 0.0f, db_ = ib < T ? Dh[ib] : 0.0f;
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qa[KS][4], oa[KS][4];
    own_fragments<HD>(qa, stages, warp, lane);
    if constexpr (Tl::OWN2_REGS) own_fragments<HD>(oa, dst, warp, lane);
    /* read only at hd 128; elsewhere dos is a stub whose rows must not even be addressed */
    const bf16 *dw = Tl::OWN2_REGS ? dos : dos + warp * 16 * RS;
    float dqa[HN][4];
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dqa[n][e] = 0.0f;
    __syncthreads(); /* the staging is read: tile 0's copies may overwrite it */

    const bf16 *kb = k + (size_t)b * T * ld.k + kh * HD, *vb = v + (size_t)b * T * ld.v + kh * HD;
    auto issue = [&](int j) { /* key tile j into stage j & 1 */
        if (j >= ntiles) return;
        bf16 *st = stages + (j & 1) * 2 * R * RS;
        mma_k_rows_async<HD, R, true>(st, kb, ld.k, j * R, T);
        mma_bwd_rows_async<HD, R>(st + R * RS, vb, ld.v, j * R, T);
        cp_async_commit();
    };
    issue(0);
    /* the top of tile j as in the dK/dV kernel: wait, barrier, tile j + 1's copies */
    for (int j = 0; j < nfull; j++) {
        cp_async_wait<0>();
        if (kcos) mma_rope_k_rows<HD, R>(stages + (j & 1) * 2 * R * RS, kcos, ksin, j * R, T, 1.0f); /* AttnRope.k */
        __syncthreads();
        issue(j + 1);
        const bf16 *ks = stages + (j & 1) * 2 * R * RS;
        dq_tile<HD, false>(dqa, qa, oa, dw, ks, ks + R * RS, j * R, iw, l2a, l2b, da_, db_, scale_log2, lane);
    }
#pragma unroll
    for (int d = 0; d < Tl::DIAG; d++) {
        const int j = nfull + d;
        if (j >= ntiles) break;
        cp_async_wait<0>();
        if (kcos) mma_rope_k_rows<HD, R>(stages + (j & 1) * 2 * R * RS, kcos, ksin, j * R, T, 1.0f); /* as above */
        __syncthreads();
        issue(j + 1);
        const bf16 *ks = stages + (j & 1) * 2 * R * RS;
        if (j * R <= iw + 15) /* warp-uniform: some key of the tile precedes some query of the warp */
            dq_tile<HD, true>(dqa, qa, oa, dw, ks, ks + R * RS, j * R, iw, l2a, l2b, da_, db_, scale_log2, lane);
    }
    if (rope_cos) rope_transpose_fragments<HD>(dqa, rope_cos, rope_sin, iw, T, lane); /* as dK's */
#pragma unroll
    for (int n = 0; n < HN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = iw + g + (e >> 1) * 8, d = n * 8 + 2 * t + (e & 1);
            if (i < T && d < HD) dq[((size_t)b * T + i) * ld.q + h * HD + d] = __float2bfloat16(dqa[n][e] * scale);
        }
}

#endif /* !VRL_CUDA_CPU_FP32 */

int attention_mma_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                           const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T,
                           int NH, int NKV, int hd, const AttnRope *rope) {
#if VRL_CUDA_CPU_FP32
    (void)dq, (void)dk, (void)dv, (void)Dscratch, (void)dout, (void)out, (void)q, (void)k, (void)v, (void)ld;
    (void)lse, (void)B, (void)T, (void)NH, (void)NKV, (void)hd, (void)rope;
    return vrl_error("fast: the tensor-core attention needs bf16 storage (not the fp32-storage CPU build)");
#else
    if (!dv.f32 && !dv.b16) return vrl_error("fast: attention_mma_backward needs a dv output (fp32 or bf16)");
    if (hd != 8 && hd != 16 && hd != 32 && hd != 64 && hd != 128)
        return vrl_error("fast: --attention mma supports head_dim 8, 16, 32, 64 or 128 (got %d)", hd);
    const bool rq = rope && rope->dq, rk = rope && rope->dk, kl = rope && rope->k;
    if ((rq || rk || kl) && (!rope->cos_t || !rope->sin_t || ((uintptr_t)rope->cos_t | (uintptr_t)rope->sin_t) % 8))
        return vrl_error("fast: attention_mma_backward's RoPE tables are missing or not 8-byte aligned");
    const float *cq = rq ? rope->cos_t : NULL, *sq = rq ? rope->sin_t : NULL; /* NULL: no rotation */
    const float *ck = rk ? rope->cos_t : NULL, *sk = rk ? rope->sin_t : NULL;
    const float *kc = kl ? rope->cos_t : NULL, *ks = kl ? rope->sin_t : NULL; /* K rotated at its loads */
    const float scale = 1.0f / sqrtf((float)hd);
    const float scale_log2 = scale * 1.4426950408889634f; /* log2(e): exp(x) = 2^(x·log2(e)) */
    const size_t rows = (size_t)B * T * NH;
    LAUNCH(attention_backward_D_kernel, cdiv(rows, 256), 256, 0, ops_stream)(Dscratch, dout, out, B, T, NH, hd);
    LAUNCH_CHECK();
    const dim3 gkv(cdiv(T, MMA_BWD_OWN), B * NKV), gq(cdiv(T, MMA_BWD_OWN), B * NH), block(MMA_BWD_THREADS);
#define MMA_BWD(HDc)                                                                                                \
    LAUNCH(attention_mma_backward_dkdv_kernel<HDc>, gkv, block, 0, ops_stream)(dk, dv, dout, q, k, v, ld, lse,     \
                                                                               Dscratch, T, NH, NKV, scale,       \
                                                                               scale_log2, ck, sk, kc, ks);        \
    LAUNCH(attention_mma_backward_dq_kernel<HDc>, gq, block, 0, ops_stream)(dq, dout, q, k, v, ld, lse, Dscratch, \
                                                                            T, NH, NKV, scale, scale_log2, cq, sq, kc, ks)
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
