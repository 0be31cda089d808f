/* attention_wgmma_backward.cu: the causal flash attention's backward on Hopper's warpgroup
 * instructions (`--attention wgmma`; fast/attention_wgmma.cuh; docs/design/kernels.md, "Attention
 * on wgmma (`--attention wgmma`)"). attention_mma_backward's contract, structure and arithmetic
 * (deterministic, no atomics, seven products per (query, key) pair: S and dP in both kernels,
 * P = 2^(s·scale·log2 e − lse·log2 e), dS's scale applied once at the end, RoPE's transpose on dQ
 * and dK in fp32 before the bf16 store) on the forward's machinery (attention_wgmma_forward.cu):
 * TMA boxes of 64 rows x 64 columns, 128-byte swizzled, a two-stage full/empty mbarrier ring,
 * 288 threads = two consumer warpgroups + one producer warp (dK/dV at hd 128: a producer warpgroup,
 * 384 threads, below).
 *
 *   D      = Σ_d dO⊙O per (row, head): attention_backward_D_kernel (fast/attention.cu), first;
 *   dK/dV  a block owns WB_OWN = 128 keys of one kv head (64 per consumer warpgroup, one m64 row
 *          tile), TMA-loaded once with their V rows; the producer streams 64-query tiles of Q and
 *          dO for every query head of the group in order, each from the block's first key on (the
 *          earlier queries see none of its keys). Per tile a warpgroup computes Sᵀ = K·Qᵀ and
 *          dPᵀ = V·dOᵀ (wgmma SS, both K-major: [64 keys][64 queries]), Pᵀ (the queries' lse and D
 *          from global memory, two a lane, shuffled; lse +inf past T: P = 0), the mask on the tiles that meet the
 *          block's keys only, dSᵀ = Pᵀ∘(dPᵀ − D), then dV += Pᵀ·dO and dK += dSᵀ·Q (wgmma RS: Pᵀ
 *          and dSᵀ as bf16 A fragments straight from the accumulators, dO and Q N-major: their
 *          rows are the queries = the k dimension). A tile wholly before a warpgroup's keys (the
 *          first of each head for warpgroup 1) is skipped, its stage still released.
 *   dQ     a block owns 128 queries of one head (Q and dO loaded once), the producer streams
 *          64-key tiles of K and V up to its last query: S = Q·Kᵀ, dP = dO·Vᵀ (SS), P, dS,
 *          dQ += dS·K (RS, K N-major).
 *
 * Registers: ptxas allots a thread of 288 (one block an SM) 168. dK/dV at hd 64 holds dK, dV, Sᵀ
 * and dPᵀ (32 fp32 each) and fits with the queries' lse and D fetched as two values a lane and
 * shuffled (168, no spill), hence 64-row streamed tiles (128 would need 64 more); at hd 128 dK and
 * dV alone are 128, so that kernel's producer is a whole warpgroup (384 threads) that gives its
 * registers to the consumers by setmaxnreg (24 and 240; WB_DKDV_THREADS). dQ: 148 (hd 64) and 161
 * (hd 128).
 * Shared memory (dynamic, 1024-aligned): the block's two own tensors [128][HD] each, then each
 * stage's two streamed tiles [64][HD]: 64 KiB at hd 64, 128 KiB at hd 128. A tile of R rows is
 * HD/64 column blocks of R rows of 128 bytes, as in the forward: K-major descriptors SBO 1024 (a
 * k16 step +32 bytes, the next column block R·128 bytes on), N-major LBO R·128, SBO 1024 (a k16
 * step +16 rows). An own 128-row tile arrives as two 64-row boxes per column block (the swizzle's
 * pattern repeats every 8 rows, so the halves land as one 128-row box would put them).
 *
 * Rows past T (the next batch's rows or TMA's zero fill) are computed and never stored: a query
 * past T has P = 0 through its +inf lse; a key past T follows every real query and is masked (dQ)
 * or its dK/dV row is not written.
 *
 * Deterministic: every sum in a fixed order (the tensor core's, the query heads and tiles in
 * order); no atomics.
 *
 * nvcc-arch: sm_90a (wgmma and the TMA tensor copy; fast/fast.cmake and test_ptxas_resources.sh read this) */
#include <math.h>

#include "fast/attention_wgmma.cuh"
#include "fast/mbarrier.cuh"
#include "fast/mma.cuh" /* ex2_approx_ftz */
#include "fast/ops.cuh" /* ops_stream */
#include "fast/tma.cuh"
#include "fast/wgmma.cuh"

FAST_NS_BEGIN

#if !VRL_CUDA_CPU_FP32

/* fast/attention.cu's D = Σ_d dO⊙O per (row, head), the first pass of every backward */
__global__ void attention_backward_D_kernel(float *D, const bf16 *dout, const bf16 *out, int B, int T, int NH, int hd);

#define WB_OWN 128                /* rows a block owns: keys (dK/dV) or queries (dQ), 64 per warpgroup */
#define WB_TILE 64                /* rows a streamed tile: queries (dK/dV) or keys (dQ) */
#define WB_STAGES 2               /* stages of the ring */
#define WB_THREADS (2 * 128 + 32) /* two consumer warpgroups, one producer warp */
#define WB_ROW 128                /* bytes of a 64-column swizzled row */
#define WB_BLOCK(R) ((R) * WB_ROW) /* bytes of one 64-column block of an R-row tile */
#define WB_LOG2E 1.4426950408889634f
/* The dK/dV kernel's block: 288 threads at hd 64; at hd 128 a consumer thread holds dK and dV (128
 * fp32) beside Sᵀ and dPᵀ (64), over the 168 registers ptxas allots a thread of 288 (it spilled
 * ~540 bytes), so there the producer is a whole warpgroup (384 threads, 168 each at launch) that
 * hands its registers to the consumers: setmaxnreg 24 for it, 240 for them
 * (128·24 + 256·240 = 384·168), FlashAttention-3's split. */
#define WB_DKDV_THREADS(HD) ((HD) == 128 ? 3 * 128 : WB_THREADS)
#define WB_REGS_PRODUCER 24
#define WB_REGS_CONSUMER 240
static_assert(128 * WB_REGS_PRODUCER + 256 * WB_REGS_CONSUMER == 384 * 168, "the register file's split");

/* setmaxnreg.{dec,inc}.sync.aligned.u32 N: the warpgroup's threads give up or take registers (all
 * of a warpgroup's warps execute it). The CPU layer has no register file: nothing to do there. */
template <int N> static __device__ __forceinline__ void wb_setmaxnreg_dec(void) {
#if !VRL_CUDA_CPU
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N) : "memory");
#endif
}
template <int N> static __device__ __forceinline__ void wb_setmaxnreg_inc(void) {
#if !VRL_CUDA_CPU
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N) : "memory");
#endif
}

template <int HD> struct WbDims {
    static_assert(HD == 64 || HD == 128, "wgmma attention backward: hd 64 or 128");
    static constexpr uint32_t OWN_BYTES = WB_OWN * HD * 2;   /* one own tensor [WB_OWN][HD] */
    static constexpr uint32_t TILE_BYTES = WB_TILE * HD * 2; /* one streamed tensor [WB_TILE][HD] */
    static constexpr uint32_t STAGE = 2 * TILE_BYTES;
    static constexpr size_t SMEM = 2 * OWN_BYTES + WB_STAGES * STAGE + 1024; /* + the alignment slack */
};

/* Rows r0 .. r0+127 of a map's column range [col, col + HD) into an own tile [WB_OWN][HD]: per
 * column block, two 64-row boxes. */
template <int HD>
static __device__ __forceinline__ void wb_load_own(unsigned char *dst, const TmaMap *map, int col, int row,
                                                   uint64_t *bar) {
    for (int c = 0; c < HD / 64; c++)
        for (int half = 0; half < 2; half++)
            tma_load_2d(dst + c * WB_BLOCK(WB_OWN) + half * WB_BLOCK(WB_TILE), map, col + 64 * c,
                        row + WB_TILE * half, bar);
}
/* Rows r0 .. r0+63 into a streamed tile [WB_TILE][HD]. */
template <int HD>
static __device__ __forceinline__ void wb_load_tile(unsigned char *dst, const TmaMap *map, int col, int row,
                                                    uint64_t *bar) {
    for (int c = 0; c < HD / 64; c++) tma_load_2d(dst + c * WB_BLOCK(WB_TILE), map, col + 64 * c, row, bar);
}

/* a = A·Bᵀ and b = C·Eᵀ over HD (wgmma SS, all K-major): A, C the warpgroup's 64 own rows (descriptors at
 * its rows of a [WB_OWN][HD] tile), B, E a streamed [WB_TILE][HD] tile: a, b [64][WB_TILE] as accumulators */
template <int HD>
static __device__ __forceinline__ void wb_two_products(float *a, float *b, uint64_t da, uint64_t db, uint64_t dc,
                                                       uint64_t de) {
#pragma unroll
    for (int i = 0; i < WB_TILE / 2; i++) a[i] = b[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        const uint32_t own = (kk >> 2) * (WB_BLOCK(WB_OWN) / 16) + 2 * (kk & 3);
        const uint32_t str = (kk >> 2) * (WB_BLOCK(WB_TILE) / 16) + 2 * (kk & 3);
        wgmma_bf16_ss<WB_TILE, 0, 0>(a, da + own, db + str, kk != 0);
        wgmma_bf16_ss<WB_TILE, 0, 0>(b, dc + own, de + str, kk != 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
}

/* RoPE's transpose on a thread's accumulators of a [64][HD] row tile (rows lo and hi, positions
 * pos_lo, pos_hi, clamped below T): dim d = 8(i >> 2) + 2t + (i & 1) of accumulator i pairs with
 * d + HD/2, accumulator i + HD/4 of the same thread; (x1, x2) -> (x1 c + x2 s, x2 c − x1 s). */
template <int HD>
static __device__ __forceinline__ void wb_rope_transpose(float *acc, const float *cos_t, const float *sin_t,
                                                         int pos_lo, int pos_hi, int t) {
#pragma unroll
    for (int i = 0; i < HD / 4; i++) {
        const int d = 8 * (i >> 2) + 2 * t + (i & 1);
        const size_t o = (size_t)((i >> 1) & 1 ? pos_hi : pos_lo) * (HD / 2) + d;
        rope_rotate(acc[i], acc[i + HD / 4], cos_t[o], -sin_t[o], acc[i], acc[i + HD / 4]);
    }
}

/* grid (cdiv(T, WB_OWN), B·NKV), block WB_DKDV_THREADS(HD). q_map, do_map [B·T, NH·HD] and k_map, v_map
 * [B·T, NKV·HD] with the views' row strides, boxes of 64 rows x 64 columns, 128-byte swizzle. */
/* The block's barriers, by thread 0, before any thread uses them: own_full (the block's own rows,
 * one arrival and their TMA bytes) and the ring's full[s] (one arrival + bytes) and empty[s] (one
 * arrival per consumer warpgroup) */
static __device__ __forceinline__ void wb_init_barriers(uint64_t *own_full, uint64_t *full, uint64_t *empty) {
    if (threadIdx.x == 0) {
        mbarrier_init(own_full, 1);
        for (int s = 0; s < WB_STAGES; s++) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 2);
        }
    }
    __syncthreads();
}

template <int HD>
__global__ void __launch_bounds__(WB_DKDV_THREADS(HD), 1)
    attention_wgmma_backward_dkdv_kernel(const __grid_constant__ TmaMap q_map, const __grid_constant__ TmaMap k_map,
                                         const __grid_constant__ TmaMap v_map, const __grid_constant__ TmaMap do_map,
                                         bf16 *dk, AttnDv dv, AttnLd ld, const float *lse, const float *D, int T,
                                         int NH, int NKV, float scale, float scale_log2, const float *rope_cos,
                                         const float *rope_sin) {
    using Dm = WbDims<HD>;
    __shared__ uint64_t own_full, full[WB_STAGES], empty[WB_STAGES];
    DYNAMIC_SHARED(wb_dyn);
    unsigned char *const ks = wb_dyn + ((1024u - wgmma_smem_window(wb_dyn) % 1024u) % 1024u); /* K, V, then the stages */
    unsigned char *const vs = ks + Dm::OWN_BYTES, *const stages = vs + Dm::OWN_BYTES;
    const int b = blockIdx.y / NKV, kh = blockIdx.y % NKV, group = NH / NKV;
    const int k0 = blockIdx.x * WB_OWN; /* block 0 has the most query tiles: it is scheduled first */
    const int nq = (T - k0 + WB_TILE - 1) / WB_TILE; /* query tiles a head: k0 .. T − 1 */
    const int ntiles = group * nq;
    const int wg = threadIdx.x / 128;

    wb_init_barriers(&own_full, full, empty);

    if (wg == 2) { /* the producer warp (warpgroup at hd 128): one thread issues every load */
        if constexpr (WB_DKDV_THREADS(HD) == 3 * 128) wb_setmaxnreg_dec<WB_REGS_PRODUCER>();
        if (threadIdx.x % (WB_DKDV_THREADS(HD) - 256)) return;
        const int row0 = b * T; /* the batch's first row of the [B·T] maps */
        mbarrier_arrive_expect_tx(&own_full, 2 * Dm::OWN_BYTES);
        wb_load_own<HD>(ks, &k_map, kh * HD, row0 + k0, &own_full);
        wb_load_own<HD>(vs, &v_map, kh * HD, row0 + k0, &own_full);
        for (int n = 0; n < ntiles; n++) {
            const int s = n % WB_STAGES, h = kh * group + n / nq, i0 = k0 + WB_TILE * (n % nq);
            mbarrier_wait_parity(&empty[s], ((n / WB_STAGES) & 1) ^ 1); /* round 0 passes at once */
            unsigned char *qs = stages + (size_t)s * Dm::STAGE, *dos = qs + Dm::TILE_BYTES;
            mbarrier_arrive_expect_tx(&full[s], Dm::STAGE);
            wb_load_tile<HD>(qs, &q_map, h * HD, row0 + i0, &full[s]);
            wb_load_tile<HD>(dos, &do_map, h * HD, row0 + i0, &full[s]);
        }
        return;
    }

    /* consumer warpgroup wg: keys kw .. kw + 63; thread (w, g, t) holds keys lo = kw + 16w + g and
     * hi = lo + 8 (wgmma's D fragment rows) */
    const int tid = threadIdx.x % 128, w = tid / 32, g = (tid % 32) >> 2, t = tid % 4;
    if constexpr (WB_DKDV_THREADS(HD) == 3 * 128) wb_setmaxnreg_inc<WB_REGS_CONSUMER>();
    const int kw = k0 + 64 * wg, key_lo = kw + 16 * w + g, key_hi = key_lo + 8;
    float dka[HD / 2], dva[HD / 2]; /* [64 keys][HD]: row lo or hi by (i >> 1) & 1, dim 8(i >> 2) + 2t + (i & 1) */
#pragma unroll
    for (int i = 0; i < HD / 2; i++) dka[i] = dva[i] = 0.0f;
    const uint64_t dk_own = wgmma_desc(ks + wg * 64 * WB_ROW, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B);
    const uint64_t dv_own = wgmma_desc(vs + wg * 64 * WB_ROW, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B);
    mbarrier_wait_parity(&own_full, 0);

    for (int n = 0; n < ntiles; n++) {
        const int s = n % WB_STAGES, h = kh * group + n / nq, i0 = k0 + WB_TILE * (n % nq);
        mbarrier_wait_parity(&full[s], (n / WB_STAGES) & 1);
        if (i0 + WB_TILE > kw) { /* warpgroup-uniform: some query of the tile sees some key of ours */
            unsigned char *qs = stages + (size_t)s * Dm::STAGE, *dos = qs + Dm::TILE_BYTES;
            /* Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ: [64 keys][64 queries], accumulator i: key lo/hi, query i0 + 8(i >> 2) + 2t + (i & 1) */
            float st[WB_TILE / 2], dpt[WB_TILE / 2];
            wb_two_products<HD>(st, dpt, dk_own, wgmma_desc(qs, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B), dv_own,
                                wgmma_desc(dos, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B));
            /* the tile's lse·log2(e) (+inf past T: P = 0) and D, lane l holding queries i0 + l and
             * i0 + 32 + l, handed to the lanes that need them by shuffles; loaded after the
             * products, whose accumulators fill the registers: 4 registers where
             * 32 loaded values a thread spilled (plain stores by the producer would need the
             * mbarrier's release, which the CPU layer's checker does not model) */
            float l2r[2], ddr[2];
            {
                const float *lrow = lse + ((size_t)b * NH + h) * T, *drow = D + ((size_t)b * NH + h) * T;
                const int lane = tid % 32;
    #pragma unroll
                for (int u = 0; u < 2; u++) {
                    const int qi = i0 + 32 * u + lane;
                    l2r[u] = qi < T ? lrow[qi] * WB_LOG2E : INFINITY;
                    ddr[u] = qi < T ? drow[qi] : 0.0f;
                }
            }
            /* Pᵀ and dSᵀ/scale, packed as they are made into the A fragments of dV += Pᵀ·dO and
             * dK += dSᵀ·Q: k16 step kk = queries 16kk .. 16kk+15 is accumulators 8kk .. 8kk+7, so
             * the 8 queries of column group c (accumulators 4c .. 4c+3: keys lo, lo, hi, hi) are
             * registers 2(c & 1) (lo) and 2(c & 1) + 1 (hi) of step c >> 1. The mask only where
             * the tile meets our keys. */
            const bool mask = i0 < kw + 64;
            uint32_t pa[WB_TILE / 16][4], sa[WB_TILE / 16][4];
#pragma unroll
            for (int c = 0; c < WB_TILE / 8; c++) {
#pragma unroll
                for (int e = 0; e < 2; e++) { /* query i0 + 8c + 2t + e: accumulators 4c + e (key lo), 4c + 2 + e (hi) */
                    const int qi = i0 + 8 * c + 2 * t + e; /* held by lane (qi − i0) % 32, register c >> 2 */
                    const float l2 = __shfl_sync(0xffffffffu, l2r[c >> 2], 8 * (c & 3) + 2 * t + e);
                    const float dd = __shfl_sync(0xffffffffu, ddr[c >> 2], 8 * (c & 3) + 2 * t + e);
#pragma unroll
                    for (int r = 0; r < 2; r++) {
                        const int i = 4 * c + 2 * r + e;
                        float p = ex2_approx_ftz(fmaf(st[i], scale_log2, -l2));
                        if (mask && qi < (r ? key_hi : key_lo)) p = 0.0f;
                        st[i] = p;
                        dpt[i] = p * (dpt[i] - dd); /* dSᵀ / scale: dK's scale is applied once, at the end */
                    }
                }
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    pa[c >> 1][2 * (c & 1) + r] = pack_bf16x2(st[4 * c + 2 * r], st[4 * c + 2 * r + 1]);
                    sa[c >> 1][2 * (c & 1) + r] = pack_bf16x2(dpt[4 * c + 2 * r], dpt[4 * c + 2 * r + 1]);
                }
            }
            const uint64_t ddo = wgmma_desc(dos, WB_BLOCK(WB_TILE), 8 * WB_ROW, WGMMA_SWIZZLE_128B);
            const uint64_t dq = wgmma_desc(qs, WB_BLOCK(WB_TILE), 8 * WB_ROW, WGMMA_SWIZZLE_128B);
            wgmma_fence(); /* the A fragments were written in registers */
#pragma unroll
            for (int kk = 0; kk < WB_TILE / 16; kk++) {
                wgmma_bf16_rs<HD, 1>(dva, pa[kk], ddo + 128 * kk, 1);
                wgmma_bf16_rs<HD, 1>(dka, sa[kk], dq + 128 * kk, 1);
            }
            wgmma_commit();
            wgmma_wait<0>(); /* the products read the stage: free it */
        }
        if (tid == 0) mbarrier_arrive(&empty[s]);
    }

    /* dK leaves as RoPE's transpose applied (rope_cos non-null: the model skips rope_backward) */
    if (rope_cos) wb_rope_transpose<HD>(dka, rope_cos, rope_sin, min(key_lo, T - 1), min(key_hi, T - 1), t);
    const int kvC = NKV * HD;
#pragma unroll
    for (int i = 0; i < HD / 2; i++) {
        const int j = (i >> 1) & 1 ? key_hi : key_lo, d = 8 * (i >> 2) + 2 * t + (i & 1);
        if (j >= T) continue;
        const size_t row = (size_t)b * T + j, o = row * kvC + kh * HD + d; /* fp32 dv: [N, kvC] */
        dk[row * ld.k + kh * HD + d] = __float2bfloat16(dka[i] * scale);
        if (dv.f32) dv.f32[o] = dv.add ? dv.f32[o] + dv.scale * dva[i] : dv.scale * dva[i];
        if (dv.b16) dv.b16[row * ld.v + kh * HD + d] = __float2bfloat16(dva[i]);
    }
}

/* grid (cdiv(T, WB_OWN), B·NH), block WB_THREADS; maps as the dK/dV kernel's. */
template <int HD>
__global__ void __launch_bounds__(WB_THREADS, 1)
    attention_wgmma_backward_dq_kernel(const __grid_constant__ TmaMap q_map, const __grid_constant__ TmaMap k_map,
                                       const __grid_constant__ TmaMap v_map, const __grid_constant__ TmaMap do_map,
                                       bf16 *dq, AttnLd ld, const float *lse, const float *D, int T, int NH, int NKV,
                                       float scale, float scale_log2, const float *rope_cos, const float *rope_sin) {
    using Dm = WbDims<HD>;
    __shared__ uint64_t own_full, full[WB_STAGES], empty[WB_STAGES];
    DYNAMIC_SHARED(wb_dyn);
    unsigned char *const qs = wb_dyn + ((1024u - wgmma_smem_window(wb_dyn) % 1024u) % 1024u); /* Q, dO, then the stages */
    unsigned char *const dos = qs + Dm::OWN_BYTES, *const stages = dos + Dm::OWN_BYTES;
    const int qblock = gridDim.x - 1 - blockIdx.x; /* the longest causal rows are scheduled first */
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int q0 = qblock * WB_OWN;
    const int ntiles = (min(q0 + WB_OWN, T) - 1) / WB_TILE + 1; /* key tiles up to the block's last query */
    const int wg = threadIdx.x / 128;

    wb_init_barriers(&own_full, full, empty);

    if (wg == 2) { /* the producer warp */
        if (threadIdx.x % 32) return;
        const int row0 = b * T;
        mbarrier_arrive_expect_tx(&own_full, 2 * Dm::OWN_BYTES);
        wb_load_own<HD>(qs, &q_map, h * HD, row0 + q0, &own_full);
        wb_load_own<HD>(dos, &do_map, h * HD, row0 + q0, &own_full);
        for (int j = 0; j < ntiles; j++) {
            const int s = j % WB_STAGES;
            mbarrier_wait_parity(&empty[s], ((j / WB_STAGES) & 1) ^ 1);
            unsigned char *kt = stages + (size_t)s * Dm::STAGE, *vt = kt + Dm::TILE_BYTES;
            mbarrier_arrive_expect_tx(&full[s], Dm::STAGE);
            wb_load_tile<HD>(kt, &k_map, kh * HD, row0 + j * WB_TILE, &full[s]);
            wb_load_tile<HD>(vt, &v_map, kh * HD, row0 + j * WB_TILE, &full[s]);
        }
        return;
    }

    /* consumer warpgroup wg: queries qw .. qw + 63; thread (w, g, t) rows lo = qw + 16w + g, hi = lo + 8 */
    const int tid = threadIdx.x % 128, w = tid / 32, g = (tid % 32) >> 2, t = tid % 4;
    const int qw = q0 + 64 * wg, row_lo = qw + 16 * w + g, row_hi = row_lo + 8;
    const float *lrow = lse + ((size_t)b * NH + h) * T, *drow = D + ((size_t)b * NH + h) * T;
    /* lse·log2(e) (+inf past T: P = 0) and D of the thread's two rows */
    const float l2_lo = row_lo < T ? lrow[row_lo] * WB_LOG2E : INFINITY;
    const float l2_hi = row_hi < T ? lrow[row_hi] * WB_LOG2E : INFINITY;
    const float d_lo = row_lo < T ? drow[row_lo] : 0.0f, d_hi = row_hi < T ? drow[row_hi] : 0.0f;
    float dqa[HD / 2]; /* [64 queries][HD] as dK's */
#pragma unroll
    for (int i = 0; i < HD / 2; i++) dqa[i] = 0.0f;
    const uint64_t dq_own = wgmma_desc(qs + wg * 64 * WB_ROW, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B);
    const uint64_t ddo_own = wgmma_desc(dos + wg * 64 * WB_ROW, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B);
    mbarrier_wait_parity(&own_full, 0);

    for (int j = 0; j < ntiles; j++) {
        const int s = j % WB_STAGES, j0 = j * WB_TILE;
        mbarrier_wait_parity(&full[s], (j / WB_STAGES) & 1);
        if (j0 <= qw + 63) { /* warpgroup-uniform: some key of the tile precedes some query of ours */
            unsigned char *kt = stages + (size_t)s * Dm::STAGE, *vt = kt + Dm::TILE_BYTES;
            /* S = Q·Kᵀ, dP = dO·Vᵀ: [64 queries][64 keys], accumulator i: row lo/hi, key j0 + 8(i >> 2) + 2t + (i & 1) */
            float sc[WB_TILE / 2], dp[WB_TILE / 2];
            wb_two_products<HD>(sc, dp, dq_own, wgmma_desc(kt, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B), ddo_own,
                                wgmma_desc(vt, 16, 8 * WB_ROW, WGMMA_SWIZZLE_128B));
            const bool mask = j0 + WB_TILE - 1 > qw; /* the tile meets our diagonal */
            /* dS / scale (dQ's scale at the end), packed as made into the A fragments of dQ += dS·K
             * (column group c: registers 2(c & 1) (row lo), 2(c & 1) + 1 (hi) of k16 step c >> 1) */
            uint32_t sa[WB_TILE / 16][4];
#pragma unroll
            for (int c = 0; c < WB_TILE / 8; c++) {
#pragma unroll
                for (int i = 4 * c; i < 4 * c + 4; i++) {
                    const bool hi = (i >> 1) & 1;
                    float p = ex2_approx_ftz(fmaf(sc[i], scale_log2, -(hi ? l2_hi : l2_lo)));
                    if (mask && j0 + 8 * c + 2 * t + (i & 1) > (hi ? row_hi : row_lo)) p = 0.0f;
                    dp[i] = p * (dp[i] - (hi ? d_hi : d_lo));
                }
#pragma unroll
                for (int r = 0; r < 2; r++) sa[c >> 1][2 * (c & 1) + r] = pack_bf16x2(dp[4 * c + 2 * r], dp[4 * c + 2 * r + 1]);
            }
            const uint64_t dkn = wgmma_desc(kt, WB_BLOCK(WB_TILE), 8 * WB_ROW, WGMMA_SWIZZLE_128B);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < WB_TILE / 16; kk++) wgmma_bf16_rs<HD, 1>(dqa, sa[kk], dkn + 128 * kk, 1);
            wgmma_commit();
            wgmma_wait<0>(); /* the product read the stage: free it */
        }
        if (tid == 0) mbarrier_arrive(&empty[s]);
    }

    if (rope_cos) wb_rope_transpose<HD>(dqa, rope_cos, rope_sin, min(row_lo, T - 1), min(row_hi, T - 1), t);
#pragma unroll
    for (int i = 0; i < HD / 2; i++) {
        const int r = (i >> 1) & 1 ? row_hi : row_lo, d = 8 * (i >> 2) + 2 * t + (i & 1);
        if (r < T) dq[((size_t)b * T + r) * ld.q + h * HD + d] = __float2bfloat16(dqa[i] * scale);
    }
}

int attention_wgmma_backward_runs(const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int hd,
                                  const AttnRope *rope) {
    return attention_wgmma_runs(q, k, v, ld, hd) && (uintptr_t)dout % 16 == 0 && !(rope && rope->k);
}

template <int HD>
static int wb_launch(bf16 *dq, bf16 *dk, AttnDv dv, const float *Dv, const bf16 *dout, const bf16 *q, const bf16 *k,
                     const bf16 *v, AttnLd ld, const float *lse, int B, int T, int NH, int NKV, const float *cq,
                     const float *sq, const float *ck, const float *sk) {
    TmaMap qm, km, vm, dom;
    char err[256];
    const uint64_t rows = (uint64_t)B * T;
    if (tma_map_2d_bf16(&qm, q, rows, (uint64_t)NH * HD, (uint64_t)ld.q * 2, WB_TILE, 64, TMA_SWIZZLE_128B, err,
                        sizeof err) ||
        tma_map_2d_bf16(&km, k, rows, (uint64_t)NKV * HD, (uint64_t)ld.k * 2, WB_TILE, 64, TMA_SWIZZLE_128B, err,
                        sizeof err) ||
        tma_map_2d_bf16(&vm, v, rows, (uint64_t)NKV * HD, (uint64_t)ld.v * 2, WB_TILE, 64, TMA_SWIZZLE_128B, err,
                        sizeof err) ||
        tma_map_2d_bf16(&dom, dout, rows, (uint64_t)NH * HD, (uint64_t)NH * HD * 2, WB_TILE, 64, TMA_SWIZZLE_128B,
                        err, sizeof err))
        return vrl_error("fast: wgmma attention backward's tensor map: %s", err);
    const float scale = 1.0f / sqrtf((float)HD);
    const float scale_log2 = scale * WB_LOG2E;
    const size_t smem = WbDims<HD>::SMEM;
    /* one name each: a macro argument takes no commas (and the CPU layer's messages name the kernel by it) */
    const auto attention_wgmma_bwd_dq = attention_wgmma_backward_dq_kernel<HD>;
    const auto attention_wgmma_bwd_dkdv = attention_wgmma_backward_dkdv_kernel<HD>;
    CUDA_CHECK(cudaFuncSetAttribute(attention_wgmma_bwd_dkdv, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 gkv(cdiv(T, WB_OWN), B * NKV);
    LAUNCH(attention_wgmma_bwd_dkdv, gkv, WB_DKDV_THREADS(HD), smem, ops_stream)(qm, km, vm, dom, dk, dv, ld, lse, Dv,
                                                                                 T, NH, NKV, scale, scale_log2, ck, sk);
    LAUNCH_CHECK();
    CUDA_CHECK(cudaFuncSetAttribute(attention_wgmma_bwd_dq, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 gq(cdiv(T, WB_OWN), B * NH);
    LAUNCH(attention_wgmma_bwd_dq, gq, WB_THREADS, smem, ops_stream)(qm, km, vm, dom, dq, ld, lse, Dv, T, NH, NKV,
                                                                     scale, scale_log2, cq, sq);
    LAUNCH_CHECK();
    return 0;
}

int attention_wgmma_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                             const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T,
                             int NH, int NKV, int hd, const AttnRope *rope) {
    if (!attention_wgmma_backward_runs(dout, q, k, v, ld, hd, rope)) /* the mma kernels, other bits */
        return attention_mma_backward(dq, dk, dv, Dscratch, dout, out, q, k, v, ld, lse, B, T, NH, NKV, hd, rope);
    if (!dv.f32 && !dv.b16) return vrl_error("fast: attention_wgmma_backward needs a dv output (fp32 or bf16)");
    const bool rq = rope && rope->dq, rk = rope && rope->dk;
    if ((rq || rk) && (!rope->cos_t || !rope->sin_t))
        return vrl_error("fast: attention_wgmma_backward's RoPE tables are missing");
    const float *cq = rq ? rope->cos_t : NULL, *sq = rq ? rope->sin_t : NULL; /* NULL: no rotation */
    const float *ck = rk ? rope->cos_t : NULL, *sk = rk ? rope->sin_t : NULL;
    const size_t rows = (size_t)B * T * NH;
    LAUNCH(attention_backward_D_kernel, cdiv(rows, 256), 256, 0, ops_stream)(Dscratch, dout, out, B, T, NH, hd);
    LAUNCH_CHECK();
    if (hd == 64) return wb_launch<64>(dq, dk, dv, Dscratch, dout, q, k, v, ld, lse, B, T, NH, NKV, cq, sq, ck, sk);
    return wb_launch<128>(dq, dk, dv, Dscratch, dout, q, k, v, ld, lse, B, T, NH, NKV, cq, sq, ck, sk);
}

#else /* VRL_CUDA_CPU_FP32: no packed bf16 fragments */

int attention_wgmma_backward_runs(const bf16 *, const bf16 *, const bf16 *, const bf16 *, AttnLd, int,
                                  const AttnRope *) {
    return 0;
}
int attention_wgmma_backward(bf16 *, bf16 *, AttnDv, float *, const bf16 *, const bf16 *, const bf16 *, const bf16 *,
                             const bf16 *, AttnLd, const float *, int, int, int, int, int, const AttnRope *) {
    return vrl_error("fast: --attention wgmma needs packed bf16 fragments, which the fp32-storage build "
                     "(VRL_CUDA_CPU_FP32) does not have");
}

#endif

FAST_NS_END
