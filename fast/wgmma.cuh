/* wgmma.cuh: Hopper's warpgroup matrix instructions (sm_90a), one device function each, beside
 * fast/mma.cuh's warp-level ones. fast/gemm_wgmma.cu uses them.
 *
 *   wgmma_desc(tile, lbo, sbo, swizzle)      the 64-bit shared-memory matrix descriptor of a tile
 *                                            (PTX ISA "Matrix Descriptor Format"): start address,
 *                                            leading and stride dimension byte offsets, swizzle
 *                                            WGMMA_SWIZZLE_{NONE,128B,64B,32B}; base offset 0
 *   wgmma_bf16_ss<N, TA, TB>(d, da, db, s)   wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16
 *                                            with A and B from descriptors: D[64xN] = A[64x16]·B[16xN]
 *                                            (+ D when s != 0); TA, TB: imm-trans-a/b (0 K-major,
 *                                            1 M/N-major); d: the thread's N/2 accumulators
 *   wgmma_bf16_rs<N, TB>(d, a, db, s)        the same with A from the registers a[4]
 *   wgmma_fence()                            wgmma.fence.sync.aligned: before the first wgmma, and
 *                                            whenever the accumulators or A registers were touched
 *   wgmma_commit()                           wgmma.commit_group.sync.aligned: the warpgroup's
 *                                            uncommitted wgmma ops become a group
 *   wgmma_wait<N>()                          wgmma.wait_group.sync.aligned N: until at most the N
 *                                            newest groups are in flight; only then are their
 *                                            accumulators valid and their operand tiles free
 *
 * All are warpgroup instructions: the 128 threads of 4 consecutive warps (the first a multiple of
 * 4) call them together. N: 8, 16, 32, 64, 96, 128, 192 or 256 here (the CPU layer takes every
 * multiple of 8; the nvcc half has one inline-asm body per N). Fragments (PTX ISA 9.7.15.5.1.1.1
 * "Matrix Fragments for wgmma.mma_async.m64nNk16"), with w the warp in the warpgroup, g = lane >> 2,
 * t = lane % 4, two bf16 per uint32_t, the lower-indexed element in the low 16 bits:
 *   a[j] = A[16w + g + 8(j & 1)][2t + 8(j >> 1) .. +1]                     (mma.m16n8k16's A, per warp)
 *   d[i] = D[16w + g + 8((i >> 1) & 1)][8(i >> 2) + 2t + (i & 1)]           i < N/2
 * Shared-memory tiles in the canonical layouts of PTX ISA 9.7.15.5.1.2 "Shared Memory Matrix Layout"
 * (fast/cuda_cpu/wgmma.cpp writes them out as byte offsets).
 *
 * Under nvcc: inline PTX, compiled only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL; wgmma needs the
 * arch-specific target). In the CPU build (VRL_CUDA_CPU): fast/cuda_cpu/wgmma.h, which
 * rendezvouses the warpgroup, checks the descriptors and lands each product at its wait_group;
 * there a descriptor names the launch's dynamic shared memory. */
#ifndef VRL_FAST_WGMMA_CUH
#define VRL_FAST_WGMMA_CUH

#include <stdint.h>

#if VRL_CUDA_CPU
#include "fast/cuda_cpu/wgmma.h"
#else
#include <cuda_runtime.h>
#endif

enum { WGMMA_SWIZZLE_NONE = 0, WGMMA_SWIZZLE_128B = 1, WGMMA_SWIZZLE_64B = 2, WGMMA_SWIZZLE_32B = 3 };

/* The descriptor of a tile at shared-window address addr: each field (x & 0x3FFFF) >> 4. */
static inline __host__ __device__ uint64_t wgmma_desc_encode(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                             int swizzle) {
    return (uint64_t)((addr & 0x3ffffu) >> 4) | (uint64_t)((lbo_bytes & 0x3ffffu) >> 4) << 16 |
           (uint64_t)((sbo_bytes & 0x3ffffu) >> 4) << 32 | (uint64_t)(swizzle & 3) << 62;
}

#if VRL_CUDA_CPU
/* the call site names the instruction in the layer's errors */
#define VRL_WGMMA_SITE const char *site_file = __builtin_FILE(), int site_line = __builtin_LINE()

/* the shared-window address of p: what descriptors, TMA's swizzle and a tile's alignment see */
static inline uint32_t wgmma_smem_window(const void *p, VRL_WGMMA_SITE) {
    return cuda_cpu::wgmma_window(p, site_file, site_line);
}
static inline uint64_t wgmma_desc(const void *tile, uint32_t lbo_bytes, uint32_t sbo_bytes, int swizzle,
                                  VRL_WGMMA_SITE) {
    return wgmma_desc_encode(cuda_cpu::wgmma_window(tile, site_file, site_line), lbo_bytes, sbo_bytes, swizzle);
}
template <int N, int TA = 0, int TB = 0>
static inline void wgmma_bf16_ss(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d, VRL_WGMMA_SITE) {
    static_assert(N >= 8 && N <= 256 && N % 8 == 0 && (TA | TB) >= 0 && (TA | TB) <= 1, "m64nNk16: N = 8, 16, ..., 256");
    cuda_cpu::warpgroup_mma(d, desc_a, NULL, desc_b, scale_d, N, TA, TB, site_file, site_line);
}
template <int N, int TB = 0>
static inline void wgmma_bf16_rs(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d, VRL_WGMMA_SITE) {
    static_assert(N >= 8 && N <= 256 && N % 8 == 0 && TB >= 0 && TB <= 1, "m64nNk16: N = 8, 16, ..., 256");
    cuda_cpu::warpgroup_mma(d, 0, a, desc_b, scale_d, N, 0, TB, site_file, site_line);
}
static inline void wgmma_fence(VRL_WGMMA_SITE) { cuda_cpu::warpgroup_op(cuda_cpu::WARP_WGMMA_FENCE, 0, site_file, site_line); }
static inline void wgmma_commit(VRL_WGMMA_SITE) {
    cuda_cpu::warpgroup_op(cuda_cpu::WARP_WGMMA_COMMIT, 0, site_file, site_line);
}
template <int N> static inline void wgmma_wait(VRL_WGMMA_SITE) {
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group N: 0 to 7");
    cuda_cpu::warpgroup_op(cuda_cpu::WARP_WGMMA_WAIT, N, site_file, site_line);
}
#undef VRL_WGMMA_SITE

#elif defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__) /* nvcc, sm_90a (and its host pass) */

/* the shared-window address of p: what descriptors, TMA's swizzle and a tile's alignment see */
static __device__ __forceinline__ uint32_t wgmma_smem_window(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
static __device__ __forceinline__ uint64_t wgmma_desc(const void *tile, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                      int swizzle) {
    return wgmma_desc_encode((uint32_t)__cvta_generic_to_shared(tile), lbo_bytes, sbo_bytes, swizzle);
}
/* The accumulator operands of the inline PTX below: "+f"(d[i]) .. "+f"(d[i + n - 1]) */
#define WGMMA_D4(i) "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define WGMMA_D16(i) WGMMA_D4(i), WGMMA_D4((i) + 4), WGMMA_D4((i) + 8), WGMMA_D4((i) + 12)
#define WGMMA_D32(i) WGMMA_D16(i), WGMMA_D16((i) + 16)
/* "memory": wgmma reads shared memory that plain stores wrote; the compiler must not move them past it */
static __device__ __forceinline__ void wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void wgmma_commit(void) {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> static __device__ __forceinline__ void wgmma_wait(void) {
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group N: 0 to 7");
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* One body per N: the accumulators are N/2 "+f" operands %0..%(N/2-1), then the inputs; scale-d
 * becomes the predicate p; imm-scale-a and imm-scale-b are 1 (no negation). */
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n8(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, %7, %8;\n}\n"
                 :
      WGMMA_D4(0)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n8(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, %10;\n}\n"
                 :
      WGMMA_D4(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n16(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, %11, %12;\n}\n"
                 :
      WGMMA_D4(0), WGMMA_D4(4)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n16(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, %14;\n}\n"
                 :
      WGMMA_D4(0), WGMMA_D4(4)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n32(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, %19, %20;\n}\n"
                 :
      WGMMA_D16(0)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n32(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, %22;\n}\n"
                 :
      WGMMA_D16(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n64(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, %35, %36;\n}\n"
                 :
      WGMMA_D32(0)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n64(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 :
      WGMMA_D32(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n96(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, %51, %52;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D16(32)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n96(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %53, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, %54;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D16(32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n128(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, %67, %68;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D32(32)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n128(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D32(32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n192(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, %99, %100;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n192(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, %102;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int TA, int TB>
static __device__ __forceinline__ void wgmma_ss_n256(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, %131, %132;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64), WGMMA_D32(96)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TA), "n"(TB)
                 : "memory");
}
template <int TB>
static __device__ __forceinline__ void wgmma_rs_n256(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, %134;\n}\n"
                 :
      WGMMA_D32(0), WGMMA_D32(32), WGMMA_D32(64), WGMMA_D32(96)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TB)
                 : "memory");
}
template <int N> struct wgmma_no_body { static const bool value = false; };
template <int N, int TA = 0, int TB = 0>
static __device__ __forceinline__ void wgmma_bf16_ss(float *d, uint64_t desc_a, uint64_t desc_b, int scale_d) {
    if constexpr (N == 8) wgmma_ss_n8<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 16) wgmma_ss_n16<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 32) wgmma_ss_n32<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 64) wgmma_ss_n64<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 96) wgmma_ss_n96<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128) wgmma_ss_n128<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 192) wgmma_ss_n192<TA, TB>(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 256) wgmma_ss_n256<TA, TB>(d, desc_a, desc_b, scale_d);
    else static_assert(wgmma_no_body<N>::value, "wgmma_bf16_ss: no inline-asm body for this N");
}
template <int N, int TB = 0>
static __device__ __forceinline__ void wgmma_bf16_rs(float *d, const uint32_t a[4], uint64_t desc_b, int scale_d) {
    if constexpr (N == 8) wgmma_rs_n8<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 16) wgmma_rs_n16<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 32) wgmma_rs_n32<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 64) wgmma_rs_n64<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 96) wgmma_rs_n96<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 128) wgmma_rs_n128<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 192) wgmma_rs_n192<TB>(d, a, desc_b, scale_d);
    else if constexpr (N == 256) wgmma_rs_n256<TB>(d, a, desc_b, scale_d);
    else static_assert(wgmma_no_body<N>::value, "wgmma_bf16_rs: no inline-asm body for this N");
}
#undef WGMMA_D4
#undef WGMMA_D16
#undef WGMMA_D32
#endif

#endif
