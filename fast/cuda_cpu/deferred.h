/* deferred.h: the deferred stream mode (deferred.cpp, docs/design/cuda-on-cpu.md "Deferred streams").
 *
 * Off by default: every operation runs when it is issued. With VRL_CUDA_CPU_DEFERRED=1
 * (not in the check build with its checks on: the checkers reason about issue order) work
 * issued on a created stream is queued on that stream and runs only at a synchronisation
 * point, in an adversarial interleaving: the NCCL stand-in's streams first, then the other
 * streams latest-created first, each as far as its event waits let it, one operation at a
 * time. A program that relies on an order CUDA does not promise (a missing
 * cudaStreamWaitEvent, a pinned buffer rewritten before its copy ran) then computes with
 * stale data, as a GPU may. The legacy default stream, synchronous copies and memsets,
 * cudaFree and the waits drain what they must first. */
#ifndef VRL_CUDA_CPU_DEFERRED_H
#define VRL_CUDA_CPU_DEFERRED_H

#include <functional>

#include "fast/cuda_cpu/runtime.h"

namespace cuda_cpu {
namespace deferred {

/* VRL_CUDA_CPU_DEFERRED=1, read once (anything but 0 or 1: an error line, exit status 2). */
int on(void);
/* Queue op on stream s and return 1, or return 0 when it must run now (mode off, s the legacy
 * stream, or a queued operation running). */
int enqueue(cudaStream_t s, std::function<cudaError_t()> op);
/* cudaEventRecord / cudaStreamWaitEvent in this mode: queued as markers. */
void record(cudaEvent_t e, cudaStream_t s);
void wait(cudaStream_t s, cudaEvent_t e);
/* The NCCL stand-in's stream: it runs first at every synchronisation point. */
void nccl_stream(cudaStream_t s);
/* Run queued work until s's queue (NULL: every queue) is empty, or e has completed: the
 * first error of the operations run, or cudaSuccess. */
cudaError_t drain(cudaStream_t s);
cudaError_t drain_all(void);
cudaError_t drain_event(cudaEvent_t e);
/* a destroyed stream or event */
void forget_stream(cudaStream_t s);

} // namespace deferred
} // namespace cuda_cpu

#endif
