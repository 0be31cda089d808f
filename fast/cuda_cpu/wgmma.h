/* wgmma.h: Hopper's warpgroup matrix instructions on the CPU layer (fast/wgmma.cuh wraps them;
 * docs/design/cuda-on-cpu.md, "wgmma on the CPU"):
 *
 *  - wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16, N = 8, 16, ..., 256: D[64xN] =
 *    A[64x16]·B[16xN] (+ D when scale-d is 1), A from shared memory (a matrix descriptor) or
 *    from registers, B from a descriptor; imm-trans-a/b pick K-major (0) or M/N-major (1);
 *  - wgmma.fence.sync.aligned, wgmma.commit_group.sync.aligned, wgmma.wait_group.sync.aligned N.
 *
 * All four are collectives of a warpgroup: the 128 threads of 4 consecutive warps, the first
 * of them a multiple of 4 (PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
 * Instructions": .aligned, every thread of the warpgroup executes the same instruction). Each
 * thread posts its operands through the scheduler (fiber.cpp), which waits until all 128 are
 * at the same call and then hands the lot to wgmma.cpp. A warp of the warpgroup that waits
 * elsewhere or has exited, a block whose last warpgroup is short, lanes at different calls:
 * launch errors naming the kernel, the threads and the source lines.
 *
 * Asynchrony, as on the GPU (and as cp.async here, ptx_ops.h): wgmma.mma_async is checked
 * (descriptors, shared-memory bounds) when it is issued and then held; its accumulators are
 * set to NaN until it lands. It lands (A and B read from shared memory, D written) at the
 * wgmma.wait_group that covers its group; ops that chain on one accumulator land in issue
 * order. So reading the accumulators before the wait reads NaN, and overwriting an operand
 * tile before the wait changes the product; in the check build both are errors naming the
 * kernel (check.h): the thread's access to its accumulators in flight, and the write to an
 * operand byte in flight. A wgmma.mma_async needs a wgmma.fence of its warpgroup
 * since the start or since the warpgroup's last wait_group (the points after which the
 * registers may have been touched by other instructions): stricter than the ISA, which asks
 * for the fence only when the registers were touched.
 *
 * Descriptors name shared memory by its address in the shared window; on the CPU layer that
 * window is the launch's dynamic shared memory (window address = byte offset in it), so
 * wgmma operands must lie there (as CUTLASS's and FlashAttention-3's tiles do). */
#ifndef VRL_CUDA_CPU_WGMMA_H
#define VRL_CUDA_CPU_WGMMA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fast/cuda_cpu/runtime.h"

namespace cuda_cpu {

/* One thread's operands of wgmma.mma_async.m64nNk16 (bf16 pairs packed low element first). */
struct WgmmaLane {
    float *d;        /* [N/2] its accumulator registers: read (scale-d 1) and written at the landing */
    uint64_t desc_a; /* A's matrix descriptor (A from shared memory) */
    uint64_t desc_b; /* B's matrix descriptor */
    uint32_t a[4];   /* [4] its A fragment a0..a7 (A from registers) */
    int scale_d;     /* 0: D = A·B; else D = A·B + D */
};

/* wgmma.mma_async's param: N, the transpose immediates, A from registers. */
static inline int wgmma_param(int n, int trans_a, int trans_b, int a_regs) {
    return n | (trans_a ? 1 << 9 : 0) | (trans_b ? 1 << 10 : 0) | (a_regs ? 1 << 11 : 0);
}

/* The descriptor's fields (PTX ISA "Matrix Descriptor Format"), addresses and offsets in bytes. */
struct WgmmaDesc {
    uint32_t start, lbo, sbo; /* bits 0-13, 16-29, 32-45, each << 4 */
    int base_offset;          /* bits 49-51 */
    int swizzle;              /* bits 62-63: 0 none, 1 128-byte, 2 64-byte, 3 32-byte */
    uint64_t reserved;        /* the bits no field uses (must be 0) */
};
WgmmaDesc wgmma_decode(uint64_t desc);

/* The shared-window address of p: its byte offset in the launch's dynamic shared memory. Not
 * 16-byte aligned, or not in it: a launch error naming the call (returns 0). */
uint32_t wgmma_window(const void *p, const char *file, int line);

/* For fiber.cpp: once all 128 threads of warpgroup `group` have posted op (param), lanes[k]
 * is thread k's WgmmaLane (mma_async) or NULL. 0, or -1 with a one-line reason in msg. */
int wgmma_complete(WarpOp op, int param, int group, void *const lanes[128], char *msg, size_t msg_len);
/* A block of `threads` threads starts: ops of the last block still in flight are dropped. */
void wgmma_block_begin(int threads);

/* The instruction wgmma_complete executes for (op, param), as test_wgmma_ptx.sh normalises
 * nvcc's PTX of fast/wgmma.cuh: the instruction, {k} per register group, r per other register
 * operand, p for the scale-d predicate, then the immediates. 0, or -1 (buf ""). */
int wgmma_ptx(WarpOp op, int param, char *buf, size_t len);
/* The warpgroup instructions completed since wgmma_forget (the first 16), as wgmma_ptx writes
 * them, joined by " ; ", for test_wgmma_ptx's table. 0, or -1 when none (or buf is too short). */
int wgmma_trace(char *buf, size_t len);
void wgmma_forget(void);

/* ------------------------------------------------------------------ the thread-side halves */

static inline void warpgroup_mma(float *d, uint64_t desc_a, const uint32_t *a, uint64_t desc_b, int scale_d, int n,
                                 int trans_a, int trans_b, const char *file, int line) {
    WgmmaLane l;
    l.d = d, l.desc_a = desc_a, l.desc_b = desc_b, l.scale_d = scale_d;
    if (a) memcpy(l.a, a, sizeof l.a); /* the registers as they are at the issue */
    else memset(l.a, 0, sizeof l.a);
    (void)warp_collective(WARP_WGMMA_MMA, 0xffffffffu, (uint64_t)(uintptr_t)&l, wgmma_param(n, trans_a, trans_b, a != 0),
                          32, file, line);
}
static inline void warpgroup_op(WarpOp op, int param, const char *file, int line) {
    (void)warp_collective(op, 0xffffffffu, 0, param, 32, file, line);
}

} // namespace cuda_cpu

#endif
