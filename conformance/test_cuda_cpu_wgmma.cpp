/* test_cuda_cpu_wgmma.cpp: Hopper's warpgroup matrix instructions (fast/wgmma.cuh) on the CPU
 * layer (fast/cuda_cpu/wgmma.h, docs/design/cuda-on-cpu.md "wgmma on the CPU").
 *
 * Story: the layouts are pinned from the PTX ISA's side. The host places A and B in a shared-
 * memory image through the canonical layouts written here as the ISA writes them (CuTe shape
 * and stride tuples per swizzle mode and major-ness, then Swizzle<B,4,3> on the byte address),
 * one wgmma.mma_async.m64nNk16 runs, and every accumulator element, mapped back to D by the
 * ISA's fragment formula, must be the double-precision product within an fp32 accumulation
 * bound: all four swizzle modes, A and B each K- and MN-major, several N, scale-d both ways,
 * start addresses inside a 128-byte swizzle row (a k-slice of a wider tile), and A from
 * registers. Twins placed without the swizzle's xor, or described with the neighbouring
 * swizzle mode, must FAIL the comparison (or be refused). Then a 64x64xK GEMM with a K loop
 * (fence, mma_async, commit, wait_group 1 then 0: two k-steps in flight) in forward, reverse
 * and random warp orders, bit-identical across them, and again through two shared-memory
 * stages, each refilled after the wait_group that frees it. The asynchrony: accumulators read
 * before the wait are NaN; an operand tile overwritten before the wait changes the product (in
 * the check build, test_cuda_cpu_wgmma_check, both are errors naming the kernel). The errors: malformed descriptors (reserved bits, base offset, a
 * swizzle pattern off its span, outside shared memory, a misaligned or non-shared tile), a
 * warp of the warpgroup missing, a short warpgroup, no fence, each one line naming the
 * kernel. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"
#include "fast/wgmma.cuh"
#include "conformance/cuda_cpu_test_values.h"

#define LAUNCH CUDA_CPU_LAUNCH

#if VRL_CUDA_CPU_CHECK
/* the race test makes a hazard on purpose: report it, do not fail the worker's exit */
static void report_only(void) { setenv("VRL_CUDA_CPU_CHECK", "report", 1); }
TestSuite(cuda_cpu_wgmma, .init = report_only);
#endif

static const char *const orders[] = {"forward", "reverse", "random:5"};

/* ------------------------------------------------------------------ values */

/* ------------------------------------------------------------------ the ISA's layouts, as the ISA writes them */

/* A CuTe layout mode: up to 3 (size, stride) pairs, the first fastest. */
struct Mode {
    int n;
    int size[3], stride[3];
};
static int eval(const Mode &m, int i) { /* the colexicographic coordinate of i, dotted with the strides */
    int off = 0;
    for (int j = 0; j < m.n; j++) off += (i % m.size[j]) * m.stride[j], i /= m.size[j];
    return off;
}

/* One operand tile of the canonical layouts (PTX ISA 9.7.15.5.1.2.1.3 "Canonical Layouts"),
 * bf16: T = 8 elements (16 bytes); strides in elements; rows mn, 16 columns k. */
struct Tile {
    int swizzle;     /* WGMMA_SWIZZLE_* */
    int mn_major;    /* 0: K-major; 1: MN-major (imm-trans 1) */
    int rows;        /* 64 (A) or N (B) */
    uint32_t start;  /* byte offset in the shared image */
    uint32_t lbo, sbo; /* bytes */
    int no_xor;      /* a twin: the rows of the swizzle mode, its xor left out */
};
static int swizzle_B(int swizzle) { return swizzle == 1 ? 3 : swizzle == 2 ? 2 : swizzle == 3 ? 1 : 0; }

/* Byte offset (before the swizzle) of element (mn, k) from the tile's start. The table rows:
 *   MN-major, interleaved: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
 *   MN-major, 2^B·16-byte swizzle: ((T,2^B,m),(8,k)):((1,T,LBO),(2^B·T,SBO))
 *   K-major, interleaved: ((8,m),(T,2k)):((1T,SBO),(1,LBO))
 *   K-major, 2^B·16-byte swizzle: ((8,m),(T,2k)):((2^B·T,SBO),(1,T)) */
static uint32_t tuple_offset(const Tile &t, int mn, int k) {
    const int T = 8, B = swizzle_B(t.swizzle), L = (int)t.lbo / 2, S = (int)t.sbo / 2, big = 1 << 12;
    Mode mmode, kmode;
    if (t.mn_major) {
        if (t.swizzle == 0) mmode = Mode{3, {T, 1, big}, {1, T, S}}, kmode = Mode{2, {8, 2}, {T, L}};
        else mmode = Mode{3, {T, 1 << B, big}, {1, T, L}}, kmode = Mode{2, {8, 2}, {(1 << B) * T, S}};
    } else {
        if (t.swizzle == 0) mmode = Mode{2, {8, big}, {T, S}}, kmode = Mode{2, {T, 2}, {1, L}};
        else mmode = Mode{2, {8, big}, {(1 << B) * T, S}}, kmode = Mode{2, {T, 2}, {1, T}};
    }
    return (uint32_t)(2 * (eval(mmode, mn) + eval(kmode, k)));
}
/* CuTe's Swizzle<B,M,S>(x) = x ^ ((x & (((1 << B) - 1) << (M + S))) >> S), applied to the byte address */
static uint32_t swizzle_address(int B, uint32_t x) {
    const uint32_t yyy = ((1u << B) - 1) << (4 + 3);
    return x ^ ((x & yyy) >> 3);
}
static uint32_t tile_address(const Tile &t, int mn, int k) {
    return swizzle_address(t.no_xor ? 0 : swizzle_B(t.swizzle), t.start + tuple_offset(t, mn, k));
}
/* the bytes past the last element of the tile (to size the image) */
static uint32_t tile_end(const Tile &t) {
    uint32_t e = 0;
    for (int mn = 0; mn < t.rows; mn++)
        for (int k = 0; k < 16; k++) e = std::max(e, tile_address(t, mn, k) + 2);
    return e;
}

/* A tile of `rows` rows at `start` with LBO and SBO one canonical choice for its mode
 * (variant 0 or 1: two different orders of its core matrices or swizzle atoms). */
static Tile make_tile(int swizzle, int mn_major, int rows, uint32_t start, int variant) {
    Tile t{swizzle, mn_major, rows, start, 16, 16, 0};
    const uint32_t W = swizzle == 1 ? 128 : swizzle == 2 ? 64 : swizzle == 3 ? 32 : 16, span = 8 * W;
    const uint32_t groups = (uint32_t)(rows + 7) / 8;
    if (swizzle == 0) { /* core matrices of 128 bytes: k-pairs adjacent, or the mn groups adjacent */
        if (variant == 0) t.lbo = 128, t.sbo = 256;
        else t.lbo = 128 * groups, t.sbo = 128;
    } else if (!mn_major) { /* atoms of 8 rows of W bytes stacked along mn; LBO unused ("assumed 1") */
        t.lbo = 16, t.sbo = span;
    } else { /* atoms of 8 k-rows of W/2 mn elements: along k then mn, or along mn then k */
        const uint32_t atoms_mn = (uint32_t)(rows + W / 2 - 1) / (W / 2);
        if (variant == 0) t.sbo = span, t.lbo = 2 * span;
        else t.lbo = span, t.sbo = span * atoms_mn;
    }
    return t;
}

/* ------------------------------------------------------------------ one wgmma */

/* The dispatch from runtime N and transposes to the wrapper templates (the instantiations the tests use). */
template <int N> static void mma_ss(float *d, uint64_t da, uint64_t db, int s, int ta, int tb) {
    if (ta && tb) wgmma_bf16_ss<N, 1, 1>(d, da, db, s);
    else if (ta) wgmma_bf16_ss<N, 1, 0>(d, da, db, s);
    else if (tb) wgmma_bf16_ss<N, 0, 1>(d, da, db, s);
    else wgmma_bf16_ss<N, 0, 0>(d, da, db, s);
}
template <int N> static void mma_rs(float *d, const uint32_t *a, uint64_t db, int s, int tb) {
    if (tb) wgmma_bf16_rs<N, 1>(d, a, db, s);
    else wgmma_bf16_rs<N, 0>(d, a, db, s);
}
static void mma_any(int n, float *d, const uint32_t *a, uint64_t da, uint64_t db, int s, int ta, int tb) {
    switch (n) {
    case 8: a ? mma_rs<8>(d, a, db, s, tb) : mma_ss<8>(d, da, db, s, ta, tb); break;
    case 24: a ? mma_rs<24>(d, a, db, s, tb) : mma_ss<24>(d, da, db, s, ta, tb); break;
    case 64: a ? mma_rs<64>(d, a, db, s, tb) : mma_ss<64>(d, da, db, s, ta, tb); break;
    case 256: a ? mma_rs<256>(d, a, db, s, tb) : mma_ss<256>(d, da, db, s, ta, tb); break;
    default: break;
    }
}

/* What one warpgroup runs: the image to dynamic shared memory, then one wgmma with D from c
 * (the thread's N/2 values at c + thread·N/2), and its N/2 results to d. a_frag: the A
 * registers of each thread ([128][4]) or NULL (A from desc_a). */
__global__ void one_wgmma_kernel(float *d, const float *c, const uint8_t *image, int bytes, const uint32_t *a_frag,
                                 uint64_t desc_a_off, uint64_t desc_b_off, int n, int ta, int tb, int scale_d) {
    const int th = (int)threadIdx.x;
    char *smem = (char *)cuda_cpu::dynamic_shared();
    for (int i = th; i < bytes; i += 128) smem[i] = (char)image[i];
    __syncthreads();
    /* the descriptors: built here from the tile addresses, the rest of their fields as given */
    const uint64_t da = desc_a_off + wgmma_desc(smem, 0, 0, 0), db = desc_b_off + wgmma_desc(smem, 0, 0, 0);
    float acc[128];
    for (int i = 0; i < n / 2; i++) acc[i] = c[th * (n / 2) + i];
    wgmma_fence();
    mma_any(n, acc, a_frag ? a_frag + 4 * th : NULL, da, db, scale_d, ta, tb);
    wgmma_commit();
    wgmma_wait<0>();
    for (int i = 0; i < n / 2; i++) d[th * (n / 2) + i] = acc[i];
}

/* D's element of thread th's register i (PTX ISA 9.7.15.5.1.1.1, Figure 149): warp w of the
 * warpgroup holds rows 16w..16w+15; row groupID (+8 for the second pair), column
 * 8·(i / 4) + 2·threadID_in_group (+1 for odd i). */
static void d_element(int th, int i, int *row, int *col) {
    const int w = th / 32, lane = th % 32, groupID = lane >> 2, tig = lane % 4;
    *row = 16 * w + groupID + ((i % 4) >= 2 ? 8 : 0);
    *col = 8 * (i / 4) + 2 * tig + (i % 2);
}
/* A's element of thread th's a_i (Figure 148): mma.m16n8k16's A layout within the warp's 16 rows. */
static void a_element(int th, int i, int *row, int *col) {
    const int w = th / 32, lane = th % 32, groupID = lane >> 2, tig = lane % 4;
    *row = 16 * w + groupID + ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0);
    *col = 2 * tig + (i % 2) + (i >= 4 ? 8 : 0);
}

struct Case {
    int n, swz_a, swz_b, ta, tb, a_regs, scale_d, variant;
    uint32_t a_start, b_start; /* byte offsets of the tiles' starts */
    int desc_swz_a, desc_swz_b;  /* the swizzle the descriptors claim (a twin lies) */
    int no_xor;                  /* a twin: the tiles placed without the swizzle's xor */
};

/* Runs c; returns how many of D's 64·N elements miss the product (-1: a launch error, in msg). */
static int run_case(const Case &cs, char *msg, size_t msg_len) {
    const int n = cs.n;
    Tile ta = make_tile(cs.swz_a, cs.ta, 64, cs.a_start, cs.variant);
    Tile tb = make_tile(cs.swz_b, cs.tb, n, cs.b_start, cs.variant);
    ta.no_xor = tb.no_xor = cs.no_xor;
    /* whole swizzle spans: a twin's tile ends where the true one does */
    const uint32_t bytes = (std::max(cs.a_regs ? 0u : tile_end(ta), tile_end(tb)) + 1023) & ~1023u;
    std::vector<uint8_t> image(bytes, 0xff); /* bf16 NaN wherever no element is: a wrong address shows */
    const std::vector<uint16_t> A = random_bf16(64 * 16, 11 + n), B = random_bf16((size_t)16 * n, 23 + n);
    for (int mn = 0; mn < 64 && !cs.a_regs; mn++)
        for (int k = 0; k < 16; k++) memcpy(&image[tile_address(ta, mn, k)], &A[mn * 16 + k], 2);
    for (int mn = 0; mn < n; mn++)
        for (int k = 0; k < 16; k++) memcpy(&image[tile_address(tb, mn, k)], &B[k * n + mn], 2);
    std::vector<uint32_t> frag(128 * 4, 0);
    for (int th = 0; th < 128; th++)
        for (int i = 0; i < 8; i++) {
            int r, c;
            a_element(th, i, &r, &c);
            frag[th * 4 + i / 2] |= (uint32_t)A[r * 16 + c] << (16 * (i % 2));
        }
    const std::vector<uint16_t> cb = random_bf16((size_t)64 * n, 37 + n);
    std::vector<float> c(64 * (size_t)n), d(64 * (size_t)n, 0.0f);
    for (size_t i = 0; i < c.size(); i++) c[i] = bf16_float(cb[i]) * 1.25f;
    /* descriptors without their start address (the kernel adds the tile base) */
    const uint64_t da = wgmma_desc_encode(ta.start, ta.lbo, ta.sbo, cs.desc_swz_a);
    const uint64_t db = wgmma_desc_encode(tb.start, tb.lbo, tb.sbo, cs.desc_swz_b);
    LAUNCH(one_wgmma_kernel, 1, 128, bytes, 0)(d.data(), c.data(), image.data(), (int)bytes,
                                               cs.a_regs ? frag.data() : NULL, da, db, n, cs.ta, cs.tb, cs.scale_d);
    const char *e = launch_message();
    if (e[0]) {
        snprintf(msg, msg_len, "%s", e);
        return -1;
    }
    int bad = 0;
    for (int th = 0; th < 128; th++)
        for (int i = 0; i < n / 2; i++) {
            int r, col;
            d_element(th, i, &r, &col);
            const float cv = c[th * (n / 2) + i];
            double s = cs.scale_d ? cv : 0.0, mag = cs.scale_d ? fabs(cv) : 0.0;
            for (int k = 0; k < 16; k++) {
                const double p = (double)bf16_float(A[r * 16 + k]) * bf16_float(B[k * n + col]);
                s += p, mag += fabs(p);
            }
            /* an fp32 sum of 17 terms errs by at most 17 · 2^-23 · Σ|terms| (test_cuda_cpu_mma's bound) */
            if (!(fabs((double)d[th * (n / 2) + i] - s) <= 17 * 0x1p-23 * mag)) bad++;
        }
    return bad;
}

static const char *const swz_names[] = {"none", "128B", "64B", "32B"};

Test(cuda_cpu_wgmma, every_swizzle_and_major_follows_the_isa_layouts) {
    const int ns[] = {8, 24, 64, 256};
    int cases = 0;
    for (int swz = 0; swz < 4; swz++)
        for (int major = 0; major < 4; major++)
            for (int ni = 0; ni < 4; ni++) {
                Case cs{};
                cs.n = ns[ni], cs.swz_a = cs.swz_b = swz, cs.ta = major & 1, cs.tb = major >> 1;
                cs.scale_d = ni & 1, cs.variant = (ni >> 1) & 1;
                /* K-major A with a swizzle: a k-slice inside the row (128 B: +64, 64 B: +32) */
                cs.a_start = (!cs.ta && swz == 1) ? 64 : (!cs.ta && swz == 2) ? 32 : 0;
                cs.b_start = 16384; /* past any A tile, on a 1024-byte boundary */
                cs.desc_swz_a = cs.desc_swz_b = swz;
                char msg[512] = "";
                const int bad = run_case(cs, msg, sizeof msg);
                cr_expect_eq(bad, 0, "swizzle %s, A %s-major, B %s-major, N %d, scale-d %d: %d elements wrong %s",
                             swz_names[swz], cs.ta ? "M" : "K", cs.tb ? "N" : "K", cs.n, cs.scale_d, bad, msg);
                cases++;
            }
    cr_assert_eq(cases, 64);
}

Test(cuda_cpu_wgmma, a_from_registers_follows_the_isa_fragment) {
    for (int swz = 0; swz < 4; swz++)
        for (int tb = 0; tb < 2; tb++) {
            Case cs{};
            cs.n = tb ? 64 : 24, cs.swz_a = 0, cs.swz_b = swz, cs.tb = tb, cs.a_regs = 1, cs.scale_d = 1;
            cs.b_start = 1024, cs.desc_swz_b = swz;
            char msg[512] = "";
            const int bad = run_case(cs, msg, sizeof msg);
            cr_expect_eq(bad, 0, "A from registers, B swizzle %s %s-major: %d wrong %s", swz_names[swz], tb ? "N" : "K",
                         bad, msg);
        }
}

/* Twins: tiles placed without the swizzle's xor, or described with the neighbouring swizzle
 * mode, never give the product: the comparison fails, or (a mode whose pattern no longer fits
 * the tile) the layer refuses the descriptor. */
Test(cuda_cpu_wgmma, tiles_with_the_wrong_swizzle_fail_the_comparison) {
    for (int swz = 1; swz < 4; swz++)
        for (int major = 0; major < 2; major++)
            for (int twin = 0; twin < 2; twin++) {
                Case cs{};
                cs.n = 64, cs.swz_a = cs.swz_b = swz, cs.ta = cs.tb = major, cs.scale_d = 1;
                cs.b_start = 16384, cs.desc_swz_a = cs.desc_swz_b = swz;
                if (twin == 0) cs.no_xor = 1;
                else cs.desc_swz_b = swz == 3 ? 2 : swz + 1; /* one mode off */
                char msg[512] = "";
                const int bad = run_case(cs, msg, sizeof msg);
                if (twin == 0)
                    cr_expect_gt(bad, 64 * 64 / 4, "%s-major tiles placed without the %s swizzle's xor: only %d wrong %s",
                                 major ? "MN" : "K", swz_names[swz], bad, msg);
                else
                    cr_expect(bad > 64 * 64 / 4 || (bad < 0 && strstr(msg, "one_wgmma_kernel")),
                              "B laid out with the %s swizzle, described as %s: %d wrong %s", swz_names[swz],
                              swz_names[cs.desc_swz_b], bad, msg);
            }
}

/* ------------------------------------------------------------------ a GEMM with a K loop */

/* d[64][64] = a[64][K]·b[K][64], K = 16·steps: A K-major 128-byte swizzled (rows of 64 k, a
 * k-step a 32-byte slice), B N-major 64-byte swizzled ([k][n] rows of 32 n), two k-steps in
 * flight (wait_group 1) before the last wait. */
__global__ void gemm_kernel(float *d, const uint16_t *a, const uint16_t *b, int K) {
    const int th = (int)threadIdx.x;
    char *smem = (char *)cuda_cpu::dynamic_shared();
    uint16_t *sa = (uint16_t *)smem, *sb = (uint16_t *)(smem + 8192 * (K / 64));
    /* A: row m, k at 1024-byte atoms of 8 rows x 128 B per (m / 8, k / 64) */
    for (int i = th; i < 64 * K; i += 128) {
        const int m = i / K, k = i % K;
        uint32_t off = (uint32_t)((k / 64) * 8192 + (m / 8) * 1024 + (m % 8) * 128 + (k % 64) * 2);
        off ^= ((off >> 7) & 7) << 4;
        sa[off / 2] = a[i];
    }
    /* B: element (k, n) in 512-byte atoms of 8 k-rows x 64 B (32 n); atoms along n 512 B apart
     * (LBO), along k 1024 B apart (SBO) */
    for (int i = th; i < K * 64; i += 128) {
        const int k = i / 64, n = i % 64;
        uint32_t off = (uint32_t)((k / 8) * 1024 + (n / 32) * 512 + (k % 8) * 64 + (n % 32) * 2);
        off ^= ((off >> 7) & 3) << 4;
        sb[off / 2] = b[i];
    }
    __syncthreads(); /* the tiles every warp wrote, before the warpgroup reads them */
    float acc[32];
    wgmma_fence();
    for (int s = 0; s < K / 16; s++) {
        const uint64_t da = wgmma_desc((char *)sa + (s / 4) * 8192 + (s % 4) * 32, 16, 1024, WGMMA_SWIZZLE_128B);
        const uint64_t db = wgmma_desc((char *)sb + s * 2048, 512, 1024, WGMMA_SWIZZLE_64B);
        wgmma_bf16_ss<64, 0, 1>(acc, da, db, s > 0);
        wgmma_commit();
        if (s > 0) wgmma_wait<1>(); /* the step before this one has landed */
        wgmma_fence();
    }
    wgmma_wait<0>(); /* the last k-step lands */
    for (int i = 0; i < 32; i++) {
        int r, c;
        d_element(th, i, &r, &c);
        d[r * 64 + c] = acc[i];
    }
}

static std::vector<float> run_gemm(int K, const char *order) {
    cr_assert_eq(cuda_cpu::set_thread_order(order), 0);
    const std::vector<uint16_t> a = random_bf16((size_t)64 * K, 3), b = random_bf16((size_t)K * 64, 4);
    std::vector<float> d(64 * 64, 0.0f);
    LAUNCH(gemm_kernel, 1, 128, (size_t)8192 * (K / 64) + 1024 * (K / 8), 0)(d.data(), a.data(), b.data(), K);
    cr_assert_str_eq(launch_message(), "", "order %s", order);
    int bad = 0;
    for (int m = 0; m < 64; m++)
        for (int n = 0; n < 64; n++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                const double p = (double)bf16_float(a[m * K + k]) * bf16_float(b[k * 64 + n]);
                s += p, mag += fabs(p);
            }
            if (!(fabs((double)d[m * 64 + n] - s) <= (K + 1) * 0x1p-23 * mag)) bad++;
        }
    cr_assert_eq(bad, 0, "order %s: %d of 4096 wrong", order, bad);
    return d;
}

Test(cuda_cpu_wgmma, gemm_k_loop_in_every_warp_order) {
    const std::vector<float> first = run_gemm(128, orders[0]);
    for (int k = 1; k < 3; k++) {
        const std::vector<float> d = run_gemm(128, orders[k]);
        cr_assert(!memcmp(d.data(), first.data(), d.size() * sizeof(float)), "order %s differs in bits", orders[k]);
    }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
}

/* The same product through two shared-memory stages, as a pipelined kernel runs it: k-step s
 * reads stage s % 2 (A K-major 32-byte swizzled: 64 rows of one 32-byte k-slice; B N-major
 * 128-byte swizzled: 16 k-rows of 64 n), and stage (s + 1) % 2 is refilled only after the
 * wait_group 1 that lands step s - 1, which read it. */
__global__ void gemm_two_stages_kernel(float *d, const uint16_t *a, const uint16_t *b, int K) {
    const int th = (int)threadIdx.x;
    char *smem = (char *)cuda_cpu::dynamic_shared(); /* [2 stages][A 2048 B, B 2048 B] */
    float acc[32];
    for (int s = 0; s < K / 16; s++) {
        if (s == 0) { /* stage 0 <- step 0 */
            for (int i = th; i < 64 * 16; i += 128) {
                const int m = i / 16, k = i % 16;
                uint32_t off = (uint32_t)((m / 8) * 256 + (m % 8) * 32 + k * 2);
                off ^= ((off >> 7) & 1) << 4;
                memcpy(smem + off, &a[m * K + k], 2);
            }
            for (int i = th; i < 16 * 64; i += 128) {
                const int k = i / 64, n = i % 64;
                uint32_t off = (uint32_t)(2048 + (k / 8) * 1024 + (k % 8) * 128 + n * 2);
                off ^= ((off >> 7) & 7) << 4;
                memcpy(smem + off, &b[k * 64 + n], 2);
            }
            __syncthreads();
            wgmma_fence();
        }
        char *stage = smem + (s % 2) * 4096;
        const uint64_t da = wgmma_desc(stage, 16, 256, WGMMA_SWIZZLE_32B);
        const uint64_t db = wgmma_desc(stage + 2048, 16, 1024, WGMMA_SWIZZLE_128B);
        wgmma_bf16_ss<64, 0, 1>(acc, da, db, s > 0);
        wgmma_commit();
        if (s + 1 == K / 16) break;
        wgmma_wait<1>(); /* step s - 1 has landed: the other stage is free */
        __syncthreads(); /* every warp past its wait before the stage is refilled */
        char *next = smem + ((s + 1) % 2) * 4096;
        for (int i = th; i < 64 * 16; i += 128) {
            const int m = i / 16, k = i % 16;
            uint32_t off = (uint32_t)((m / 8) * 256 + (m % 8) * 32 + k * 2);
            off ^= ((off >> 7) & 1) << 4;
            memcpy(next + off, &a[m * K + (s + 1) * 16 + k], 2);
        }
        for (int i = th; i < 16 * 64; i += 128) {
            const int k = i / 64, n = i % 64;
            uint32_t off = (uint32_t)(2048 + (k / 8) * 1024 + (k % 8) * 128 + n * 2);
            off ^= ((off >> 7) & 7) << 4;
            memcpy(next + off, &b[((s + 1) * 16 + k) * 64 + n], 2);
        }
        __syncthreads(); /* the refilled stage before the next issue reads it */
        wgmma_fence();
    }
    wgmma_wait<0>();
    for (int i = 0; i < 32; i++) {
        int r, c;
        d_element(th, i, &r, &c);
        d[r * 64 + c] = acc[i];
    }
}

Test(cuda_cpu_wgmma, two_stage_gemm_refills_a_stage_only_after_its_wait) {
    const int K = 64;
    const std::vector<uint16_t> a = random_bf16((size_t)64 * K, 5), b = random_bf16((size_t)K * 64, 6);
    std::vector<float> first;
    for (int o = 0; o < 3; o++) {
        cr_assert_eq(cuda_cpu::set_thread_order(orders[o]), 0);
        std::vector<float> d(64 * 64, 0.0f);
        LAUNCH(gemm_two_stages_kernel, 1, 128, 8192, 0)(d.data(), a.data(), b.data(), K);
        cr_assert_str_eq(launch_message(), "", "order %s", orders[o]);
        int bad = 0;
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < 64; n++) {
                double s = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    const double p = (double)bf16_float(a[m * K + k]) * bf16_float(b[k * 64 + n]);
                    s += p, mag += fabs(p);
                }
                if (!(fabs((double)d[m * 64 + n] - s) <= (K + 1) * 0x1p-23 * mag)) bad++;
            }
        cr_assert_eq(bad, 0, "order %s: %d of 4096 wrong", orders[o], bad);
        if (o == 0) first = d;
        else cr_assert(!memcmp(d.data(), first.data(), d.size() * sizeof(float)), "order %s differs in bits", orders[o]);
    }
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
}

/* ------------------------------------------------------------------ asynchrony */

/* One m64n8k16 of A = B = 1 (K-major, no swizzle), then, before the wait: read the
 * accumulators (mode 0), overwrite B's tile with 2 (mode 1), or nothing (2); the results to d. */
__global__ void early_kernel(float *d, int mode) {
    const int th = (int)threadIdx.x;
    uint16_t *smem = (uint16_t *)cuda_cpu::dynamic_shared();
    for (int i = th; i < 64 * 16 + 8 * 16; i += 128) smem[i] = 0x3f80; /* bf16 1 */
    __syncthreads();
    const uint64_t da = wgmma_desc(smem, 128, 256, WGMMA_SWIZZLE_NONE);
    const uint64_t db = wgmma_desc(smem + 64 * 16, 128, 256, WGMMA_SWIZZLE_NONE);
    float acc[4] = {0, 0, 0, 0};
    wgmma_fence();
    wgmma_bf16_ss<8>(acc, da, db, 0);
    wgmma_commit();
    if (mode == 0) d[128 * 4 + th] = acc[0]; /* before the wait */
    if (mode == 1 && th < 64) smem[64 * 16 + th] = 0x4000; /* bf16 2, into B's tile */
    wgmma_wait<0>();
    for (int i = 0; i < 4; i++) d[th * 4 + i] = acc[i];
}

#if VRL_CUDA_CPU_CHECK
Test(cuda_cpu_wgmma, accumulators_read_before_the_wait_are_an_error) {
    std::vector<float> d(128 * 5, -1.0f);
    LAUNCH(early_kernel, 1, 128, 64 * 16 * 2 + 8 * 16 * 2, 0)(d.data(), 0);
    const char *e = launch_message();
    cr_assert(strstr(e, "early_kernel") && strstr(e, "wgmma accumulators read before the wait"), "%s", e);
    LAUNCH(early_kernel, 1, 128, 64 * 16 * 2 + 8 * 16 * 2, 0)(d.data(), 2); /* no early access: no error */
    cr_assert_str_eq(launch_message(), "");
}
#else
Test(cuda_cpu_wgmma, accumulators_land_at_the_wait) {
    std::vector<float> d(128 * 5, -1.0f);
    LAUNCH(early_kernel, 1, 128, 64 * 16 * 2 + 8 * 16 * 2, 0)(d.data(), 0);
    cr_assert_str_eq(launch_message(), "");
    for (int th = 0; th < 128; th++) {
        cr_assert(isnan(d[128 * 4 + th]), "thread %d read %g before the wait: not the undefined (NaN) value", th,
                  d[128 * 4 + th]);
        for (int i = 0; i < 4; i++) cr_assert_eq(d[th * 4 + i], 16.0f, "thread %d d%d = %g after the wait", th, i,
                                                 d[th * 4 + i]);
    }
}
#endif

#if VRL_CUDA_CPU_CHECK
Test(cuda_cpu_wgmma, an_operand_written_before_the_wait_is_a_race) {
    std::vector<float> d(128 * 5, 0.0f);
    LAUNCH(early_kernel, 1, 128, 64 * 16 * 2 + 8 * 16 * 2, 0)(d.data(), 1);
    const char *e = launch_message();
    cr_assert(strstr(e, "early_kernel") && strstr(e, "shared-memory race (write before a wgmma landed)"), "%s", e);
}
#else
Test(cuda_cpu_wgmma, an_operand_written_before_the_wait_changes_the_product) {
    std::vector<float> d(128 * 5, 0.0f);
    LAUNCH(early_kernel, 1, 128, 64 * 16 * 2 + 8 * 16 * 2, 0)(d.data(), 1);
    cr_assert_str_eq(launch_message(), "");
    int changed = 0;
    for (int i = 0; i < 128 * 4; i++) changed += d[i] != 16.0f;
    cr_assert_gt(changed, 0, "the write landed after the product was taken: the operand was read at the issue");
}
#endif

/* ------------------------------------------------------------------ misuse */

/* mode 0: a descriptor with a reserved bit; 1: base offset 1; 2: a 128-byte swizzled tile off its
 * span; 3: B past the end of shared memory; 4: a tile not 16-byte aligned; 5: warp 2 skips the
 * wgmma; 6: no fence; 7: a short warpgroup (block of 96). */
__global__ void misuse_kernel(int mode) {
    const int th = (int)threadIdx.x;
    uint16_t *smem = (uint16_t *)cuda_cpu::dynamic_shared();
    for (int i = th; i < 4096; i += blockDim.x) smem[i] = 0x3f80;
    __syncthreads();
    uint64_t da = wgmma_desc(smem, 128, 256, WGMMA_SWIZZLE_NONE);
    uint64_t db = wgmma_desc(smem + 2048, 128, 256, WGMMA_SWIZZLE_NONE);
    if (mode == 0) da |= 1ull << 15;
    if (mode == 1) da = wgmma_desc(smem, 16, 1024, WGMMA_SWIZZLE_128B) | 1ull << 49;
    if (mode == 2) da = wgmma_desc(smem + 128, 16, 1024, WGMMA_SWIZZLE_128B); /* starts in row 1 of its atom */
    if (mode == 3) db = wgmma_desc(smem + 4032, 128, 256, WGMMA_SWIZZLE_NONE);
    if (mode == 4) db = wgmma_desc((char *)smem + 8, 128, 256, WGMMA_SWIZZLE_NONE);
    float acc[4] = {0, 0, 0, 0};
    if (mode != 6) wgmma_fence();
    if (mode == 5 && th / 32 == 2) return;
    wgmma_bf16_ss<8>(acc, da, db, 0);
    wgmma_commit();
    wgmma_wait<0>();
}

Test(cuda_cpu_wgmma, misuse_is_one_line_naming_the_kernel) {
    const struct {
        int mode, threads;
        const char *want;
    } cases[] = {{0, 128, "reserved bits set"},
                 {1, 128, "base offset 1"},
                 {2, 128, "does not start in the first row of its 1024-byte span"},
                 {3, 128, "outside the launch's 8192 bytes of dynamic shared memory"},
                 {4, 128, "is not 16-byte aligned"},
                 {5, 128, "warpgroup divergence"},
                 {6, 128, "no wgmma.fence"},
                 {7, 96, "needs 128 threads"}};
    for (const auto &c : cases) {
        LAUNCH(misuse_kernel, 1, c.threads, 8192, 0)(c.mode);
        const char *e = launch_message();
        cr_expect(strstr(e, "misuse_kernel") && strstr(e, c.want) && !strchr(e, '\n'),
                  "mode %d: want one line naming misuse_kernel and '%s', got: %s", c.mode, c.want, e);
    }
}
