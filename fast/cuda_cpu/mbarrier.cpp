/* mbarrier.cpp: the running block's mbarriers and the bulk copies each phase tracks (mbarrier.h).
 * Everything here runs on the fiber of the thread that executes the instruction, so a phase that
 * completes lands its copies as that thread's action; fiber.cpp wakes the waiters afterwards. */
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/mbarrier.h"
#include "fast/cuda_cpu/runtime.h"
#include "fast/cuda_cpu/tensor_core.h" /* in_shared_memory */

namespace cuda_cpu {

namespace {

const uint32_t MAX_COUNT = (1u << 20) - 1; /* PTX ISA §9.7.13.15.2: counts and |tx-count| below 2^20 */

struct Bulk {
    char *dst;
    std::vector<char> data; /* [bytes] read from the source at the issue */
};

struct Barrier {
    uintptr_t addr;
    uint32_t expected, pending, phase;
    int64_t tx;                /* expected minus completed transaction bytes of the phase in progress */
    std::vector<Bulk> copies;  /* the bulk copies the phase in progress tracks, in issue order */
};

std::vector<Barrier> barriers; /* of the running block, in init order */
uint64_t land_rng;             /* the random landing order's own sequence */

uint64_t ops_done;               /* mbarrier operations so far (test_wait's spin check) */
uintptr_t spin_bar;              /* the barrier of the last test_wait that answered "not yet" */
uint64_t spin_events;            /* scheduling_events() + ops_done then */
uint64_t spin_thread;            /* and its thread (linear index in the block) */

char trace[16][128]; /* the longest, cp.async.bulk.tensor.2d's, is 96 characters */
int traced;

/* "the mbarrier at shared offset 64" (dynamic shared memory) or at an address */
void bar_name(const void *bar, char *buf, size_t len) {
    const uintptr_t a = (uintptr_t)bar, dyn = (uintptr_t)dynamic_shared();
    if (dyn && a >= dyn && a < dyn + launch_smem()) snprintf(buf, len, "the mbarrier at shared offset %zu", (size_t)(a - dyn));
    else snprintf(buf, len, "the mbarrier at %p", bar);
}

void record(const char *ins) {
    if (thread_idx.x | thread_idx.y | thread_idx.z || traced == 16) return;
    snprintf(trace[traced++], sizeof trace[0], "%s", ins);
}

/* The running thread misused an instruction: "<what> <the barrier><detail> (at file:line)". */
void misuse(const char *file, int line, const void *bar, const char *what, const char *detail) {
    char name[96], why[512];
    bar_name(bar, name, sizeof name);
    const char *f = strstr(file, "conformance/") ? strstr(file, "conformance/") : strstr(file, "fast/");
    snprintf(why, sizeof why, "%s %s%s (at %s:%d)", what, name, detail, f ? f : file, line);
    thread_error(why);
}

Barrier *find(const void *bar) {
    for (Barrier &b : barriers)
        if (b.addr == (uintptr_t)bar) return &b;
    return NULL;
}

/* The barrier at bar, or NULL after reporting the misuse. */
Barrier *initialised(const void *bar, const char *what, const char *file, int line) {
    Barrier *b = find(bar);
    if (!b) misuse(file, line, bar, what, ": it was never initialised (mbarrier.init) in this block");
    return b;
}

/* The phase in progress completes if nothing is pending: its copies land in the thread order's
 * order (forward: issue order), then the next phase starts. */
void maybe_complete(Barrier &b) {
    if (b.pending || b.tx) return;
    std::vector<size_t> order(b.copies.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    const OrderConfig &oc = order_config();
    if (oc.kind == ORDER_REVERSE) std::reverse(order.begin(), order.end());
    else if (oc.kind == ORDER_RANDOM) {
        if (!land_rng) land_rng = oc.seed * 0x94d049bb133111ebull + 1;
        for (size_t i = order.size(); i > 1; i--) {
            land_rng ^= land_rng >> 12, land_rng ^= land_rng << 25, land_rng ^= land_rng >> 27;
            std::swap(order[i - 1], order[(land_rng * 2685821657736338717ull) % i]);
        }
    }
    for (size_t i : order) {
        Bulk &c = b.copies[i];
        memcpy(c.dst, c.data.data(), c.data.size());
        check::bulk_copy_bytes(c.dst, c.data.size(), 0);
    }
    b.copies.clear();
    b.phase++, b.pending = b.expected, b.tx = 0;
}

} // namespace

void mbarrier_init(uint64_t *bar, uint32_t count, const char *file, int line) {
    record("mbarrier.init.shared.b64 [1] r");
    ops_done++;
    if (((uintptr_t)bar & 7u) || !in_shared_memory(bar, 8)) {
        misuse(file, line, bar, "mbarrier.init on", ": not an 8-byte aligned object in shared memory");
        return;
    }
    if (count < 1 || count > MAX_COUNT) {
        char d[64];
        snprintf(d, sizeof d, " with count %u (1 to 2^20 - 1)", count);
        misuse(file, line, bar, "mbarrier.init of", d);
        return;
    }
    Barrier *b = find(bar);
    if (!b) {
        barriers.push_back(Barrier());
        b = &barriers.back();
    }
    b->addr = (uintptr_t)bar, b->expected = b->pending = count, b->phase = 0, b->tx = 0;
    b->copies.clear();
}

uint64_t mbarrier_arrive(uint64_t *bar, int expect_tx, uint32_t tx_bytes, const char *file, int line) {
    record(expect_tx ? "mbarrier.arrive.expect_tx.shared.b64 r [1] r" : "mbarrier.arrive.shared.b64 r [1]");
    ops_done++;
    Barrier *b = initialised(bar, expect_tx ? "mbarrier.arrive.expect_tx on" : "mbarrier.arrive on", file, line);
    if (!b) return 0;
    char d[160];
    if (b->pending == 0) { /* every arrival of the phase came; it waits for transaction bytes */
        snprintf(d, sizeof d, ": all %u arrivals of phase %u already came (its tx-count is %lld bytes)", b->expected,
                 b->phase, (long long)b->tx);
        misuse(file, line, bar, "an arrival beyond the count on", d);
        return 0;
    }
    if (expect_tx) b->tx += tx_bytes;
    const uint64_t token = b->phase;
    if (--b->pending == 0 && b->tx < 0) {
        snprintf(d, sizeof d, ": phase %u completed %lld more transaction bytes than its expect_tx counts", b->phase,
                 (long long)-b->tx);
        misuse(file, line, bar, "wrong expect_tx on", d);
        return token;
    }
    maybe_complete(*b);
    return token;
}

int mbarrier_phase_done(const void *bar, uint32_t parity) {
    const Barrier *b = find(bar);
    return !b || (b->phase & 1u) != (parity & 1u);
}

int mbarrier_wait(uint64_t *bar, uint32_t parity, int blocking, const char *file, int line) {
    record(blocking ? "mbarrier.try_wait.parity.shared.b64 r [1] r" : "mbarrier.test_wait.parity.shared.b64 r [1] r");
    if (!initialised(bar, blocking ? "mbarrier.try_wait on" : "mbarrier.test_wait on", file, line)) return 1;
    if (mbarrier_phase_done(bar, parity)) return 1;
    if (blocking) {
        mbarrier_block_thread(bar, parity, file, line);
        return 1;
    }
    /* test_wait never blocks. Its thread alone runs until it stops at a scheduling point, so a
     * second "not yet" with no switch and no mbarrier operation since the first is a loop that
     * can never end here: refuse it rather than hang */
    const uint64_t now = scheduling_events() + ops_done;
    const uint64_t who = thread_idx.x + (uint64_t)block_dim.x * (thread_idx.y + (uint64_t)block_dim.y * thread_idx.z);
    if (spin_bar == (uintptr_t)bar && spin_thread == who && spin_events == now) {
        misuse(file, line, bar, "mbarrier.test_wait spins on",
               ": nothing can complete the phase until the thread reaches a scheduling point (on the CPU layer, "
               "wait with mbarrier.try_wait / mbarrier_wait_parity)");
        return 1;
    }
    spin_bar = (uintptr_t)bar, spin_thread = who, spin_events = now;
    return 0;
}

void bulk_copy_global_to_shared(void *dst, const void *src, uint32_t bytes, uint64_t *bar, const char *file,
                                int line) {
    record("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [1] [1] r [1]");
    ops_done++;
    Barrier *b = initialised(bar, "cp.async.bulk completing on", file, line);
    if (!b) return;
    char d[200];
    if (bytes == 0 || bytes % 16 || bytes > MAX_COUNT || ((uintptr_t)dst & 15u) || ((uintptr_t)src & 15u) ||
        !in_shared_memory(dst, bytes)) {
        snprintf(d, sizeof d, " is %u bytes from %p to %p: the size must be a positive multiple of 16, both addresses "
                 "16-byte aligned, the destination in shared memory", bytes, src, dst);
        misuse(file, line, bar, "cp.async.bulk completing on", d);
        return;
    }
    Bulk c;
    c.dst = (char *)dst;
    c.data.assign((const char *)src, (const char *)src + bytes);
    check::op_range(src, bytes, 0);        /* the source is read now, by this launch */
    check::bulk_copy_bytes(dst, bytes, 1); /* in flight until its phase completes */
    b->copies.push_back(std::move(c));
    b->tx -= bytes;
    if (b->pending == 0 && b->tx < 0) { /* a GPU could complete the phase part-way through this copy */
        snprintf(d, sizeof d, ": phase %u completed %lld more transaction bytes than its expect_tx counts", b->phase,
                 (long long)-b->tx);
        misuse(file, line, bar, "wrong expect_tx on", d);
        return;
    }
    maybe_complete(*b);
}

void bulk_copy_chunks(uint64_t *bar, char *const *dst, const unsigned char *data, size_t n, uint32_t tx_bytes,
                      const char *what, const char *file, int line) {
    ops_done++;
    Barrier *b = initialised(bar, what, file, line);
    if (!b) return;
    for (size_t i = 0; i < n; i++) {
        Bulk c;
        c.dst = dst[i];
        c.data.assign(data + 16 * i, data + 16 * i + 16);
        check::bulk_copy_bytes(dst[i], 16, 1); /* in flight until its phase completes */
        b->copies.emplace_back(std::move(c));
    }
    b->tx -= tx_bytes;
    if (b->pending == 0 && b->tx < 0) { /* a GPU could complete the phase part-way through this copy */
        char d[160];
        snprintf(d, sizeof d, ": phase %u completed %lld more transaction bytes than its expect_tx counts", b->phase,
                 (long long)-b->tx);
        misuse(file, line, bar, "wrong expect_tx on", d);
        return;
    }
    maybe_complete(*b);
}

void mbarrier_record(const char *ins) { record(ins); }

void mbarrier_block_begin(void) {
    barriers.clear();
    spin_bar = 0;
    land_rng = 0;
}

void mbarrier_describe(const void *bar, char *buf, size_t len) {
    char name[96];
    bar_name(bar, name, sizeof name);
    const Barrier *b = find(bar);
    if (!b) snprintf(buf, len, "%s (never initialised)", name);
    else
        snprintf(buf, len, "%s (phase %u in progress: %u of %u arrivals and %lld transaction bytes pending)", name,
                 b->phase, b->pending, b->expected, (long long)b->tx);
}

int mbarrier_trace(char *buf, size_t len) {
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < traced; i++) {
        const int n = snprintf(buf + at, len - at, "%s%s", i ? " ; " : "", trace[i]);
        if (n < 0 || (size_t)n >= len - at) return -1;
        at += (size_t)n;
    }
    return traced ? 0 : -1;
}

void mbarrier_forget(void) { traced = 0; }

} // namespace cuda_cpu
