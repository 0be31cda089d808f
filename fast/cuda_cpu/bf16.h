/* bf16.h: CUDA's __nv_bfloat16 on the CPU (docs/design/cuda-on-cpu.md, "CUDA on the CPU").
 *
 * 16 bits: the top half of an IEEE fp32. float -> bf16 rounds to nearest, ties to even,
 * as __float2bfloat16 does on the GPU; a NaN stays a (quiet) NaN. bf16 -> float is exact.
 * __bfloat16_as_ushort / __ushort_as_bfloat16 move the raw bits (the cross-entropy keeps a
 * row as 32-bit words of two columns).
 *
 * VRL_CUDA_CPU_FP32 (the fp32-storage build, vrl_fast_cpu32: docs/design/precision.md, "Checks in bits")
 * makes the type an fp32 wrapper instead: the same kernels, no rounding at the bf16 storage
 * points, so fast/ against ref/ agrees to float32 rounding and a small bug stands out. */
#ifndef VRL_CUDA_CPU_BF16_H
#define VRL_CUDA_CPU_BF16_H

#include <stdint.h>
#include <string.h>

#if VRL_CUDA_CPU_FP32
struct __nv_bfloat16 {
    float x; /* the value, unrounded */
};
static inline __nv_bfloat16 __float2bfloat16(float f) {
    __nv_bfloat16 r;
    r.x = f;
    return r;
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
static inline float __bfloat162float(__nv_bfloat16 b) { return b.x; }
#else
struct __nv_bfloat16 {
    uint16_t x; /* raw bits */
};

static inline __nv_bfloat16 __float2bfloat16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    __nv_bfloat16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) { /* NaN: keep the sign, force a quiet payload */
        r.x = (uint16_t)((u >> 16) | 0x0040u);
        return r;
    }
    const uint32_t lsb = (u >> 16) & 1u; /* ties go to the even neighbour */
    u += 0x7fffu + lsb;
    r.x = (uint16_t)(u >> 16);
    return r;
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }

static inline float __bfloat162float(__nv_bfloat16 b) {
    const uint32_t u = (uint32_t)b.x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The raw 16 bits and back (CUDA's bit reinterpretations: no rounding). */
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
    __nv_bfloat16 r;
    r.x = u;
    return r;
}
#endif

#endif
