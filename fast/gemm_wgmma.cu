/* gemm_wgmma.cu: the wgmma GEMM and its epilogues (fast/gemm_wgmma.cuh; docs/design/kernels.md,
 * "The wgmma GEMM").
 *
 * A persistent block (one an SM) computes BM x BN tiles (128 x 256) of out = A · Bᵀ, with
 * A = inp [M,K] and B = weight [N,K] (or A · B with B [K,N], BT), one tile after another:
 *
 *   warpgroup 0   the producer: one thread waits for a free stage, then TMA-loads A's
 *                 BM x 64 and B's BN x 64 tiles of the next K step into it (128-byte swizzle),
 *                 running on into the block's next tile while the consumers finish this one
 *   warpgroups 1, 2  consumers: each owns 64 rows of the tile, waits for a full stage and
 *                 issues four wgmma.m64nBNk16 on it (one per 16 of the 64 k), keeping the
 *                 previous stage's group in flight (wait_group 1) and freeing that stage; then
 *                 the tile's epilogue from its registers
 *
 * Two mbarriers per stage: full[s] (the producer's expect_tx; the TMA bytes complete it) and
 * empty[s] (one arrival per consumer warpgroup). STAGES stages overlap loads with products.
 *
 * Shared memory, from a 1024-byte aligned base (the 128-byte swizzle's pattern repeats every
 * 8 rows of 128 bytes): stage s = A [BM][64] bf16, then B [BN][64] bf16, each row 128 bytes,
 * its 16-byte chunks permuted by TMA's swizzle, which is the K-major 128-byte-swizzle canonical
 * layout wgmma's descriptor names with SBO 1024 (8 rows) and LBO unused; the k-th 16 of the 64
 * columns start 32·k bytes in (docs/design/cuda-on-cpu.md "wgmma on the CPU").
 *
 * Accumulators (wgmma's D fragment, fast/wgmma.cuh): thread (w, g, t) of a consumer warpgroup
 * holds acc[i], i < BN/2, at row 16w + g + 8·((i >> 1) & 1), column 8·(i >> 2) + 2t + (i & 1).
 *
 * nvcc-arch: sm_90a (wgmma and the TMA tensor copy; fast/fast.cmake and test_ptxas_resources.sh read this) */
#include <math.h>

#include <initializer_list>

#include "fast/attention.cuh" /* rope_rotate */
#include "fast/gemm_wgmma.cuh"
#include "fast/mbarrier.cuh"
#include "fast/ops.cuh" /* swiglu_value, ops_stream */
#include "fast/tma.cuh"
#include "fast/wgmma.cuh"

FAST_NS_BEGIN

#define GW_BM 128      /* rows a block: 64 per consumer warpgroup */
#define GW_BK 64       /* k a stage: one 128-byte swizzled row of bf16 */
#define GW_STAGES 4
#define GW_THREADS 384 /* producer warpgroup + 2 consumer warpgroups */
#define GW_ROW_BYTES (GW_BK * 2)

enum { EPI_STORE = 0, EPI_SWIGLU = 1, EPI_SWIGLU_BWD = 2, EPI_ROPE = 3 };

/* EPI_ROPE's tables and layout: columns [0, cols) hold heads of hd (hd >= 16, 256 a multiple of
 * it, so a tile holds whole heads and a pair (j, j + hd/2) sits in one thread: acc i and i + hd/4);
 * row r is position r % T.  cos_t, sin_t [T, hd/2] fp32 */
struct GwRope {
    const float *cos_t, *sin_t;
    int T, hd, cols;
};

/* dynamic shared memory of a BN-wide tile: the stages and the alignment slack */
static size_t gw_smem_bytes(int BN) { return (size_t)GW_STAGES * (GW_BM + BN) * GW_ROW_BYTES + 1024; }

/* Stores of one row pair (c, c+1) of the tile, masked at the matrix edges; residual added in fp32
 * before the one rounding (cuBLASLt's beta = 1). out [.,ld] */
static __device__ __forceinline__ void gw_store2(bf16 *out, size_t ld, const bf16 *res, int row, int col, int M, int N,
                                                 float v0, float v1) {
    if (row >= M) return;
    const size_t o = (size_t)row * ld + col;
    if (res) {
        if (col < N) v0 += __bfloat162float(res[o]);
        if (col + 1 < N) v1 += __bfloat162float(res[o + 1]);
    }
    if (col < N) out[o] = __float2bfloat16(v0);
    if (col + 1 < N) out[o + 1] = __float2bfloat16(v1);
}

/* The tile's epilogue from one consumer thread's accumulators (rows r0 .. r0 + 63 of its
 * warpgroup, columns from n0; the fragment layout in the file's comment). */
template <int BN, int EPI>
static __device__ __forceinline__ void gw_epilogue(const float *acc, bf16 *out, int ld_out, bf16 *out2,
                                                   const bf16 *res, int r0, int n0, int M, int N, int tid,
                                                   const GwRope &rope) {
    const int w = tid / 32, g = (tid % 32) >> 2, t = tid % 4;
    const int row0 = r0 + 16 * w + g;
    if (EPI == EPI_ROPE) { /* RoPE on the rounded q and k columns, rope_kernel's fp32 ops; the rest stored */
        const int h2 = rope.hd / 2;
#pragma unroll
        for (int i = 0; i < BN / 2; i++) {
            const int row = row0 + 8 * ((i >> 1) & 1), n = n0 + 8 * (i >> 2) + 2 * t + (i & 1), j = n % rope.hd;
            if (row >= M || n >= N) continue;
            const size_t o = (size_t)row * ld_out + n;
            if (n >= rope.cols) {
                out[o] = __float2bfloat16(acc[i]);
            } else if (j < h2) { /* the pair's second half: h2 columns on, acc index i + h2/2 */
                const int pos = row % rope.T, i2 = i + h2 / 2;
                float y1, y2;
                rope_rotate(__bfloat162float(__float2bfloat16(acc[i])), __bfloat162float(__float2bfloat16(acc[i2])),
                            rope.cos_t[pos * h2 + j], rope.sin_t[pos * h2 + j], y1, y2);
                out[o] = __float2bfloat16(y1);
                out[o + h2] = __float2bfloat16(y2);
            }
        }
    } else if (EPI == EPI_STORE) {
#pragma unroll
        for (int i = 0; i < BN / 2; i += 2)
            gw_store2(out, ld_out, res, row0 + 8 * ((i >> 1) & 1), n0 + 8 * (i >> 2) + 2 * t, M, N, acc[i], acc[i + 1]);
    } else if (EPI == EPI_SWIGLU_BWD) { /* column f of dh: d gate at f, d up at N + f */
#pragma unroll
        for (int i = 0; i < BN / 2; i++) {
            const int row = row0 + 8 * ((i >> 1) & 1), f = n0 + 8 * (i >> 2) + 2 * t + (i & 1);
            if (row >= M || f >= N) continue;
            const size_t o = (size_t)row * 2 * N + f;
            const float dh = __bfloat162float(__float2bfloat16(acc[i])); /* cuBLASLt's bf16 dh, then the pass */
            swiglu_grad(dh, __bfloat162float(res[o]), __bfloat162float(res[o + N]), out[o], out[o + N]);
        }
    } else { /* gate column c at acc[i], its up at acc[i + BN/4] (column c + BN/2 of the tile) */
#pragma unroll
        for (int i = 0; i < BN / 4; i++) {
            const int row = row0 + 8 * ((i >> 1) & 1), f = n0 + 8 * (i >> 2) + 2 * t + (i & 1);
            if (row >= M || f >= N) continue;
            const bf16 gb = __float2bfloat16(acc[i]), ub = __float2bfloat16(acc[i + BN / 4]);
            out[(size_t)row * 2 * N + f] = gb;
            out[(size_t)row * 2 * N + N + f] = ub;
            out2[(size_t)row * N + f] = swiglu_value(__bfloat162float(gb), __bfloat162float(ub));
        }
    }
}

/* A [M,K] through a_map (box 64 x BM). B through b_map, either
 *   BT 0 (K-major, nn.Linear's weight [N,K]: out = A·Bᵀ): boxes of 64 k x BN rows, or 64 x BN/2
 *        twice for EPI_SWIGLU (gate rows f0.., up rows N + f0..);
 *   BT 1 (N-major, a weight [K,N] read as is: out = A·B, the input gradient dX = dY·W): BN/64
 *        boxes of 64 n x 64 k rows, each a 64-column block wgmma steps through by LBO.
 * EPI_STORE:      out [M,ld_out] = product (+ res [M,ld_out]), columns < N.
 * EPI_SWIGLU:     out [M,2N] = gate|up, out2 [M,N] = swiglu_value(gate, up) (N = F).
 * EPI_SWIGLU_BWD: dh = the product rounded to bf16 (N = F), out [M,2N] = (d gate | d up) =
 *                 swiglu_grad(dh, gate, up) with gate|up read from res [M,2N]. */
template <int BN, int EPI, int BT>
__global__ void __launch_bounds__(GW_THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ TmaMap a_map, const __grid_constant__ TmaMap b_map, bf16 *out,
                      int ld_out, bf16 *out2, const bf16 *res, int M, int N, int K, GwRope rope) {
    static_assert(BN % 16 == 0 && BN <= 256 && (!BT || BN % 64 == 0) && (!BT || EPI != EPI_SWIGLU), "wgmma's N");
    __shared__ uint64_t full[GW_STAGES], empty[GW_STAGES];
    DYNAMIC_SHARED(gw_dyn);
    unsigned char *base = gw_dyn + ((1024u - wgmma_smem_window(gw_dyn) % 1024u) % 1024u);
    constexpr int BNC = EPI == EPI_SWIGLU ? BN / 2 : BN; /* output columns a tile (SwiGLU: gate columns) */
    const int n_tiles = (N + BNC - 1) / BNC, tiles = (M + GW_BM - 1) / GW_BM * n_tiles;
    const int KT = (K + GW_BK - 1) / GW_BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const uint32_t stage_bytes = (GW_BM + BN) * GW_ROW_BYTES;

    if (threadIdx.x == 0) {
        for (int s = 0; s < GW_STAGES; s++) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 2);
        }
    }
    __syncthreads();

    /* Persistent: the block takes tiles blockIdx.x, + gridDim.x, ...; n varies fastest, so the
     * blocks resident together share A's rows and stream the weight from L2. `it` counts the
     * block's k steps over all its tiles: the ring's stage (it % STAGES) and phase run on
     * across tiles, and the producer fills the next tile's stages while the consumers finish
     * this one (its epilogue). */
    if (wg == 0) { /* producer: one thread issues every load */
        if (tid != 0) return;
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const int m0 = tile / n_tiles * GW_BM, n0 = tile % n_tiles * BNC;
            for (int kt = 0; kt < KT; kt++, it++) {
                const int s = it % GW_STAGES;
                mbarrier_wait_parity(&empty[s], ((it / GW_STAGES) & 1) ^ 1); /* round 0 passes at once */
                unsigned char *a_tile = base + (size_t)s * stage_bytes, *b_tile = a_tile + GW_BM * GW_ROW_BYTES;
                mbarrier_arrive_expect_tx(&full[s], stage_bytes);
                tma_load_2d(a_tile, &a_map, kt * GW_BK, m0, &full[s]);
                if (BT) { /* 64-column blocks of the [K,N] weight: rows k, columns n */
                    for (int j = 0; j < BN / 64; j++)
                        tma_load_2d(b_tile + j * 64 * GW_ROW_BYTES, &b_map, n0 + 64 * j, kt * GW_BK, &full[s]);
                } else if (EPI == EPI_SWIGLU) {
                    tma_load_2d(b_tile, &b_map, kt * GW_BK, n0, &full[s]);
                    tma_load_2d(b_tile + (BN / 2) * GW_ROW_BYTES, &b_map, kt * GW_BK, N + n0, &full[s]);
                } else {
                    tma_load_2d(b_tile, &b_map, kt * GW_BK, n0, &full[s]);
                }
            }
        }
        return;
    }

    /* consumers: warpgroup c = wg - 1 owns tile rows 64c .. 64c + 63 */
    float acc[BN / 2]; /* [BN/2] this thread's share of the 64 x BN accumulator */
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.0f;
    const uint32_t a_off = (uint32_t)(wg - 1) * 64 * GW_ROW_BYTES;
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int m0 = tile / n_tiles * GW_BM, n0 = tile % n_tiles * BNC;
        for (int kt = 0; kt < KT; kt++, it++) {
            const int s = it % GW_STAGES;
            mbarrier_wait_parity(&full[s], (it / GW_STAGES) & 1);
            unsigned char *a_tile = base + (size_t)s * stage_bytes, *b_tile = a_tile + GW_BM * GW_ROW_BYTES;
            const uint64_t da = wgmma_desc(a_tile + a_off, 16, 8 * GW_ROW_BYTES, WGMMA_SWIZZLE_128B);
            /* N-major B: LBO steps to the next 64-column block, SBO to the next 8 k rows */
            const uint64_t db = BT ? wgmma_desc(b_tile, 64 * GW_ROW_BYTES, 8 * GW_ROW_BYTES, WGMMA_SWIZZLE_128B)
                                   : wgmma_desc(b_tile, 16, 8 * GW_ROW_BYTES, WGMMA_SWIZZLE_128B);
            /* a k16 step (the descriptor's address field counts 16 bytes): K-major +32 bytes along
             * the row, N-major +16 rows of 128 bytes */
            const uint64_t b_step = BT ? 16 * GW_ROW_BYTES / 16 : 2;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < GW_BK / 16; k++)
                wgmma_bf16_ss<BN, 0, BT>(acc, da + 2 * k, db + b_step * k, kt > 0 || k > 0);
            wgmma_commit();
            wgmma_wait<1>(); /* the previous k step's products have landed: free its stage */
            if (kt > 0 && tid == 0) mbarrier_arrive(&empty[(it - 1) % GW_STAGES]);
        }
        wgmma_wait<0>();
        if (tid == 0) mbarrier_arrive(&empty[(it - 1) % GW_STAGES]); /* the tile's last stage */
        gw_epilogue<BN, EPI>(acc, out, ld_out, out2, res, m0 + (wg - 1) * 64, n0, M, N, tid, rope);
    }
}


int gemm_wgmma_device(void) {
#if VRL_CUDA_CPU
    return 1;
#else
    static int cached = -1;
    if (cached < 0) {
        int dev = 0, major = 0, minor = 0;
        cached = cudaGetDevice(&dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
                 minor == 0;
    }
    return cached;
#endif
}

int gemm_wgmma_fits(int C, std::initializer_list<const void *> ptrs) {
    if (C % 8) return 0;
    for (const void *p : ptrs)
        if (p && (uintptr_t)p % 16) return 0;
    return 1;
}

/* Blocks a launch may have at most: the SMs (a persistent kernel, one block an SM), or fewer
 * (gemm_wgmma_max_blocks, tests: several tiles a block). */
static int gw_max_blocks = 0;
void gemm_wgmma_max_blocks(int n) { gw_max_blocks = n; }

static int gw_sms(void) {
#if VRL_CUDA_CPU
    return 132; /* an H100 SXM's: the CPU layer runs the blocks one after another anyway */
#else
    static int sms = 0;
    int dev = 0;
    if (!sms && (cudaGetDevice(&dev) != cudaSuccess ||
                 cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1))
        sms = 132;
    return sms;
#endif
}

template <int BN, int EPI, int BT>
static int gw_launch(const TmaMap &a, const TmaMap &b, bf16 *out, int ld_out, bf16 *out2, const bf16 *res, int M,
                     int N, int K, GwRope rope = GwRope{NULL, NULL, 1, 16, 0}) {
    const size_t smem = gw_smem_bytes(BN);
    const int bnc = EPI == EPI_SWIGLU ? BN / 2 : BN;
    const long tiles = (long)cdiv(M, GW_BM) * cdiv(N, bnc);
    int blocks = gw_sms();
    if (gw_max_blocks > 0 && gw_max_blocks < blocks) blocks = gw_max_blocks;
    if (tiles < blocks) blocks = (int)tiles;
    const auto gemm_wgmma = gemm_wgmma_kernel<BN, EPI, BT>; /* one name: a macro argument takes no commas */
    CUDA_CHECK(cudaFuncSetAttribute(gemm_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    LAUNCH(gemm_wgmma, blocks, GW_THREADS, smem, ops_stream)(a, b, out, ld_out, out2, res, M, N, K, rope);
    LAUNCH_CHECK();
    return 0;
}

/* The 128-byte-swizzled maps of A [M,K] (boxes of BM rows) and of the weight w [w_rows, w_cols]
 * (boxes of box_rows x 64: k-columns for a K-major weight, n-columns for an N-major one). */
static int gw_maps(TmaMap *a, TmaMap *b, const bf16 *inp, int M, int K, const bf16 *w, int w_rows, int w_cols,
                   int box_rows) {
    char err[256];
    if (tma_map_2d_bf16(a, inp, (uint64_t)M, (uint64_t)K, (uint64_t)K * 2, GW_BM, GW_BK, TMA_SWIZZLE_128B, err, sizeof err) ||
        tma_map_2d_bf16(b, w, (uint64_t)w_rows, (uint64_t)w_cols, (uint64_t)w_cols * 2, box_rows, 64, TMA_SWIZZLE_128B,
                        err, sizeof err))
        return vrl_error("fast: wgmma GEMM's tensor map: %s", err);
    return 0;
}

#define GW_BN 256 /* 2 x m64n256k16 a k16 step: the widest wgmma, the least shared-memory traffic a FLOP */

int gemm_wgmma_forward(bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *residual, int N, int C, int OC) {
    if (!gemm_wgmma_fits(C, {out, inp, weight, residual}))
        return vrl_error("fast: wgmma GEMM: C %d not a multiple of 8 or an operand not 16-byte aligned", C);
    TmaMap a, b;
    if (gw_maps(&a, &b, inp, N, C, weight, OC, C, GW_BN)) return -1;
    return gw_launch<GW_BN, EPI_STORE, 0>(a, b, out, OC, NULL, residual, N, OC, C);
}

int gemm_wgmma_forward_rope(bf16 *out, const bf16 *inp, const bf16 *weight, int N, int C, int OC, int rope_cols,
                            const float *cos_t, const float *sin_t, int T, int hd) {
    if (!gemm_wgmma_fits(C, {out, inp, weight}))
        return vrl_error("fast: wgmma GEMM: C %d not a multiple of 8 or an operand not 16-byte aligned", C);
    if (hd < 16 || GW_BN % hd || rope_cols % hd || rope_cols > OC || T < 1)
        return vrl_error("fast: wgmma GEMM's RoPE epilogue: head dim %d (16 .. %d, dividing it), %d rotated columns "
                         "of %d", hd, GW_BN, rope_cols, OC);
    TmaMap a, b;
    if (gw_maps(&a, &b, inp, N, C, weight, OC, C, GW_BN)) return -1;
    return gw_launch<GW_BN, EPI_ROPE, 0>(a, b, out, OC, NULL, NULL, N, OC, C, GwRope{cos_t, sin_t, T, hd, rope_cols});
}

int gemm_wgmma_gate_up_swiglu(bf16 *gu, bf16 *out, const bf16 *inp, const bf16 *weight, int N, int C, int F) {
    if (!gemm_wgmma_fits(C, {gu, out, inp, weight}))
        return vrl_error("fast: wgmma GEMM: C %d not a multiple of 8 or an operand not 16-byte aligned", C);
    TmaMap a, b;
    if (gw_maps(&a, &b, inp, N, C, weight, 2 * F, C, GW_BN / 2)) return -1;
    return gw_launch<GW_BN, EPI_SWIGLU, 0>(a, b, gu, 2 * F, out, NULL, N, F, C);
}

int gemm_wgmma_down_dx_swiglu(bf16 *dgu, const bf16 *dout, const bf16 *weight, const bf16 *gu, int N, int C, int F) {
    if (!gemm_wgmma_fits(C, {dgu, dout, weight, gu}) || F % 8)
        return vrl_error("fast: wgmma GEMM: C %d or F %d not a multiple of 8, or an operand not 16-byte aligned", C, F);
    TmaMap a, b;
    if (gw_maps(&a, &b, dout, N, C, weight, C, F, GW_BK)) return -1;
    return gw_launch<GW_BN, EPI_SWIGLU_BWD, 1>(a, b, dgu, 2 * F, NULL, gu, N, F, C);
}

FAST_NS_END
