/* ptx_ops.h: the PTX instructions fast/mma.cuh wraps besides the tensor core's, on the CPU layer
 * (docs/design/cuda-on-cpu.md, "Tensor-core instructions on the CPU"):
 *
 *  - ex2.approx.ftz.f32 d, a: d = 2^a. The PTX ISA ("Floating Point Instructions: ex2") gives it
 *    a maximum error of about 2 ulp over the full range (no exact rounding) and, with .ftz, flushes
 *    subnormal inputs and results to zero of the same sign. Here it is exp2f of the float input
 *    (glibc: under 1 ulp) with the same flushing, so the GPU's value is within a few ulp of this one,
 *    not bit-identical: tests bound its error in ulps.
 *  - cp.async.cg.shared.global [dst], [src], 16, src_size; cp.async.commit_group;
 *    cp.async.wait_group N (PTX ISA, "Data Movement and Conversion Instructions: cp.async" and its
 *    two group instructions). A copy reads src when it is issued (the lane's own 16-byte load, in
 *    the kernel's translation unit: the global-memory checkers see it) and is held by the layer
 *    (ptx_ops.cpp) until a wait_group of the issuing thread covers its group: only then are the 16
 *    bytes written to shared memory. A read of them before that sees the old bytes, and in the
 *    check build it is a shared-memory race naming the kernel, the reader and the issuer; a landed
 *    copy is a write by the issuing thread at the wait, so other warps need a __syncthreads()
 *    after it, as on the GPU. Copies never waited for land when their thread exits.
 *    src_size (0..16) bytes are read, the rest of the 16 are zeros (src is not read at 0). dst and,
 *    when read, src must be 16-byte aligned and dst in shared memory: anything else is a launch
 *    error naming the kernel and the call. */
#ifndef VRL_CUDA_CPU_PTX_OPS_H
#define VRL_CUDA_CPU_PTX_OPS_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "fast/cuda_cpu/runtime.h"

namespace cuda_cpu {

/* The kind of the last of these instructions a thread executed, for test_mma_ptx's table
 * (conformance/mma_ptx_table.cpp): PTX_NONE until one runs. */
enum PtxOp { PTX_NONE = 0, PTX_EX2, PTX_CP_ASYNC, PTX_COMMIT_GROUP, PTX_WAIT_GROUP };
extern PtxOp ptx_last_op;
extern int ptx_last_param; /* wait_group's N */
/* The instruction as nvcc writes fast/mma.cuh's asm into PTX, then its address operands ([1] each)
 * and immediates, as test_mma_ptx.sh reads PTX: e.g. "cp.async.wait_group 1". 0, or -1 (buf "")
 * when none ran since ptx_forget. */
int ptx_last(char *buf, size_t len);
void ptx_forget(void);

/* 16 bytes of a copy in flight (may_alias: read as one load whatever the tile's type). */
struct __attribute__((may_alias, aligned(16))) CopyChunk {
    uint32_t w[4];
};

/* ptx_ops.cpp: the running thread issues a copy of `data` to dst (checked there), commits its
 * uncommitted copies as a group, waits until at most n of its groups are in flight. */
void async_copy_issue(void *dst, const CopyChunk &data, int src_bytes, const void *src, const char *file, int line);
void async_copy_commit(void);
void async_copy_wait(int n);
/* For fiber.cpp: a block of `threads` threads starts (copies of an abandoned block are
 * dropped); the running thread has returned from the kernel (its copies land). */
void async_copy_block_begin(int threads);
void async_copy_thread_end(void);

/* ------------------------------------------------------------------ the lane-side halves */

static inline float ex2_approx_ftz(float x) {
    ptx_last_op = PTX_EX2;
    if (x != x) return x;
    if (fabsf(x) < FLT_MIN) x = 0.0f; /* a subnormal input is 0: 2^0 */
    const float y = exp2f(x);
    return y < FLT_MIN ? 0.0f : y; /* a subnormal result is +0 (2^x is never negative) */
}

static inline void async_copy_16(void *dst, const void *src, int src_bytes, const char *file, int line) {
    CopyChunk c = {{0, 0, 0, 0}};
    /* the read is this thread's own, here in the kernel: the global-memory checkers see it;
     * a bad src or size is reported (and not read) by async_copy_issue */
    if (src_bytes == 16 && ((uintptr_t)src & 15u) == 0) c = *(const CopyChunk *)src;
    else if (src_bytes > 0 && src_bytes < 16 && ((uintptr_t)src & 15u) == 0)
        for (int i = 0; i < src_bytes; i++) ((unsigned char *)c.w)[i] = ((const unsigned char *)src)[i];
    async_copy_issue(dst, c, src_bytes, src, file, line);
}

} // namespace cuda_cpu

#endif
