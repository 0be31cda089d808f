/* ptx_ops.cpp: cp.async's copies in flight and their groups, per thread of the running block
 * (ptx_ops.h). A copy is held here from its issue until a cp.async.wait_group of its thread
 * covers its group (PTX ISA: wait_group N returns when at most the N most recent groups of
 * the thread are pending; copies not yet committed are not waited for), then written. */
#include <stdio.h>
#include <string.h>

#include <vector>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/ptx_ops.h"
#include "fast/cuda_cpu/tensor_core.h" /* in_shared_memory */

namespace cuda_cpu {

PtxOp ptx_last_op;
int ptx_last_param;

namespace {

const uint32_t UNCOMMITTED = 0xffffffffu;

struct Copy {
    void *dst;
    CopyChunk data;
    uint32_t group; /* the thread's group number, or UNCOMMITTED */
};

struct ThreadCopies {
    std::vector<Copy> inflight; /* in issue order */
    uint32_t groups;            /* groups committed so far */
};

std::vector<ThreadCopies> threads; /* [threads of the block] by linear index */

ThreadCopies &running(void) {
    const size_t linear = thread_idx.x + thread_idx.y * block_dim.x + thread_idx.z * block_dim.x * block_dim.y;
    if (linear >= threads.size()) threads.resize(linear + 1, ThreadCopies{{}, 0}); /* not inside a launch */
    return threads[linear];
}

/* Write the copies of t that `done` selects, in issue order, as the running thread's writes. */
template <class Pred> void land(ThreadCopies &t, Pred done) {
    size_t keep = 0;
    for (size_t i = 0; i < t.inflight.size(); i++) {
        Copy &c = t.inflight[i];
        if (!done(c)) {
            t.inflight[keep++] = c;
            continue;
        }
        memcpy(c.dst, &c.data, sizeof c.data);
        check::async_copy_access(c.dst, sizeof c.data, 1);
    }
    t.inflight.resize(keep);
}

} // namespace

void async_copy_issue(void *dst, const CopyChunk &data, int src_bytes, const void *src, const char *file, int line) {
    ptx_last_op = PTX_CP_ASYNC;
    char why[256];
    if (src_bytes < 0 || src_bytes > 16) {
        snprintf(why, sizeof why, "cp.async at %s:%d copies %d source bytes (0 to 16 for a 16-byte copy)", file, line,
                 src_bytes);
        thread_error(why);
        return;
    }
    if (((uintptr_t)dst & 15u) || !in_shared_memory(dst, 16)) {
        snprintf(why, sizeof why, "cp.async at %s:%d: destination %p is not 16-byte aligned shared memory", file,
                 line, dst);
        thread_error(why);
        return;
    }
    if (src_bytes > 0 && ((uintptr_t)src & 15u)) {
        snprintf(why, sizeof why, "cp.async at %s:%d: source %p is not 16-byte aligned", file, line, src);
        thread_error(why);
        return;
    }
    running().inflight.push_back(Copy{dst, data, UNCOMMITTED});
    check::async_copy_access(dst, 16, 0);
}

void async_copy_commit(void) {
    ptx_last_op = PTX_COMMIT_GROUP;
    ThreadCopies &t = running();
    for (Copy &c : t.inflight)
        if (c.group == UNCOMMITTED) c.group = t.groups;
    t.groups++; /* an empty group is a group too */
}

void async_copy_wait(int n) {
    ptx_last_op = PTX_WAIT_GROUP, ptx_last_param = n;
    ThreadCopies &t = running();
    const uint32_t newest_kept = t.groups > (uint32_t)n ? t.groups - (uint32_t)n : 0; /* groups >= this stay */
    land(t, [&](const Copy &c) { return c.group != UNCOMMITTED && c.group < newest_kept; });
}

void async_copy_block_begin(int n) { threads.assign((size_t)n, ThreadCopies{{}, 0}); }

void async_copy_thread_end(void) {
    if (threads.empty()) return;
    land(running(), [](const Copy &) { return true; });
}

int ptx_last(char *buf, size_t len) {
    switch (ptx_last_op) {
    case PTX_EX2: snprintf(buf, len, "ex2.approx.ftz.f32"); return 0;
    case PTX_CP_ASYNC: snprintf(buf, len, "cp.async.cg.shared.global [1] [1] 16"); return 0;
    case PTX_COMMIT_GROUP: snprintf(buf, len, "cp.async.commit_group"); return 0;
    case PTX_WAIT_GROUP: snprintf(buf, len, "cp.async.wait_group %d", ptx_last_param); return 0;
    default: break;
    }
    if (len) buf[0] = 0;
    return -1;
}

void ptx_forget(void) { ptx_last_op = PTX_NONE, ptx_last_param = 0; }

} // namespace cuda_cpu
