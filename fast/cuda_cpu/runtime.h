/* runtime.h: CUDA on the CPU, the part of the CUDA language and runtime that fast/ uses,
 * for g++/clang++ (C++17). docs/design/cuda-on-cpu.md, "CUDA on the CPU".
 *
 * Everything runs synchronously on the calling host thread, in program order:
 *  - memory: cudaMalloc is malloc (AddressSanitizer sees every buffer), memcpy/memset;
 *  - streams and events exist and are recorded, but work is done when it is issued;
 *    graph capture records launches, async copies and memsets (and the stand-ins' matmuls)
 *    and replays them in order; what CUDA refuses during a capture (a synchronous copy or
 *    memset, a device or stream wait, work on the legacy default stream) fails here too;
 *  - a kernel launch runs grid blocks one after another (x fastest, or the order
 *    VRL_CUDA_CPU_BLOCKS picks); a block's threads are fibers (fiber.cpp) that run one at a
 *    time, warp by warp, in the order VRL_CUDA_CPU_ORDER picks, and switch only at
 *    __syncthreads(), __syncwarp() and warp collectives;
 *  - the check build (check.h) shadows every kernel load and store: races in shared and
 *    global memory, stream order, uninitialised reads, guard zones;
 *  - __shared__ is static storage (one block runs at a time), so a missing barrier
 *    shows up as a difference between thread orders;
 *  - divergent barriers, bad shuffle masks and launch limits are errors that name the
 *    kernel, returned by cudaGetLastError() like a failed launch.
 * The same .cu sources compile with nvcc: fast/common.cuh picks this or the real headers. */
#ifndef VRL_CUDA_CPU_RUNTIME_H
#define VRL_CUDA_CPU_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

/* ------------------------------------------------------------------ qualifiers */
#define __global__
#define __device__
#define __host__
#define __grid_constant__ /* a kernel parameter whose address is taken (a TMA map): by value here anyway */
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
/* one block runs at a time, so a function's shared arrays can be its static storage
 * (zero-initialised: in .bss, which the shared-memory checker shadows, check.h) */
#define __shared__ static
#define __restrict__ __restrict

/* ------------------------------------------------------------------ vector types */
struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) int4 {
    int x, y, z, w;
};
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
struct alignas(16) float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

/* 16-byte vector loads and stores (fast/vec.cuh): a GPU faults on one whose address is not a
 * multiple of its size, but a plain C++ dereference here would just work, so fast/ routes
 * them through these. A misaligned access is a launch error naming the kernel, the thread
 * and the source line (fiber.cpp), and is not made (the value loaded is zeros). */
namespace cuda_cpu {
/* 0 when p is a multiple of bytes; else records the error and returns 1 */
int vector_misaligned(const void *p, unsigned bytes, int write, const char *file, int line);
template <class V> static inline V vector_load(const void *p, const char *file, int line) {
    static_assert(sizeof(V) == 16 && alignof(V) == 16, "a vector access is 16 aligned bytes");
    if (vector_misaligned(p, 16, 0, file, line)) return V{};
    return *(const V *)p;
}
template <class V> static inline void vector_store(void *p, const V &v, const char *file, int line) {
    static_assert(sizeof(V) == 16 && alignof(V) == 16, "a vector access is 16 aligned bytes");
    if (!vector_misaligned(p, 16, 1, file, line)) *(V *)p = v;
}
} // namespace cuda_cpu
#define CUDA_CPU_VECTOR_LOAD(V, p) cuda_cpu::vector_load<V>((p), __FILE__, __LINE__)
#define CUDA_CPU_VECTOR_STORE(p, v) cuda_cpu::vector_store((p), (v), __FILE__, __LINE__)

namespace cuda_cpu {
/* The running thread's coordinates: set by the scheduler before it switches to a fiber. */
extern uint3 thread_idx, block_idx;
extern dim3 block_dim, grid_dim;
} // namespace cuda_cpu
#define threadIdx (cuda_cpu::thread_idx)
#define blockIdx (cuda_cpu::block_idx)
#define blockDim (cuda_cpu::block_dim)
#define gridDim (cuda_cpu::grid_dim)
#define warpSize 32

/* ------------------------------------------------------------------ errors */
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorLaunchFailure = 719,
    cudaErrorStreamCaptureUnsupported = 900,
};
typedef cudaError_t cudaError;
/* The last error, cleared by reading it (launch errors included). */
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
/* The error's name; for the last failed launch, the message naming the kernel. */
const char *cudaGetErrorString(cudaError_t e);

/* ------------------------------------------------------------------ device and memory */
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaMallocBytes(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMallocBytes((void **)p, bytes);
}
cudaError_t cudaFree(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
/* Pinned host memory: plain host memory here (the GPU build needs it for truly async copies). */
cudaError_t cudaMallocHostBytes(void **p, size_t bytes);
template <class T> static inline cudaError_t cudaMallocHost(T **p, size_t bytes) {
    return cudaMallocHostBytes((void **)p, bytes);
}
cudaError_t cudaFreeHost(void *p);

/* ------------------------------------------------------------------ streams, events, graphs */
typedef struct CudaCpuStream *cudaStream_t;  /* NULL is the default stream */
typedef struct CudaCpuEvent *cudaEvent_t;
typedef struct CudaCpuGraph *cudaGraph_t;
typedef struct CudaCpuGraph *cudaGraphExec_t;
#define cudaStreamNonBlocking 0x1u
#define cudaEventDefault 0x0u
#define cudaEventDisableTiming 0x2u
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1,
                             cudaStreamCaptureModeRelaxed = 2 };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1 };
/* On stream s (the default stream if 0): done at once, or recorded when s is capturing. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s = 0);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
/* Capture: launches, async copies and memsets issued on s are recorded, not run, until
 * cudaStreamEndCapture; cudaGraphLaunch replays them in the order they were issued. */
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

/* ------------------------------------------------------------------ math and intrinsics */
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
/* Round-to-nearest operations the compiler may not fuse: the CPU build has -ffp-contract=off. */
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline void __threadfence(void) {}

/* Atomics: threads never run at the same time, so a plain read-modify-write is atomic.
 * in_atomic tells the inter-block race checker (check.h) that the access is atomic. */
namespace cuda_cpu {
extern volatile int in_atomic;
}
#define CUDA_CPU_ATOMIC(body)                                                                                   \
    cuda_cpu::in_atomic = 1;                                                                                   \
    T old = *p;                                                                                                 \
    body;                                                                                                      \
    cuda_cpu::in_atomic = 0;                                                                                   \
    return old
template <class T> static inline T atomicAdd(T *p, T v) { CUDA_CPU_ATOMIC(*p = old + v); }
template <class T> static inline T atomicMax(T *p, T v) { CUDA_CPU_ATOMIC(if (v > old) *p = v); }
template <class T> static inline T atomicMin(T *p, T v) { CUDA_CPU_ATOMIC(if (v < old) *p = v); }
template <class T> static inline T atomicExch(T *p, T v) { CUDA_CPU_ATOMIC(*p = v); }
template <class T> static inline T atomicCAS(T *p, T compare, T v) { CUDA_CPU_ATOMIC(if (old == compare) *p = v); }

/* ------------------------------------------------------------------ barriers and warp collectives */
namespace cuda_cpu {
/* WARP_MMA_BF16 and WARP_LDMATRIX (tensor_core.h): value points at the lane's operands, which
 * the scheduler reads and writes in place once all 32 lanes have arrived. WARP_WGMMA_* (wgmma.h):
 * warpgroup instructions, completed once all 128 threads of the warpgroup have arrived. */
enum WarpOp { WARP_SYNC = 0, WARP_SHFL_IDX, WARP_SHFL_UP, WARP_SHFL_DOWN, WARP_SHFL_XOR, WARP_BALLOT, WARP_MMA_BF16,
              WARP_LDMATRIX, WARP_WGMMA_FENCE, WARP_WGMMA_MMA, WARP_WGMMA_COMMIT, WARP_WGMMA_WAIT };
/* Suspend the running fiber at a block barrier (site = file:line, to name divergence). */
void syncthreads(const char *file, int line);
/* Suspend at a warp collective; returns the value this lane receives (8 bytes, raw). */
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int param, int width, const char *file, int line);
/* The block's dynamic shared memory (the launch's smem bytes). */
void *dynamic_shared(void);

template <class T> static inline uint64_t to_raw(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "a shuffle moves at most 8 bytes");
    uint64_t r = 0;
    memcpy(&r, &v, sizeof v);
    return r;
}
template <class T> static inline T from_raw(uint64_t r) {
    T v;
    memcpy(&v, &r, sizeof v);
    return v;
}
template <class T>
static inline T shfl(WarpOp op, unsigned mask, T v, int param, int width, const char *file, int line) {
    return from_raw<T>(warp_collective(op, mask, to_raw(v), param, width, file, line));
}
} // namespace cuda_cpu

#define __syncthreads() cuda_cpu::syncthreads(__FILE__, __LINE__)
#define __syncwarp(...) ((void)cuda_cpu::warp_collective(cuda_cpu::WARP_SYNC, cuda_cpu::syncwarp_mask(__VA_ARGS__), 0, 0, 32, __FILE__, __LINE__))
namespace cuda_cpu {
static inline unsigned syncwarp_mask(unsigned m = 0xffffffffu) { return m; }
template <class T> static inline T shfl_sync(WarpOp op, unsigned mask, T v, int param, int width, const char *f, int l) {
    return shfl(op, mask, v, param, width, f, l);
}
} // namespace cuda_cpu
/* (mask, value, lane or offset [, width]) as in CUDA; the call site names divergence */
#define CUDA_CPU_SHFL_(op, mask, v, p, w, ...) cuda_cpu::shfl_sync(op, mask, v, p, w, __FILE__, __LINE__)
#define __shfl_sync(...) CUDA_CPU_SHFL_(cuda_cpu::WARP_SHFL_IDX, __VA_ARGS__, 32, 0)
#define __shfl_up_sync(...) CUDA_CPU_SHFL_(cuda_cpu::WARP_SHFL_UP, __VA_ARGS__, 32, 0)
#define __shfl_down_sync(...) CUDA_CPU_SHFL_(cuda_cpu::WARP_SHFL_DOWN, __VA_ARGS__, 32, 0)
#define __shfl_xor_sync(...) CUDA_CPU_SHFL_(cuda_cpu::WARP_SHFL_XOR, __VA_ARGS__, 32, 0)
#define __ballot_sync(mask, pred)                                                                             \
    ((unsigned)cuda_cpu::warp_collective(cuda_cpu::WARP_BALLOT, (mask), (pred) ? 1u : 0u, 0, 32, __FILE__, __LINE__))
#define __any_sync(mask, pred) (__ballot_sync(mask, pred) != 0u)
#define __all_sync(mask, pred) (__ballot_sync(mask, pred) == (mask))

/* ------------------------------------------------------------------ kernel launches */
namespace cuda_cpu {
/* Run body as every thread of every block of grid x block (fiber.cpp). Checks the launch
 * limits first; on any error sets the last error (naming the kernel) and returns. Under
 * stream capture a copy of the launch is recorded instead (runtime.cpp). */
struct LaunchBody {
    virtual void run_thread() = 0;          /* one thread: the kernel with its own copy of the arguments */
    virtual LaunchBody *clone() const = 0;  /* for graph capture */
    virtual ~LaunchBody() {}
};
void launch(const char *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream, const LaunchBody *body,
            const void *fn = NULL);
/* cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): launches of fn may then
 * ask for up to `bytes` of dynamic shared memory (at most CUDA_CPU_MAX_DYNAMIC_SHARED_OPTIN) */
cudaError_t func_set_max_dynamic_shared(const void *fn, int bytes);
/* Work that is not a kernel (a copy, a memset, a stand-in library call) issued on stream:
 * recorded into its graph when stream is capturing; refused with the error CUDA gives
 * (naming `what`) when it is the legacy default stream and another stream is capturing;
 * else op runs now and its result is returned. */
cudaError_t issue(cudaStream_t stream, const char *what, std::function<cudaError_t()> op);

template <class... P> struct Args final : LaunchBody {
    void (*fn)(P...);
    std::tuple<typename std::decay<P>::type...> args;
    template <class... A> Args(void (*f)(P...), A &&...a) : fn(f), args(std::forward<A>(a)...) {}
    void run_thread() override {
        auto copy = args; /* by-value parameters are each thread's own */
        std::apply(fn, copy);
    }
    LaunchBody *clone() const override { return new Args(*this); }
};

template <class P> static inline P as_param(P v) { return v; }

template <class... P> struct Launcher {
    const char *name;
    void (*fn)(P...);
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    template <class... A> void operator()(A &&...a) const {
        static_assert(sizeof...(A) == sizeof...(P), "kernel argument count");
        Args<P...> body(fn, as_param<P>(std::forward<A>(a))...); /* implicit conversions only, as <<<>>> */
        launch(name, grid, block, smem, stream, &body, (const void *)fn);
    }
};
template <class... P>
static inline Launcher<P...> make_launcher(const char *name, void (*fn)(P...), dim3 grid, dim3 block, size_t smem = 0,
                                           cudaStream_t stream = 0) {
    return Launcher<P...>{name, fn, grid, block, smem, stream};
}
} // namespace cuda_cpu

/* fast/common.cuh's LAUNCH(kernel, grid, block, smem, stream)(args...) */
#define CUDA_CPU_LAUNCH(kernel, grid, block, smem, stream) cuda_cpu::make_launcher(#kernel, kernel, grid, block, smem, stream)

/* The largest dynamic shared memory a launch may ask for (CUDA's default without opting in). */
#define CUDA_CPU_MAX_DYNAMIC_SHARED (48u << 10)
/* ... and with cudaFuncSetAttribute's opt-in: an H100's and H200's 227 KB per block
 * (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability", 9.0) */
#define CUDA_CPU_MAX_DYNAMIC_SHARED_OPTIN (227u << 10)

enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
template <class... P> static inline cudaError_t cudaFuncSetAttribute(void (*fn)(P...), cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    return cuda_cpu::func_set_max_dynamic_shared((const void *)fn, value);
}

#endif
