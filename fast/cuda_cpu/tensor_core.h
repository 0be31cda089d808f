/* tensor_core.h: the warp-level matrix instructions fast/mma.cuh uses, on the CPU layer
 * (docs/design/cuda-on-cpu.md, "Tensor-core instructions on the CPU").
 *
 *  - mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 and
 *  - ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16
 * are warp collectives here, as on the GPU: each lane posts its fragment registers (or the
 * shared-memory row it supplies) through the scheduler's warp rendezvous (fiber.cpp), and
 * when all 32 lanes of the warp have arrived at the same call, tensor_core.cpp assembles
 * the matrices from the fragments by the PTX ISA's layouts and hands every lane its result.
 * A warp with fewer than 32 threads, a lane that has exited or waits elsewhere, lanes at
 * different call sites or with different shapes, and an ldmatrix row address that is not
 * 16-byte aligned or not in shared memory are launch errors naming the kernel.
 *
 * The lane-side halves below are inline so that they compile into the kernel's own
 * translation unit: in the check build, the 16-byte row a lane reads for ldmatrix is an
 * instrumented load by that thread, seen by the shared-memory race and initcheck checkers. */
#ifndef VRL_CUDA_CPU_TENSOR_CORE_H
#define VRL_CUDA_CPU_TENSOR_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fast/cuda_cpu/runtime.h"

namespace cuda_cpu {

/* One lane's operands and result of mma.m16n8k16 (bf16 pairs packed low element first). */
struct MmaLane {
    uint32_t a[4]; /* [4] the lane's A fragment: a0..a7 */
    uint32_t b[2]; /* [2] its B fragment: b0..b3 */
    float c[4];    /* [4] its C fragment: c0..c3 */
    float d[4];    /* [4] its D fragment, written by the scheduler */
};

/* A 16-byte row (8 b16), read as one load whatever the tile's element type (uint16_t,
 * __nv_bfloat16): may_alias keeps that well-defined under strict aliasing. */
struct __attribute__((may_alias, aligned(16))) LdmatrixRow {
    uint32_t w[4];
};

/* One lane's part of ldmatrix.m8n8: the row it supplies (lanes 0..8·num-1) and what it gets. */
struct LdmatrixLane {
    const void *addr; /* the row address this lane names */
    LdmatrixRow row;  /* the 16 bytes at addr, read by the lane itself */
    uint32_t r[4];    /* [num] the registers it receives, written by the scheduler */
};

/* 1 iff [p, p+bytes) lies in shared memory: a static __shared__ array (the program's .bss,
 * where `__shared__ static` storage lives) or the running launch's dynamic shared memory. */
int in_shared_memory(const void *p, size_t bytes);

/* For fiber.cpp, once all 32 lanes of a warp have posted op (param: ldmatrix's shape):
 * lanes[k] is lane k's MmaLane or LdmatrixLane. Computes every lane's result in place;
 * 0, or -1 with a one-line reason in msg (which lane, what is wrong). */
int tensor_core_complete(WarpOp op, int param, void *const lanes[32], char *msg, size_t msg_len);

/* The PTX instruction tensor_core_complete executes for (op, param), written as nvcc writes
 * fast/mma.cuh's inline asm into PTX, then its operand groups ({k}: k registers, [1]: an
 * address): e.g. "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {2} [1]". test_mma_ptx
 * compares it with the PTX of each wrapper, so the two definitions cannot drift apart.
 * 0, or -1 (buf "") for an op that is no tensor-core instruction. */
int tensor_core_ptx(WarpOp op, int param, char *buf, size_t len);

/* The op and param of the last tensor-core instruction a warp completed (op -1: none yet). */
void tensor_core_last(int *op, int *param);

/* ldmatrix's param: the number of 8x8 matrices (1, 2, 4) and .trans. */
static inline int ldmatrix_param(int num, int trans) { return num | (trans ? 8 : 0); }

/* The running thread's lane: its linear index in the block, mod 32 (as on the GPU). */
static inline int lane_id(void) {
    return (int)((thread_idx.x + thread_idx.y * block_dim.x + thread_idx.z * block_dim.x * block_dim.y) % 32u);
}

/* ------------------------------------------------------------------ the lane-side halves */

static inline void warp_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4],
                                          const char *file, int line) {
    MmaLane m;
    memcpy(m.a, a, sizeof m.a);
    memcpy(m.b, b, sizeof m.b);
    memcpy(m.c, c, sizeof m.c);
    (void)warp_collective(WARP_MMA_BF16, 0xffffffffu, (uint64_t)(uintptr_t)&m, 0, 32, file, line);
    memcpy(d, m.d, sizeof m.d);
}

static inline void warp_ldmatrix(uint32_t *r, int num, int trans, const void *row, const char *file, int line) {
    LdmatrixLane l;
    l.addr = row;
    l.row = LdmatrixRow{{0, 0, 0, 0}};
    /* only the lanes that supply a row read one (the ISA ignores the others' addresses on
     * sm_80 and later); a bad address is not read but reported by the scheduler */
    if (lane_id() < 8 * num && ((uintptr_t)row & 15u) == 0 && in_shared_memory(row, 16)) l.row = *(const LdmatrixRow *)row;
    (void)warp_collective(WARP_LDMATRIX, 0xffffffffu, (uint64_t)(uintptr_t)&l, ldmatrix_param(num, trans), 32, file,
                          line);
    memcpy(r, l.r, (size_t)num * sizeof(uint32_t));
}

} // namespace cuda_cpu

#endif
