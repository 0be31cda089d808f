/* attention_wgmma_forward.cu: causal flash attention forward on Hopper's warpgroup instructions
 * (`--attention wgmma`; fast/attention_wgmma.cuh; docs/design/kernels.md, "Attention on wgmma
 * (`--attention wgmma`)"). attention_mma_forward's contract and lse, so --attention mma's
 * backward consumes it.
 *
 * A block owns AW_BQ = 128 consecutive queries of one head (grid: cdiv(T, 128) x B·NH, the
 * longest causal rows first):
 *
 *   warps 0-7   two consumer warpgroups, 64 query rows each (one m64 wgmma row tile)
 *   warp 8      the producer: one thread TMA-loads the block's Q once, then key tile j's K and V
 *               (AW_BK = 128 keys) into stage j % AW_STAGES of a ring guarded by full/empty
 *               mbarriers (full: the producer's expect_tx, completed by the bytes; empty: one
 *               arrival per consumer warpgroup once its products stopped reading the stage)
 *
 * The producer is one warp after the consumer warpgroups, not a fourth warpgroup: 288 threads a
 * block leave 224 registers a thread (S's 64 and O's up to 64 fp32 accumulators a thread).
 *
 * Per key tile a consumer warpgroup computes S = Q·Kᵀ (wgmma SS, 64 x 128, Q and K both K-major:
 * rows of hd dims), masks it on the diagonal tile only (the last one: AW_BQ = AW_BK, so tiles
 * below it precede every row), runs the online softmax in registers (the running max of the raw
 * scores, the scale folded into one FFMA before ex2.approx as in attention_mma_forward), turns P
 * into bf16 A fragments straight from S's accumulator layout (fast/wgmma.cuh: A's k-step kk is
 * accumulators 8kk .. 8kk+7, two to a register) and accumulates O += P·V (wgmma RS, V N-major:
 * its rows are keys = the k dimension). Rows past T (and past the batch's T: the next batch's rows
 * or TMA's zero fill) are computed and never stored; their keys sit above every real row's
 * diagonal and the mask removes them.
 *
 * Shared memory (dynamic, from a 1024-byte aligned base): Q [2 consumer x 64 rows][hd], then each
 * stage's K [AW_BK][hd] and V [AW_BK][hd]. A tile of R rows is hd/64 column blocks of R rows of 128
 * bytes (one TMA box of 64 columns each), 128-byte swizzled: the K-major canonical layout with
 * SBO 1024 for Q and K (a k16 step +32 bytes, the next column block R·128 bytes on), and the
 * N-major one for V (LBO R·128 to the next 64 dims, SBO 1024 to the next 8 keys, a k16 step +16
 * rows).
 *
 * Deterministic: every sum in a fixed order (the tensor core's, the quad's xor shuffles, the key
 * tiles in order); no atomics.
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

#define AW_BQ 128                        /* queries a block: 64 per consumer warpgroup */
#define AW_BK 128                        /* keys a tile (= AW_BQ: one diagonal tile a block) */
#define AW_STAGES 2                      /* K/V stages of the ring */
#define AW_THREADS (2 * 128 + 32)        /* two consumer warpgroups, one producer warp */
#define AW_ROW 128                       /* bytes of a 64-column swizzled row */
#define AW_BLOCK(R) ((R) * AW_ROW)       /* bytes of one 64-column block of an R-row tile */

template <int HD> struct AwDims {
    static_assert(HD == 64 || HD == 128, "wgmma attention: hd 64 or 128");
    static constexpr uint32_t Q_BYTES = AW_BQ * HD * 2;  /* Q [AW_BQ][HD] */
    static constexpr uint32_t KV_BYTES = AW_BK * HD * 2; /* K or V [AW_BK][HD] */
    static constexpr uint32_t STAGE = 2 * KV_BYTES;
    static constexpr size_t SMEM = Q_BYTES + AW_STAGES * STAGE + 1024; /* + the alignment slack */
};

/* q_map, k_map, v_map: [B·T rows, NH·HD or NKV·HD columns] with the views' row strides, boxes of
 * 128 rows x 64 columns, 128-byte swizzle. grid (cdiv(T, AW_BQ), B·NH), block AW_THREADS. */
template <int HD>
__global__ void __launch_bounds__(AW_THREADS, 1)
    attention_wgmma_forward_kernel(const __grid_constant__ TmaMap q_map, const __grid_constant__ TmaMap k_map,
                                   const __grid_constant__ TmaMap v_map, bf16 *out, float *lse, int T, int NH,
                                   int NKV, float scale, float scale_log2) {
    using D = AwDims<HD>;
    constexpr int CB = HD / 64; /* 64-column blocks a row */
    __shared__ uint64_t q_full, full[AW_STAGES], empty[AW_STAGES];
    DYNAMIC_SHARED(aw_dyn);
    unsigned char *const qs = aw_dyn + ((1024u - wgmma_smem_window(aw_dyn) % 1024u) % 1024u); /* Q, then the stages */
    const int qblock = gridDim.x - 1 - blockIdx.x; /* the longest causal rows are scheduled first */
    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);
    const int q0 = qblock * AW_BQ;
    const int ntiles = qblock + 1; /* keys 0 .. q0 + 127: tiles 0 .. qblock, the last the diagonal */
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbarrier_init(&q_full, 1);
        for (int s = 0; s < AW_STAGES; s++) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 2);
        }
    }
    __syncthreads();

    if (wg == 2) { /* the producer warp: one thread issues every load */
        if (threadIdx.x % 32) return;
        const int row0 = b * T; /* the batch's first row of the [B·T] maps */
        mbarrier_arrive_expect_tx(&q_full, D::Q_BYTES);
        for (int c = 0; c < CB; c++) tma_load_2d(qs + c * AW_BLOCK(AW_BQ), &q_map, h * HD + 64 * c, row0 + q0, &q_full);
        for (int j = 0; j < ntiles; j++) {
            const int s = j % AW_STAGES;
            mbarrier_wait_parity(&empty[s], ((j / AW_STAGES) & 1) ^ 1); /* round 0 passes at once */
            unsigned char *ks = qs + D::Q_BYTES + (size_t)s * D::STAGE, *vs = ks + D::KV_BYTES;
            mbarrier_arrive_expect_tx(&full[s], D::STAGE);
            for (int c = 0; c < CB; c++) {
                tma_load_2d(ks + c * AW_BLOCK(AW_BK), &k_map, kh * HD + 64 * c, row0 + j * AW_BK, &full[s]);
                tma_load_2d(vs + c * AW_BLOCK(AW_BK), &v_map, kh * HD + 64 * c, row0 + j * AW_BK, &full[s]);
            }
        }
        return;
    }

    /* consumer warpgroup wg: rows q0 + 64wg .. +63; thread (w, g, t) holds rows lo = 16w + g and
     * hi = lo + 8 of them (wgmma's D fragment) */
    const int tid = threadIdx.x % 128, w = tid / 32, g = (tid % 32) >> 2, t = tid % 4;
    const int row_lo = q0 + 64 * wg + 16 * w + g, row_hi = row_lo + 8; /* query positions */
    float o[HD / 2]; /* [HD/2] O's accumulators: row lo or hi by (i >> 1) & 1, dim 8(i >> 2) + 2t + (i & 1) */
#pragma unroll
    for (int i = 0; i < HD / 2; i++) o[i] = 0.0f;
    float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f; /* l: this thread's columns only */
    /* descriptors' address fields count 16 bytes: a k16 step is +2 (32 bytes) in a K-major row, the
     * next 64-dim block +R·8; for V a k16 step is 16 rows, +128 */
    const uint64_t dq = wgmma_desc(qs + wg * 64 * AW_ROW, 16, 8 * AW_ROW, WGMMA_SWIZZLE_128B);
    mbarrier_wait_parity(&q_full, 0);

    for (int j = 0; j < ntiles; j++) {
        const int s = j % AW_STAGES;
        mbarrier_wait_parity(&full[s], (j / AW_STAGES) & 1);
        unsigned char *ks = qs + D::Q_BYTES + (size_t)s * D::STAGE, *vs = ks + D::KV_BYTES;
        const uint64_t dk = wgmma_desc(ks, 16, 8 * AW_ROW, WGMMA_SWIZZLE_128B);
        const uint64_t dv = wgmma_desc(vs, AW_BLOCK(AW_BK), 8 * AW_ROW, WGMMA_SWIZZLE_128B);

        /* S = Q·Kᵀ over HD/16 k16 steps: [64 rows][AW_BK keys], i < AW_BK/2 as O's */
        float sc[AW_BK / 2];
#pragma unroll
        for (int i = 0; i < AW_BK / 2; i++) sc[i] = 0.0f;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            wgmma_bf16_ss<AW_BK, 0, 0>(sc, dq + (kk >> 2) * (AW_BLOCK(AW_BQ) / 16) + 2 * (kk & 3),
                                       dk + (kk >> 2) * (AW_BLOCK(AW_BK) / 16) + 2 * (kk & 3), kk != 0);
        wgmma_commit();
        wgmma_wait<0>();

        /* the causal mask (the diagonal tile only), the rows' maxima of the raw scores */
        float tmax_lo = -INFINITY, tmax_hi = -INFINITY;
        if (j == ntiles - 1) {
#pragma unroll
            for (int i = 0; i < AW_BK / 2; i++)
                if (j * AW_BK + 8 * (i >> 2) + 2 * t + (i & 1) > ((i >> 1) & 1 ? row_hi : row_lo)) sc[i] = -INFINITY;
        }
#pragma unroll
        for (int i = 0; i < AW_BK / 2; i += 4) {
            tmax_lo = fmaxf(tmax_lo, fmaxf(sc[i], sc[i + 1]));
            tmax_hi = fmaxf(tmax_hi, fmaxf(sc[i + 2], sc[i + 3]));
        }
        /* the quad (threads 4g .. 4g+3 of a warp) shares the rows: xor 1 then 2 */
        tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, 1));
        tmax_lo = fmaxf(tmax_lo, __shfl_xor_sync(0xffffffffu, tmax_lo, 2));
        tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, 1));
        tmax_hi = fmaxf(tmax_hi, __shfl_xor_sync(0xffffffffu, tmax_hi, 2));
        /* key 0 (tile 0) is visible to every row: m is finite from the first tile on, where
         * m = −inf gives corr = 2^−inf = 0 */
        const float mn_lo = fmaxf(m_lo, tmax_lo), mn_hi = fmaxf(m_hi, tmax_hi);
        const float corr_lo = ex2_approx_ftz((m_lo - mn_lo) * scale_log2);
        const float corr_hi = ex2_approx_ftz((m_hi - mn_hi) * scale_log2);
        m_lo = mn_lo, m_hi = mn_hi;
        const float ms_lo = mn_lo * scale_log2, ms_hi = mn_hi * scale_log2;
        l_lo *= corr_lo, l_hi *= corr_hi;
#pragma unroll
        for (int i = 0; i < HD / 2; i++) o[i] *= (i >> 1) & 1 ? corr_hi : corr_lo;
#pragma unroll
        for (int i = 0; i < AW_BK / 2; i += 4) { /* a masked score: 2^−inf = 0 */
            sc[i] = ex2_approx_ftz(fmaf(sc[i], scale_log2, -ms_lo));
            sc[i + 1] = ex2_approx_ftz(fmaf(sc[i + 1], scale_log2, -ms_lo));
            sc[i + 2] = ex2_approx_ftz(fmaf(sc[i + 2], scale_log2, -ms_hi));
            sc[i + 3] = ex2_approx_ftz(fmaf(sc[i + 3], scale_log2, -ms_hi));
            l_lo += sc[i] + sc[i + 1], l_hi += sc[i + 2] + sc[i + 3];
        }

        /* O += P·V: k16 step kk = keys 16kk .. 16kk+15, whose A fragment is S's accumulators
         * 8kk .. 8kk+7 (a[r] = rows lo, hi, lo, hi; keys 2t, 2t, 8 + 2t, 8 + 2t, and + 1) */
        uint32_t pa[AW_BK / 16][4];
#pragma unroll
        for (int kk = 0; kk < AW_BK / 16; kk++)
#pragma unroll
            for (int r = 0; r < 4; r++) pa[kk][r] = pack_bf16x2(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
        wgmma_fence(); /* O was rescaled and P written in registers */
#pragma unroll
        for (int kk = 0; kk < AW_BK / 16; kk++) wgmma_bf16_rs<HD, 1>(o, pa[kk], dv + 128 * kk, 1);
        wgmma_commit();
        wgmma_wait<0>(); /* the products read the stage: free it */
        if (tid == 0) mbarrier_arrive(&empty[s]);
    }

    if (q0 + 64 * wg + 16 * w >= T) return; /* warp-uniform (the shuffles below take the whole warp): no real row */
    /* the row sums over the quad, in a fixed order */
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
    const int qC = NH * HD;
    const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;
    bf16 *olo = out + ((size_t)b * T + row_lo) * qC + h * HD + 2 * t; /* row lo, dims 8n + 2t, +1 */
    bf16 *ohi = out + ((size_t)b * T + row_hi) * qC + h * HD + 2 * t;
#pragma unroll
    for (int i = 0; i < HD / 2; i += 4) {
        if (row_lo < T) {
            olo[2 * i] = __float2bfloat16(o[i] * inv_lo);
            olo[2 * i + 1] = __float2bfloat16(o[i + 1] * inv_lo);
        }
        if (row_hi < T) {
            ohi[2 * i] = __float2bfloat16(o[i + 2] * inv_hi);
            ohi[2 * i + 1] = __float2bfloat16(o[i + 3] * inv_hi);
        }
    }
    /* the natural log-sum-exp of the scaled scores, as attention_mma_forward stores it */
    float *lrow = lse + ((size_t)b * NH + h) * T;
    if (t == 0 && row_lo < T) lrow[row_lo] = m_lo * scale + logf(l_lo);
    if (t == 0 && row_hi < T) lrow[row_hi] = m_hi * scale + logf(l_hi);
}

int attention_wgmma_runs(const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int hd) {
    return (hd == 64 || hd == 128) && ((uintptr_t)q | (uintptr_t)k | (uintptr_t)v) % 16 == 0 &&
           (ld.q | ld.k | ld.v) % 8 == 0;
}

template <int HD>
static int aw_launch(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B, int T,
                     int NH, int NKV) {
    TmaMap qm, km, vm;
    char err[256];
    const uint64_t rows = (uint64_t)B * T;
    if (tma_map_2d_bf16(&qm, q, rows, (uint64_t)NH * HD, (uint64_t)ld.q * 2, AW_BQ, 64, TMA_SWIZZLE_128B, err,
                        sizeof err) ||
        tma_map_2d_bf16(&km, k, rows, (uint64_t)NKV * HD, (uint64_t)ld.k * 2, AW_BK, 64, TMA_SWIZZLE_128B, err,
                        sizeof err) ||
        tma_map_2d_bf16(&vm, v, rows, (uint64_t)NKV * HD, (uint64_t)ld.v * 2, AW_BK, 64, TMA_SWIZZLE_128B, err,
                        sizeof err))
        return vrl_error("fast: wgmma attention's tensor map: %s", err);
    const float scale = 1.0f / sqrtf((float)HD);
    const float scale_log2 = scale * 1.4426950408889634f; /* log2(e): exp(x) = 2^(x·log2(e)) */
    const size_t smem = AwDims<HD>::SMEM;
    const auto attention_wgmma = attention_wgmma_forward_kernel<HD>; /* one name: a macro argument takes no commas */
    CUDA_CHECK(cudaFuncSetAttribute(attention_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid(cdiv(T, AW_BQ), B * NH);
    LAUNCH(attention_wgmma, grid, AW_THREADS, smem, ops_stream)(qm, km, vm, out, lse, T, NH, NKV, scale, scale_log2);
    LAUNCH_CHECK();
    return 0;
}

int attention_wgmma_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B,
                            int T, int NH, int NKV, int hd) {
    if (!attention_wgmma_runs(q, k, v, ld, hd)) /* hd 8, 16, 32 or an unaligned view: the mma kernel (q not written) */
        return attention_mma_forward(out, lse, const_cast<bf16 *>(q), k, v, ld, B, T, NH, NKV, hd, NULL);
    if (hd == 64) return aw_launch<64>(out, lse, q, k, v, ld, B, T, NH, NKV);
    return aw_launch<128>(out, lse, q, k, v, ld, B, T, NH, NKV);
}

#else /* VRL_CUDA_CPU_FP32: bf16 is an fp32 wrapper here, two of them do not pack into a register */

int attention_wgmma_runs(const bf16 *, const bf16 *, const bf16 *, AttnLd, int) { return 0; }
int attention_wgmma_forward(bf16 *, float *, const bf16 *, const bf16 *, const bf16 *, AttnLd, int, int, int, int,
                            int) {
    return vrl_error("fast: --attention wgmma needs packed bf16 fragments, which the fp32-storage build "
                     "(VRL_CUDA_CPU_FP32) does not have");
}

#endif

FAST_NS_END
