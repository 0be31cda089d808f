/* wgmma.cpp: wgmma.mma_async.m64nNk16 (bf16 -> fp32) and its fence, commit_group and
 * wait_group on the CPU layer, per warpgroup of the running block (wgmma.h,
 * docs/design/cuda-on-cpu.md "wgmma on the CPU").
 *
 * Layouts from the PTX ISA, section numbers of its 8.5 edition (9.7.15; later editions move
 * them to 9.7.16 and 9.7.17, the titles stay):
 *  - 9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16" (Figures 148, 149): warp
 *    w = (thread in warpgroup) / 32 holds rows 16w..16w+15, in the layout of mma.m16n8k16
 *    within them; with g = lane >> 2, t = lane % 4:
 *      A (64x16, registers): a_i at row 16w + g + 8·((i >> 1) & 1), col 2t + (i & 1) + 8·(i >> 2)
 *      D (64xN, f32):        d_i at row 16w + g + 8·((i >> 1) & 1), col 8·(i >> 2) + 2t + (i & 1),
 *                            i = 0 .. N/2-1 (each 8 columns of D are 4 registers)
 *  - 9.7.15.5.1.2 "Shared Memory Matrix Layout", 9.7.15.5.1.2.1.3 "Canonical Layouts" (the CuTe
 *    forms of Table "canonical layouts"), with bf16 (T = 8 elements = 16 bytes), an operand
 *    tile indexed (mn, k), mn < 64 (A) or N (B), k < 16; as byte offsets from the start address:
 *      K-major,  no swizzle:  (mn%8)·16 + (mn/8)·SBO + (k%8)·2 + (k/8)·LBO
 *      K-major,  W-byte swizzle (W = 32, 64, 128): (mn%8)·W + (mn/8)·SBO + k·2   (LBO unused)
 *      MN-major, no swizzle:  (mn%8)·2 + (mn/8)·SBO + (k%8)·16 + (k/8)·LBO
 *      MN-major, W-byte swizzle: (mn%(W/2))·2 + (mn/(W/2))·LBO + (k%8)·W + (k/8)·SBO
 *    then the swizzle on the address: Swizzle<B,4,3> (B = 0, 1, 2, 3 for none, 32, 64, 128
 *    bytes) xors address bits 7..7+B-1 into bits 4..4+B-1: the 16-byte chunk of a W-byte row
 *    is permuted by the row's place in its repeating pattern of 8·W bytes ("swizzle atom").
 *  - 9.7.15.5.1.2.2 "Matrix Descriptor Format": start address, LBO, SBO as (x & 0x3FFFF) >> 4
 *    in bits 0-13, 16-29, 32-45; base offset 49-51; swizzle mode 62-63 (0 none, 1 128 B,
 *    2 64 B, 3 32 B); the base offset is 0 when every repeating pattern starts on a multiple of
 *    its 8·W bytes. This layer models that case only: a non-zero base offset, a pattern that
 *    does not start in the first row of its span, or a reserved bit set is refused.
 *
 * Precision: as mma.sync's (tensor_core.cpp): the 16 exact bf16 products and D summed in double
 * and rounded once to fp32. */
#include <math.h>
#include <stdio.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/swizzle.h"
#include "fast/cuda_cpu/wgmma.h"

namespace cuda_cpu {

namespace {

const uint32_t UNCOMMITTED = 0xffffffffu;
const int THREADS = 128; /* a warpgroup */

struct Op {
    uint32_t group; /* the warpgroup's group number, or UNCOMMITTED */
    int n, trans_a, trans_b, a_regs;
    WgmmaDesc da, db;
    float *d[THREADS];          /* each thread's accumulators [n/2] */
    uint8_t scale_d[THREADS];   /* its scale-d */
    uint8_t chained[THREADS];   /* 1: an earlier op in flight writes these accumulators first */
    uint32_t a[THREADS][4];     /* its A fragment at the issue (A from registers) */
    std::vector<float> c;       /* [THREADS][n/2] the accumulators at the issue, where not chained */
    std::vector<uint32_t> chunks; /* window offsets of the 16-byte chunks A and B occupy */
};

struct Warpgroup {
    std::vector<Op> inflight; /* in issue order */
    uint32_t groups;          /* groups committed so far */
    int fenced;               /* a wgmma.fence since the start or the last wait_group */
};

std::vector<Warpgroup> groups_; /* [warpgroups of the block] */
std::vector<std::pair<int, int>> trace; /* (op, param) completed since wgmma_forget, the first 16 */

float bf16_value(uint16_t bits) {
    const uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* the row width W of a swizzle mode (16: none, a core matrix row) and log2 of its rows per pattern shift */
uint32_t row_bytes(int swizzle) { return swizzle == 1 ? 128 : swizzle == 2 ? 64 : swizzle == 3 ? 32 : 16; }
uint32_t swizzle_bits(int swizzle) { return swizzle == 1 ? 3 : swizzle == 2 ? 2 : swizzle == 3 ? 1 : 0; }
const char *swizzle_name(int swizzle) {
    return swizzle == 1 ? "128-byte" : swizzle == 2 ? "64-byte" : swizzle == 3 ? "32-byte" : "no";
}

/* Byte offset of element (mn, k) from the start address, before the swizzle (canonical layouts). */
uint32_t canonical(const WgmmaDesc &d, int mn_major, int mn, int k) {
    const uint32_t W = row_bytes(d.swizzle);
    if (!mn_major) {
        if (d.swizzle == 0) return (mn % 8) * 16u + (mn / 8) * d.sbo + (k % 8) * 2u + (k / 8) * d.lbo;
        return (mn % 8) * W + (mn / 8) * d.sbo + k * 2u;
    }
    if (d.swizzle == 0) return (mn % 8) * 2u + (mn / 8) * d.sbo + (k % 8) * 16u + (k / 8) * d.lbo;
    const uint32_t e = W / 2; /* elements per row of the pattern */
    return (mn % e) * 2u + (mn / e) * d.lbo + (k % 8) * W + (k / 8) * d.sbo;
}

/* The window address of element (mn, k): Swizzle<B,4,3> on start + canonical offset. */
uint32_t element_address(const WgmmaDesc &d, int mn_major, int mn, int k) {
    return swizzle_address(d.start + canonical(d, mn_major, mn, k), swizzle_bits(d.swizzle));
}

/* Check descriptor `which` ("A", "B") of an operand with `rows` mn rows and collect its chunks;
 * 0, or -1 with msg. */
int check_operand(const WgmmaDesc &d, const char *which, int mn_major, int rows, std::vector<uint32_t> &chunks,
                  char *msg, size_t msg_len) {
    if (d.reserved) {
        snprintf(msg, msg_len, "%s's matrix descriptor has reserved bits set (0x%016llx): not a descriptor, or its "
                 "start address overflowed bits 0-13", which, (unsigned long long)d.reserved);
        return -1;
    }
    if (d.swizzle && d.base_offset) {
        snprintf(msg, msg_len, "%s's matrix descriptor has base offset %d: the CPU layer models only tiles whose "
                 "swizzle patterns start on their span (base offset 0)", which, d.base_offset);
        return -1;
    }
    const size_t smem = launch_smem();
    const uint32_t W = row_bytes(d.swizzle), span = 8 * W;
    for (int mn = 0; mn < rows; mn++)
        for (int k = 0; k < 16; k++) {
            const uint32_t pre = d.start + canonical(d, mn_major, mn, k);
            /* the first element of each repeating pattern: in the first row of its span */
            const int pattern_start = mn_major ? (mn % (W / 2) == 0 && k % 8 == 0) : (mn % 8 == 0 && k == 0);
            if (d.swizzle && pattern_start && pre % span >= W) {
                snprintf(msg, msg_len, "%s's %s swizzle pattern at shared offset %u (element mn %d, k %d) does not start "
                         "in the first row of its %u-byte span (offset %u in it): the tile is not aligned to its swizzle",
                         which, swizzle_name(d.swizzle), pre, mn, k, span, pre % span);
                return -1;
            }
            const uint32_t a = element_address(d, mn_major, mn, k);
            if ((size_t)a + 2 > smem) {
                snprintf(msg, msg_len, "%s's element (mn %d, k %d) is at shared offset %u, outside the launch's %zu "
                         "bytes of dynamic shared memory (start %u, LBO %u, SBO %u, %s swizzle)",
                         which, mn, k, a, smem, d.start, d.lbo, d.sbo, swizzle_name(d.swizzle));
                return -1;
            }
            chunks.push_back(a & ~15u);
        }
    return 0;
}

/* An op's operand chunks for the check build's race checker (check::wgmma_operand's modes:
 * 1 read at the issue and marked, 2 marked again, 0 unmarked). */
void mark(const Op &o, int mode) {
    if (!check::enabled()) return;
    char *dyn = (char *)dynamic_shared();
    for (uint32_t c : o.chunks) check::wgmma_operand(dyn + c, 16, mode);
}

/* Its accumulators in flight (1) or landed (0), for the check build (check::wgmma_registers). */
void watch(const Op &o, int group, int in_flight) {
    if (!check::enabled()) return;
    for (int k = 0; k < THREADS; k++)
        check::wgmma_registers(group * THREADS + k, o.d[k], (size_t)(o.n / 2) * sizeof(float), in_flight);
}

int issue(int g, int param, void *const lanes[THREADS], char *msg, size_t msg_len) {
    Warpgroup &wg = groups_[g];
    const WgmmaLane *l0 = (const WgmmaLane *)lanes[0];
    Op o;
    o.group = UNCOMMITTED;
    o.n = param & 0x1ff, o.trans_a = (param >> 9) & 1, o.trans_b = (param >> 10) & 1, o.a_regs = (param >> 11) & 1;
    if (o.n < 8 || o.n > 256 || o.n % 8) {
        snprintf(msg, msg_len, "N = %d: m64nNk16 takes N = 8, 16, ..., 256", o.n);
        return -1;
    }
    if (!wg.fenced) {
        snprintf(msg, msg_len, "no wgmma.fence of this warpgroup since %s: the accumulator and A registers must be "
                 "fenced before a wgmma.mma_async uses them", wg.groups || !wg.inflight.empty() ? "its last "
                 "wgmma.wait_group" : "the kernel's start");
        return -1;
    }
    for (int k = 1; k < THREADS; k++) {
        const WgmmaLane *l = (const WgmmaLane *)lanes[k];
        if (l->desc_b != l0->desc_b || (!o.a_regs && l->desc_a != l0->desc_a)) {
            snprintf(msg, msg_len, "thread %d of the warpgroup passes %s descriptor 0x%016llx, thread 0 0x%016llx: "
                     "a descriptor must be the same in all 128 threads", k, l->desc_b != l0->desc_b ? "B's" : "A's",
                     (unsigned long long)(l->desc_b != l0->desc_b ? l->desc_b : l->desc_a),
                     (unsigned long long)(l->desc_b != l0->desc_b ? l0->desc_b : l0->desc_a));
            return -1;
        }
    }
    if (!dynamic_shared() || !launch_smem()) {
        snprintf(msg, msg_len, "the launch has no dynamic shared memory: wgmma's operands must lie in it on the CPU layer");
        return -1;
    }
    o.da = wgmma_decode(l0->desc_a), o.db = wgmma_decode(l0->desc_b);
    if ((!o.a_regs && check_operand(o.da, "A", o.trans_a, 64, o.chunks, msg, msg_len)) ||
        check_operand(o.db, "B", o.trans_b, o.n, o.chunks, msg, msg_len))
        return -1;
    std::sort(o.chunks.begin(), o.chunks.end());
    o.chunks.erase(std::unique(o.chunks.begin(), o.chunks.end()), o.chunks.end());
    const int regs = o.n / 2;
    o.c.assign((size_t)THREADS * regs, 0.0f);
    for (int k = 0; k < THREADS; k++) {
        const WgmmaLane *l = (const WgmmaLane *)lanes[k];
        o.d[k] = l->d, o.scale_d[k] = l->scale_d != 0;
        memcpy(o.a[k], l->a, sizeof o.a[k]);
        o.chained[k] = 0;
        for (const Op &p : wg.inflight)
            if (p.d[k] == l->d) {
                if (p.n != o.n) {
                    snprintf(msg, msg_len, "thread %d's accumulators are those of an m64n%dk16 still in flight, with a "
                             "different N (%d)", k, p.n, o.n);
                    return -1;
                }
                o.chained[k] = 1;
            }
        if (!o.chained[k]) { /* keep D for the landing; the registers are undefined until then */
            memcpy(&o.c[(size_t)k * regs], l->d, (size_t)regs * sizeof(float));
            for (int i = 0; i < regs; i++) l->d[i] = NAN;
        }
    }
    /* the operands are read by the warpgroup from here to the landing: its first thread's read */
    check::set_thread(g * THREADS);
    mark(o, 1);
    check::set_thread(-1);
    watch(o, g, 1);
    wg.inflight.push_back(std::move(o));
    return 0;
}

/* The product of o, written into each thread's accumulators. */
void land(Op &o) {
    const char *dyn = (const char *)dynamic_shared();
    float A[64][16], B[16][256];
    for (int mn = 0; mn < 64 && !o.a_regs; mn++)
        for (int k = 0; k < 16; k++) {
            uint16_t v;
            memcpy(&v, dyn + element_address(o.da, o.trans_a, mn, k), 2);
            A[mn][k] = bf16_value(v);
        }
    if (o.a_regs)
        for (int th = 0; th < THREADS; th++) {
            const int w = th / 32, g = (th % 32) >> 2, t = th & 3;
            for (int i = 0; i < 8; i++) {
                const uint32_t r = o.a[th][i >> 1];
                A[16 * w + g + 8 * ((i >> 1) & 1)][2 * t + (i & 1) + 8 * (i >> 2)] =
                    bf16_value((uint16_t)((i & 1) ? r >> 16 : r & 0xffffu));
            }
        }
    for (int n = 0; n < o.n; n++)
        for (int k = 0; k < 16; k++) {
            uint16_t v;
            memcpy(&v, dyn + element_address(o.db, o.trans_b, n, k), 2);
            B[k][n] = bf16_value(v);
        }
    const int regs = o.n / 2;
    for (int th = 0; th < THREADS; th++) {
        const int w = th / 32, g = (th % 32) >> 2, t = th & 3;
        for (int i = 0; i < regs; i++) {
            const int row = 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);
            /* chained: D is what the op before it on these accumulators landed (in issue order) */
            const float c = o.chained[th] ? o.d[th][i] : o.c[(size_t)th * regs + i];
            double s = o.scale_d[th] ? (double)c : 0.0;
            for (int k = 0; k < 16; k++) s += (double)A[row][k] * (double)B[k][col]; /* each product exact */
            o.d[th][i] = (float)s;                                                    /* rounded once */
        }
    }
}

} // namespace

WgmmaDesc wgmma_decode(uint64_t desc) {
    WgmmaDesc d;
    d.start = (uint32_t)(desc & 0x3fff) << 4;
    d.lbo = (uint32_t)((desc >> 16) & 0x3fff) << 4;
    d.sbo = (uint32_t)((desc >> 32) & 0x3fff) << 4;
    d.base_offset = (int)((desc >> 49) & 7);
    d.swizzle = (int)(desc >> 62);
    d.reserved = desc & ~(0x3fffull | 0x3fffull << 16 | 0x3fffull << 32 | 7ull << 49 | 3ull << 62);
    return d;
}

uint32_t wgmma_window(const void *p, const char *file, int line) {
    const char *dyn = (const char *)dynamic_shared();
    const uintptr_t a = (uintptr_t)p;
    char why[256];
    if (!dyn || a < (uintptr_t)dyn || a >= (uintptr_t)dyn + launch_smem()) {
        snprintf(why, sizeof why, "wgmma descriptor at %s:%d: %p is not in the launch's dynamic shared memory (the "
                 "CPU layer's shared window for wgmma operands)", file, line, p);
        thread_error(why);
        return 0;
    }
    if (a & 15u) {
        snprintf(why, sizeof why, "wgmma descriptor at %s:%d: tile address %p is not 16-byte aligned", file, line, p);
        thread_error(why);
        return 0;
    }
    return (uint32_t)(a - (uintptr_t)dyn);
}

int wgmma_complete(WarpOp op, int param, int group, void *const lanes[128], char *msg, size_t msg_len) {
    if (trace.size() < 16) trace.push_back({(int)op, param});
    if ((size_t)group >= groups_.size()) groups_.resize((size_t)group + 1, Warpgroup{{}, 0, 0});
    Warpgroup &wg = groups_[group];
    switch (op) {
    case WARP_WGMMA_FENCE: wg.fenced = 1; return 0;
    case WARP_WGMMA_MMA: return issue(group, param, lanes, msg, msg_len);
    case WARP_WGMMA_COMMIT:
        for (Op &o : wg.inflight)
            if (o.group == UNCOMMITTED) o.group = wg.groups;
        wg.groups++; /* an empty group is a group too */
        return 0;
    case WARP_WGMMA_WAIT: {
        if (param < 0 || param > 7) {
            snprintf(msg, msg_len, "wgmma.wait_group %d: N must be 0 to 7", param);
            return -1;
        }
        const uint32_t keep_from = wg.groups > (uint32_t)param ? wg.groups - (uint32_t)param : 0;
        std::vector<Op> left;
        for (Op &o : wg.inflight) {
            if (o.group != UNCOMMITTED && o.group < keep_from) {
                land(o);
                mark(o, 0);
                watch(o, group, 0);
            } else left.push_back(std::move(o));
        }
        wg.inflight.swap(left);
        for (const Warpgroup &w : groups_) /* chunks another op in flight still reads stay marked */
            for (const Op &o : w.inflight) mark(o, 2);
        wg.fenced = 0;
        return 0;
    }
    default: break;
    }
    snprintf(msg, msg_len, "warp operation %d is not a warpgroup instruction", (int)op);
    return -1;
}

void wgmma_block_begin(int threads) {
    for (size_t g = 0; g < groups_.size(); g++)
        for (const Op &o : groups_[g].inflight) mark(o, 0), watch(o, (int)g, 0);
    groups_.assign((size_t)(threads + THREADS - 1) / THREADS, Warpgroup{{}, 0, 0});
}

int wgmma_ptx(WarpOp op, int param, char *buf, size_t len) {
    const int n = param & 0x1ff, ta = (param >> 9) & 1, tb = (param >> 10) & 1, a_regs = (param >> 11) & 1;
    switch (op) {
    case WARP_WGMMA_FENCE: snprintf(buf, len, "wgmma.fence.sync.aligned"); return 0;
    case WARP_WGMMA_COMMIT: snprintf(buf, len, "wgmma.commit_group.sync.aligned"); return 0;
    case WARP_WGMMA_WAIT: snprintf(buf, len, "wgmma.wait_group.sync.aligned %d", param); return 0;
    case WARP_WGMMA_MMA: /* d, a-desc | {a}, b-desc, scale-d, imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b */
        if (a_regs)
            snprintf(buf, len, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16 {%d} {4} r p 1 1 %d", n, n / 2, tb);
        else
            snprintf(buf, len, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16 {%d} r r p 1 1 %d %d", n, n / 2, ta,
                     tb);
        return 0;
    default: break;
    }
    if (len) buf[0] = 0;
    return -1;
}

int wgmma_trace(char *buf, size_t len) {
    size_t used = 0;
    if (len) buf[0] = 0;
    for (size_t i = 0; i < trace.size() && used < len; i++) {
        char one[160];
        if (wgmma_ptx((WarpOp)trace[i].first, trace[i].second, one, sizeof one)) return -1;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " ; " : "", one);
    }
    return trace.empty() || used >= len ? -1 : 0;
}
void wgmma_forget(void) { trace.clear(); }

} // namespace cuda_cpu
