/* test_cuda_cpu_tma.cpp: TMA tensor loads (fast/tma.cuh) on the CPU layer (fast/cuda_cpu/tma.h,
 * docs/design/cuda-on-cpu.md "TMA on the CPU").
 *
 * Story: a wgmma GEMM's producer warp loads its A and B tiles with tma_load_2d and its consumer
 * warpgroup multiplies them through K-major descriptors with the same swizzle; the products must
 * be exactly the host's, for every swizzle mode (128B, 64B, 32B, and none with 8-column boxes as
 * core matrices), with the boxes partly outside the tensors (zeros), in three warp orders, and
 * with A loaded M-major from its transpose (imm-trans-a 1): TMA and wgmma agree on the layout.
 * Then the layout itself, against the pattern written out as the CUDA programming guide draws it
 * (chunk c of a box row moved to c XOR the row's index in its pattern), with boxes over the right
 * and bottom edges and at negative coordinates; the whole box's bytes counted on the barrier (an
 * expect_tx of the box completes the phase, exactly); the destination read before the wait holding
 * the old bytes (in the check build, test_cuda_cpu_tma_check, a race naming the kernel). Misuse,
 * each one launch error naming the kernel: a map never encoded, a misaligned or misplaced
 * destination, a swizzled box narrower than its span, a box past the shared memory, an
 * uninitialised barrier; and the encoder's refusals, one line each.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"
#include "fast/mbarrier.cuh"
#include "fast/tma.cuh"
#include "fast/wgmma.cuh"
#include "conformance/cuda_cpu_test_values.h"

#define LAUNCH CUDA_CPU_LAUNCH

#if VRL_CUDA_CPU_CHECK
/* the race test makes a hazard on purpose: report it, do not fail the worker's exit */
static void report_only(void) { setenv("VRL_CUDA_CPU_CHECK", "report", 1); }
TestSuite(cuda_cpu_tma, .init = report_only);
#endif

static const char *const orders[] = {"forward", "reverse", "random:7"};
static const int modes[] = {TMA_SWIZZLE_128B, TMA_SWIZZLE_64B, TMA_SWIZZLE_32B, TMA_SWIZZLE_NONE};
static const char *mode_name(int s) { return s == 3 ? "128B" : s == 2 ? "64B" : s == 1 ? "32B" : "none"; }

/* the bytes of one box row: the span when swizzled, one 16-byte core-matrix row otherwise */
static uint32_t box_row_bytes(int swizzle) { return swizzle ? 16u << swizzle : 16u; }

/* ------------------------------------------------------------------ TMA feeds wgmma */

/* D[64][32] = A[64 x 64]·B[32 x 64]^T over K = 64, B K-major in global memory (row-major with K
 * contiguous): B from tensor b (B_ROWS x B_COLS, row stride B_STRIDE bytes) at (row B_R0, col K0).
 * A K-major the same way from tensor a (A_ROWS x A_COLS) at (A_R0, K0), or M-major (a backward
 * pass's transposed operand) from its transpose at (tensor) (K0, A_R0), the boxes then K rows of
 * `cols` M elements and wgmma's imm-trans-a 1. The boxes run past the tensors' ends. */
enum { A_ROWS = 80, A_COLS = 72, A_STRIDE = 160, AT_STRIDE = 176, B_ROWS = 40, B_COLS = 72, B_STRIDE = 160 };
enum { A_R0 = 30, B_R0 = 16, K0 = 16, GN = 32 };
/* dynamic shared memory: the barrier at 0, A's boxes at 1024 (8 KiB), B's at 9216 (4 KiB) */
enum { A_AT = 1024, B_AT = A_AT + 64 * 128, GEMM_SMEM = B_AT + GN * 128 };

/* block: warps 0-3 the consumer warpgroup, warp 4 the producer (its lane 0 issues the loads
 * once the barrier is initialised); d [64][GN] */
__global__ void tma_wgmma_kernel(const __grid_constant__ TmaMap ma, const __grid_constant__ TmaMap mb, int swizzle,
                                 int a_mn, float *d) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *bar = (uint64_t *)smem;
    const uint32_t row = box_row_bytes(swizzle), cols = row / 2; /* a box: rows x `cols` elements */
    const uint32_t a_box = 64 * row, b_box = GN * row;
    if (threadIdx.x == 0) mbarrier_init(bar, 1);
    __syncthreads(); /* the barrier is initialised */
    if (threadIdx.x >= 128) { /* the producer warp */
        if (threadIdx.x != 128) return;
        mbarrier_arrive_expect_tx(bar, (64 + GN) * 64 * 2);
        for (uint32_t j = 0; j < 64 / cols; j++) { /* the K range in boxes of `cols` columns */
            if (a_mn) tma_load_2d(smem + A_AT + j * a_box, &ma, A_R0 + (int32_t)(j * cols), K0, bar);
            else tma_load_2d(smem + A_AT + j * a_box, &ma, K0 + (int32_t)(j * cols), A_R0, bar);
            tma_load_2d(smem + B_AT + j * b_box, &mb, K0 + (int32_t)(j * cols), B_R0, bar);
        }
        return;
    }
    mbarrier_wait_parity(bar, 0); /* the tiles have landed */
    const int wg_swizzle = swizzle == TMA_SWIZZLE_128B ? WGMMA_SWIZZLE_128B
                           : swizzle == TMA_SWIZZLE_64B ? WGMMA_SWIZZLE_64B
                           : swizzle == TMA_SWIZZLE_32B ? WGMMA_SWIZZLE_32B
                                                        : WGMMA_SWIZZLE_NONE;
    float acc[GN / 2];
    wgmma_fence();
    for (uint32_t s = 0; s < 4; s++) { /* k-step s: K columns 16s .. 16s+15 */
        uint64_t da, db;
        if (swizzle) { /* box 16s / cols, 32 bytes a k-step inside it; SBO: 8 rows of the span */
            const uint32_t j = 16 * s / cols, at = (16 * s % cols) * 2;
            da = wgmma_desc(smem + A_AT + j * a_box + at, 16, 8 * row, wg_swizzle);
            db = wgmma_desc(smem + B_AT + j * b_box + at, 16, 8 * row, wg_swizzle);
        } else { /* 8-column boxes are the core matrices: LBO the next box, SBO 8 rows of 16 bytes */
            da = wgmma_desc(smem + A_AT + 2 * s * a_box, a_box, 128, wg_swizzle);
            db = wgmma_desc(smem + B_AT + 2 * s * b_box, b_box, 128, wg_swizzle);
        }
        if (a_mn) { /* row k of a box at k·row bytes: SBO 8 k-rows, LBO the next box's M elements */
            da = swizzle ? wgmma_desc(smem + A_AT + 16 * s * row, a_box, 8 * row, wg_swizzle)
                         : wgmma_desc(smem + A_AT + 16 * s * row, 128, a_box, wg_swizzle);
            wgmma_bf16_ss<GN, 1, 0>(acc, da, db, s > 0);
        } else
            wgmma_bf16_ss<GN, 0, 0>(acc, da, db, s > 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    const int tid = threadIdx.x, w = tid / 32, g = tid % 32 / 4, t = tid % 4;
    for (int i = 0; i < GN / 2; i++) d[(16 * w + g + 8 * ((i >> 1) & 1)) * GN + 8 * (i >> 2) + 2 * t + (i & 1)] = acc[i];
}

/* small integers as bf16: every product and sum exact */
static uint16_t small_bf16(int v) { return __float2bfloat16((float)v).x; }

Test(cuda_cpu_tma, tma_tiles_feed_wgmma_exactly_in_every_swizzle) {
    std::vector<uint16_t> a(A_ROWS * A_STRIDE / 2, 0), b(B_ROWS * B_STRIDE / 2, 0); /* [rows][stride/2] */
    /* padding between rows holds 7s: a box that read past a row's end would show them */
    for (size_t i = 0; i < a.size(); i++) a[i] = small_bf16(7);
    for (size_t i = 0; i < b.size(); i++) b[i] = small_bf16(7);
    for (int r = 0; r < A_ROWS; r++)
        for (int c = 0; c < A_COLS; c++) a[r * A_STRIDE / 2 + c] = small_bf16((r * 5 + c * 3) % 7 - 3);
    for (int r = 0; r < B_ROWS; r++)
        for (int c = 0; c < B_COLS; c++) b[r * B_STRIDE / 2 + c] = small_bf16((r * 3 + c * 11) % 5 - 2);
    std::vector<double> want(64 * GN, 0.0); /* [64][GN], elements outside the tensors 0 */
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < GN; n++)
            for (int k = 0; k < 64; k++) {
                const int ar = A_R0 + m, br = B_R0 + n, c = K0 + k;
                if (ar < A_ROWS && br < B_ROWS && c < A_COLS)
                    want[m * GN + n] += (double)bf16_float(a[ar * A_STRIDE / 2 + c]) * bf16_float(b[br * B_STRIDE / 2 + c]);
            }
    /* A's transpose [A_COLS][A_ROWS], row stride AT_STRIDE bytes: the M-major copy of A */
    std::vector<uint16_t> at(A_COLS * AT_STRIDE / 2, small_bf16(7));
    for (int r = 0; r < A_ROWS; r++)
        for (int c = 0; c < A_COLS; c++) at[c * AT_STRIDE / 2 + r] = a[r * A_STRIDE / 2 + c];
    for (int mi = 0; mi < 4; mi++)
        for (int a_mn = 0; a_mn < 2; a_mn++) {
            const int s = modes[mi];
            const uint32_t cols = box_row_bytes(s) / 2;
            const char *major = a_mn ? "A M-major" : "A K-major";
            TmaMap ma, mb;
            char err[256];
            const int e = a_mn ? tma_map_2d_bf16(&ma, at.data(), A_COLS, A_ROWS, AT_STRIDE, 64, cols, s, err, sizeof err)
                               : tma_map_2d_bf16(&ma, a.data(), A_ROWS, A_COLS, A_STRIDE, 64, cols, s, err, sizeof err);
            cr_assert_eq(e, 0, "%s", err);
            cr_assert_eq(tma_map_2d_bf16(&mb, b.data(), B_ROWS, B_COLS, B_STRIDE, GN, cols, s, err, sizeof err), 0, "%s",
                         err);
            for (int o = 0; o < 3; o++) {
                cr_assert_eq(cuda_cpu::set_thread_order(orders[o]), 0);
                std::vector<float> d(64 * GN, -1.0f);
                LAUNCH(tma_wgmma_kernel, 1, 160, GEMM_SMEM, 0)(ma, mb, s, a_mn, d.data());
                const char *msg = launch_message();
                cr_assert_str_empty(msg, "%s swizzle, %s, %s order: %s", mode_name(s), major, orders[o], msg);
                int wrong = 0, first = -1;
                for (int i = 0; i < 64 * GN; i++)
                    if ((double)d[i] != want[i]) wrong++, first = first < 0 ? i : first;
                cr_assert_eq(wrong, 0, "%s swizzle, %s, %s order: %d of %d products wrong (first D[%d][%d] = %g, want %g)",
                             mode_name(s), major, orders[o], wrong, 64 * GN, first / GN, first % GN, d[first], want[first]);
            }
        }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
}

/* ------------------------------------------------------------------ the layout, zeros, tx-count */

/* a tensor of T_ROWS x T_COLS bf16 bit patterns r·256 + c + 1 (never 0, never 0xffff) */
enum { T_ROWS = 20, T_COLS = 40, T_STRIDE = 96, BOX_ROWS = 16, BOX_AT = 1024, LAYOUT_SMEM = BOX_AT + 4096 };

/* out [box bytes]: the box's shared bytes after its phase; early: out[0..1] the first bytes read
 * before the wait instead (the 0xff fill, or a race in the check build); expect: the tx bytes */
__global__ void layout_kernel(const __grid_constant__ TmaMap map, int32_t col, int32_t row, uint32_t expect,
                              uint32_t bytes, int early, unsigned char *out) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *bar = (uint64_t *)smem;
    if (threadIdx.x != 0) return;
    mbarrier_init(bar, 1);
    tma_load_2d(smem + BOX_AT, &map, col, row, bar);
    if (early) { /* a plain load (the check build instruments it) */
        const uint16_t v = *(const uint16_t *)(smem + BOX_AT);
        memcpy(out, &v, 2);
    }
    mbarrier_arrive_expect_tx(bar, expect);
    mbarrier_wait_parity(bar, 0);
    if (!early) memcpy(out, smem + BOX_AT, bytes);
}

static uint16_t tensor_bits(int r, int c) { return (uint16_t)(r * 256 + c + 1); }

/* Where the CUDA programming guide draws the swizzled box: S-byte rows (S = 16 << B) packed from
 * the 2^B·128-byte aligned destination, 128/S of them per 128-byte line; chunk c of row i goes to
 * chunk c ^ ((i / (128/S)) mod 2^B) of that row. Written apart from fast/cuda_cpu/swizzle.h. */
static uint32_t guide_offset(int swizzle, uint32_t row_bytes, uint32_t i, uint32_t byte) {
    if (!swizzle) return i * row_bytes + byte;
    const uint32_t S = 16u << swizzle, per_line = 128 / S, phase = (i / per_line) % (1u << swizzle);
    return i * S + ((byte / 16) ^ phase) * 16 + byte % 16;
}

Test(cuda_cpu_tma, box_layout_zero_fill_and_tx_count) {
    std::vector<uint16_t> t(T_ROWS * T_STRIDE / 2, 0xffff);
    for (int r = 0; r < T_ROWS; r++)
        for (int c = 0; c < T_COLS; c++) t[r * T_STRIDE / 2 + c] = tensor_bits(r, c);
    /* inside, over the bottom and right edges, at negative coordinates, wholly outside */
    const int coords[][2] = {{0, 0}, {T_ROWS - 5, T_COLS - 3}, {-3, -5}, {-2, 30}, {T_ROWS, 0}};
    for (int mi = 0; mi < 4; mi++) {
        const int s = modes[mi];
        const uint32_t row_bytes = box_row_bytes(s), cols = row_bytes / 2, bytes = BOX_ROWS * row_bytes;
        TmaMap map;
        char err[256];
        cr_assert_eq(tma_map_2d_bf16(&map, t.data(), T_ROWS, T_COLS, T_STRIDE, BOX_ROWS, cols, s, err, sizeof err), 0,
                     "%s", err);
        for (const auto &rc : coords) {
            const int r0 = rc[0], c0 = rc[1];
            std::vector<unsigned char> out(bytes, 0xab), want(bytes);
            for (uint32_t i = 0; i < BOX_ROWS; i++)
                for (uint32_t j = 0; j < cols; j++) {
                    const int r = r0 + (int)i, c = c0 + (int)j;
                    const uint16_t v = r >= 0 && r < T_ROWS && c >= 0 && c < T_COLS ? tensor_bits(r, c) : 0;
                    memcpy(&want[guide_offset(s, row_bytes, i, 2 * j)], &v, 2);
                }
            LAUNCH(layout_kernel, 1, 32, LAYOUT_SMEM, 0)(map, c0, r0, bytes, bytes, 0, out.data());
            const char *msg = launch_message();
            cr_assert_str_empty(msg, "%s swizzle, box at (%d, %d): %s", mode_name(s), r0, c0, msg);
            int wrong = 0, first = -1;
            for (uint32_t k = 0; k < bytes; k++)
                if (out[k] != want[k]) wrong++, first = first < 0 ? (int)k : first;
            cr_assert_eq(wrong, 0, "%s swizzle, box at (row %d, col %d): %d of %u bytes wrong (first at byte %d: 0x%02x, "
                         "want 0x%02x)", mode_name(s), r0, c0, wrong, bytes, first, out[first], want[first]);
        }
        /* the tx-count is the whole box, outside part included: 16 bytes less expected is an error */
        std::vector<unsigned char> out(bytes);
        LAUNCH(layout_kernel, 1, 32, LAYOUT_SMEM, 0)(map, T_COLS - 3, T_ROWS - 5, bytes - 16, bytes, 0, out.data());
        const char *msg = launch_message();
        cr_assert(strstr(msg, "kernel layout_kernel") && strstr(msg, "wrong expect_tx on the mbarrier at shared offset 0: "
                  "phase 0 completed 16 more transaction bytes"), "%s swizzle: expect_tx of the box less 16: %s",
                  mode_name(s), msg);
    }
}

Test(cuda_cpu_tma, the_box_lands_with_its_phase) {
    std::vector<uint16_t> t(T_ROWS * T_STRIDE / 2, 0);
    for (int r = 0; r < T_ROWS; r++)
        for (int c = 0; c < T_COLS; c++) t[r * T_STRIDE / 2 + c] = tensor_bits(r, c);
    TmaMap map;
    char err[256];
    cr_assert_eq(tma_map_2d_bf16(&map, t.data(), T_ROWS, T_COLS, T_STRIDE, BOX_ROWS, 64, TMA_SWIZZLE_128B, err, sizeof err),
                 0, "%s", err);
    unsigned char out[2] = {0, 0};
    LAUNCH(layout_kernel, 1, 32, LAYOUT_SMEM, 0)(map, 0, 0, BOX_ROWS * 128, 0, 1, out);
    const char *msg = launch_message();
#if VRL_CUDA_CPU_CHECK
    cr_assert(strstr(msg, "shared-memory race (read before a bulk copy landed) in kernel layout_kernel"),
              "a read of the box before the wait: %s", msg);
#else
    cr_assert_str_empty(msg, "%s", msg);
    cr_assert(out[0] == 0xff && out[1] == 0xff, "the box read before its phase completed holds the old bytes (0xff), "
              "not 0x%02x%02x", out[1], out[0]);
#endif
}

/* ------------------------------------------------------------------ misuse */

/* what: 0 a map never encoded, 1 an unswizzled destination 64 bytes off 128, 2 a 128B-swizzled destination
 * 128 bytes off 1024, 3 a destination in global memory, 4 a 128B-swizzled box 64 bytes wide,
 * 5 a box past the shared memory's end, 6 an uninitialised barrier */
__global__ void misuse_kernel(const __grid_constant__ TmaMap map, int what, char *global) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *bar = (uint64_t *)smem;
    if (threadIdx.x != 0) return;
    if (what != 6) mbarrier_init(bar, 1);
    char *dst = smem + (what == 1 ? 1024 + 64 : what == 2 ? 1024 + 128 : what == 5 ? 2048 : 1024);
    tma_load_2d(what == 3 ? global : dst, &map, 0, 0, what == 6 ? bar + 1 : bar);
}

Test(cuda_cpu_tma, misuse_is_one_error_naming_the_kernel) {
    alignas(16) static uint16_t t[T_ROWS * T_STRIDE / 2];
    alignas(128) static char global[4096];
    TmaMap good, narrow, plain, none;
    char err[256];
    memset(&none, 0, sizeof none);
    cr_assert_eq(tma_map_2d_bf16(&good, t, T_ROWS, T_COLS, T_STRIDE, BOX_ROWS, 64, TMA_SWIZZLE_128B, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(tma_map_2d_bf16(&narrow, t, T_ROWS, T_COLS, T_STRIDE, BOX_ROWS, 32, TMA_SWIZZLE_128B, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(tma_map_2d_bf16(&plain, t, T_ROWS, T_COLS, T_STRIDE, BOX_ROWS, 8, TMA_SWIZZLE_NONE, err, sizeof err), 0,
                 "%s", err);
    const char *want[] = {"reads a tensor map that tma_map_2d_bf16 never encoded",
                          "to shared offset 1088: a TMA destination must be 128-byte aligned",
                          "to shared offset 1152: a 128B-swizzled destination must be 1024-byte aligned",
                          "the destination is not in the launch's dynamic shared memory",
                          "with a 64-byte box row under the 128-byte swizzle",
                          "to shared offset 2048: the 16 x 64 box (2048 bytes) runs past the launch's 3072 bytes",
                          "cp.async.bulk.tensor.2d completing on the mbarrier at shared offset 8: it was never initialised"};
    for (int what = 0; what < 7; what++) {
        const TmaMap &m = what == 0 ? none : what == 1 ? plain : what == 4 ? narrow : good;
        LAUNCH(misuse_kernel, 1, 32, 3072, 0)(m, what, global);
        const char *msg = launch_message();
        cr_assert(strstr(msg, "kernel misuse_kernel") && strstr(msg, "thread (0,0,0)") && strstr(msg, want[what]) &&
                      strstr(msg, "conformance/test_cuda_cpu_tma.cpp:") && !strchr(msg, '\n'),
                  "misuse %d: want one line naming the kernel, the thread, the call and '%s', got '%s'", what, want[what],
                  msg);
    }
}

Test(cuda_cpu_tma, the_encoder_refuses_what_the_driver_refuses) {
    alignas(64) static uint16_t t[64 * 64];
    TmaMap map;
    char err[256];
    struct Case {
        const void *global;
        uint64_t rows, cols, stride;
        uint32_t box_rows, box_cols;
        int swizzle;
        const char *want;
    } cases[] = {
        {(const char *)t + 8, 64, 64, 128, 8, 8, 0, "the global address"},
        {t, 64, 64, 120, 8, 8, 0, "row stride 120 bytes for 64 bf16 columns"},
        {t, 64, 64, 64, 8, 8, 0, "row stride 64 bytes for 64 bf16 columns"},
        {t, 0, 64, 128, 8, 8, 0, "a 0 x 64 tensor"},
        {t, 64, 64, 128, 257, 8, 0, "a 257 x 8 box"},
        {t, 64, 64, 128, 8, 12, 0, "a 8 x 12 box"},
        {t, 64, 64, 128, 8, 64, TMA_SWIZZLE_64B, "a box row of 128 bytes is wider than the 64-byte swizzle span"},
        {t, 64, 64, 128, 8, 32, TMA_SWIZZLE_32B, "a box row of 64 bytes is wider than the 32-byte swizzle span"},
        {t, 64, 64, 128, 8, 8, 4, "swizzle 4"},
    };
    for (const Case &c : cases) {
        err[0] = 0;
        const int r = tma_map_2d_bf16(&map, c.global, c.rows, c.cols, c.stride, c.box_rows, c.box_cols, c.swizzle, err,
                                      sizeof err);
        cr_assert(r == -1 && strstr(err, "tma_map_2d_bf16: ") && strstr(err, c.want) && !strchr(err, '\n'),
                  "want -1 and '%s', got %d '%s'", c.want, r, err);
    }
    cr_assert_eq(tma_map_2d_bf16((TmaMap *)((char *)&map + 16), t, 64, 64, 128, 8, 8, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "is not 64-byte aligned"), "%s", err);
    cr_assert_eq(tma_map_2d_bf16(&map, t, 64, 64, 128, 256, 64, TMA_SWIZZLE_128B, err, sizeof err), 0, "%s", err);
}
