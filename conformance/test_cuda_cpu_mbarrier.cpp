/* test_cuda_cpu_mbarrier.cpp: mbarriers and bulk copies (fast/mbarrier.cuh) on the CPU layer
 * (fast/cuda_cpu/mbarrier.h, docs/design/cuda-on-cpu.md "mbarrier and bulk copies on the CPU").
 *
 * Story: a warp-specialised pipeline as FlashAttention-3 builds it. One producer warp (its lane
 * 0) bulk-copies 6 tiles from global memory into a 2-stage shared ring, each stage guarded by a
 * "full" barrier (1 arrival + the tile's transaction bytes) and an "empty" one (an arrival per
 * consumer thread); two consumer warps wait for each full phase, read the tile, write a result
 * and arrive on empty. The consumers' waits must yield to the producer (a spinning wait would
 * hang the layer's scheduler), and the result must be exact and bit-identical in the forward,
 * reverse and random warp orders. The same with the consumers a warpgroup that multiplies each
 * landed k-step with wgmma (fast/wgmma.cuh) and frees the stage after its wait_group: the exact
 * product in every order. The semantics pinned: the phase parity right after init, a
 * copy that lands only at its phase's completion (its destination read before the wait holds
 * the old bytes; in the check build, test_cuda_cpu_mbarrier_check, the read is a race naming
 * the kernel), two copies of one phase to one destination landing in the thread order's order
 * (a race the check build names), test_wait's answer (never blocking: 32 lanes polling once is no error). Misuse, each one launch error naming the kernel: a wait on an
 * uninitialised barrier, an arrival beyond the count, an init count of 0, a misaligned copy, a
 * copy of a bad size, too few expected bytes, every warp waiting (a deadlock naming the
 * barriers), a test_wait spin. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"
#include "fast/cuda_cpu/bf16.h"
#include "fast/mbarrier.cuh"
#include "fast/wgmma.cuh"
#include "conformance/cuda_cpu_test_values.h"

#define LAUNCH CUDA_CPU_LAUNCH

#if VRL_CUDA_CPU_CHECK
/* the race test makes a hazard on purpose: report it, do not fail the worker's exit */
static void report_only(void) { setenv("VRL_CUDA_CPU_CHECK", "report", 1); }
TestSuite(cuda_cpu_mbarrier, .init = report_only);
#endif

#if VRL_CUDA_CPU_CHECK
/* reverse first: the consumers run before the producer, so a read of a stage before its full
 * barrier's wait is named (an uninitialised or in-flight byte) before the values differ */
static const char *const orders[] = {"reverse", "forward", "random:5"};
#else
static const char *const orders[] = {"forward", "reverse", "random:5"};
#endif

/* ------------------------------------------------------------------ the pipeline */

enum { TILES = 6, TILE = 64, TILE_BYTES = TILE * 4, STAGES = 2, CONSUMERS = 64 };
/* dynamic shared memory: full[2], empty[2] barriers at 0..31, the ring [STAGES][TILE] floats at 64 */
enum { RING_AT = 64, PIPE_SMEM = RING_AT + STAGES * TILE_BYTES };

/* src [TILES][TILE], out [TILES][TILE]: out = 2·src + k for tile k; block: warp 0 produces, warps
 * 1 and 2 consume (thread 32 + c reads element c of each tile) */
__global__ void pipeline_kernel(const float *src, float *out) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *full = (uint64_t *)smem, *empty = full + STAGES;
    float *ring = (float *)(smem + RING_AT); /* [STAGES][TILE] */
    const int tid = threadIdx.x;
    if (tid == 0)
        for (int s = 0; s < STAGES; s++) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMERS);
        }
    __syncthreads(); /* the barriers are initialised before any thread uses them */
    if (tid < 32) {  /* the producer warp: lane 0 issues every copy */
        if (tid != 0) return;
        for (int k = 0; k < TILES; k++) {
            const int s = k % STAGES;
            const uint32_t ph = (uint32_t)(k / STAGES) & 1u;
            mbarrier_wait_parity(&empty[s], ph ^ 1u); /* the consumers are done with the stage */
            mbarrier_arrive_expect_tx(&full[s], TILE_BYTES);
            bulk_copy_g2s(ring + s * TILE, src + k * TILE, TILE_BYTES, &full[s]);
        }
        return;
    }
    const int c = tid - 32;
    for (int k = 0; k < TILES; k++) {
        const int s = k % STAGES;
        const uint32_t ph = (uint32_t)(k / STAGES) & 1u;
        mbarrier_wait_parity(&full[s], ph); /* the tile has landed */
        out[k * TILE + c] = 2.0f * ring[s * TILE + c] + (float)k;
        mbarrier_arrive(&empty[s]);
    }
}

static std::vector<float> pipeline_source(void) {
    std::vector<float> src(TILES * TILE);
    for (int i = 0; i < TILES * TILE; i++) src[i] = (float)((i * 37) % 101) - 50.0f + 0.25f * (float)(i % 3);
    return src;
}

Test(cuda_cpu_mbarrier, producer_consumer_pipeline_in_every_warp_order) {
    const std::vector<float> src = pipeline_source();
    std::vector<float> first;
    for (int o = 0; o < 3; o++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[o]), 0);
        std::vector<float> out(TILES * TILE, -1.0f);
        LAUNCH(pipeline_kernel, 1, 32 + CONSUMERS, PIPE_SMEM, 0)(src.data(), out.data());
        const char *msg = launch_message();
        cr_assert_str_empty(msg, "%s order: %s", orders[o], msg);
        int wrong = 0;
        for (int k = 0; k < TILES; k++)
            for (int c = 0; c < TILE; c++) wrong += out[k * TILE + c] != 2.0f * src[k * TILE + c] + (float)k;
        cr_assert_eq(wrong, 0, "%s order: %d of %d elements wrong", orders[o], wrong, TILES * TILE);
        if (o == 0) first = out;
        else cr_assert_eq(memcmp(first.data(), out.data(), out.size() * sizeof(float)), 0, "%s order: other bits", orders[o]);
    }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
}

/* ------------------------------------------------------------------ a wgmma consumer warpgroup */

/* FlashAttention-3's shape: warps 0-3 are a consumer warpgroup that multiplies each landed k-step
 * with wgmma, warp 4 the producer. d[64][8] = sum over STEPS k-steps of A_s[64x16]·B_s[16x8].
 * Global memory holds each k-step's tiles already in the canonical K-major layout without
 * swizzle (PTX ISA 9.7.15.5.1.2: element (mn, k) at (mn%8)·16 + (mn/8)·256 + (k%8)·2 + (k/8)·128
 * bytes: LBO 128, SBO 256): A_s at s·STEP_BYTES, B_s 2048 bytes after it. One bulk copy per
 * k-step moves both into a stage. */
enum { STEPS = 4, A_BYTES = 2048, B_BYTES = 256, STEP_BYTES = A_BYTES + B_BYTES, WG_RING_AT = 128 };

__global__ void wgmma_pipeline_kernel(const char *tiles, float *d) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *full = (uint64_t *)smem, *empty = full + STAGES;
    char *ring = smem + WG_RING_AT; /* [STAGES][STEP_BYTES] */
    const int tid = threadIdx.x;
    if (tid == 0)
        for (int s = 0; s < STAGES; s++) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 128);
        }
    __syncthreads();
    if (tid >= 128) { /* the producer warp */
        if (tid != 128) return;
        for (int k = 0; k < STEPS; k++) {
            const int s = k % STAGES;
            const uint32_t ph = (uint32_t)(k / STAGES) & 1u;
            mbarrier_wait_parity(&empty[s], ph ^ 1u);
            mbarrier_arrive_expect_tx(&full[s], STEP_BYTES);
            bulk_copy_g2s(ring + s * STEP_BYTES, tiles + k * STEP_BYTES, STEP_BYTES, &full[s]);
        }
        return;
    }
    float acc[4];
    for (int k = 0; k < STEPS; k++) {
        const int s = k % STAGES;
        mbarrier_wait_parity(&full[s], (uint32_t)(k / STAGES) & 1u);
        char *stage = ring + s * STEP_BYTES;
        wgmma_fence();
        wgmma_bf16_ss<8, 0, 0>(acc, wgmma_desc(stage, 128, 256, WGMMA_SWIZZLE_NONE),
                               wgmma_desc(stage + A_BYTES, 128, 256, WGMMA_SWIZZLE_NONE), k > 0);
        wgmma_commit();
        wgmma_wait<0>(); /* the stage's operands are read: it may be refilled */
        mbarrier_arrive(&empty[s]);
    }
    const int w = tid / 32, g = tid % 32 / 4, t = tid % 4;
    for (int i = 0; i < 4; i++) d[(16 * w + g + 8 * ((i >> 1) & 1)) * 8 + 2 * t + (i & 1)] = acc[i];
}

static uint32_t canonical(int mn, int k) { return (uint32_t)((mn % 8) * 16 + (mn / 8) * 256 + (k % 8) * 2 + (k / 8) * 128); }

Test(cuda_cpu_mbarrier, wgmma_consumer_warpgroup_in_every_warp_order) {
    /* small integers: every product and sum is exact, so d is exact in any order */
    alignas(16) static char tiles[STEPS * STEP_BYTES];
    std::vector<double> want(64 * 8, 0.0);
    for (int k = 0; k < STEPS; k++) {
        float a[64][16], b[16][8];
        for (int m = 0; m < 64; m++)
            for (int j = 0; j < 16; j++) a[m][j] = (float)((m * 7 + j * 3 + k * 5) % 5 - 2);
        for (int j = 0; j < 16; j++)
            for (int n = 0; n < 8; n++) b[j][n] = (float)((j * 11 + n * 13 + k) % 7 - 3);
        for (int m = 0; m < 64; m++)
            for (int j = 0; j < 16; j++) {
                const uint16_t x = __float2bfloat16(a[m][j]).x;
                memcpy(tiles + k * STEP_BYTES + canonical(m, j), &x, 2);
            }
        for (int j = 0; j < 16; j++)
            for (int n = 0; n < 8; n++) {
                const uint16_t x = __float2bfloat16(b[j][n]).x;
                memcpy(tiles + k * STEP_BYTES + A_BYTES + canonical(n, j), &x, 2);
            }
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < 8; n++)
                for (int j = 0; j < 16; j++) want[m * 8 + n] += (double)a[m][j] * b[j][n];
    }
    std::vector<float> first;
    for (int o = 0; o < 3; o++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[o]), 0);
        std::vector<float> d(64 * 8, -1.0f);
        LAUNCH(wgmma_pipeline_kernel, 1, 160, WG_RING_AT + STAGES * STEP_BYTES, 0)(tiles, d.data());
        const char *msg = launch_message();
        cr_assert_str_empty(msg, "%s order: %s", orders[o], msg);
        int wrong = 0;
        for (int i = 0; i < 64 * 8; i++) wrong += (double)d[i] != want[i];
        cr_assert_eq(wrong, 0, "%s order: %d of 512 elements wrong", orders[o], wrong);
        if (o == 0) first = d;
        else cr_assert_eq(memcmp(first.data(), d.data(), d.size() * sizeof(float)), 0, "%s order: other bits", orders[o]);
    }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
}

/* ------------------------------------------------------------------ the semantics */

/* One warp. out[0..4): test_wait parity 1 and 0 right after init (1, 0), the destination's first
 * float read before the copy's phase completes (the 0xff fill: NaN here, a race in the check build
 * when `early`), test_wait parity 0 after the arrival that completes phase 0 (1), and the float read
 * after the wait. */
__global__ void phase_kernel(const float *src, float *out, int early) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *bar = (uint64_t *)smem;
    float *dst = (float *)(smem + 64);
    if (threadIdx.x != 0) return;
    mbarrier_init(bar, 1);
    out[0] = (float)mbarrier_test_wait_parity(bar, 1);
    out[1] = (float)mbarrier_test_wait_parity(bar, 0);
    bulk_copy_g2s(dst, src, 32, bar); /* tx-count -32: the phase waits for an arrival expecting it */
    out[2] = early ? dst[0] : 0.0f;
    mbarrier_arrive_expect_tx(bar, 32);
    out[3] = (float)mbarrier_test_wait_parity(bar, 0);
    mbarrier_wait_parity(bar, 0);
    out[4] = dst[0] + dst[7];
}

Test(cuda_cpu_mbarrier, phases_parity_and_landing) {
    const float src[8] = {3, 1, 4, 1, 5, 9, 2, 6};
    float out[5] = {-1, -1, -1, -1, -1};
    LAUNCH(phase_kernel, 1, 32, 128, 0)(src, out, 0);
    const char *msg = launch_message();
    cr_assert_str_empty(msg, "%s", msg);
    cr_assert(out[0] == 1.0f && out[1] == 0.0f, "right after init: parity 1 complete, 0 not (got %g %g)", out[0], out[1]);
    cr_assert(out[3] == 1.0f && out[4] == 9.0f, "after the phase: %g, destination %g (want 1, 9)", out[3], out[4]);
#if VRL_CUDA_CPU_CHECK
    LAUNCH(phase_kernel, 1, 32, 128, 0)(src, out, 1);
    msg = launch_message();
    cr_assert(strstr(msg, "shared-memory race (read before a bulk copy landed) in kernel phase_kernel"),
              "a read of the destination before the wait: %s", msg);
#else
    LAUNCH(phase_kernel, 1, 32, 128, 0)(src, out, 1);
    msg = launch_message();
    cr_assert_str_empty(msg, "%s", msg);
    cr_assert(out[2] != out[2], "the destination before the phase completed holds the old bytes (NaN), not %g", out[2]);
#endif
}

/* out[0]: the first float of a destination two copies of one phase both write (a race): which
 * lands last is the thread order's choice */
__global__ void overlap_kernel(const float *a, const float *b, float *out) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *bar = (uint64_t *)smem;
    float *dst = (float *)(smem + 64);
    if (threadIdx.x != 0) return;
    mbarrier_init(bar, 1);
    bulk_copy_g2s(dst, a, 32, bar);
    bulk_copy_g2s(dst, b, 32, bar);
    mbarrier_arrive_expect_tx(bar, 64);
    mbarrier_wait_parity(bar, 0);
    out[0] = dst[0];
}

Test(cuda_cpu_mbarrier, copies_of_one_phase_land_in_the_thread_order) {
    alignas(16) static const float a[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    float out[2] = {0, 0};
    for (int o = 0; o < 2; o++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[o]), 0);
        LAUNCH(overlap_kernel, 1, 32, 128, 0)(a, b, out + o);
        const char *msg = launch_message();
#if VRL_CUDA_CPU_CHECK
        cr_assert(strstr(msg, "shared-memory race (write before a bulk copy landed) in kernel overlap_kernel"),
                  "%s order: two copies in flight to one byte: %s", orders[o], msg);
#else
        cr_assert_str_empty(msg, "%s", msg);
#endif
    }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
#if !VRL_CUDA_CPU_CHECK
    /* forward: issue order, b's bytes land last; reverse: a's do */
    cr_assert(out[0] != out[1] && out[0] + out[1] == 3.0f, "the two orders landed %g and %g (want 2 and 1 in some order)",
              out[0], out[1]);
#endif
}

/* out [32]: every lane polls a barrier no one arrives at once: test_wait answers 0 and never
 * blocks; one poll per thread is no spin */
__global__ void poll_kernel(float *out) {
    uint64_t *bar = (uint64_t *)cuda_cpu::dynamic_shared();
    if (threadIdx.x == 0) mbarrier_init(bar, 1);
    __syncthreads();
    out[threadIdx.x] = (float)mbarrier_test_wait_parity(bar, 0);
}

Test(cuda_cpu_mbarrier, test_wait_polls_without_blocking) {
    std::vector<float> out(32, -1.0f);
    LAUNCH(poll_kernel, 1, 32, 64, 0)(out.data());
    const char *msg = launch_message();
    cr_assert_str_empty(msg, "%s", msg);
    for (int i = 0; i < 32; i++) cr_assert_eq(out[i], 0.0f, "lane %d: test_wait answered %g on a phase in progress", i, out[i]);
}

/* ------------------------------------------------------------------ misuse */

/* what: 0 wait on an uninitialised barrier, 1 an arrival beyond the count, 2 init count 0,
 * 3 a misaligned copy, 4 a copy of 24 bytes, 5 fewer expected bytes than copied, 6 every warp
 * waits for a phase nobody completes, 7 a test_wait spin (nothing else runs while it spins) */
__global__ void misuse_kernel(const float *src, int what) {
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint64_t *bar = (uint64_t *)smem;
    char *dst = smem + 64;
    if (what == 6) {
        if (threadIdx.x == 0) mbarrier_init(bar, 1);
        __syncthreads();
        mbarrier_wait_parity(bar, 0);
        return;
    }
    if (threadIdx.x != 0) return;
    if (what == 7) {
        mbarrier_init(bar, 1);
        while (!mbarrier_test_wait_parity(bar, 0)) {
        }
    }
    if (what == 0) mbarrier_wait_parity(bar + 1, 0);
    if (what == 2) mbarrier_init(bar, 0);
    if (what == 0 || what == 2 || what == 7) return;
    mbarrier_init(bar, 1);
    if (what == 1) {
        mbarrier_arrive_expect_tx(bar, 32); /* every arrival came; the phase waits for 32 bytes */
        mbarrier_arrive(bar);
    }
    if (what == 3) bulk_copy_g2s(dst + 8, src, 32, bar);
    if (what == 4) bulk_copy_g2s(dst, src, 24, bar);
    if (what == 5) {
        bulk_copy_g2s(dst, src, 32, bar);
        mbarrier_arrive_expect_tx(bar, 16);
    }
}

Test(cuda_cpu_mbarrier, misuse_is_one_error_naming_the_kernel) {
    static const float src[16] = {0};
    const char *want[] = {"mbarrier.try_wait on the mbarrier at shared offset 8: it was never initialised",
                          "an arrival beyond the count on the mbarrier at shared offset 0: all 1 arrivals of phase 0",
                          "mbarrier.init of the mbarrier at shared offset 0 with count 0",
                          "cp.async.bulk completing on the mbarrier at shared offset 0 is 32 bytes",
                          "cp.async.bulk completing on the mbarrier at shared offset 0 is 24 bytes",
                          "wrong expect_tx on the mbarrier at shared offset 0: phase 0 completed 16 more transaction bytes",
                          "deadlock: 64 threads wait for mbarrier phases that no thread can complete",
                          "mbarrier.test_wait spins on the mbarrier at shared offset 0: nothing can complete the phase"};
    for (int what = 0; what < 8; what++) {
        LAUNCH(misuse_kernel, 1, 64, 256, 0)(src, what);
        const char *msg = launch_message();
        cr_assert(strstr(msg, "kernel misuse_kernel") && strstr(msg, want[what]) && !strchr(msg, '\n'),
                  "misuse %d: want one line naming the kernel and '%s', got '%s'", what, want[what], msg);
    }
}
