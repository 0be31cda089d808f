/* check.cpp: the hazard checkers of check.h. Compiled without instrumentation in both
 * builds; its __tsan_* callbacks exist only in the check build (VRL_CUDA_CPU_CHECK=1).
 *
 * Shadows:
 *  - every byte of static shared memory (__shared__ is `static`: zero-initialised, so in the
 *    program's .bss, which is shadowed whole; kernels touch no other .bss data but the
 *    layer's own, skipped) and of dynamic shared memory:
 *    the epoch and thread of its last write and of its last read, and whether readers of
 *    several warps saw it. Epochs count barrier releases and block starts, so "written in
 *    this block" is "written at an epoch >= the block's first";
 *  - every 4-byte word of a tracked allocation: the serial numbers of the operations that
 *    last wrote and read it, the block of each (or several), initialised, atomic.
 *    Operations (serial -> stream, position on it, name) are kept in a table, so a word
 *    names the kernel or copy that touched it last.
 * Words are 4 bytes (byte shadows would cost 4x the memory) with a mask of the bytes the
 * last writing and reading block touched, so blocks that write neighbouring bytes (one
 * uint8 flag per row) do not conflict. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/ptx_ops.h"

/* the linker's bounds of the program's .bss, where static __shared__ arrays live */
extern "C" char __bss_start[], _end[];

namespace cuda_cpu {
namespace check {
namespace {

struct SharedByte {
    uint32_t wep, rep; /* epochs of the last write and read */
    uint16_t wth, rth; /* their threads (linear index) */
    int16_t rwarp;     /* the reader's warp in epoch rep; -2: several warps */
    uint8_t pending;   /* 1: thread wth's cp.async (issued at wep) has not landed; stale in a later block */
    uint8_t wgmma;     /* 1: a wgmma.mma_async in flight reads it (wgmma.cpp); also no padding: granules
                        * compare records with memcmp */
};

enum { W_INIT = 1, W_ATOMIC = 2, W_GUARD = 4 };
struct Word {
    uint32_t wop, rop;      /* serials of the last writing and reading operation, 0: none */
    int32_t wblock, rblock; /* their blocks (linear); rblock -2: several */
    uint8_t flags;
    uint8_t wbytes, rbytes; /* which of the 4 bytes wblock wrote, rblock read (blocks may share a word bytewise) */
};

struct Alloc {
    uintptr_t lo, hi; /* [lo, hi) */
    int pinned;
    std::vector<Word> w; /* [(hi - lo + 3) / 4] */
};

struct Op {
    const char *what;
    int stream;   /* index into streams */
    uint32_t pos; /* 1-based position on that stream */
};

struct StreamClock {
    const void *handle; /* NULL: the legacy default stream (index 0) */
    unsigned flags;
    int live;
    std::vector<uint32_t> vc; /* [streams] the last position of each stream this one has seen */
};
struct EventClock {
    const void *handle;
    std::vector<uint32_t> vc;
};
struct PinnedRead { /* an issued cudaMemcpyAsync from pinned memory */
    const char *src;
    size_t bytes;
    uint64_t hash;
    uint32_t op;
};

int on = -1; /* -1 until read */
int hazards;  /* reported so far */
int skip_guards; /* a memset of a whole block passes over its guard zones */
std::vector<Alloc *> allocs; /* sorted by lo */
Alloc *last_hit;
std::vector<Op> ops(1);     /* [serial], serial 0 unused */
std::vector<StreamClock> streams;
std::vector<EventClock> events;
std::vector<uint32_t> host_vc;
std::vector<PinnedRead> pinned_reads;

/* the operation running now */
uint32_t cur_op;
int cur_stream;
int body; /* instrumented accesses count */
char err[640];

/* kernels */
char *dyn_lo;
size_t dyn_len;
uint32_t epoch = 1, block_epoch = 1;
int cur_thread = -1;
uintptr_t stacks_lo; /* fiber.cpp's stack region: a thread's locals, skipped at once */
size_t stacks_len;
int32_t cur_block;
uint3 cur_block_idx;
const char *barrier_file = "the block's start";
int barrier_line;

void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) {
    if (err[0]) return; /* the first hazard is the one to read */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, sizeof err, fmt, ap);
    va_end(ap);
    /* also on stderr, and counted for the exit status: callers may turn the launch error
     * into a return value nobody looks at */
    fprintf(stderr, "vrl cuda-cpu check: %s\n", err);
    hazards++;
}

#if VRL_CUDA_CPU_CHECK
const char *short_file(const char *f) {
    const char *s = strstr(f, "fast/");
    return s ? s : f;
}

void thread_name(int linear, char *buf, size_t n) {
    const unsigned bx = block_dim.x, by = block_dim.y;
    snprintf(buf, n, "thread (%u,%u,%u) of warp %d", (unsigned)linear % bx, (unsigned)linear / bx % by,
             (unsigned)linear / (bx * by), linear / 32);
}
#endif

/* where the access came from, for addr2line -Cfie <binary> <offset> */
const char *layer_reader; /* the instruction the layer reads shared memory for, or NULL (wgmma_operand) */
void code_at(const void *pc, char *buf, size_t n) {
    Dl_info di;
    if (!pc && layer_reader) snprintf(buf, n, "%s", layer_reader);
    else if (pc && dladdr(pc, &di) && di.dli_fname)
        snprintf(buf, n, "code %s+0x%zx", strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname,
                 (size_t)((const char *)pc - (const char *)di.dli_fbase) - 1);
    else snprintf(buf, n, "code ?");
}

int stream_index(const void *handle) {
    for (size_t i = 0; i < streams.size(); i++)
        if (streams[i].live && streams[i].handle == handle) return (int)i;
    StreamClock s = {handle, 0, 1, {}};
    streams.push_back(s);
    return (int)streams.size() - 1;
}

void join(std::vector<uint32_t> &into, const std::vector<uint32_t> &from) {
    if (into.size() < from.size()) into.resize(from.size(), 0);
    for (size_t i = 0; i < from.size(); i++) into[i] = std::max(into[i], from[i]);
}

/* Has the running operation's stream seen operation `op` complete? */
int ordered(uint32_t op) {
    if (!op) return 1;
    const Op &o = ops[op];
    if (o.stream == cur_stream) return 1;
    const std::vector<uint32_t> &vc = streams[cur_stream].vc;
    return (size_t)o.stream < vc.size() && vc[o.stream] >= o.pos;
}

void stream_label(int s, char *buf, size_t n) {
    if (s == 0) snprintf(buf, n, "the default stream");
    else snprintf(buf, n, "stream %d", s);
}

uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* the last gap between tracked blocks a search landed in (host data, constants): [lo, hi) */
uintptr_t miss_lo = 0, miss_hi = 0; /* empty */

Alloc *find(uintptr_t a) {
    if (last_hit && a - last_hit->lo < last_hit->hi - last_hit->lo) return last_hit;
    if (a - miss_lo < miss_hi - miss_lo) return NULL;
    size_t lo = 0, hi = allocs.size();
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (allocs[mid]->hi <= a) lo = mid + 1;
        else hi = mid;
    }
    if (lo < allocs.size() && a >= allocs[lo]->lo) return last_hit = allocs[lo];
    miss_lo = lo ? allocs[lo - 1]->hi : 0;
    miss_hi = lo < allocs.size() ? allocs[lo]->lo : UINTPTR_MAX;
    return NULL;
}

void describe(const Alloc *al, uintptr_t a, char *buf, size_t n) {
    snprintf(buf, n, "byte %zu of a %zu-byte %s block", (size_t)(a - al->lo), (size_t)(al->hi - al->lo),
             al->pinned ? "cudaMallocHost" : "cudaMalloc");
}

/* ------------------------------------------------------------------ global words */

/* The bytes of the word at w that [a, a+n) covers, as a 4-bit mask. */
unsigned byte_mask(uintptr_t w, uintptr_t a, size_t n) {
    unsigned m = 0;
    for (unsigned i = 0; i < 4; i++)
        if (w + i >= a && w + i < a + n) m |= 1u << i;
    return m;
}

void word_access(Alloc *al, uintptr_t a, unsigned bytes, int write, int atomic, int in_kernel, const void *pc) {
    Word &w = al->w[(a - al->lo) >> 2];
    char where[128], code[96], s1[32], s2[32];
    if (w.flags & W_GUARD) {
        if (skip_guards) return;
        describe(al, a, where, sizeof where), code_at(pc, code, sizeof code);
        fail("out of bounds: %s%s %s %s, in a guard zone between two tensors (past the end of one; %s)",
             in_kernel ? "kernel " : "", ops[cur_op].what, write ? "writes" : "reads", where, code);
        return;
    }
    if (!err[0]) {
        const int32_t b = in_kernel ? cur_block : 0;
        const int same_op_other_block = w.wop == cur_op && w.wblock != b && (w.wbytes & bytes);
        if (!write && in_kernel && !(w.flags & W_INIT)) {
            describe(al, a, where, sizeof where), code_at(pc, code, sizeof code);
            fail("uninitialised global read: %s of block %d reads %s, which nothing has written since cudaMalloc (%s)",
                 ops[cur_op].what, b, where, code);
        } else if (same_op_other_block && !(atomic && (w.flags & W_ATOMIC))) {
            describe(al, a, where, sizeof where), code_at(pc, code, sizeof code);
            fail("inter-block race in kernel %s: block %d %s %s, which block %d %s in this launch (%s)",
                 ops[cur_op].what, b, write ? (atomic ? "atomically updates" : "writes") : "reads", where, w.wblock,
                 w.flags & W_ATOMIC ? "updated atomically" : "wrote", code);
        } else if (write && !atomic && w.rop == cur_op && w.rblock != b && (w.rbytes & bytes)) {
            describe(al, a, where, sizeof where), code_at(pc, code, sizeof code);
            fail("inter-block race in kernel %s: block %d writes %s, which %s read in this launch (%s)",
                 ops[cur_op].what, b, where, w.rblock == -2 ? "several blocks" : "another block", code);
        } else if (!ordered(w.wop)) {
            describe(al, a, where, sizeof where);
            stream_label(cur_stream, s1, sizeof s1), stream_label(ops[w.wop].stream, s2, sizeof s2);
            fail("stream race: %s on %s %s %s, last written by %s on %s with no event wait or synchronisation "
                 "between them",
                 ops[cur_op].what, s1, write ? "writes" : "reads", where, ops[w.wop].what, s2);
        } else if (write && w.rop != cur_op && !ordered(w.rop)) {
            describe(al, a, where, sizeof where);
            stream_label(cur_stream, s1, sizeof s1), stream_label(ops[w.rop].stream, s2, sizeof s2);
            fail("stream race: %s on %s writes %s, which %s on %s reads with no event wait or synchronisation "
                 "between them",
                 ops[cur_op].what, s1, where, ops[w.rop].what, s2);
        }
    }
    const int32_t b = in_kernel ? cur_block : 0;
    if (write) {
        if (w.wop == cur_op && w.wblock == b) w.wbytes |= (uint8_t)bytes;
        else w.wbytes = (uint8_t)bytes;
        w.wop = cur_op, w.wblock = b;
        w.flags = W_INIT | (atomic ? W_ATOMIC : 0);
    } else if (!atomic) {
        if (w.rop != cur_op) w.rop = cur_op, w.rblock = b, w.rbytes = (uint8_t)bytes;
        else if (w.rblock != b) w.rblock = -2, w.rbytes |= (uint8_t)bytes;
        else w.rbytes |= (uint8_t)bytes;
    }
}

#if VRL_CUDA_CPU_CHECK /* only the instrumentation's callbacks and the check build use these */
/* ------------------------------------------------------------------ shared bytes */

/* The hazard a shared byte's access makes, reported (the first one only): the slow path of
 * shared_range, out of line so that the loop over an access's bytes stays small. */
__attribute__((noinline, cold)) void shared_report(const SharedByte &s, int write, const void *pc) {
    const int tid = cur_thread, warp = tid >> 5;
    char a[96], b[96], code[96];
    if (err[0]) return;
    if (write && s.wgmma) {
        thread_name(tid, a, sizeof a), code_at(pc, code, sizeof code);
        fail("shared-memory race (write before a wgmma landed) in kernel %s, block (%u,%u,%u): %s %s a byte that a "
             "wgmma.mma_async in flight reads: no wgmma.wait_group has completed it (%s)",
             ops[cur_op].what, cur_block_idx.x, cur_block_idx.y, cur_block_idx.z, a,
             write == 2 ? "issues a cp.async to" : write == 4 ? "issues a bulk copy to" : "writes", code);
        return;
    }
    if (s.pending && s.wep >= block_epoch) { /* write 3 (a landing) cleared its own flag first */
        thread_name(tid, a, sizeof a), thread_name(s.wth, b, sizeof b), code_at(pc, code, sizeof code);
        const int own = s.wth == tid;
        if (s.pending == 2) { /* a bulk copy (mbarrier.cpp): it lands when its mbarrier phase completes */
            fail("shared-memory race (%s a bulk copy landed) in kernel %s, block (%u,%u,%u): %s %s a byte %s%s "
                 "cp.async.bulk has not written yet: the mbarrier phase it completes on has not completed (%s)",
                 write ? "write before" : "read before", ops[cur_op].what, cur_block_idx.x, cur_block_idx.y,
                 cur_block_idx.z, a, write >= 2 ? "issues a copy to" : write ? "writes" : "reads",
                 own ? "its own" : b, own ? "" : "'s", code);
            return;
        }
        fail("shared-memory race (%s a cp.async landed) in kernel %s, block (%u,%u,%u): %s %s a byte %s%s cp.async "
             "has not written yet: no cp.async.wait_group of %s has completed it (%s)",
             write ? "write before" : "read before", ops[cur_op].what, cur_block_idx.x, cur_block_idx.y,
             cur_block_idx.z, a, write == 2 ? "issues a cp.async to" : write ? "writes" : "reads", own ? "its own" : b,
             own ? "" : "'s", own ? "this thread" : b, code);
        return;
    }
    if (!write) {
        if (s.wep < block_epoch) {
            thread_name(tid, a, sizeof a), code_at(pc, code, sizeof code);
            fail("uninitialised shared memory in kernel %s: %s reads a shared byte no thread of block (%u,%u,%u) "
                 "has written (after %s:%d; %s)",
                 ops[cur_op].what, a, cur_block_idx.x, cur_block_idx.y, cur_block_idx.z, short_file(barrier_file), barrier_line, code);
        } else if (s.wep == epoch && s.wth >> 5 != warp) {
            thread_name(tid, a, sizeof a), thread_name(s.wth, b, sizeof b), code_at(pc, code, sizeof code);
            fail("shared-memory race (read after write) in kernel %s, block (%u,%u,%u): %s reads a byte %s wrote, "
                 "with no __syncthreads() between them (since %s:%d; %s)",
                 ops[cur_op].what, cur_block_idx.x, cur_block_idx.y, cur_block_idx.z, a, b, short_file(barrier_file), barrier_line, code);
        }
        return;
    }
    if (s.wep == epoch && s.wth >> 5 != warp) {
        thread_name(tid, a, sizeof a), thread_name(s.wth, b, sizeof b), code_at(pc, code, sizeof code);
        fail("shared-memory race (write after write) in kernel %s, block (%u,%u,%u): %s and %s write one byte "
             "with no __syncthreads() between them (since %s:%d; %s)",
             ops[cur_op].what, cur_block_idx.x, cur_block_idx.y, cur_block_idx.z, a, b, short_file(barrier_file), barrier_line, code);
    } else if (s.rep == epoch && s.rwarp != warp) {
        thread_name(tid, a, sizeof a), thread_name(s.rth, b, sizeof b), code_at(pc, code, sizeof code);
        fail("shared-memory race (write after read) in kernel %s, block (%u,%u,%u): %s writes a byte %s%s read, "
             "with no __syncthreads() between them (since %s:%d; %s)",
             ops[cur_op].what, cur_block_idx.x, cur_block_idx.y, cur_block_idx.z, a, b, s.rwarp == -2 ? " (and other warps)" : "", short_file(barrier_file), barrier_line, code);
    }
}

/* One shared byte's access: a read is a hazard when the byte was never written in this
 * block, or written by another warp since the last barrier; a write when another warp wrote
 * or read it since the last barrier. */
inline void shared_one(SharedByte &s, int write, int tid, int warp, const void *pc) {
    const int pending = s.pending && s.wep >= block_epoch; /* an unlanded cp.async of this block */
    if (!write) {
        if (pending || s.wep < block_epoch || (s.wep == epoch && s.wth >> 5 != warp)) shared_report(s, 0, pc);
        if (s.rep != epoch) s.rep = epoch, s.rwarp = (int16_t)warp, s.rth = (uint16_t)tid;
        else if (s.rwarp != warp) s.rwarp = -2;
    } else {
        /* write 1: a store; 2: a cp.async issued (its bytes pending until it lands); 3: it lands */
        if (write == 3 && s.wth == tid) s.pending = 0; /* its own copy: the bytes it was holding */
        if (s.wgmma || (s.pending && s.wep >= block_epoch) || (s.wep == epoch && s.wth >> 5 != warp) ||
            (s.rep == epoch && s.rwarp != warp))
            shared_report(s, write, pc);
        s.wep = epoch, s.wth = (uint16_t)tid, s.pending = write == 2;
    }
}

/* A shared region's shadow (the program's .bss, where static __shared__ arrays live, or the
 * launch's dynamic shared memory), kept per 4-byte granule: a granule whose 4 bytes have one
 * state (the usual case: kernels move whole floats and 16-byte vectors) is one record, and an
 * access applies the byte rule to it once; a granule whose bytes differ (a 2-byte bf16 store)
 * is split into 4 byte records until an access leaves them equal again. Every answer is the
 * per-byte rule's; the granules only make it 4 times smaller in memory and time (the shared
 * shadow was half of the check build's time at 16 bytes of shadow per byte). */
struct SharedShadow {
    uintptr_t lo, len, base;          /* the region [lo, lo + len); granules from base = lo & ~3 */
    std::vector<SharedByte> gran;     /* [granules] the state of a uniform granule */
    std::vector<uint8_t> split;       /* [granules] 1: its bytes' states are in bytes[] */
    std::vector<SharedByte> bytes;    /* [len] per byte, read only where split */
    void assign(uintptr_t lo_, size_t len_) {
        lo = lo_, len = len_, base = lo & ~(uintptr_t)3;
        const size_t g = (lo + len - base + 3) / 4;
        gran.assign(g, SharedByte());
        split.assign(g, 0);
        bytes.assign(len, SharedByte());
    }
    int contains(uintptr_t a) const { return a - lo < len; }
    /* the wgmma flag of n bytes at a (inside the region) := v; unmarking (v 0, the op landed at
     * the wait of all its warpgroup's warps) also forgets the epoch's reads, the warpgroup's
     * read at the issue among them: a write after the wait is no write-after-read race */
    void set_wgmma(uintptr_t a, size_t n, uint8_t v) {
        const uintptr_t end = std::min(a + n, lo + len);
        for (; a < end; a++) {
            const size_t g = (a - base) >> 2;
            const uintptr_t glo = base + (g << 2);
            if (!split[g]) { /* its bytes take the granule's state, then may differ */
                for (uintptr_t b = std::max(glo, lo); b < std::min(glo + 4, lo + len); b++) bytes[b - lo] = gran[g];
                split[g] = 1;
            }
            SharedByte &s = bytes[a - lo];
            s.wgmma = v;
            if (!v) s.rep = 0;
        }
    }
    /* a bulk copy's n bytes at a: issued (pending 2, any access a hazard until it lands), or
     * landed (check.h, bulk_copy_bytes) */
    void set_bulk(uintptr_t a, size_t n, int issued) {
        const uintptr_t end = std::min(a + n, lo + len);
        for (; a < end; a++) {
            const size_t g = (a - base) >> 2;
            const uintptr_t glo = base + (g << 2);
            if (!split[g]) {
                for (uintptr_t b = std::max(glo, lo); b < std::min(glo + 4, lo + len); b++) bytes[b - lo] = gran[g];
                split[g] = 1;
            }
            SharedByte &s = bytes[a - lo];
            if (issued) {
                if (s.wgmma || (s.pending && s.wep >= block_epoch)) {
                    layer_reader = "the cp.async.bulk issue";
                    shared_report(s, 4, NULL); /* 4: a bulk copy issued */
                    layer_reader = NULL;
                }
                s.pending = 2, s.wep = epoch;
            } else {
                s.pending = 0, s.rep = 0;
                s.wep = epoch > block_epoch ? epoch - 1 : epoch; /* before this interval: no warp's write */
            }
            s.wth = (uint16_t)cur_thread;
        }
    }
    /* n bytes at a (inside the region, clipped to its end) */
    void access(uintptr_t a, size_t n, int write, const void *pc) {
        const int tid = cur_thread, warp = tid >> 5;
        const uintptr_t end = std::min(a + n, lo + len);
        while (a < end) {
            const size_t g = (a - base) >> 2;
            const uintptr_t glo = base + (g << 2), ghi = glo + 4;
            const int whole = glo >= lo && ghi <= lo + len; /* the granule lies inside the region */
            if (!split[g] && a == glo && end >= ghi && whole) {
                shared_one(gran[g], write, tid, warp, pc);
                a = ghi;
                continue;
            }
            if (!split[g]) { /* its bytes take the granule's state */
                for (uintptr_t b = std::max(glo, lo); b < std::min(ghi, lo + len); b++) bytes[b - lo] = gran[g];
                split[g] = 1;
            }
            const uintptr_t stop = std::min(end, ghi);
            for (; a < stop; a++) shared_one(bytes[a - lo], write, tid, warp, pc);
            if (whole && !memcmp(&bytes[glo - lo], &bytes[glo - lo + 1], sizeof(SharedByte)) &&
                !memcmp(&bytes[glo - lo], &bytes[glo - lo + 2], sizeof(SharedByte)) &&
                !memcmp(&bytes[glo - lo], &bytes[glo - lo + 3], sizeof(SharedByte))) {
                gran[g] = bytes[glo - lo]; /* one state again */
                split[g] = 0;
            }
        }
    }
};
SharedShadow static_shared, dyn_shared;

/* threadIdx and the like, and the atomic flag: the layer's, not shared memory */
struct LayerVar {
    const void *p;
    size_t n;
};
const LayerVar layer_vars[] = {{&thread_idx, sizeof thread_idx}, {&block_idx, sizeof block_idx},
                               {&block_dim, sizeof block_dim},   {&grid_dim, sizeof grid_dim},
                               {(const void *)&in_atomic, sizeof in_atomic},
                               {&ptx_last_op, sizeof ptx_last_op}, {&ptx_last_param, sizeof ptx_last_param}};
uintptr_t layer_lo, layer_len; /* the span of them all: one compare rules most accesses out */
int layer_variable(uintptr_t a) {
    for (const LayerVar &x : layer_vars)
        if (a - (uintptr_t)x.p < x.n) return 1;
    return 0;
}
void layer_span(void) {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (const LayerVar &x : layer_vars) lo = std::min(lo, (uintptr_t)x.p), hi = std::max(hi, (uintptr_t)x.p + x.n);
    layer_lo = lo, layer_len = hi - lo;
}

inline void access(const void *p, size_t n, int write, const void *pc) {
    if (!body) return;
    const uintptr_t a = (uintptr_t)p;
    if (a - stacks_lo < stacks_len) return; /* the thread's own stack */
    if (cur_thread >= 0) {
        if (static_shared.contains(a)) {
            if (a - layer_lo < layer_len && layer_variable(a)) return;
            static_shared.access(a, n, write, pc);
            return;
        }
        if (a - (uintptr_t)dyn_lo < dyn_len) {
            /* shadowed by offset (the buffer is malloc's, 16-byte aligned: granules stay aligned) */
            const uintptr_t off = a - (uintptr_t)dyn_lo;
            dyn_shared.access(off, std::min(n, (size_t)(dyn_len - off)), write, pc);
            return;
        }
    }
    Alloc *al = find(a);
    if (!al) return;
    const int atomic = in_atomic != 0;
    for (uintptr_t w = a & ~(uintptr_t)3; w < a + n && w < al->hi; w += 4)
        word_access(al, w, byte_mask(w, a, n), write, atomic, cur_thread >= 0, pc);
}

/* atexit: a program that hit a hazard fails, whatever it made of the error */
void fail_exit(void) {
    if (!hazards) return;
    fprintf(stderr, "vrl cuda-cpu check: %d hazard(s) reported; exit status 66\n", hazards);
    fflush(NULL);
    _exit(66);
}
#endif

} // namespace

/* ------------------------------------------------------------------ the interface */

int enabled(void) {
    if (on < 0) {
#if VRL_CUDA_CPU_CHECK
        const char *v = getenv("VRL_CUDA_CPU_CHECK");
        on = !(v && v[0] == '0' && v[1] == '\0');
        if (on && !(v && !strcmp(v, "report"))) atexit(fail_exit);
        static_shared.assign((uintptr_t)__bss_start, (size_t)(_end - __bss_start));
        dyn_shared.assign(0, CUDA_CPU_MAX_DYNAMIC_SHARED_OPTIN);
        layer_span();
        streams.push_back(StreamClock{NULL, 0, 1, {}});
#else
        on = 0;
#endif
    }
    return on;
}

void track(void *p, size_t bytes, int pinned) {
    if (!enabled() || !p || !bytes) return;
    Alloc *al = new Alloc{(uintptr_t)p, (uintptr_t)p + bytes, pinned, std::vector<Word>((bytes + 3) / 4, Word())};
    if (pinned) /* the host writes pinned memory directly: count it written */
        for (Word &w : al->w) w.flags = W_INIT;
    miss_lo = miss_hi = 0; /* the gaps change */
    allocs.insert(std::upper_bound(allocs.begin(), allocs.end(), al,
                                   [](const Alloc *x, const Alloc *y) { return x->lo < y->lo; }),
                  al);
}

void untrack(void *p) {
    if (!enabled() || !p) return;
    for (size_t i = 0; i < allocs.size(); i++)
        if (allocs[i]->lo == (uintptr_t)p) {
            if (last_hit == allocs[i]) last_hit = NULL;
            miss_lo = miss_hi = 0;
            const char *lo = (const char *)allocs[i]->lo, *hi = (const char *)allocs[i]->hi;
            pinned_reads.erase(std::remove_if(pinned_reads.begin(), pinned_reads.end(),
                                              [&](const PinnedRead &r) { return r.src >= lo && r.src < hi; }),
                               pinned_reads.end());
            delete allocs[i];
            allocs.erase(allocs.begin() + i);
            return;
        }
}

void stream_created(cudaStream_t s, unsigned flags) {
    if (!enabled()) return;
    const int i = stream_index(s);
    streams[i].flags = flags;
    join(streams[i].vc, host_vc);
}

void stream_destroyed(cudaStream_t s) {
    if (!enabled() || !s) return;
    streams[stream_index(s)].live = 0; /* its index stays: words still name its operations */
}

void event_record(cudaEvent_t e, cudaStream_t s) {
    if (!enabled()) return;
    const int si = stream_index(s);
    join(streams[si].vc, host_vc);
    for (EventClock &ec : events)
        if (ec.handle == e) {
            ec.vc = streams[si].vc;
            return;
        }
    events.push_back(EventClock{e, streams[si].vc});
}

void event_destroyed(cudaEvent_t e) {
    if (!enabled()) return;
    events.erase(std::remove_if(events.begin(), events.end(), [&](const EventClock &ec) { return ec.handle == e; }),
                 events.end());
}

void stream_wait(cudaStream_t s, cudaEvent_t e) {
    if (!enabled()) return;
    const int si = stream_index(s);
    for (const EventClock &ec : events)
        if (ec.handle == e) join(streams[si].vc, ec.vc);
}

void host_waits_event(cudaEvent_t e) {
    if (!enabled()) return;
    for (const EventClock &ec : events)
        if (ec.handle == e) join(host_vc, ec.vc);
}

void host_waits_stream(cudaStream_t s) {
    if (!enabled()) return;
    join(host_vc, streams[stream_index(s)].vc);
}

void host_waits_device(void) {
    if (!enabled()) return;
    for (const StreamClock &sc : streams) join(host_vc, sc.vc);
}

void op_begin(cudaStream_t s, const char *what) {
    err[0] = '\0';
    if (!enabled()) return;
    cur_stream = stream_index(s);
    StreamClock &sc = streams[cur_stream];
    join(sc.vc, host_vc); /* issued after everything the host has waited for */
    /* the legacy default stream and blocking streams wait for one another */
    if (cur_stream == 0) {
        for (const StreamClock &o : streams)
            if (o.live && !(o.flags & cudaStreamNonBlocking)) join(streams[0].vc, o.vc);
    } else if (!(sc.flags & cudaStreamNonBlocking))
        join(streams[cur_stream].vc, streams[0].vc);
    std::vector<uint32_t> &vc = streams[cur_stream].vc;
    if (vc.size() < streams.size()) vc.resize(streams.size(), 0);
    vc[cur_stream]++;
    ops.push_back(Op{what, cur_stream, vc[cur_stream]});
    cur_op = (uint32_t)ops.size() - 1;
    /* a pinned buffer an unfinished copy reads must not have changed since it was issued */
    for (size_t i = 0; i < pinned_reads.size();) {
        const PinnedRead &r = pinned_reads[i];
        const Op &o = ops[r.op];
        if ((size_t)o.stream < host_vc.size() && host_vc[o.stream] >= o.pos) {
            pinned_reads.erase(pinned_reads.begin() + (long)i);
            continue;
        }
        if (fnv(r.src, r.bytes) != r.hash) {
            char s1[32];
            stream_label(o.stream, s1, sizeof s1);
            fail("stream race: the host rewrote %zu bytes of pinned memory that %s on %s (issued earlier) may still "
                 "be reading: no cudaEventSynchronize or cudaStreamSynchronize after it (found at %s)",
                 r.bytes, o.what, s1, what);
            pinned_reads.erase(pinned_reads.begin() + (long)i);
            continue;
        }
        i++;
    }
}

const char *op_error(void) { return err[0] ? err : NULL; }

void op_end(void) {
    body = 0;
    cur_thread = -1;
}

void op_range(const void *p, size_t bytes, int write) {
    if (!enabled() || !bytes) return;
    const uintptr_t a = (uintptr_t)p;
    Alloc *al = find(a);
    if (!al) return;
    if (!write && al->pinned) {
        pinned_reads.push_back(PinnedRead{(const char *)p, bytes, fnv((const char *)p, bytes), cur_op});
        return;
    }
    for (uintptr_t w = a & ~(uintptr_t)3; w < a + bytes && w < al->hi; w += 4)
        word_access(al, w, byte_mask(w, a, bytes), write, 0, 0, NULL);
}

void op_memset_range(const void *p, size_t bytes) {
    skip_guards = 1;
    op_range(p, bytes, 1);
    skip_guards = 0;
}

void body_begin(void) { body = enabled(); }
void body_end(void) { body = 0; }

void launch_shared(char *dyn, size_t bytes) {
    dyn_lo = dyn, dyn_len = bytes;
    cur_block = 0;
}

void block_begin(uint3 block) {
    if (!enabled()) return;
    epoch++;
    block_epoch = epoch;
    cur_block_idx = block;
    cur_block = (int32_t)(block.x + block.y * grid_dim.x + block.z * grid_dim.x * grid_dim.y);
    barrier_file = "the block's start", barrier_line = 0;
}

void set_thread(int linear) {
    cur_thread = linear;
    body = on > 0 && linear >= 0;
}

void async_copy_access(const void *p, size_t bytes, int landing) {
#if VRL_CUDA_CPU_CHECK
    if (body) access(p, bytes, landing ? 3 : 2, NULL);
#else
    (void)p, (void)bytes, (void)landing;
#endif
}

void bulk_copy_bytes(const void *p, size_t bytes, int issued) {
#if VRL_CUDA_CPU_CHECK
    if (!enabled() || cur_thread < 0) return;
    const uintptr_t a = (uintptr_t)p;
    if (static_shared.contains(a)) static_shared.set_bulk(a, bytes, issued);
    else if (a - (uintptr_t)dyn_lo < dyn_len) dyn_shared.set_bulk(a - (uintptr_t)dyn_lo, bytes, issued);
#else
    (void)p, (void)bytes, (void)issued;
#endif
}

void wgmma_operand(const void *p, size_t bytes, int mode) {
#if VRL_CUDA_CPU_CHECK
    if (!enabled()) return;
    const uintptr_t a = (uintptr_t)p;
    if (mode == 1) { /* the warpgroup's read (needs the running thread) */
        layer_reader = "the operand read of a wgmma.mma_async its warpgroup issued";
        access(p, bytes, 0, NULL);
        layer_reader = NULL;
    }
    if (static_shared.contains(a)) static_shared.set_wgmma(a, bytes, mode != 0);
    else if (a - (uintptr_t)dyn_lo < dyn_len) dyn_shared.set_wgmma(a - (uintptr_t)dyn_lo, bytes, mode != 0);
#else
    (void)p, (void)bytes, (void)mode;
#endif
}

/* the accumulator ranges in flight, per thread of the block, and how many there are in all */
std::vector<std::vector<std::pair<uintptr_t, uintptr_t>>> acc_ranges;
int acc_watch;

void wgmma_registers(int thread, const void *p, size_t bytes, int in_flight) {
    if (!enabled() || thread < 0) return;
    if ((size_t)thread >= acc_ranges.size()) acc_ranges.resize((size_t)thread + 1);
    std::vector<std::pair<uintptr_t, uintptr_t>> &r = acc_ranges[(size_t)thread];
    const std::pair<uintptr_t, uintptr_t> range{(uintptr_t)p, (uintptr_t)p + bytes};
    if (in_flight) {
        r.push_back(range);
        acc_watch++;
        return;
    }
    for (size_t i = 0; i < r.size(); i++)
        if (r[i] == range) {
            r.erase(r.begin() + (long)i);
            acc_watch--;
            return;
        }
}

/* An access of the running thread to its own stack while some accumulators are in flight. */
void acc_access(const void *p, size_t n, int write, const void *pc) {
#if VRL_CUDA_CPU_CHECK
    const uintptr_t a = (uintptr_t)p;
    if (cur_thread < 0 || (size_t)cur_thread >= acc_ranges.size() || err[0]) return;
    for (const auto &r : acc_ranges[(size_t)cur_thread])
        if (a < r.second && a + n > r.first) {
            char who[96], code[96];
            thread_name(cur_thread, who, sizeof who), code_at(pc, code, sizeof code);
            fail("wgmma accumulators %s before the wait in kernel %s, block (%u,%u,%u): %s %s its accumulator registers "
                 "of a wgmma.mma_async in flight: no wgmma.wait_group has landed it (%s)",
                 write ? "written" : "read", ops[cur_op].what, cur_block_idx.x, cur_block_idx.y, cur_block_idx.z, who,
                 write ? "writes" : "reads", code);
            return;
        }
#else
    (void)p, (void)n, (void)write, (void)pc;
#endif
}

void fiber_stacks(const void *p, size_t bytes) {
    stacks_lo = (uintptr_t)p, stacks_len = bytes;
}

void barrier_released(const char *file, int line) {
    epoch++;
    barrier_file = file, barrier_line = line;
}

} // namespace check

void check::mark_guard(void *p, size_t bytes) {
    if (!check::enabled()) return;
    check::Alloc *al = check::find((uintptr_t)p);
    if (!al) return;
    /* whole words inside the zone only: the tensor before it may end mid-word */
    for (uintptr_t w = ((uintptr_t)p + 3) & ~(uintptr_t)3; w + 4 <= (uintptr_t)p + bytes && w + 4 <= al->hi; w += 4)
        al->w[(w - al->lo) >> 2].flags |= check::W_GUARD;
}

void poison(void *p, size_t bytes) {
    if (!check::enabled()) return;
    memset(p, 0xff, bytes);
    check::Alloc *al = check::find((uintptr_t)p);
    if (!al) return;
    for (uintptr_t w = ((uintptr_t)p + 3) & ~(uintptr_t)3; w + 4 <= (uintptr_t)p + bytes && w + 4 <= al->hi; w += 4) {
        check::Word &x = al->w[(w - al->lo) >> 2];
        if (!(x.flags & check::W_GUARD)) x.flags &= ~check::W_INIT;
    }
}

volatile int in_atomic;

} // namespace cuda_cpu

/* ------------------------------------------------------------------ the instrumentation's callbacks */
#if VRL_CUDA_CPU_CHECK
#define CUDA_CPU_PC __builtin_return_address(0)
extern "C" {
void __tsan_init(void) {}
void __tsan_func_entry(void *) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **, void *) {}
void __tsan_vptr_read(void **) {}
/* the thread's own stack (half of all accesses: its local arrays) and code outside a kernel
 * body are ruled out here, before the call into the checkers */
#define CUDA_CPU_ACCESS(p, n, w)                                                                                  \
    if (!cuda_cpu::check::body) {                                                                                 \
    } else if ((uintptr_t)(p) - cuda_cpu::check::stacks_lo >= cuda_cpu::check::stacks_len)                       \
        cuda_cpu::check::access(p, n, w, CUDA_CPU_PC);                                                            \
    else if (cuda_cpu::check::acc_watch) /* a wgmma's accumulators are in flight (wgmma.cpp) */                 \
        cuda_cpu::check::acc_access(p, n, w, CUDA_CPU_PC)
#define CUDA_CPU_RW(n)                                                                                            \
    void __tsan_read##n(void *p) { CUDA_CPU_ACCESS(p, n, 0); }                                                   \
    void __tsan_write##n(void *p) { CUDA_CPU_ACCESS(p, n, 1); }                                                  \
    void __tsan_unaligned_read##n(void *p) { CUDA_CPU_ACCESS(p, n, 0); }                                         \
    void __tsan_unaligned_write##n(void *p) { CUDA_CPU_ACCESS(p, n, 1); }                                        \
    void __tsan_volatile_read##n(void *p) { CUDA_CPU_ACCESS(p, n, 0); }                                          \
    void __tsan_volatile_write##n(void *p) { CUDA_CPU_ACCESS(p, n, 1); }
CUDA_CPU_RW(1)
CUDA_CPU_RW(2)
CUDA_CPU_RW(4)
CUDA_CPU_RW(8)
CUDA_CPU_RW(16)
void __tsan_read_range(void *p, unsigned long n) { cuda_cpu::check::access(p, n, 0, CUDA_CPU_PC); }
void __tsan_write_range(void *p, unsigned long n) { cuda_cpu::check::access(p, n, 1, CUDA_CPU_PC); }
}
#endif
