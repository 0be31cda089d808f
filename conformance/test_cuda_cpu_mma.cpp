/* test_cuda_cpu_mma.cpp: the tensor-core instructions of fast/mma.cuh on the CPU layer
 * (fast/cuda_cpu/tensor_core.h, docs/design/cuda-on-cpu.md "Tensor-core instructions on the CPU").
 *
 * Story: the layouts are pinned from two independent sides. mma.sync is fed fragments that
 * each lane gathers element by element with the PTX ISA's row/column formulas (written
 * here in the ISA's own terms) and must give the double-precision product of the bf16
 * values within an fp32 accumulation bound; ldmatrix, in all six forms, must hand each
 * lane exactly the bits the ISA's layout names, from rows whose addresses the lanes supply
 * in a scrambled order. Then the way the attention kernels will use them: tiles staged in
 * shared memory with padded rows, A by ldmatrix.x4, B by ldmatrix.x2 ([n][k] storage) or
 * .x4.trans ([k][n] storage), two k-steps chained through the accumulator, two warps, in
 * all three thread orders with the same bits. Each kernel has deliberately mis-laid-out
 * twins (two A registers swapped, a fragment row or a row address off by 8, B's registers
 * swapped) that must FAIL the same comparison. The precision model: the exact sum rounded
 * once (a case where an fp32 running sum would lose the small terms). The errors: a short
 * warp, a lane that exited, lanes at different calls, and a misaligned or non-shared
 * ldmatrix row, each naming the kernel. In the check build (test_cuda_cpu_mma_check) the
 * rows ldmatrix reads are loads the shared-memory race checker sees.
 * The other instructions of fast/mma.cuh (fast/cuda_cpu/ptx_ops.h): ex2.approx.ftz within
 * 2 ulp of 2^x in double, subnormals flushed; cp.async's copies land only at the
 * wait_group that covers their group (wait_group 1 leaves the newest group in flight), with
 * zero fill past the source size: a thread that reads before its wait sees the old bytes,
 * and in the check build that read, and another warp's read after the wait without a
 * barrier, are races naming the kernel; a misaligned or non-shared destination is an error. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"
#include "fast/mma.cuh"
#include "conformance/cuda_cpu_test_values.h"

#define LAUNCH CUDA_CPU_LAUNCH

#if VRL_CUDA_CPU_CHECK
/* the race test makes a hazard on purpose: report it, do not fail the worker's exit */
static void report_only(void) { setenv("VRL_CUDA_CPU_CHECK", "report", 1); }
TestSuite(cuda_cpu_mma, .init = report_only);
#endif

static const char *const orders[] = {"forward", "reverse", "random:9"};

/* ------------------------------------------------------------------ values and the reference */

static std::vector<float> random_f32(size_t n, uint64_t seed) {
    std::vector<uint16_t> b = random_bf16(n, seed);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = bf16_float(b[i]) * 1.375f;
    return v;
}

/* D = A·B + C in double from the bf16 values: a[M][K] row-major, b(k, n) = b[k·bk + n·bn],
 * c[M][N]; exact[M][N] and mag[M][N] = Σ|a·b| + |c| (the scale of the rounding error). */
static void reference(int M, int N, int K, const uint16_t *a, const uint16_t *b, int bk, int bn, const float *c,
                      std::vector<double> &exact, std::vector<double> &mag) {
    exact.assign((size_t)M * N, 0.0), mag.assign((size_t)M * N, 0.0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = c[i * N + j], m = fabs((double)c[i * N + j]);
            for (int k = 0; k < K; k++) {
                const double p = (double)bf16_float(a[i * K + k]) * bf16_float(b[k * bk + j * bn]);
                s += p, m += fabs(p);
            }
            exact[(size_t)i * N + j] = s, mag[(size_t)i * N + j] = m;
        }
}

/* How many of d[M·N] miss the exact product by more than an fp32 accumulation allows: a sum
 * of `terms` terms in fp32, in any order, each addition rounded or truncated (the GPU's
 * internal rounding is not documented), errs by at most one ulp of a partial sum per
 * addition, 2^-23 of Σ|terms| each: |d − exact| <= terms · 2^-23 · Σ|terms|. */
static int outside_bound(const float *d, const std::vector<double> &exact, const std::vector<double> &mag, int terms) {
    int bad = 0;
    for (size_t i = 0; i < exact.size(); i++)
        if (!(fabs((double)d[i] - exact[i]) <= terms * 0x1p-23 * mag[i])) bad++;
    return bad;
}

/* After a launch that computed d[M][N] = a[M][K]·b + c: no launch error, and the number of
 * values outside the bound (K products and c: K + 1 terms). */
static int misses(const char *what, int M, int N, int K, const uint16_t *a, const uint16_t *b, int bk, int bn,
                  const float *c, const float *d) {
    cr_assert_str_eq(launch_message(), "", "%s", what);
    std::vector<double> exact, mag;
    reference(M, N, K, a, b, bk, bn, c, exact, mag);
    return outside_bound(d, exact, mag, K + 1);
}

/* ------------------------------------------------------------------ mma with ISA-formula fragments */

/* How a test kernel lays out its fragments: right, or one of the mistakes a test must catch. */
enum Layout { ISA = 0, SWAP_A1_A2, A_ROW_OFF_BY_8, SWAP_B0_B1, D_ROW_OFF_BY_8 };

/* One warp: d[16][8] = a[16][16]·b[16][8] + c[16][8] (b row-major [k][n]), every fragment
 * element gathered by the ISA's formulas for mma.m16n8k16 (9.7.14.5.8), written as there. */
template <int LAYOUT> __global__ void mma_by_formula_kernel(float *d, const uint16_t *a, const uint16_t *b, const float *c) {
    const int lane = (int)threadIdx.x % 32;
    const int groupID = lane >> 2, threadID_in_group = lane % 4;
    uint16_t ah[8], bh[4];
    for (int i = 0; i < 8; i++) {
        int row = (i < 2 || (i >= 4 && i < 6)) ? groupID : groupID + 8;
        if (LAYOUT == A_ROW_OFF_BY_8 && i == 2) row = groupID; /* a2 from the wrong row */
        const int col = threadID_in_group * 2 + (i & 1) + (i >= 4 ? 8 : 0);
        ah[i] = a[row * 16 + col];
    }
    for (int i = 0; i < 4; i++) {
        const int row = threadID_in_group * 2 + (i & 1) + (i >= 2 ? 8 : 0), col = groupID;
        bh[i] = b[row * 8 + col];
    }
    uint32_t af[4], bf[2];
    for (int r = 0; r < 4; r++) af[r] = (uint32_t)ah[2 * r] | (uint32_t)ah[2 * r + 1] << 16; /* low element first */
    for (int r = 0; r < 2; r++) bf[r] = (uint32_t)bh[2 * r] | (uint32_t)bh[2 * r + 1] << 16;
    if (LAYOUT == SWAP_A1_A2) {
        const uint32_t x = af[1];
        af[1] = af[2], af[2] = x;
    }
    if (LAYOUT == SWAP_B0_B1) {
        const uint32_t x = bf[0];
        bf[0] = bf[1], bf[1] = x;
    }
    float cf[4], df[4];
    for (int i = 0; i < 4; i++) cf[i] = c[(groupID + (i >= 2 ? 8 : 0)) * 8 + threadID_in_group * 2 + (i & 1)];
    mma_m16n8k16_bf16(df, af, bf, cf);
    for (int i = 0; i < 4; i++) {
        int row = groupID + (i >= 2 ? 8 : 0);
        if (LAYOUT == D_ROW_OFF_BY_8) row = groupID + (i >= 2 ? 0 : 8);
        d[row * 8 + threadID_in_group * 2 + (i & 1)] = df[i];
    }
}

/* Run one layout on random data; the number of D values outside the bound. */
static int run_by_formula(int layout, uint64_t seed) {
    void (*const kernels[])(float *, const uint16_t *, const uint16_t *, const float *) = {
        mma_by_formula_kernel<ISA>, mma_by_formula_kernel<SWAP_A1_A2>, mma_by_formula_kernel<A_ROW_OFF_BY_8>,
        mma_by_formula_kernel<SWAP_B0_B1>, mma_by_formula_kernel<D_ROW_OFF_BY_8>};
    const std::vector<uint16_t> a = random_bf16(256, seed), b = random_bf16(128, seed + 1);
    const std::vector<float> c = random_f32(128, seed + 2);
    std::vector<float> d(128, NAN);
    LAUNCH(kernels[layout], 1, 32, 0, 0)(d.data(), a.data(), b.data(), c.data());
    return misses("by formula", 16, 8, 16, a.data(), b.data(), 8, 1, c.data(), d.data());
}

Test(cuda_cpu_mma, mma_follows_the_isa_fragment_layout) {
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[k]), 0);
        for (uint64_t seed = 1; seed <= 3; seed++)
            cr_expect_eq(run_by_formula(ISA, seed), 0, "order %s, seed %d: D within the fp32 bound", orders[k], (int)seed);
    }
    cuda_cpu::set_thread_order("forward");
}

Test(cuda_cpu_mma, mis_laid_out_fragments_fail_the_comparison) {
    /* of the 128 values: all, the 64 of rows 8-15 (one wrong term each), all, all */
    cr_expect_gt(run_by_formula(SWAP_A1_A2, 1), 96, "a[1] and a[2] swapped");
    cr_expect_gt(run_by_formula(A_ROW_OFF_BY_8, 1), 48, "a2 read from row groupID instead of groupID + 8");
    cr_expect_gt(run_by_formula(SWAP_B0_B1, 1), 96, "b[0] and b[1] swapped");
    cr_expect_gt(run_by_formula(D_ROW_OFF_BY_8, 1), 96, "d stored with rows groupID and groupID + 8 exchanged");
}

/* The model: exact products, summed exactly, rounded once. 16 products of 2^-25 on top of
 * c = 1 give 1 + 2^-21 exactly; an fp32 running sum from c would round each 1 + 2^-25
 * back to 1 and end at 1. */
Test(cuda_cpu_mma, mma_rounds_the_exact_sum_once) {
    std::vector<uint16_t> a(256, 0), b(128, 0);
    std::vector<float> c(128, 0.0f), d(128, NAN);
    for (int k = 0; k < 16; k++) a[0 * 16 + k] = __float2bfloat16(0x1p-12f).x, b[k * 8 + 0] = __float2bfloat16(0x1p-13f).x;
    c[0] = 1.0f;
    c[9 * 8 + 5] = -3.0f; /* and one plain value elsewhere: D = C where A·B is 0 */
    LAUNCH(mma_by_formula_kernel<ISA>, 1, 32, 0, 0)(d.data(), a.data(), b.data(), c.data());
    cr_assert_str_eq(launch_message(), "");
    cr_expect_eq(d[0], 1.0f + 0x1p-21f, "D[0][0] = %a", (double)d[0]);
    cr_expect_eq(d[9 * 8 + 5], -3.0f);
    cr_expect_eq(d[1], 0.0f);
}

/* ------------------------------------------------------------------ ldmatrix bit by bit */

/* Shared slot scramble(8m + j) holds row j of matrix m, whose element col is the 16-bit id
 * m·64 + j·8 + col: the lanes name their rows out of order, so a lane whose address the
 * layer ignored, or a row handed to the wrong lanes, shows as a wrong id. */
static int scramble(int r) { return (r * 13 + 5) % 32; }

/* out[lane][variant][4]: the registers of x1, x2, x4, x1.trans, x2.trans, x4.trans */
__global__ void ldmatrix_kernel(uint32_t *out, const uint16_t *rows /* [32][8] by slot */) {
    __shared__ __align__(16) uint16_t tile[32 * 16]; /* [32 slots][16]: 8 used, 8 padding */
    const int t = (int)threadIdx.x;
    for (int c = 0; c < 16; c++) tile[t * 16 + c] = c < 8 ? rows[t * 8 + c] : 0xdead;
    __syncthreads();
    const int lane = t % 32;
    uint32_t r[6][4];
    memset(r, 0, sizeof r);
    /* x1 and x2: lanes past 8·num pass a copy of a lower lane's address, as the ISA suggests */
    ldmatrix_x1(r[0], &tile[scramble(lane % 8) * 16]);
    ldmatrix_x2(r[1], &tile[scramble(lane % 16) * 16]);
    ldmatrix_x4(r[2], &tile[scramble(lane) * 16]);
    ldmatrix_x1_trans(r[3], &tile[scramble(lane % 8) * 16]);
    ldmatrix_x2_trans(r[4], &tile[scramble(lane % 16) * 16]);
    ldmatrix_x4_trans(r[5], &tile[scramble(lane) * 16]);
    memcpy(&out[lane * 24], r, sizeof r);
}

Test(cuda_cpu_mma, ldmatrix_hands_each_lane_the_isa_fragment) {
    std::vector<uint16_t> rows(32 * 8);
    for (int m = 0; m < 4; m++)
        for (int j = 0; j < 8; j++)
            for (int col = 0; col < 8; col++) rows[scramble(8 * m + j) * 8 + col] = (uint16_t)(m * 64 + j * 8 + col);
    const int nums[6] = {1, 2, 4, 1, 2, 4};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[k]), 0);
        std::vector<uint32_t> out(32 * 24, 0xffffffffu);
        LAUNCH(ldmatrix_kernel, 1, 32, 0, 0)(out.data(), rows.data());
        cr_assert_str_eq(launch_message(), "");
        int wrong = 0;
        for (int lane = 0; lane < 32; lane++) {
            const int g = lane >> 2, t = lane % 4;
            for (int v = 0; v < 6; v++)
                for (int m = 0; m < 4; m++) {
                    const int trans = v >= 3;
                    /* the ISA: row g, cols 2t, 2t+1; .trans: rows 2t, 2t+1 of col g */
                    const uint32_t lo = trans ? m * 64 + (2 * t) * 8 + g : m * 64 + g * 8 + 2 * t;
                    const uint32_t hi = trans ? m * 64 + (2 * t + 1) * 8 + g : m * 64 + g * 8 + 2 * t + 1;
                    const uint32_t want = m < nums[v] ? (lo | hi << 16) : 0u; /* registers past num untouched */
                    const uint32_t got = out[lane * 24 + v * 4 + m];
                    if (got != want && wrong++ < 5)
                        cr_expect_eq(got, want, "order %s lane %d form %d matrix %d: 0x%08x, want 0x%08x", orders[k],
                                     lane, v, m, got, want);
                }
        }
        cr_expect_eq(wrong, 0, "order %s: %d registers differ from the ISA layout", orders[k], wrong);
    }
    cuda_cpu::set_thread_order("forward");
}

/* ------------------------------------------------------------------ the attention-style pipeline */

/* D[32][16] = A[32][32]·B[32][16] + C[32][16] by two warps (16 rows each), two n-tiles of
 * 8, two k-steps of 16 chained through the accumulator. A is row-major; B is either stored
 * [n][k] (bt[16][32], like K in S = Q·Kᵀ: ldmatrix.x2) or [k][n] (bk[32][16], like V in
 * O = P·V: ldmatrix.x4.trans). Tiles go through shared memory with padded rows (stride 40
 * and 24 b16: 80 and 48 bytes, 16-byte multiples). */
enum PipeMode { PIPE_NK = 0, PIPE_KN, PIPE_NK_SWAP_A1_A2, PIPE_KN_ROW_OFF_BY_8, PIPE_NK_B_ROWS_ROTATED };

template <int MODE> __global__ void mma_pipeline_kernel(float *d, const uint16_t *a, const uint16_t *bt, const uint16_t *bk,
                                                        const float *c) {
    __shared__ __align__(16) uint16_t sa[32 * 40];  /* [32][40]: A rows, 8 b16 padding */
    __shared__ __align__(16) uint16_t sbt[16 * 40]; /* [16][40]: B as [n][k] */
    __shared__ __align__(16) uint16_t sbk[32 * 24]; /* [32][24]: B as [k][n] */
    const int t = (int)threadIdx.x, lane = t % 32, w = t / 32;
    const bool kn = MODE == PIPE_KN || MODE == PIPE_KN_ROW_OFF_BY_8;
    /* 8-element chunks: A 32 rows x 4, bt 16 x 4, bk 32 x 2; 64 threads */
    for (int e = 0; e < 8; e++) {
        for (int q = t; q < 128; q += 64) sa[(q / 4) * 40 + (q % 4) * 8 + e] = a[(q / 4) * 32 + (q % 4) * 8 + e];
        if (kn) sbk[(t / 2) * 24 + (t % 2) * 8 + e] = bk[(t / 2) * 16 + (t % 2) * 8 + e];
        else sbt[(t / 4) * 40 + (t % 4) * 8 + e] = bt[(t / 4) * 32 + (t % 4) * 8 + e];
    }
    __syncthreads();
    const int g = lane >> 2, tq = lane % 4, m = lane >> 3, j = lane % 8;
    float acc[2][4];
    for (int nt = 0; nt < 2; nt++)
        for (int i = 0; i < 4; i++) acc[nt][i] = c[(16 * w + g + 8 * (i >> 1)) * 16 + 8 * nt + 2 * tq + (i & 1)];
    for (int kk = 0; kk < 2; kk++) {
        /* A: matrices top-left, bottom-left, top-right, bottom-right of the 16x16 block */
        uint32_t af[4];
        const int arow = MODE == PIPE_KN_ROW_OFF_BY_8 ? j : j + 8 * (m & 1);
        ldmatrix_x4(af, &sa[(16 * w + arow) * 40 + 16 * kk + 8 * (m >> 1)]);
        if (MODE == PIPE_NK_SWAP_A1_A2) {
            const uint32_t x = af[1];
            af[1] = af[2], af[2] = x;
        }
        uint32_t bf[2][2];
        if (kn) {
            /* matrices (k 0-7, n-tile 0), (k 8-15, 0), (k 0-7, 1), (k 8-15, 1), each read transposed */
            uint32_t r[4];
            ldmatrix_x4_trans(r, &sbk[(16 * kk + 8 * (m & 1) + j) * 24 + 8 * (m >> 1)]);
            bf[0][0] = r[0], bf[0][1] = r[1], bf[1][0] = r[2], bf[1][1] = r[3];
        } else {
            for (int nt = 0; nt < 2; nt++) {
                /* lanes 0-7: n rows at k 0-7, lanes 8-15: at k 8-15; 16-31 repeat them */
                const int n = MODE == PIPE_NK_B_ROWS_ROTATED ? 8 * nt + (j + 1) % 8 : 8 * nt + j;
                ldmatrix_x2(bf[nt], &sbt[n * 40 + 16 * kk + 8 * (m & 1)]);
            }
        }
        for (int nt = 0; nt < 2; nt++) mma_m16n8k16_bf16(acc[nt], af, bf[nt], acc[nt]);
    }
    for (int nt = 0; nt < 2; nt++)
        for (int i = 0; i < 4; i++) d[(16 * w + g + 8 * (i >> 1)) * 16 + 8 * nt + 2 * tq + (i & 1)] = acc[nt][i];
}

/* Run one mode on random data in thread order `order`; D in d, the count outside the bound. */
static int run_pipeline(int mode, const char *order, std::vector<float> &d) {
    const std::vector<uint16_t> a = random_bf16(32 * 32, 11), bk = random_bf16(32 * 16, 12);
    std::vector<uint16_t> bt(16 * 32);
    for (int k = 0; k < 32; k++)
        for (int n = 0; n < 16; n++) bt[n * 32 + k] = bk[k * 16 + n]; /* the same B, stored [n][k] */
    const std::vector<float> c = random_f32(32 * 16, 13);
    d.assign(32 * 16, NAN);
    void (*const kernels[])(float *, const uint16_t *, const uint16_t *, const uint16_t *, const float *) = {
        mma_pipeline_kernel<PIPE_NK>, mma_pipeline_kernel<PIPE_KN>, mma_pipeline_kernel<PIPE_NK_SWAP_A1_A2>,
        mma_pipeline_kernel<PIPE_KN_ROW_OFF_BY_8>, mma_pipeline_kernel<PIPE_NK_B_ROWS_ROTATED>};
    cr_assert_eq(cuda_cpu::set_thread_order(order), 0);
    LAUNCH(kernels[mode], 1, 64, 0, 0)(d.data(), a.data(), bt.data(), bk.data(), c.data());
    cuda_cpu::set_thread_order("forward");
    return misses("pipeline", 32, 16, 32, a.data(), bk.data(), 16, 1, c.data(), d.data());
}

Test(cuda_cpu_mma, ldmatrix_and_mma_from_shared_tiles_in_every_order) {
    for (int mode = PIPE_NK; mode <= PIPE_KN; mode++) {
        std::vector<float> first, d;
        for (int k = 0; k < 3; k++) {
            cr_expect_eq(run_pipeline(mode, orders[k], d), 0, "mode %s, order %s: D within the fp32 bound",
                         mode == PIPE_NK ? "[n][k] B" : "[k][n] B (trans)", orders[k]);
            if (k == 0) first = d;
            else cr_expect(!memcmp(first.data(), d.data(), d.size() * sizeof(float)), "order %s: the same bits", orders[k]);
        }
    }
}

Test(cuda_cpu_mma, mis_laid_out_pipelines_fail_the_comparison) {
    std::vector<float> d;
    /* of the 512 values: all (A's k-halves mixed), the 256 of rows g + 8, all (columns moved) */
    cr_expect_gt(run_pipeline(PIPE_NK_SWAP_A1_A2, "forward", d), 384, "a[1] and a[2] swapped after ldmatrix.x4");
    cr_expect_gt(run_pipeline(PIPE_KN_ROW_OFF_BY_8, "forward", d), 192, "A's lanes 8-15 and 24-31 name rows 0-7");
    cr_expect_gt(run_pipeline(PIPE_NK_B_ROWS_ROTATED, "forward", d), 384, "B's n rows rotated by one");
}

/* ------------------------------------------------------------------ errors */

/* One mma on zero fragments; d[0]. */
__device__ float mma_on_zeros(void) {
    const uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    const float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float d[4];
    mma_m16n8k16_bf16(d, a, b, c);
    return d[0];
}

__global__ void mma_short_warp_kernel(float *out) { out[threadIdx.x] = mma_on_zeros(); }

__global__ void mma_after_exit_kernel(float *out) {
    if (threadIdx.x == 3) return;
    out[threadIdx.x] = mma_on_zeros();
}

__global__ void mma_two_sites_kernel(float *out) {
    const uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    const float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float d[4];
    if (threadIdx.x < 16) mma_m16n8k16_bf16(d, a, b, c);
    else mma_m16n8k16_bf16(d, a, b, c);
    out[threadIdx.x] = d[0];
}

/* tile[0..n) := 0..n-1 by the block, then a barrier */
__device__ void stage_ids(uint16_t *tile, int n) {
    for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x) tile[i] = (uint16_t)i;
    __syncthreads();
}

__global__ void ldmatrix_two_shapes_kernel(uint32_t *out) {
    __shared__ __align__(16) uint16_t tile[8 * 8];
    stage_ids(tile, 8 * 8);
    uint32_t r[1];
    const void *row = &tile[(threadIdx.x % 8) * 8];
    threadIdx.x < 16 ? ldmatrix_x1(r, row) : ldmatrix_x1_trans(r, row); /* one call site, two shapes */
    out[threadIdx.x] = r[0];
}

__global__ void ldmatrix_misaligned_kernel(uint32_t *out) {
    __shared__ __align__(16) uint16_t tile[8 * 8];
    stage_ids(tile, 8 * 8);
    uint32_t r[1];
    const int lane = threadIdx.x % 32;
    ldmatrix_x1(r, &tile[(lane % 8) * 8 + (lane == 5 ? 1 : 0)]); /* lane 5: 2 bytes off */
    out[threadIdx.x] = r[0];
}

__global__ void ldmatrix_global_kernel(uint32_t *out, const uint16_t *global_rows) {
    uint32_t r[2];
    ldmatrix_x2(r, &global_rows[(threadIdx.x % 16) * 8]); /* not shared memory */
    out[threadIdx.x] = r[0];
}

/* The last launch's error names the kernel and says each of the phrases. */
static void expect_error(const char *kernel, const char *what, const char *also = "") {
    char m[1024];
    snprintf(m, sizeof m, "%s", launch_message());
    cr_expect(strstr(m, kernel) != NULL, "the error names %s: \"%s\"", kernel, m);
    cr_expect(strstr(m, what) != NULL, "the error says \"%s\": \"%s\"", what, m);
    cr_expect(strstr(m, also) != NULL, "the error says \"%s\": \"%s\"", also, m);
}

Test(cuda_cpu_mma, incomplete_warps_are_errors_naming_the_kernel) {
    float out[64];
    LAUNCH(mma_short_warp_kernel, 1, 16, 0, 0)(out);
    expect_error("kernel mma_short_warp_kernel", "mma.sync.m16n8k16 (bf16)", "needs all 32 lanes");
    LAUNCH(mma_short_warp_kernel, 1, 48, 0, 0)(out); /* the second warp has 16 lanes */
    expect_error("mma_short_warp_kernel", "needs all 32 lanes of its warp, but this warp has 16");
    LAUNCH(mma_after_exit_kernel, 1, 32, 0, 0)(out);
    expect_error("mma_after_exit_kernel", "lane 3: thread (3,0,0) has exited");
    LAUNCH(mma_two_sites_kernel, 1, 32, 0, 0)(out);
    expect_error("mma_two_sites_kernel", "lanes of one warp at different tensor-core calls");
    uint32_t r[32];
    LAUNCH(ldmatrix_two_shapes_kernel, 1, 32, 0, 0)(r);
    expect_error("ldmatrix_two_shapes_kernel", "lanes of one warp at different tensor-core calls", "(ldmatrix.x1.trans)");
    LAUNCH(mma_short_warp_kernel, 1, 64, 0, 0)(out); /* and the correct launch passes */
    cr_expect_str_eq(launch_message(), "");
}

Test(cuda_cpu_mma, bad_ldmatrix_rows_are_errors_naming_the_kernel) {
    uint32_t out[32];
    LAUNCH(ldmatrix_misaligned_kernel, 1, 32, 0, 0)(out);
    expect_error("kernel ldmatrix_misaligned_kernel", "lane 5's row address", "is not 16-byte aligned");
    LAUNCH(ldmatrix_misaligned_kernel, 1, 32, 0, 0)(out);
    expect_error("ldmatrix_misaligned_kernel", "ldmatrix.x1 at ", "test_cuda_cpu_mma.cpp:");
    std::vector<uint16_t> rows(16 * 8, 1);
    LAUNCH(ldmatrix_global_kernel, 1, 32, 0, 0)(out, rows.data());
    expect_error("ldmatrix_global_kernel", "lane 0's row address", "is not in shared memory");
}

/* ------------------------------------------------------------------ ex2.approx and cp.async */

/* out[i] = ex2.approx.ftz(in[i]), one thread per value */
__global__ void ex2_kernel(float *out, const float *in) { out[threadIdx.x] = ex2_approx_ftz(in[threadIdx.x]); }

Test(cuda_cpu_mma, ex2_approx_is_2_to_the_x_within_2_ulp_subnormals_flushed) {
    const float in[8] = {0.0f, 1.0f, -1.0f, 10.5f, -3.3219281f, 127.9f, -126.5f, -INFINITY};
    float out[8];
    LAUNCH(ex2_kernel, 1, 8, 0, 0)(out, in);
    cr_assert_str_eq(launch_message(), "");
    for (int i = 0; i < 6; i++) {
        const double want = exp2((double)in[i]), ulp = ldexp(1.0, ilogb(want) - 23);
        cr_expect_leq(fabs((double)out[i] - want), 2 * ulp, "ex2(%g) = %.9g, 2^x = %.9g", in[i], out[i], want);
    }
    cr_expect_eq(out[6], 0.0f, "2^-126.5 is subnormal: flushed to 0, got %g", out[6]);
    cr_expect_eq(out[7], 0.0f, "2^-inf = 0, got %g", out[7]);
    const float nan_in[2] = {NAN, INFINITY};
    LAUNCH(ex2_kernel, 1, 2, 0, 0)(out, nan_in);
    cr_expect(isnan(out[0]) && isinf(out[1]) && out[1] > 0, "NaN stays NaN, 2^inf = inf: %g %g", out[0], out[1]);
}

/* What a cp.async test kernel does wrong, or nothing. */
enum CopyMode { COPY_RIGHT = 0, COPY_READ_BEFORE_WAIT, COPY_READ_NEWEST_AFTER_WAIT1, COPY_OTHER_WARP_NO_BARRIER };

/* Block of 64: buf[2][64][8] b16, every byte first 0x7777 by its thread (plain stores, then a
 * barrier); thread i
 * copies src0 row i into buf[0][i] (group 0) and src1 row i into buf[1][i] (group 1, source size
 * 16 for even threads, 8 for odd ones: the upper 8 bytes zero). out[i][0..16): what thread i
 * reads of buf[0][i] and buf[1][i] where MODE says (out[i][16]: 1 when read at all). */
template <int MODE> __global__ void cp_async_kernel(uint16_t *out, const uint16_t *src0, const uint16_t *src1) {
    __shared__ __align__(16) uint16_t buf[2][64][8];
    const int i = (int)threadIdx.x;
    for (int e = 0; e < 8; e++) buf[0][i][e] = buf[1][i][e] = 0x7777;
    __syncthreads();
    cp_async_16(buf[0][i], src0 + i * 8, 16);
    cp_async_commit();
    cp_async_16(buf[1][i], src1 + i * 8, i % 2 ? 8 : 16);
    cp_async_commit();
    int r = i; /* the row this thread reads */
    if (MODE == COPY_OTHER_WARP_NO_BARRIER) r = (i + 32) % 64; /* a row the other warp copied */
    if (MODE == COPY_READ_BEFORE_WAIT)
        for (int e = 0; e < 8; e++) out[i * 17 + e] = buf[0][r][e]; /* group 0 not waited for */
    cp_async_wait<1>();
    if (MODE == COPY_READ_NEWEST_AFTER_WAIT1)
        for (int e = 0; e < 8; e++) out[i * 17 + 8 + e] = buf[1][r][e]; /* group 1 still in flight */
    if (MODE == COPY_RIGHT || MODE == COPY_OTHER_WARP_NO_BARRIER) {
        for (int e = 0; e < 8; e++) out[i * 17 + e] = buf[0][i][e]; /* its own copy, landed: no barrier needed */
        cp_async_wait<0>();
        if (MODE == COPY_RIGHT) __syncthreads(); /* the other warp's copies are visible after it */
        for (int e = 0; e < 8; e++) out[i * 17 + 8 + e] = buf[1][r][e];
    }
    out[i * 17 + 16] = 1;
}

__global__ void cp_async_bad_destination_kernel(uint16_t *out, const uint16_t *src) {
    __shared__ __align__(16) uint16_t buf[2][8];
    cp_async_16(threadIdx.x == 3 ? out : buf[threadIdx.x % 2], src, 16); /* thread 3: global memory */
    cp_async_wait<0>();
}

static void cp_async_rows(std::vector<uint16_t> &src0, std::vector<uint16_t> &src1) {
    src0.resize(64 * 8), src1.resize(64 * 8);
    for (int k = 0; k < 64 * 8; k++) src0[k] = (uint16_t)(k + 1), src1[k] = (uint16_t)(0x1000 + k);
}

Test(cuda_cpu_mma, cp_async_lands_at_its_wait_group) {
    std::vector<uint16_t> src0, src1, out(64 * 17);
    cp_async_rows(src0, src1);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[k]), 0);
        std::fill(out.begin(), out.end(), 0);
        LAUNCH(cp_async_kernel<COPY_RIGHT>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data());
        cr_assert_str_eq(launch_message(), "", "order %s", orders[k]);
        int bad = 0;
        for (int i = 0; i < 64; i++)
            for (int e = 0; e < 8; e++) {
                bad += out[i * 17 + e] != src0[i * 8 + e];
                bad += out[i * 17 + 8 + e] != (i % 2 && e >= 4 ? 0 : src1[i * 8 + e]); /* zero past 8 source bytes */
            }
        cr_expect_eq(bad, 0, "order %s: %d values differ from the copies", orders[k], bad);
    }
    cuda_cpu::set_thread_order("forward");
#if !VRL_CUDA_CPU_CHECK /* the plain layer: an early read sees the bytes as they were */
    LAUNCH(cp_async_kernel<COPY_READ_BEFORE_WAIT>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data());
    cr_assert_str_eq(launch_message(), "");
    cr_expect(out[5 * 17] == 0x7777 && out[5 * 17 + 7] == 0x7777, "read before the wait: not landed (%#x)", out[5 * 17]);
    LAUNCH(cp_async_kernel<COPY_READ_NEWEST_AFTER_WAIT1>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data());
    cr_assert_str_eq(launch_message(), "");
    cr_expect(out[5 * 17 + 8] == 0x7777, "wait_group 1 leaves the newest group in flight (%#x)", out[5 * 17 + 8]);
#endif
}

Test(cuda_cpu_mma, cp_async_destination_errors_name_the_kernel) {
    std::vector<uint16_t> src(8, 1), out(8);
    LAUNCH(cp_async_bad_destination_kernel, 1, 32, 0, 0)(out.data(), src.data());
    expect_error("cp_async_bad_destination_kernel", "thread (3,0,0): cp.async at", "is not 16-byte aligned shared memory");
}

#if VRL_CUDA_CPU_CHECK
Test(cuda_cpu_mma, cp_async_reads_before_their_wait_are_races) {
    std::vector<uint16_t> src0, src1, out(64 * 17);
    cp_async_rows(src0, src1);
    LAUNCH(cp_async_kernel<COPY_READ_BEFORE_WAIT>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data());
    expect_error("cp_async_kernel<COPY_READ_BEFORE_WAIT>", "shared-memory race (read before a cp.async landed)",
                 "no cp.async.wait_group of this thread has completed it");
    LAUNCH(cp_async_kernel<COPY_READ_NEWEST_AFTER_WAIT1>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data());
    expect_error("cp_async_kernel<COPY_READ_NEWEST_AFTER_WAIT1>", "shared-memory race (read before a cp.async landed)");
    LAUNCH(cp_async_kernel<COPY_OTHER_WARP_NO_BARRIER>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data());
    expect_error("cp_async_kernel<COPY_OTHER_WARP_NO_BARRIER>", "shared-memory race");
    LAUNCH(cp_async_kernel<COPY_RIGHT>, 1, 64, 0, 0)(out.data(), src0.data(), src1.data()); /* the same bytes, clean */
    cr_expect_str_eq(launch_message(), "", "after the races, the right kernel is clean");
}
#endif

/* ------------------------------------------------------------------ the race checker sees ldmatrix */
#if VRL_CUDA_CPU_CHECK
/* Warp 0 stages a 32-row tile (a 16-byte row per thread), then warp 1 updates the first
 * element of rows 16..31, then both warps ldmatrix rows 16..31. Without the second barrier
 * warp 1's writes and warp 0's reads are unordered: in the forward order warp 0 reads
 * first (a write after read), in the reverse order second (a read after write). The
 * checker sees either only if the lanes' row reads are the kernel's own loads. */
template <bool BARRIER> __global__ void ldmatrix_after_update_kernel(uint32_t *out, const uint16_t *rows) {
    __shared__ __align__(16) uint16_t tile[32 * 8];
    const int t = (int)threadIdx.x;
    if (t < 32)
        for (int e = 0; e < 8; e++) tile[t * 8 + e] = rows[t * 8 + e];
    __syncthreads();
    if (t >= 32 && t < 48) tile[(t - 16) * 8] = (uint16_t)(rows[(t - 16) * 8] + 1);
    if (BARRIER) __syncthreads();
    uint32_t r[4];
    ldmatrix_x4(r, &tile[(16 + t % 16) * 8]);
    out[t] = r[0];
}

Test(cuda_cpu_mma, ldmatrix_rows_are_seen_by_the_race_checker) {
    std::vector<uint16_t> rows(32 * 8, 7);
    uint32_t out[64];
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[k]), 0);
        LAUNCH(ldmatrix_after_update_kernel<true>, 1, 64, 0, 0)(out, rows.data());
        cr_expect_str_eq(launch_message(), "", "with the barrier, order %s", orders[k]);
        cr_expect_eq(out[0], 8u | 7u << 16, "order %s: lane 0 sees warp 1's update", orders[k]);
    }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
    LAUNCH(ldmatrix_after_update_kernel<false>, 1, 64, 0, 0)(out, rows.data());
    expect_error("ldmatrix_after_update_kernel<false>", "shared-memory race (write after read)");
    cr_assert_eq(cuda_cpu::set_thread_order("reverse"), 0);
    LAUNCH(ldmatrix_after_update_kernel<false>, 1, 64, 0, 0)(out, rows.data());
    expect_error("ldmatrix_after_update_kernel<false>", "shared-memory race (read after write)");
    cuda_cpu::set_thread_order("forward");
}
#endif
