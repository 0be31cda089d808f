/* mma.cuh: the PTX instructions of fast/'s tensor-core kernels that CUDA C has no function for,
 * one device function each.
 *
 *   mma_m16n8k16_bf16(d, a, b, c)   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32:
 *                                   D[16x8] = A[16x16]·B[16x8] + C[16x8], fp32 accumulation
 *   ldmatrix_x{1,2,4}(r, row)       ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16
 *   ldmatrix_x{1,2,4}_trans(r, row) the same with .trans (each matrix read column-major)
 *   ex2_approx_ftz(x)               ex2.approx.ftz.f32: 2^x, subnormal inputs and results flushed to 0
 *   cp_async_16(dst, src, n)        cp.async.cg.shared.global [dst], [src], 16, n: 16 bytes from
 *                                   global to shared memory, the first n (0 or 16) read from src, the
 *                                   rest zero, written at some point before this thread's
 *                                   cp_async_wait that covers its group
 *   cp_async_commit()               cp.async.commit_group: this thread's uncommitted copies become a group
 *   cp_async_wait<N>()              cp.async.wait_group N: until at most the N newest groups of this
 *                                   thread are in flight (its copies are visible to the thread;
 *                                   to other threads after a barrier)
 *
 * Under nvcc they are inline PTX (sm_80 and later); in the CPU build (VRL_CUDA_CPU) they are
 * the layer's definitions: the warp collectives of fast/cuda_cpu/tensor_core.h, which
 * assemble the matrices from the 32 lanes' fragments by the same layouts, and
 * fast/cuda_cpu/ptx_ops.h for ex2 and cp.async (a copy lands only at its wait_group, so a
 * read before it sees the old bytes and is a race the check build reports). All 32 lanes of
 * the warp must call the tensor-core functions at the same place (PTX's .sync.aligned): the
 * CPU layer reports a launch error otherwise; on a GPU it is undefined behaviour.
 *
 * Fragments, from the PTX ISA's "Matrix Fragments for mma.m16n8k16 with floating point type"
 * (9.7.14.5.8 in the 8.x editions; the numbers move between editions, the titles stay),
 * with g = lane >> 2, t = lane % 4, two bf16 per uint32_t, the lower-indexed element in the
 * low 16 bits:
 *   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]  a[2] = A[g][2t+8..2t+9]  a[3] = A[g+8][2t+8..2t+9]
 *   b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
 *   c[0], c[1] = C[g][2t], C[g][2t+1]                 c[2], c[3] = C[g+8][2t], C[g+8][2t+1]   (d alike)
 * and from "Warp-level matrix load instruction: ldmatrix" (9.7.14.5.15): lane 8m + j passes the
 * address of row j of matrix m (16 bytes, 16-byte aligned, in shared memory; the addresses
 * of lanes past 8·num are ignored on sm_80 and later); register r[m] of lane L receives row g, columns 2t and 2t+1 of
 * matrix m, or with .trans rows 2t and 2t+1 of column g. So an x4 of the four 8x8 quarters
 * of a row-major 16x16 tile (top-left, bottom-left, top-right, bottom-right) is A's
 * fragment; an x2 of a [n][k]-major 8x16 tile is B's; an x2.trans of a [k][n]-major 16x8
 * tile is B's too. */
#ifndef VRL_FAST_MMA_CUH
#define VRL_FAST_MMA_CUH

#include <stdint.h>

#if VRL_CUDA_CPU
#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/ptx_ops.h"
#include "fast/cuda_cpu/tensor_core.h"

/* Default arguments evaluated at the caller: the call site names the instruction in the
 * layer's errors (lanes of one warp at different calls are an error). */
#define VRL_MMA_SITE const char *site_file = __builtin_FILE(), int site_line = __builtin_LINE()

static inline void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4],
                                     VRL_MMA_SITE) {
    cuda_cpu::warp_mma_m16n8k16_bf16(d, a, b, c, site_file, site_line);
}
static inline void ldmatrix_x1(uint32_t r[1], const void *row, VRL_MMA_SITE) {
    cuda_cpu::warp_ldmatrix(r, 1, 0, row, site_file, site_line);
}
static inline void ldmatrix_x2(uint32_t r[2], const void *row, VRL_MMA_SITE) {
    cuda_cpu::warp_ldmatrix(r, 2, 0, row, site_file, site_line);
}
static inline void ldmatrix_x4(uint32_t r[4], const void *row, VRL_MMA_SITE) {
    cuda_cpu::warp_ldmatrix(r, 4, 0, row, site_file, site_line);
}
static inline void ldmatrix_x1_trans(uint32_t r[1], const void *row, VRL_MMA_SITE) {
    cuda_cpu::warp_ldmatrix(r, 1, 1, row, site_file, site_line);
}
static inline void ldmatrix_x2_trans(uint32_t r[2], const void *row, VRL_MMA_SITE) {
    cuda_cpu::warp_ldmatrix(r, 2, 1, row, site_file, site_line);
}
static inline void ldmatrix_x4_trans(uint32_t r[4], const void *row, VRL_MMA_SITE) {
    cuda_cpu::warp_ldmatrix(r, 4, 1, row, site_file, site_line);
}
static inline float ex2_approx_ftz(float x) { return cuda_cpu::ex2_approx_ftz(x); }
static inline void cp_async_16(void *dst, const void *src, int src_bytes, VRL_MMA_SITE) {
    cuda_cpu::async_copy_16(dst, src, src_bytes, site_file, site_line);
}
static inline void cp_async_commit(void) { cuda_cpu::async_copy_commit(); }
template <int N> static inline void cp_async_wait(void) { cuda_cpu::async_copy_wait(N); }
#undef VRL_MMA_SITE

#else /* nvcc: inline PTX */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

static __device__ __forceinline__ void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                                         const float c[4]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                   "f"(c[2]), "f"(c[3]));
}

/* ldmatrix takes the row address in the .shared window. "memory": it reads shared memory
 * that plain stores wrote, and the compiler must not move those stores past it. */
static __device__ __forceinline__ unsigned shared_window(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

static __device__ __forceinline__ void ldmatrix_x1(uint32_t r[1], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(shared_window(row)) : "memory");
}
static __device__ __forceinline__ void ldmatrix_x2(uint32_t r[2], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_window(row))
                 : "memory");
}
static __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_window(row))
                 : "memory");
}
static __device__ __forceinline__ void ldmatrix_x1_trans(uint32_t r[1], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(shared_window(row))
                 : "memory");
}
static __device__ __forceinline__ void ldmatrix_x2_trans(uint32_t r[2], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_window(row))
                 : "memory");
}
static __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_window(row))
                 : "memory");
}

/* MUFU.EX2 without the range fix-ups exp2f adds for subnormals: not volatile, a pure function */
static __device__ __forceinline__ float ex2_approx_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
/* "memory": the copy writes shared memory behind the compiler's back; .cg: through L2 only
 * (the tile is read once from global per block) */
static __device__ __forceinline__ void cp_async_16(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_window(dst)), "l"(src), "r"(src_bytes)
                 : "memory");
}
static __device__ __forceinline__ void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif

#if !VRL_CUDA_CPU_FP32 /* the fp32-storage build's bf16 is a 4-byte float: no packed pairs */
/* Two floats rounded to bf16, packed as one fragment register (lo in the low 16 bits): the A
 * operand mma.sync and wgmma's register form take P in. */
static __device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}
#endif

#endif
