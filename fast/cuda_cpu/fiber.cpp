/* fiber.cpp: kernel launches on the CPU: blocks one at a time, a block's threads as fibers
 * (runtime.h, docs/design/cuda-on-cpu.md "CUDA on the CPU").
 *
 * A block runs warp by warp between barriers: the warps in the order VRL_CUDA_CPU_ORDER
 * gives, and each warp to its next __syncthreads() (or its end) before the next warp
 * starts. Within a warp every runnable lane runs, one at a time in that order, until it
 * reaches a barrier, a warp collective or its end; then the scheduler completes the
 * warp's collectives whose lanes have all arrived (a shuffle is a rendezvous of its lanes:
 * values in, then values out) and runs the warp on. So a collective synchronises its own
 * warp only, as on a GPU, and never stands in for a block barrier. When every warp waits,
 * the barrier is released if every live thread waits at the same one. Grid blocks run in
 * the order VRL_CUDA_CPU_BLOCKS gives (forward, reverse, random[:SEED]). Anything else (threads at different barriers, a thread that exits while others
 * wait, a lane named in a mask that exited or is elsewhere) is an error naming the
 * kernel, the block, the threads and the source lines. mma.sync and ldmatrix
 * (tensor_core.h) are collectives of all 32 lanes whose values point at the lanes'
 * fragments; tensor_core.cpp computes them in place. The wgmma instructions (wgmma.h) are
 * collectives of a warpgroup (4 warps): each warp runs to them like to a barrier, and when
 * every warp of the block waits, a warpgroup whose 128 threads are all at the same wgmma call
 * is completed (wgmma.cpp) and the warps run on, with no barrier released; a warpgroup with a
 * warp elsewhere is an error.
 *
 * An mbarrier wait whose phase has not completed (mbarrier.h) is a scheduling point of its own:
 * the thread stops (AT_MBARRIER) and its warp's round goes on without it; a waiter whose phase
 * has completed is READY again after its warp's round (an arrival by a lane of its own warp)
 * or, once every warp stopped, before any warpgroup op or barrier is resolved, and the warps
 * then run again in a fresh order. So a producer warp and its consumers take turns as their
 * barriers complete, with no barrier released. When every live thread waits and no waiter's
 * phase has completed, no thread can complete one (the layer's bulk copies complete their
 * bytes at the issue): a deadlock, one error naming the waiters and each barrier's state.
 * Kernels without mbarrier waits never enter that state, and the scan is skipped for them.
 *
 * Fibers switch with a dozen instructions of our own (cuda_cpu_switch below: the callee-saved
 * registers and the stack pointer). MXCSR and the x87 control word are not switched: nothing
 * on the CPU layer changes them, and saving them was three quarters of a switch's cost
 * (fldcw and ldmxcsr serialise; perf annotate at faab088).
 *
 * Fibers hand over to one another without the scheduler (next_in_round): a thread that
 * waits switches straight to the next runnable lane of its warp's round (one switch, not
 * two), and a thread that ends runs the next lane that has not started yet on its own stack,
 * with no switch at all, so a kernel without barriers or collectives runs its threads as a
 * plain loop. The order is the scheduler's own (the round's lane order), so the bits are the
 * same in every thread and block order. Under AddressSanitizer every switch goes through the
 * scheduler and is announced with __sanitizer_start/finish_switch_fiber, so stack checks
 * follow the fiber. x86-64 only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <utility>
#include <vector>

#include "fast/cuda_cpu/asan.h"
#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/mbarrier.h"
#include "fast/cuda_cpu/ptx_ops.h"
#include "fast/cuda_cpu/runtime.h"
#include "fast/cuda_cpu/tensor_core.h"
#include "fast/cuda_cpu/wgmma.h"

#if !defined(__x86_64__)
#error "fast/cuda_cpu: the fiber switch is written for x86-64"
#endif

/* cuda_cpu_switch(save, to): push the callee-saved state, store the stack pointer in
 * *save, load `to` and pop the state saved there. cuda_cpu_fiber_start is where a new
 * fiber's first switch returns to: it calls r13(r12) and never returns. */
asm(R"(
    .text
    .p2align 4
    .globl cuda_cpu_switch
    .hidden cuda_cpu_switch
    .type cuda_cpu_switch,@function
cuda_cpu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuda_cpu_switch,.-cuda_cpu_switch

    .p2align 4
    .globl cuda_cpu_fiber_start
    .hidden cuda_cpu_fiber_start
    .type cuda_cpu_fiber_start,@function
cuda_cpu_fiber_start:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size cuda_cpu_fiber_start,.-cuda_cpu_fiber_start
)");
extern "C" void cuda_cpu_switch(void **save, void *to);
extern "C" void cuda_cpu_fiber_start(void);

namespace cuda_cpu {

uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;

namespace {

#if CUDA_CPU_ASAN
const size_t STACK_BYTES = (size_t)1 << 20; /* ASan's redzones make frames several times larger */
#else
const size_t STACK_BYTES = (size_t)256 << 10; /* the attention kernels keep 2 x 128 floats per thread */
#endif
const size_t GUARD_BYTES = 4096;            /* PROT_NONE below each stack: an overflow faults */

enum State { READY, AT_BARRIER, AT_WARP, AT_MBARRIER, DONE };

struct Thread {
    State state;
    uint3 idx;
    char *stack;        /* NULL until the thread first runs */
    void *sp;           /* saved stack pointer while suspended */
    void *fake_stack;   /* ASan's fake stack of this fiber */
    const char *file;   /* where it waits */
    int line;
    WarpOp op;
    unsigned mask;
    uint64_t value, result;
    int param, width;
};

/* The launch in progress. */
struct Block {
    LaunchBody *body;
    const char *kernel;
    std::vector<Thread> t;   /* [threads] by linear index x + y·bx + z·bx·by */
    std::vector<int> order;  /* [threads] the run order of this round */
    Thread *cur;
    void *sched_sp;
    const void *sched_stack_bottom;
    size_t sched_stack_size;
    char msg[768];           /* the error that stopped the block, or "" */
    char *dyn_shared;        /* [smem] bytes, refilled with 0xff per block */
    /* the warp round in progress: lanes w0 + lane_order[0..lanes) run in that order, the one
     * at lane_pos now (next_in_round) */
    std::vector<int> lane_order; /* [lanes] */
    int w0, lanes, lane_pos;
    char *released;          /* a stack whose thread ended, for whoever runs next to free */
    int warpgroup_ops;       /* 1 once a thread of the block posted a wgmma instruction */
    int mbarrier_waits;      /* 1 once a thread of the block waited on an mbarrier phase */
} B;

#if CUDA_CPU_ASAN
const int HANDOVER = 0; /* every switch through the scheduler, announced to ASan */
#else
const int HANDOVER = 1; /* fibers hand over to the next lane themselves (next_in_round) */
#endif

std::vector<char *> free_stacks;

/* Every fiber stack is carved from one reserved region (a block has at most 1024 threads, so
 * at most 1024 stacks are ever live at once: ended threads' stacks are reused), so the
 * checkers can tell a thread's own locals from shared and global memory with one compare
 * (check::fiber_stacks) instead of a search of the tracked allocations. */
const size_t MAX_STACKS = 1024;
char *stack_region;   /* [MAX_STACKS][GUARD_BYTES + STACK_BYTES], reserved on first use */
size_t stacks_made;

char *take_stack(void) {
    if (!free_stacks.empty()) {
        char *s = free_stacks.back();
        free_stacks.pop_back();
        return s;
    }
    const size_t slot = GUARD_BYTES + STACK_BYTES;
    if (!stack_region) {
        void *m = mmap(NULL, MAX_STACKS * slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return NULL;
        stack_region = (char *)m;
        check::fiber_stacks(stack_region, MAX_STACKS * slot);
    }
    if (stacks_made == MAX_STACKS) {
        errno = ENOMEM;
        return NULL;
    }
    char *m = stack_region + stacks_made++ * slot;
    mprotect(m, GUARD_BYTES, PROT_NONE); /* an overflow faults */
    return m + GUARD_BYTES;
}

void asan_start(void **fake_save, const void *bottom, size_t size) {
#if CUDA_CPU_ASAN
    __sanitizer_start_switch_fiber(fake_save, bottom, size);
#else
    (void)fake_save, (void)bottom, (void)size;
#endif
}
void asan_finish(void *fake, const void **bottom, size_t *size) {
#if CUDA_CPU_ASAN
    __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
    (void)fake, (void)bottom, (void)size;
#endif
}

void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whoever runs after a switch frees the stack of a thread that ended before it. */
void after_switch(void) {
    if (B.released) {
        free_stacks.push_back(B.released);
        B.released = NULL;
    }
}

/* t's first frame on a fresh stack: the first switch to it pops r15, r14, r13 = entry,
 * r12 = arg, rbx, rbp and returns into cuda_cpu_fiber_start. 0, or -1 with B.msg set. */
void fiber_main(void *arg);
int start_fiber(Thread *t) {
    t->stack = take_stack();
    if (!t->stack) {
        snprintf(B.msg, sizeof B.msg, "cannot map a %zu KiB fiber stack (%s)", STACK_BYTES >> 10, strerror(errno));
        t->state = DONE;
        return -1;
    }
    /* the stacks are 4 KiB-aligned, so their tops would all share one set of the L1 cache, which
     * every switch between the lanes of a warp then evicts: each lane's stack starts 128 bytes
     * deeper than its neighbour's (32 lanes: 4 KiB, one page, of the 256 KiB) */
    const size_t color = (size_t)((t - B.t.data()) & 31) * 128;
    uint64_t *top = (uint64_t *)(t->stack + STACK_BYTES - color);
    uint64_t *sp = top - 7;
    sp[0] = 0, sp[1] = 0;
    sp[2] = (uint64_t)(uintptr_t)&fiber_main;
    sp[3] = (uint64_t)(uintptr_t)t;
    sp[4] = 0, sp[5] = 0;
    sp[6] = (uint64_t)(uintptr_t)&cuda_cpu_fiber_start;
    t->sp = sp;
    t->fake_stack = NULL;
    return 0;
}

/* t becomes the running thread. */
void enter(Thread *t) {
    B.cur = t;
    thread_idx = t->idx;
    check::set_thread((int)(t - B.t.data()));
}

/* The running thread stopped (waits or ended): close its accesses, then the next READY lane
 * of the round in the round's order, or NULL when the round is over, an error stopped the
 * block, or fibers do not hand over (ASan). The scheduler calls it too, to start a round. */
Thread *next_in_round(void) {
    check::set_thread(-1);
    if (check::op_error()) fail("%s", check::op_error());
    if (B.msg[0]) return NULL;
    while (++B.lane_pos < B.lanes) {
        Thread *u = &B.t[B.w0 + B.lane_order[B.lane_pos]];
        if (u->state == READY) return u;
    }
    return NULL;
}

/* Runs on the fiber: the kernel for one thread; then, while the next lane of the round has
 * not started, that lane's kernel on this same stack; then on to whoever runs next. */
void fiber_main(void *arg) {
    Thread *t = (Thread *)arg;
    asan_finish(NULL, &B.sched_stack_bottom, &B.sched_stack_size);
    after_switch();
    for (;;) {
        B.body->run_thread();
        async_copy_thread_end(); /* its cp.async copies never waited for land as it exits */
        t->state = DONE;
        Thread *n = HANDOVER ? next_in_round() : NULL;
        if (n && !n->stack) { /* not started: it runs here, as the next iteration of a loop */
            n->stack = t->stack;
            t->stack = NULL;
            t = n;
            enter(t);
            continue;
        }
        B.released = t->stack; /* freed by whoever runs next, once this stack is left */
        t->stack = NULL;
        static void *dead_sp; /* not on this stack: nothing of the frame must outlive it */
        if (n) {
            enter(n);
            cuda_cpu_switch(&dead_sp, n->sp);
        } else {
            asan_start(NULL, B.sched_stack_bottom, B.sched_stack_size); /* NULL: this fiber ends */
            cuda_cpu_switch(&dead_sp, B.sched_sp);
        }
        __builtin_unreachable();
    }
}

/* From the scheduler: run t (and the lanes it hands over to) until the round is over. */
void resume(Thread *t) {
    if (!t->stack && start_fiber(t) < 0) return;
    enter(t);
    void *fake = NULL;
    asan_start(&fake, t->stack, STACK_BYTES);
    cuda_cpu_switch(&B.sched_sp, t->sp);
    asan_finish(fake, NULL, NULL);
    after_switch();
}

/* From the fiber: wait at a barrier or collective (state and site already set); the next
 * lane of the round runs, or the scheduler when the round is over. */
uint64_t suspensions; /* scheduling_events(): mbarrier.cpp's test_wait spin check */

void suspend(Thread *t) {
    suspensions++;
    Thread *n = HANDOVER ? next_in_round() : NULL;
    if (n && !n->stack && start_fiber(n) < 0) n = NULL;
    if (n) {
        enter(n);
        cuda_cpu_switch(&t->sp, n->sp);
    } else {
        asan_start(&t->fake_stack, B.sched_stack_bottom, B.sched_stack_size);
        cuda_cpu_switch(&t->sp, B.sched_sp);
        asan_finish(t->fake_stack, &B.sched_stack_bottom, &B.sched_stack_size);
    }
    after_switch();
}

void thread_name(const Thread *t, char *buf, size_t n) {
    snprintf(buf, n, "thread (%u,%u,%u)", t->idx.x, t->idx.y, t->idx.z);
}

const char *short_file(const char *f) {
    const char *s = strstr(f, "fast/");
    return s ? s : f;
}

void fail(const char *fmt, ...) {
    if (B.msg[0]) return; /* the first error is the one to read */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(B.msg, sizeof B.msg, fmt, ap);
    va_end(ap);
}

/* Where a thread is, for messages. */
void where(const Thread *t, char *buf, size_t n) {
    char name[64];
    thread_name(t, name, sizeof name);
    if (t->state == DONE) snprintf(buf, n, "%s has exited", name);
    else if (t->state == AT_BARRIER) snprintf(buf, n, "%s waits at __syncthreads() %s:%d", name, short_file(t->file), t->line);
    else if (t->state == AT_WARP) snprintf(buf, n, "%s waits at a warp collective %s:%d", name, short_file(t->file), t->line);
    else if (t->state == AT_MBARRIER)
        snprintf(buf, n, "%s waits for an mbarrier phase at %s:%d", name, short_file(t->file), t->line);
    else snprintf(buf, n, "%s is running", name);
}

/* mma.sync and ldmatrix: collectives of the whole warp whose lanes post pointers to their
 * fragments (tensor_core.h). */
int is_warpgroup_op(WarpOp op) {
    return op == WARP_WGMMA_FENCE || op == WARP_WGMMA_MMA || op == WARP_WGMMA_COMMIT || op == WARP_WGMMA_WAIT;
}
int is_matrix_op(WarpOp op) { return op == WARP_MMA_BF16 || op == WARP_LDMATRIX || is_warpgroup_op(op); }
const char *matrix_op_name(const Thread *t) {
    if (t->op == WARP_MMA_BF16) return "mma.sync.m16n8k16 (bf16)";
    if (t->op == WARP_WGMMA_FENCE) return "wgmma.fence";
    if (t->op == WARP_WGMMA_MMA) return "wgmma.mma_async";
    if (t->op == WARP_WGMMA_COMMIT) return "wgmma.commit_group";
    if (t->op == WARP_WGMMA_WAIT) return "wgmma.wait_group";
    static const char *const names[2][5] = {{"", "ldmatrix.x1", "ldmatrix.x2", "", "ldmatrix.x4"},
                                            {"", "ldmatrix.x1.trans", "ldmatrix.x2.trans", "", "ldmatrix.x4.trans"}};
    return names[(t->param & 8) != 0][t->param & 7];
}

/* The lane a collective reads for `lane` (its own when the source is outside its segment of
 * width lanes). width is a power of two (resolve_warp checks it first), so segments are masks:
 * the divisions this took before were a tenth of a shuffle's cost. */
int source_lane(const Thread *t, int lane) {
    const int w = t->width, seg = lane & ~(w - 1);
    int src = lane;
    switch (t->op) {
    case WARP_SHFL_IDX: src = seg + (t->param & (w - 1)); break;
    case WARP_SHFL_UP: src = lane - t->param >= seg ? lane - t->param : lane; break;
    case WARP_SHFL_DOWN: src = lane + t->param < seg + w ? lane + t->param : lane; break;
    case WARP_SHFL_XOR: src = ((lane ^ t->param) & ~(w - 1)) > seg ? lane : lane ^ t->param; break;
    default: break;
    }
    return src;
}

/* Complete every collective of the warp starting at thread w0 whose lanes have all
 * arrived; 1 if any did. */
int resolve_warp(int w0) {
    const int n = (int)B.t.size();
    int any = 0;
    char a[160], b[160];
    {
        const int lanes = n - w0 < 32 ? n - w0 : 32;
        for (int l = 0; l < lanes; l++) {
            Thread *t = &B.t[w0 + l];
            if (t->state != AT_WARP) continue;
            const unsigned mask = t->mask;
            if (!(mask >> l & 1u)) {
                thread_name(t, a, sizeof a);
                fail("%s calls a warp collective at %s:%d with mask 0x%08x, which does not name its own lane %d", a,
                     short_file(t->file), t->line, mask, l);
                return 0;
            }
            if (t->width < 1 || t->width > 32 || (t->width & (t->width - 1))) {
                thread_name(t, a, sizeof a);
                fail("%s: shuffle width %d at %s:%d is not a power of two <= 32", a, t->width, short_file(t->file),
                     t->line);
                return 0;
            }
            if (is_matrix_op(t->op) && lanes < 32) {
                thread_name(t, a, sizeof a);
                fail("%s: %s at %s:%d needs all 32 lanes of its warp, but this warp has %d (a block of %d threads)", a,
                     matrix_op_name(t), short_file(t->file), t->line, lanes, n);
                return 0;
            }
            int complete = 1;
            for (int k = 0; k < 32; k++) {
                if (!(mask >> k & 1u)) continue;
                if (k >= lanes) {
                    thread_name(t, a, sizeof a);
                    fail("%s: mask 0x%08x at %s:%d names lane %d, which this block (%d threads) does not have", a,
                         mask, short_file(t->file), t->line, k, n);
                    return 0;
                }
                const Thread *u = &B.t[w0 + k];
                if (u->state == DONE) {
                    thread_name(t, a, sizeof a);
                    where(u, b, sizeof b);
                    fail("%s waits at a warp collective %s:%d (mask 0x%08x) but lane %d: %s", a, short_file(t->file),
                         t->line, mask, k, b);
                    return 0;
                }
                if (u->state != AT_WARP) {
                    complete = 0;
                    continue;
                }
                if (u->mask != mask || u->op != t->op || u->line != t->line ||
                    (u->file != t->file && strcmp(u->file, t->file)) || (is_matrix_op(t->op) && u->param != t->param)) {
                    thread_name(t, a, sizeof a);
                    where(u, b, sizeof b);
                    if (is_matrix_op(t->op) && is_matrix_op(u->op))
                        fail("lanes of one warp at different tensor-core calls: %s waits at %s:%d (%s), %s (%s)", a,
                             short_file(t->file), t->line, matrix_op_name(t), b, matrix_op_name(u));
                    else
                        fail("lanes of one warp at different collectives: %s waits at %s:%d (mask 0x%08x), %s (mask "
                             "0x%08x)",
                             a, short_file(t->file), t->line, mask, b, u->mask);
                    return 0;
                }
            }
            if (!complete) continue;
            if (is_warpgroup_op(t->op)) continue; /* the warp is there; its warpgroup: resolve_warpgroups */
            if (is_matrix_op(t->op)) { /* all 32 lanes are here (mask 0xffffffff): compute in place */
                void *frag[32];
                char why[256];
                for (int k = 0; k < 32; k++) frag[k] = (void *)(uintptr_t)B.t[w0 + k].value;
                if (tensor_core_complete(t->op, t->param, frag, why, sizeof why)) {
                    thread_name(t, a, sizeof a);
                    fail("%s: %s at %s:%d: %s", a, matrix_op_name(t), short_file(t->file), t->line, why);
                    return 0;
                }
                for (int k = 0; k < 32; k++) B.t[w0 + k].state = READY;
                any = 1;
                continue;
            }
            /* every lane has posted its value: hand out the results */
            uint64_t ballot = 0;
            for (int k = 0; k < 32; k++)
                if (mask >> k & 1u) ballot |= (B.t[w0 + k].value & 1u) << k;
            for (int k = 0; k < 32; k++) {
                if (!(mask >> k & 1u)) continue;
                Thread *u = &B.t[w0 + k];
                if (u->op == WARP_BALLOT) u->result = ballot;
                else if (u->op == WARP_SYNC) u->result = 0;
                else {
                    const int src = source_lane(u, k);
                    if (!(mask >> src & 1u)) {
                        thread_name(u, b, sizeof b);
                        fail("%s: the shuffle at %s:%d reads lane %d, which mask 0x%08x does not name", b,
                             short_file(u->file), u->line, src, mask);
                        return 0;
                    }
                    u->result = B.t[w0 + src].value;
                }
                u->state = READY;
            }
            any = 1;
        }
    }
    return any;
}

/* Once every warp waits: complete each warpgroup whose 128 threads all wait at the same wgmma
 * call (wgmma.h); a warpgroup with some threads at a wgmma call and others anywhere else is an
 * error (the others cannot reach it: they wait at a barrier or another call, or have exited).
 * 1 if any completed, 0 if none did (or an error, B.msg set). */
int resolve_warpgroups(void) {
    const int n = (int)B.t.size();
    int any = 0;
    char a[200], b[200];
    if (!B.warpgroup_ops) return 0; /* the blocks of every kernel without wgmma: nothing to scan */
    for (int g0 = 0; g0 < n; g0 += 128) {
        const Thread *first = NULL;
        for (int k = g0; k < n && k < g0 + 128 && !first; k++)
            if (B.t[k].state == AT_WARP && is_warpgroup_op(B.t[k].op)) first = &B.t[k];
        if (!first) continue;
        thread_name(first, a, sizeof a);
        if (n - g0 < 128) {
            fail("%s: %s at %s:%d is a warpgroup instruction: it needs 128 threads (4 whole warps), but this "
                 "warpgroup has %d (a block of %d threads)",
                 a, matrix_op_name(first), short_file(first->file), first->line, n - g0, n);
            return 0;
        }
        for (int k = g0; k < g0 + 128; k++) {
            const Thread *u = &B.t[k];
            if (u->state == AT_WARP && u->op == first->op && u->param == first->param && u->line == first->line &&
                (u->file == first->file || !strcmp(u->file, first->file)))
                continue;
            where(u, b, sizeof b);
            fail("warpgroup divergence: %s waits at %s %s:%d, but %s (warp %d of the warpgroup of threads %d..%d)", a,
                 matrix_op_name(first), short_file(first->file), first->line, b, (k - g0) / 32, g0, g0 + 127);
            return 0;
        }
        void *lanes[128];
        char why[384];
        for (int k = 0; k < 128; k++) lanes[k] = (void *)(uintptr_t)B.t[g0 + k].value;
        if (wgmma_complete(first->op, first->param, g0 / 128, lanes, why, sizeof why)) {
            fail("%s: %s at %s:%d: %s", a, matrix_op_name(first), short_file(first->file), first->line, why);
            return 0;
        }
        if (check::op_error()) { /* the operands' read at the issue hit a hazard */
            fail("%s", check::op_error());
            return 0;
        }
        for (int k = g0; k < g0 + 128; k++) B.t[k].state = READY;
        any = 1;
    }
    return any;
}

/* Threads [lo, hi) waiting on an mbarrier phase that has completed run on; 1 if any does. */
int wake_mbarrier_waiters(int lo, int hi) {
    if (!B.mbarrier_waits) return 0; /* every kernel without mbarrier waits: nothing to scan */
    int any = 0;
    for (int k = lo; k < hi; k++) {
        Thread &t = B.t[k];
        if (t.state == AT_MBARRIER && mbarrier_phase_done((const void *)(uintptr_t)t.value, (uint32_t)t.param))
            t.state = READY, any = 1;
    }
    return any;
}

/* Every live thread waits, some on mbarrier phases none can complete: one line naming the
 * first waiter and the state of each barrier waited on (the first 3), and the other threads. */
void mbarrier_deadlock(void) {
    char a[200], bars[3][200], other[200] = "";
    const void *seen[3] = {NULL, NULL, NULL};
    int nbars = 0, waiters = 0;
    const Thread *first = NULL;
    for (const Thread &t : B.t) {
        if (t.state != AT_MBARRIER) {
            if (!other[0] && t.state != DONE) where(&t, other, sizeof other);
            continue;
        }
        waiters++;
        if (!first) first = &t;
        const void *bar = (const void *)(uintptr_t)t.value;
        int known = 0;
        for (int i = 0; i < nbars; i++) known |= seen[i] == bar;
        if (!known && nbars < 3) {
            seen[nbars] = bar;
            mbarrier_describe(bar, bars[nbars], sizeof bars[0]);
            nbars++;
        }
    }
    where(first, a, sizeof a);
    fail("deadlock: %d %s for mbarrier phases that no thread can complete: %s (parity %d); %s%s%s%s%s%s%s",
         waiters, waiters == 1 ? "thread waits" : "threads wait", a, first->param, bars[0], nbars > 1 ? "; " : "", nbars > 1 ? bars[1] : "", nbars > 2 ? "; " : "",
         nbars > 2 ? bars[2] : "", other[0] ? "; and " : "", other);
}

/* Release the barrier if every live thread waits at the same one; else an error. */
void resolve_barrier(void) {
    const Thread *first = NULL, *exited = NULL;
    char a[200], b[200];
    for (const Thread &t : B.t)
        if (t.state == AT_MBARRIER) {
            mbarrier_deadlock();
            return;
        }
    for (const Thread &t : B.t) {
        if (t.state == DONE) {
            if (!exited) exited = &t;
            continue;
        }
        if (t.state == AT_WARP) {
            where(&t, a, sizeof a);
            fail("deadlock: %s whose lanes never all arrive (mask 0x%08x)", a, t.mask);
            return;
        }
        if (!first) first = &t;
        else if (t.line != first->line || (t.file != first->file && strcmp(t.file, first->file))) {
            where(first, a, sizeof a);
            where(&t, b, sizeof b);
            fail("divergent barrier: %s, %s", a, b);
            return;
        }
    }
    if (first && exited) {
        where(first, a, sizeof a);
        where(exited, b, sizeof b);
        fail("divergent barrier: %s, %s", a, b);
        return;
    }
    for (Thread &t : B.t)
        if (t.state == AT_BARRIER) t.state = READY;
}

/* ------------------------------------------------------------------ thread order */

uint64_t rng_state;   /* 0 until the first launch seeds it */
uint64_t block_rng;   /* the block order's own sequence */

uint64_t next_random(uint64_t *state) { /* xorshift64*: a fixed, seedable sequence */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

/* order[0..n) := 0..n-1 forward, reversed, or shuffled from *state */
void make_order(std::vector<int> &order, int n, OrderKind kind, uint64_t *state) {
    order.resize(n);
    for (int i = 0; i < n; i++) order[i] = kind == ORDER_REVERSE ? n - 1 - i : i;
    if (kind == ORDER_RANDOM)
        for (int i = n - 1; i > 0; i--) std::swap(order[i], order[(int)(next_random(state) % (uint64_t)(i + 1))]);
}

/* Unpoison abandoned fiber stacks so the next fibers start clean (ASan). */
void forget_stacks(void) {
    for (Thread &t : B.t)
        if (t.stack) {
#if CUDA_CPU_ASAN
            __asan_unpoison_memory_region(t.stack, STACK_BYTES);
#endif
            free_stacks.push_back(t.stack);
            t.stack = NULL;
        }
}

/* Run the warp starting at thread w0 until every lane waits at a barrier or has exited,
 * completing its own collectives on the way (they synchronise its lanes only). Each round
 * runs the READY lanes once in a fresh lane order; the lanes hand over to one another
 * (next_in_round), so the scheduler is back only when the round is over. */
void run_warp(int w0) {
    const int n = (int)B.t.size(), lanes = n - w0 < 32 ? n - w0 : 32;
    const OrderKind kind = order_config().kind;
    do {
        make_order(B.lane_order, lanes, kind, &rng_state);
        B.w0 = w0, B.lanes = lanes, B.lane_pos = -1;
        Thread *t;
        while (!B.msg[0] && (t = next_in_round())) resume(t);
    } while (!B.msg[0] && (resolve_warp(w0) || wake_mbarrier_waiters(w0, w0 + lanes)));
}

/* One block, warp by warp between barriers, the warps and their lanes in the thread
 * order; 0, or -1 with B.msg set. */
int run_block(void) {
    const unsigned bx = block_dim.x, by = block_dim.y;
    const int n = (int)(bx * by * block_dim.z), warps = (n + 31) / 32;
    B.t.assign(n, Thread());
    for (int i = 0; i < n; i++) {
        Thread &t = B.t[i];
        t.state = READY;
        t.idx = uint3{(unsigned)i % bx, (unsigned)i / bx % by, (unsigned)i / (bx * by)};
    }
    if (B.dyn_shared) memset(B.dyn_shared, 0xff, launch_smem()); /* shared memory starts as garbage (NaN) */
    check::block_begin(block_idx);
    async_copy_block_begin(n);
    wgmma_block_begin(n);
    mbarrier_block_begin();
    B.warpgroup_ops = 0;
    B.mbarrier_waits = 0;
    for (;;) {
        make_order(B.order, warps, order_config().kind, &rng_state);
        std::vector<int> warp_order = B.order;
        for (int i = 0; i < warps && !B.msg[0]; i++) run_warp(warp_order[i] * 32);
        if (B.msg[0]) break;
        int live = 0;
        for (const Thread &t : B.t) live += t.state != DONE;
        if (!live) return 0;
        if (wake_mbarrier_waiters(0, n)) continue; /* a phase completed: its waiters run on */
        if (resolve_warpgroups()) continue; /* not a barrier: the warps run on */
        if (B.msg[0]) break;
        resolve_barrier();
        if (B.msg[0]) break;
        for (const Thread &t : B.t)
            if (t.state != DONE) {
                check::barrier_released(t.file, t.line);
                break;
            }
    }
    forget_stacks();
    return -1;
}

} // namespace

void reseed_thread_order(void) {
    rng_state = order_config().seed * 0x9e3779b97f4a7c15ull + 1;
    block_rng = block_order_config().seed * 0xbf58476d1ce4e5b9ull + 1;
}

/* ------------------------------------------------------------------ called from kernels */

void syncthreads(const char *file, int line) {
    Thread *t = B.cur;
    t->state = AT_BARRIER;
    t->file = file, t->line = line;
    suspend(t);
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int param, int width, const char *file, int line) {
    Thread *t = B.cur;
    t->state = AT_WARP;
    t->op = op, t->mask = mask, t->value = value, t->param = param, t->width = width;
    if (is_warpgroup_op(op)) B.warpgroup_ops = 1;
    t->file = file, t->line = line;
    suspend(t);
    return t->result;
}

void mbarrier_block_thread(const void *bar, uint32_t parity, const char *file, int line) {
    Thread *t = B.cur;
    t->state = AT_MBARRIER;
    t->value = (uint64_t)(uintptr_t)bar, t->param = (int)(parity & 1u);
    t->file = file, t->line = line;
    B.mbarrier_waits = 1;
    suspend(t);
}

uint64_t scheduling_events(void) { return suspensions; }

void *dynamic_shared(void) { return B.dyn_shared; }

void thread_error(const char *what) {
    char name[64] = "the host";
    if (B.cur) thread_name(B.cur, name, sizeof name);
    fail("%s: %s", name, what);
}

int vector_misaligned(const void *p, unsigned bytes, int write, const char *file, int line) {
    if ((uintptr_t)p % bytes == 0) return 0;
    char name[64] = "the host";
    if (B.cur) thread_name(B.cur, name, sizeof name);
    fail("%s: a %u-byte vector %s at %s:%d of address %p, which is not %u-byte aligned (a GPU faults)", name, bytes,
         write ? "store" : "load", short_file(file), line, p, bytes);
    return 1;
}

/* ------------------------------------------------------------------ the grid */

int run_grid(const char *kernel, dim3 grid, dim3 block, LaunchBody *body, char *dyn_shared, char *msg, size_t msg_len) {
    if (!rng_state) reseed_thread_order();
    B.body = body;
    B.kernel = kernel;
    B.msg[0] = '\0';
    B.dyn_shared = dyn_shared;
    grid_dim = grid, block_dim = block;
    check::launch_shared(dyn_shared, launch_smem());
    /* blocks in the block order (VRL_CUDA_CPU_BLOCKS), by linear index x + y·gx + z·gx·gy */
    const OrderConfig &bo = block_order_config();
    const uint64_t blocks = (uint64_t)grid.x * grid.y * grid.z;
    std::vector<uint64_t> order;
    if (bo.kind == ORDER_RANDOM) {
        order.resize(blocks);
        for (uint64_t i = 0; i < blocks; i++) order[i] = i;
        for (uint64_t i = blocks - 1; i > 0 && blocks > 1; i--)
            std::swap(order[i], order[next_random(&block_rng) % (i + 1)]);
    }
    for (uint64_t i = 0; i < blocks; i++) {
        const uint64_t k = bo.kind == ORDER_FORWARD ? i : bo.kind == ORDER_REVERSE ? blocks - 1 - i : order[i];
        const unsigned x = (unsigned)(k % grid.x), y = (unsigned)(k / grid.x % grid.y), z = (unsigned)(k / ((uint64_t)grid.x * grid.y));
        block_idx = uint3{x, y, z};
        if (run_block() < 0) {
            wgmma_block_begin(0); /* drop what is in flight */
            snprintf(msg, msg_len, "kernel %s, block (%u,%u,%u): %s", kernel, x, y, z, B.msg);
            return -1;
        }
    }
    wgmma_block_begin(0); /* ops never waited for are dropped with their block */
    return 0;
}

} // namespace cuda_cpu
