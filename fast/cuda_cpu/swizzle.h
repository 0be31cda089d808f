/* swizzle.h: the shared-memory swizzle that wgmma's descriptors (wgmma.cpp) and TMA's tensor maps
 * (tma.cpp) both apply, written once so the two agree by construction (docs/design/cuda-on-cpu.md
 * "TMA on the CPU", "wgmma on the CPU"). */
#ifndef VRL_CUDA_CPU_SWIZZLE_H
#define VRL_CUDA_CPU_SWIZZLE_H

#include <stdint.h>

namespace cuda_cpu {

/* Swizzle<B,4,3> of shared-window address a: address bits 7 .. 7+B-1 XORed into bits 4 .. 4+B-1,
 * i.e. the 16-byte chunk index within each (16·2^B)-byte row is XORed with the row's index mod
 * 2^B, rows counted in 128-byte lines of the window. B = 0 (none), 1 (32 B), 2 (64 B), 3 (128 B). */
static inline uint32_t swizzle_address(uint32_t a, uint32_t b) { return a ^ (((a >> 7) & ((1u << b) - 1u)) << 4); }

} // namespace cuda_cpu

#endif
