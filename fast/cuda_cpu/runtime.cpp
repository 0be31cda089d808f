/* runtime.cpp: the CUDA runtime calls of runtime.h on the CPU: memory, errors, streams,
 * events, graph capture and the checked kernel launch. Everything is synchronous: a call
 * has done its work when it returns, so streams and events only keep order that already
 * holds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/deferred.h"
#include "fast/cuda_cpu/fast_cpu.h"
#include "fast/cuda_cpu/guard.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"

/* A kernel launch (body set) or other recorded work (op: a copy, a memset, a matmul). */
struct CudaCpuGraphNode {
    const char *kernel; /* the kernel's name, or what op is */
    dim3 grid, block;
    size_t smem;
    cuda_cpu::LaunchBody *body; /* owned; NULL for an op */
    const void *fn;             /* the kernel function (its shared-memory opt-in), or NULL */
    std::function<cudaError_t()> op;
};
struct CudaCpuGraph {
    std::vector<CudaCpuGraphNode> nodes;
};
struct CudaCpuStream {
    CudaCpuGraph *capture; /* non-NULL while capturing */
};
struct CudaCpuEvent {
    unsigned flags;
    double at_ms; /* host time when recorded; -1 before */
};

namespace {

cudaError_t last_error = cudaSuccess;
cudaError_t detail_code = cudaSuccess;
char detail[1024];
int capturing = 0; /* streams capturing now */

cudaError_t set_error(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cudaError_t set_error(cudaError_t e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    detail_code = e;
    last_error = e;
    return e;
}

/* Synchronous calls during a capture would run at capture time, not at replay. */
cudaError_t refuse_in_capture(const char *what) {
    if (!capturing) return cudaSuccess;
    return set_error(cudaErrorStreamCaptureUnsupported, "%s while a stream is being captured (it would not be replayed)",
                     what);
}

double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

size_t current_smem;

/* A copy or memset as one operation on stream s for the checkers (check.h): it reads
 * [rd, rd+bytes) (rd may be NULL) and writes [wr, wr+bytes); the hazard it hits, as the
 * error, or cudaSuccess. The bytes are moved by the caller. */
cudaError_t checked_bytes(cudaStream_t s, const char *what, const void *rd, void *wr, size_t bytes) {
    if (!cuda_cpu::check::enabled()) return cudaSuccess;
    cuda_cpu::check::op_begin(s, what);
    if (rd) cuda_cpu::check::op_range(rd, bytes, 0);
    if (rd) cuda_cpu::check::op_range(wr, bytes, 1);
    else cuda_cpu::check::op_memset_range(wr, bytes);
    cuda_cpu::check::op_end();
    const char *hazard = cuda_cpu::check::op_error();
    return hazard ? set_error(cudaErrorLaunchFailure, "%s", hazard) : cudaSuccess;
}

} // namespace

namespace cuda_cpu {

namespace {
OrderConfig parse_order(const char *v) {
    OrderConfig oc = {ORDER_FORWARD, 1, NULL};
    if (!v || !*v || !strcmp(v, "forward")) return oc;
    if (!strcmp(v, "reverse")) oc.kind = ORDER_REVERSE;
    else if (!strncmp(v, "random", 6) && (v[6] == '\0' || v[6] == ':')) {
        oc.kind = ORDER_RANDOM;
        if (v[6] == ':') {
            char *end = NULL;
            oc.seed = strtoull(v + 7, &end, 10);
            if (!v[7] || *end) oc.bad = v;
        }
    } else oc.bad = v;
    return oc;
}
OrderConfig the_order, the_block_order;
int order_read = 0, block_order_read = 0;
} // namespace

namespace {
/* *into := spec if it parses (then the random sequences restart); 0, or -1 */
int set_order(OrderConfig *into, int *read, const char *spec) {
    const OrderConfig oc = parse_order(spec);
    if (oc.bad) return -1;
    *into = oc, *read = 1;
    reseed_thread_order();
    return 0;
}
} // namespace

const OrderConfig &order_config(void) {
    if (!order_read) the_order = parse_order(getenv("VRL_CUDA_CPU_ORDER")), order_read = 1;
    return the_order;
}

int set_thread_order(const char *spec) { return set_order(&the_order, &order_read, spec); }

const OrderConfig &block_order_config(void) {
    if (!block_order_read) the_block_order = parse_order(getenv("VRL_CUDA_CPU_BLOCKS")), block_order_read = 1;
    return the_block_order;
}

int set_block_order(const char *spec) { return set_order(&the_block_order, &block_order_read, spec); }

size_t launch_smem(void) { return current_smem; }

int env_switch(const char *name) {
    const char *v = getenv(name);
    if (v && strcmp(v, "0") && strcmp(v, "1")) {
        fprintf(stderr, "vrl: %s=%s: expected 0 or 1\n", name, v);
        exit(2);
    }
    return v && !strcmp(v, "1");
}

cudaError_t issue(cudaStream_t stream, const char *what, std::function<cudaError_t()> op) {
    if (stream && stream->capture) {
        stream->capture->nodes.push_back(CudaCpuGraphNode{what, dim3(), dim3(), 0, NULL, NULL, std::move(op)});
        return cudaSuccess;
    }
    if (stream == 0 && capturing)
        return set_error(cudaErrorStreamCaptureUnsupported,
                         "%s on the legacy default stream while a stream is being captured (it would not be replayed)",
                         what);
    if (deferred::enqueue(stream, op)) return cudaSuccess;
    if (stream == 0) { /* the legacy stream waits for the queued work (deferred mode) */
        const cudaError_t e = deferred::drain_all();
        if (e != cudaSuccess) return e;
    }
    return op();
}

/* An unparsable VRL_CUDA_CPU_ORDER or VRL_CUDA_CPU_BLOCKS: the error set, 1. */
static int bad_order(void) {
    const OrderConfig &oc = order_config(), &bo = block_order_config();
    if (oc.bad) set_error(cudaErrorInvalidValue, "VRL_CUDA_CPU_ORDER=%s: expected forward, reverse or random[:SEED]", oc.bad);
    else if (bo.bad)
        set_error(cudaErrorInvalidValue, "VRL_CUDA_CPU_BLOCKS=%s: expected forward, reverse or random[:SEED]", bo.bad);
    return oc.bad || bo.bad;
}

/* cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, n): per kernel function */
static std::map<const void *, size_t> max_dynamic_shared;

cudaError_t func_set_max_dynamic_shared(const void *fn, int bytes) {
    if (!fn || bytes < 0 || (size_t)bytes > CUDA_CPU_MAX_DYNAMIC_SHARED_OPTIN) {
        set_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: %d bytes of dynamic shared memory (0 to %u: an H100's "
                  "opt-in limit per block)", bytes, CUDA_CPU_MAX_DYNAMIC_SHARED_OPTIN);
        return cudaErrorInvalidValue;
    }
    max_dynamic_shared[fn] = (size_t)bytes;
    return cudaSuccess;
}

static size_t dynamic_shared_limit(const void *fn) {
    const auto it = fn ? max_dynamic_shared.find(fn) : max_dynamic_shared.end();
    return it == max_dynamic_shared.end() ? CUDA_CPU_MAX_DYNAMIC_SHARED : std::max(it->second, (size_t)CUDA_CPU_MAX_DYNAMIC_SHARED);
}

void launch(const char *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream, const LaunchBody *body,
            const void *fn) {
    if (stream && stream->capture) {
        stream->capture->nodes.push_back(CudaCpuGraphNode{kernel, grid, block, smem, body->clone(), fn, nullptr});
        return;
    }
    if (stream == 0 && capturing) {
        set_error(cudaErrorStreamCaptureUnsupported,
                  "kernel %s launched on the legacy default stream while a stream is being captured (it would not be "
                  "replayed)",
                  kernel);
        return;
    }
    if (bad_order()) return;
    if (stream && deferred::on()) { /* queued: runs at a synchronisation point (deferred.h) */
        std::shared_ptr<LaunchBody> copy(body->clone());
        if (deferred::enqueue(stream, [=]() {
                launch(kernel, grid, block, smem, stream, copy.get(), fn);
                return cudaGetLastError();
            }))
            return;
    } else if (!stream && deferred::drain_all() != cudaSuccess)
        return;
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z) {
        set_error(cudaErrorInvalidConfiguration, "kernel %s: empty launch, grid (%u,%u,%u) block (%u,%u,%u)", kernel,
                  grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return;
    }
    if (threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
        set_error(cudaErrorInvalidConfiguration,
                  "kernel %s: block (%u,%u,%u) = %llu threads; at most 1024 threads, x and y <= 1024, z <= 64", kernel,
                  block.x, block.y, block.z, threads);
        return;
    }
    if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u) {
        set_error(cudaErrorInvalidConfiguration, "kernel %s: grid (%u,%u,%u); x <= 2^31-1, y and z <= 65535", kernel,
                  grid.x, grid.y, grid.z);
        return;
    }
    if (smem > dynamic_shared_limit(fn)) {
        set_error(cudaErrorInvalidValue, "kernel %s: %zu bytes of dynamic shared memory (at most %zu%s)", kernel, smem,
                  dynamic_shared_limit(fn), dynamic_shared_limit(fn) == CUDA_CPU_MAX_DYNAMIC_SHARED
                  ? " without cudaFuncSetAttribute's MaxDynamicSharedMemorySize" : ": the kernel's opt-in");
        return;
    }
    char *dyn = smem ? (char *)malloc(smem) : NULL;
    if (smem && !dyn) {
        set_error(cudaErrorMemoryAllocation, "kernel %s: out of host memory for shared memory", kernel);
        return;
    }
    current_smem = smem;
    char msg[1024];
    check::op_begin(stream, kernel);
    if (check::op_error()) set_error(cudaErrorLaunchFailure, "before kernel %s: %s", kernel, check::op_error());
    else if (run_grid(kernel, grid, block, const_cast<LaunchBody *>(body), dyn, msg, sizeof msg) < 0)
        set_error(cudaErrorLaunchFailure, "%s", msg);
    else if (const char *oob = guard::damaged(kernel, 1))
        set_error(cudaErrorLaunchFailure, "%s", oob);
    check::op_end();
    free(dyn);
}

} // namespace cuda_cpu

/* ------------------------------------------------------------------ errors */

cudaError_t cudaGetLastError(void) {
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

const char *cudaGetErrorString(cudaError_t e) {
    if (e == detail_code && detail[0]) return detail;
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    }
    return "unknown error";
}

/* ------------------------------------------------------------------ device and memory */

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 0;
    if (cuda_cpu::bad_order()) return last_error;
    *n = 1; /* the CPU */
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
    return d == 0 ? cudaSuccess : set_error(cudaErrorInvalidValue, "device %d: the CPU layer has device 0 only", d);
}

cudaError_t cudaGetDevice(int *d) {
    *d = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
    cudaError_t e = refuse_in_capture("cudaDeviceSynchronize");
    if (e == cudaSuccess) e = cuda_cpu::deferred::drain_all();
    if (e == cudaSuccess) cuda_cpu::check::host_waits_device();
    return e;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    const long page = sysconf(_SC_PAGESIZE);
    *free_bytes = (size_t)sysconf(_SC_AVPHYS_PAGES) * (size_t)page;
    *total_bytes = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)page;
    return cudaSuccess;
}

cudaError_t cudaMallocBytes(void **p, size_t bytes) {
    *p = NULL;
    if (bytes == 0) return cudaSuccess;
    /* 256-byte aligned like cudaMalloc; a plain heap block, so AddressSanitizer guards it */
    void *m = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
    if (!m) return set_error(cudaErrorMemoryAllocation, "cudaMalloc: out of host memory for %zu bytes", bytes);
    if (cuda_cpu::check::enabled()) { /* initcheck: garbage (NaN in fp32 and bf16), shadowed as never written */
        memset(m, 0xff, bytes);
        cuda_cpu::check::track(m, bytes, 0);
    }
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    (void)cuda_cpu::deferred::drain_all(); /* synchronises the device, as CUDA's does */
    cuda_cpu::check::untrack(p);
    cuda_cpu::guard::block_freed(p);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if ((unsigned)kind > cudaMemcpyDefault) return set_error(cudaErrorInvalidValue, "cudaMemcpy: bad kind %d", (int)kind);
    if (bytes == 0) return cudaSuccess;
    if (!dst || !src) return set_error(cudaErrorInvalidValue, "cudaMemcpy of %zu bytes with a NULL pointer", bytes);
    cudaError_t e = refuse_in_capture("cudaMemcpy");
    if (e == cudaSuccess) e = cuda_cpu::deferred::drain_all();
    if (e == cudaSuccess) e = checked_bytes(0, "cudaMemcpy", src, dst, bytes);
    if (e != cudaSuccess) return e;
    memcpy(dst, src, bytes);
    cuda_cpu::check::host_waits_stream(0); /* synchronous: the host has seen it done */
    if (const char *oob = cuda_cpu::guard::damaged("cudaMemcpy", 0)) return set_error(cudaErrorLaunchFailure, "%s", oob);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes) {
    if (bytes == 0) return cudaSuccess;
    if (!p) return set_error(cudaErrorInvalidValue, "cudaMemset of %zu bytes at NULL", bytes);
    cudaError_t e = refuse_in_capture("cudaMemset");
    if (e == cudaSuccess) e = cuda_cpu::deferred::drain_all();
    if (e == cudaSuccess) e = checked_bytes(0, "cudaMemset", NULL, p, bytes);
    if (e != cudaSuccess) return e;
    cuda_cpu::guard::memset_around(p, value, bytes); /* fast/ clears several tensors at once */
    cuda_cpu::check::host_waits_stream(0);
    return cudaSuccess;
}

cudaError_t cudaMallocHostBytes(void **p, size_t bytes) {
    *p = NULL;
    if (bytes == 0) return cudaSuccess;
    void *m = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
    if (!m) return set_error(cudaErrorMemoryAllocation, "cudaMallocHost: out of host memory for %zu bytes", bytes);
    cuda_cpu::check::track(m, bytes, 1);
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    if ((unsigned)kind > cudaMemcpyDefault)
        return set_error(cudaErrorInvalidValue, "cudaMemcpyAsync: bad kind %d", (int)kind);
    if (bytes == 0) return cudaSuccess;
    if (!dst || !src) return set_error(cudaErrorInvalidValue, "cudaMemcpyAsync of %zu bytes with a NULL pointer", bytes);
    return cuda_cpu::issue(s, "cudaMemcpyAsync", [=]() {
        const cudaError_t e = checked_bytes(s, "cudaMemcpyAsync", src, dst, bytes);
        if (e != cudaSuccess) return e;
        memcpy(dst, src, bytes);
        const char *oob = cuda_cpu::guard::damaged("cudaMemcpyAsync", 0);
        return oob ? set_error(cudaErrorLaunchFailure, "%s", oob) : cudaSuccess;
    });
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    if (bytes == 0) return cudaSuccess;
    if (!p) return set_error(cudaErrorInvalidValue, "cudaMemsetAsync of %zu bytes at NULL", bytes);
    return cuda_cpu::issue(s, "cudaMemsetAsync", [=]() {
        const cudaError_t e = checked_bytes(s, "cudaMemsetAsync", NULL, p, bytes);
        if (e == cudaSuccess) cuda_cpu::guard::memset_around(p, value, bytes);
        return e;
    });
}

/* ------------------------------------------------------------------ streams and events */

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status) {
    *status = s && s->capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new CudaCpuStream{NULL};
    cuda_cpu::check::stream_created(*s, flags); /* work is synchronous; the checker keeps CUDA's order */
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (s && s->capture) return set_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy during a capture");
    (void)cuda_cpu::deferred::drain(s);
    cuda_cpu::deferred::forget_stream(s);
    cuda_cpu::check::stream_destroyed(s);
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    cudaError_t e = refuse_in_capture("cudaStreamSynchronize");
    if (e == cudaSuccess) e = cuda_cpu::deferred::drain(s);
    if (e == cudaSuccess) cuda_cpu::check::host_waits_stream(s);
    return e;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    (void)flags;
    if (!e) return set_error(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent on a NULL event");
    cuda_cpu::check::stream_wait(s, e); /* the work is done already; the checker keeps the edge */
    cuda_cpu::deferred::wait(s, e);      /* deferred mode: s's later work waits for e */
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    *e = new CudaCpuEvent{flags, -1.0};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    cuda_cpu::check::event_destroyed(e);
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (!e) return set_error(cudaErrorInvalidResourceHandle, "cudaEventRecord on a NULL event");
    e->at_ms = now_ms();
    cuda_cpu::check::event_record(e, s);
    cuda_cpu::deferred::record(e, s);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (!e) return set_error(cudaErrorInvalidResourceHandle, "cudaEventSynchronize on a NULL event");
    const cudaError_t d = cuda_cpu::deferred::drain_event(e);
    if (d != cudaSuccess) return d;
    cuda_cpu::check::host_waits_event(e);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    if (!start || !end || (start->flags | end->flags) & cudaEventDisableTiming || start->at_ms < 0 || end->at_ms < 0)
        return set_error(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: events without timing or not recorded");
    *ms = (float)(end->at_ms - start->at_ms);
    return cudaSuccess;
}

/* ------------------------------------------------------------------ graphs */

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
    (void)mode;
    if (!s) return set_error(cudaErrorStreamCaptureUnsupported, "the default stream cannot be captured");
    if (s->capture) return set_error(cudaErrorInvalidValue, "cudaStreamBeginCapture: the stream is capturing already");
    s->capture = new CudaCpuGraph;
    capturing++;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
    if (!s || !s->capture) return set_error(cudaErrorInvalidValue, "cudaStreamEndCapture without a capture");
    *g = s->capture;
    s->capture = NULL;
    capturing--;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags) {
    (void)flags;
    CudaCpuGraph *x = new CudaCpuGraph;
    for (const CudaCpuGraphNode &n : g->nodes)
        x->nodes.push_back(CudaCpuGraphNode{n.kernel, n.grid, n.block, n.smem, n.body ? n.body->clone() : NULL, n.fn, n.op});
    *exec = x;
    return cudaSuccess;
}

/* Replays the nodes in order on s. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    if (!exec) return set_error(cudaErrorInvalidResourceHandle, "cudaGraphLaunch of a NULL graph");
    if (capturing)
        return set_error(cudaErrorStreamCaptureUnsupported,
                         "cudaGraphLaunch while a stream is being captured (the CPU layer records no graph in a graph)");
    if (cuda_cpu::deferred::enqueue(s, [=]() { return cudaGraphLaunch(exec, s); })) return cudaSuccess;
    if (!s && cuda_cpu::deferred::drain_all() != cudaSuccess) return last_error;
    for (const CudaCpuGraphNode &n : exec->nodes) {
        if (n.body) cuda_cpu::launch(n.kernel, n.grid, n.block, n.smem, s, n.body, n.fn);
        else if (n.op() != cudaSuccess && last_error == cudaSuccess)
        {
            const char *why = cuda_cpu::check::op_error() ? cuda_cpu::check::op_error() : cuda_cpu::guard::report();
            set_error(cudaErrorLaunchFailure, "%s in a graph failed%s%s", n.kernel, why ? ": " : "", why ? why : "");
        }
        if (last_error != cudaSuccess) return last_error;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    if (!g) return cudaSuccess;
    for (CudaCpuGraphNode &n : g->nodes) delete n.body; /* NULL for ops */
    delete g;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { return cudaGraphDestroy(exec); }

extern "C" int fast_cpu_set_block_order(const char *spec) { return cuda_cpu::set_block_order(spec); }
