/* check.h: the CPU layer's hazard checkers (check.cpp, docs/design/cuda-on-cpu.md "Checkers").
 *
 * They see memory through compile-time instrumentation: the check build of the layer
 * (vrl_fast_cpu_check) compiles fast/'s kernels with -fsanitize=thread but links no
 * ThreadSanitizer runtime; check.cpp supplies the __tsan_read/__tsan_write callbacks
 * itself, so every load and store a kernel makes reaches it with its address. In the plain
 * build the callbacks are never called and everything here costs a flag test.
 *
 * What it reports (each an error naming the kernel or the stream operation and the kind):
 *  - shared memory: two warps of a block touch one byte between two barriers, one writing
 *    (read-after-write, write-after-read, write-after-write); a read of a byte no thread of
 *    the block has written (uninitialised shared memory); an access to a byte a cp.async
 *    will write before the wait_group that lands it (ptx_ops.h); a write to a byte a
 *    wgmma.mma_async in flight reads, before the wgmma.wait_group that lands it, and a
 *    thread's access to its own accumulators of such a wgmma (wgmma.h);
 *  - global memory (cudaMalloc blocks): within one launch, a non-atomic access to a word
 *    another block wrote, or a write to a word another block read (inter-block race); a
 *    kernel's read of a word nothing has written since cudaMalloc (uninitialised);
 *  - arena tensors: an access to a guard zone fast/ leaves between them (out of bounds),
 *    a read of scratch poisoned at the start of a step before this step wrote it;
 *  - streams: an operation touching a word last written (or read) by an operation of
 *    another stream with no event wait, stream or device synchronisation in between
 *    (happens-before by vector clocks); the host rewriting a pinned buffer that an issued
 *    cudaMemcpyAsync may still read. */
#ifndef VRL_CUDA_CPU_CHECK_H
#define VRL_CUDA_CPU_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "fast/cuda_cpu/runtime.h"

namespace cuda_cpu {
namespace check {

/* 1 in the check build unless VRL_CUDA_CPU_CHECK=0; 0 in the plain build. A program that
 * hit a hazard exits with status 66 (VRL_CUDA_CPU_CHECK=report: only the errors). */
int enabled(void);

/* Allocations whose words are shadowed (cudaMalloc: device; cudaMallocHost: pinned). */
void track(void *p, size_t bytes, int pinned);
void untrack(void *p);

/* Streams and events: vector clocks of the operations issued on each stream. */
void stream_created(cudaStream_t s, unsigned flags);
void stream_destroyed(cudaStream_t s);
void event_record(cudaEvent_t e, cudaStream_t s);
void event_destroyed(cudaEvent_t e);
void stream_wait(cudaStream_t s, cudaEvent_t e);
void host_waits_event(cudaEvent_t e);
void host_waits_stream(cudaStream_t s);
void host_waits_device(void);

/* One operation on stream s (a launch, a copy, a memset, a library call): accesses made
 * between begin and end are its own. `what` outlives the program (a literal or kernel name). */
void op_begin(cudaStream_t s, const char *what);
/* NULL, or the first hazard the operation hit (valid until the next op_begin). */
const char *op_error(void);
void op_end(void);
/* Accesses of the running operation made by library code (memcpy, memset, MPI). */
void op_range(const void *p, size_t bytes, int write);
/* A memset's bytes: as op_range(p, bytes, 1), passing over guard zones. */
void op_memset_range(const void *p, size_t bytes);
/* Instrumented loads and stores count only between these (the kernel or stand-in body). */
void body_begin(void);
void body_end(void);

/* Kernels (fiber.cpp): the launch's dynamic shared memory, each block, the running
 * thread (-1 between fibers) and each barrier release. */
void launch_shared(char *dyn, size_t bytes);
void block_begin(uint3 block);
void set_thread(int linear);
void barrier_released(const char *file, int line);
/* cp.async (ptx_ops.cpp) by the running thread to shared [p, p+bytes): issued (landing 0):
 * a write whose bytes any access before it lands is a hazard on; landed (1): written now. */
void async_copy_access(const void *p, size_t bytes, int landing);
/* A bulk copy's destination [p, p+bytes) in shared memory (mbarrier.cpp). issued 1: any access
 * before it lands is a hazard (a read before the mbarrier wait; a second copy in flight to it);
 * issued 0: it landed at its phase's completion, written by no warp (the mbarrier's waiters
 * read it without a block barrier) and the earlier reads forgotten (the refill was ordered
 * after them by the empty barrier the producer waited for). */
void bulk_copy_bytes(const void *p, size_t bytes, int issued);
/* wgmma.mma_async's operand bytes [p, p+bytes) in shared memory (wgmma.cpp). mode 1: issued by
 * the running thread's warpgroup: read now (uninitialised and race checks, as the running
 * thread), and any write to them is a hazard until mode 0 (landed) unmarks them; mode 2: marked
 * again without the read (another op in flight still reads them). */
void wgmma_operand(const void *p, size_t bytes, int mode);
/* Thread `thread`'s accumulator registers [p, p+bytes) (on its fiber stack) belong to a
 * wgmma.mma_async in flight (in_flight 1) or no longer (0, the op landed): until then any
 * access of the thread to them is a hazard (wgmma.cpp). Ranges count: two chained ops, two. */
void wgmma_registers(int thread, const void *p, size_t bytes, int in_flight);
/* [p, p+bytes) holds every fiber stack: a thread's own locals, never shared or tracked. */
void fiber_stacks(const void *p, size_t bytes);

/* [p, p+bytes) of a tracked block is a guard zone (guard.cpp's guard_zone calls it). */
void mark_guard(void *p, size_t bytes);

} // namespace check

/* For fast/ (CPU build only; guard.cpp, guard.h): [p, p+bytes) is a guard zone between two
 * tensors of one cudaMalloc block; in the check build any access to it by a kernel, a copy,
 * the cuBLASLt or NCCL stand-in is an out-of-bounds error, in the sanitizer build it is
 * poisoned for AddressSanitizer, in canary mode it holds a canary checked after each
 * operation (a memset of the whole block skips it). Only when guard::zones_on(). */
void guard_zone(void *p, size_t bytes);
/* For fast/ (CPU build only): scratch whose old contents must never be read: refilled
 * with the NaN pattern and, in the check build, shadowed as never written. */
void poison(void *p, size_t bytes);

} // namespace cuda_cpu

#endif
