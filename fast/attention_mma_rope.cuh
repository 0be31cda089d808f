/* attention_mma_rope.cuh: the keys' RoPE at the tensor-core attention's K loads (AttnRope.k):
 * K tiles are copied into shared memory from the keys before RoPE and rotated there by the
 * thread that copied them, with rope_forward's arithmetic and rounding, so the tiles hold the
 * bits rope_forward would have left in k; k in global memory is never written (many blocks read
 * each key tile: rotating it in place would be an inter-block race).
 *
 * The copy hands a thread both 16-byte words that hold the two halves of a row's pairs (words u
 * and u + W/2, dims 8u.. and 8u + hd/2..; at hd 8 word 0 holds both halves, dims 0..3 and 4..7,
 * and word 1 is the zero pad), so that after the thread's own cp_async_wait it can rotate them
 * (mma_rope_k_rows) with no barrier of its own: the barrier the kernels already have a tile
 * orders the rotated rows before any other thread reads them. Used by attention_mma_forward.cu
 * and attention_mma_backward.cu, whose shared rows are both HDP + 8 bf16 long, 128 threads a block. */
#ifndef VRL_FAST_ATTENTION_MMA_ROPE_CUH
#define VRL_FAST_ATTENTION_MMA_ROPE_CUH

#include "fast/attention.cuh" /* RopePair, rope_rotate */
#include "fast/mma.cuh"       /* cp_async_16 */

FAST_NS_BEGIN

#if !VRL_CUDA_CPU_FP32

template <int HD> struct MmaKRows {
    static constexpr int HDP = HD < 16 ? 16 : HD; /* dims stored per shared row (hd 8 zero-padded) */
    static constexpr int RS = HDP + 8;            /* shared row stride (elements) */
    static constexpr int U = HDP / 16;            /* word pairs (units) a row: W/2 of its W words */
    static constexpr int THREADS = 128;           /* both kernels' blocks */
};

/* Key rows [r0, r0+R) of one kv head (src row r at base + r·stride, HD bf16) into shared memory
 * dst [R][RS] by cp.async, unit w = r·U + u (words u and u + U of row r) to thread w mod 128.
 * Rows past T: ZERO_PAST zero-filled, nothing read (the backward's convention), else row T − 1
 * repeated (the forward's: real values, which the causal mask removes). The pad words of hd 8
 * are zero-filled. */
template <int HD, int R, bool ZERO_PAST>
__device__ __forceinline__ void mma_k_rows_async(bf16 *dst, const bf16 *base, size_t stride, int r0, int T) {
    using D = MmaKRows<HD>;
    constexpr int N = R * D::U;                /* units of the tile */
    constexpr int RSTEP = D::THREADS / D::U;   /* rows between one thread's units (U divides 128) */
    const int r = threadIdx.x / D::U, u = threadIdx.x % D::U;
    /* byte addresses as one 32 x 32 -> 64-bit multiply-add a word, as mma_load_rows_async: rows and
     * the pitch are non-negative and fit 32 bits */
    const char *col = (const char *)(base + u * 8);
    const unsigned pitch = 2u * (unsigned)stride;
    bf16 *d = dst + r * D::RS + u * 8;
#pragma unroll
    for (int i = 0; i < (N + D::THREADS - 1) / D::THREADS; i++) {
        if (N % D::THREADS == 0 || r + i * RSTEP < R) { /* unit threadIdx.x + 128i of the tile */
            const int rr = r0 + r + i * RSTEP;
            const unsigned row = (unsigned)(ZERO_PAST ? rr : min(rr, T - 1));
            const bool real_row = !ZERO_PAST || rr < T;
#pragma unroll
            for (int h = 0; h < 2; h++) { /* words u and u + U: dims 8u.. and 8(u + U).. */
                const bool real = real_row && u + h * D::U < HD / 8;
                cp_async_16(d + i * RSTEP * D::RS + h * D::U * 8,
                            real ? col + (size_t)row * pitch + h * D::U * 16 : (const char *)base, real ? 16 : 0);
            }
        }
    }
}

/* RoPE on the units this thread copied with mma_k_rows_async<HD, R, ·>(dst, ·, ·, r0, T), after
 * its cp_async_wait for them and before the barrier that publishes the tile: each pair
 * (x_i, x_{i+HD/2}) becomes bf16(x_i c − x_{i+HD/2} s), bf16(x_{i+HD/2} c + x_i s) (rope_rotate,
 * rope_kernel's expressions and rounding), c, s = cos_t, sin_t [position][i], row r at position
 * min(r0 + r, T − 1) (a zero row past T stays zero). Two pairs a step: one 32-bit word of each
 * half, one 8-byte load from each table. dir: 1.0f at every call (rope_kernel's dir · s, folded
 * away as the constant it is; the hazard mutants flip it at one call site). */
template <int HD, int R>
__device__ __forceinline__ void mma_rope_k_rows(bf16 *dst, const float *cos_t, const float *sin_t, int r0, int T,
                                                float dir) {
    using D = MmaKRows<HD>;
    constexpr int N = R * D::U, H2 = HD / 2;
    constexpr int P = HD >= 16 ? 8 : 4; /* pairs a unit: a word's 8 dims, or hd 8's 4 */
    /* one unit at a time (not unrolled): the kernels it runs in are at their register caps */
#pragma unroll 1
    for (int i = 0; i < (N + D::THREADS - 1) / D::THREADS; i++) {
        const int w = threadIdx.x + i * D::THREADS;
        if (N % D::THREADS == 0 || w < N) {
            const int r = w / D::U, u = w % D::U;
            bf16 *lo = dst + r * D::RS + u * 8; /* dims 8u .. 8u + P − 1: the pairs' first halves */
            const size_t o = (size_t)min(r0 + r, T - 1) * H2 + u * 8;
#pragma unroll
            for (int e = 0; e < P; e += 2) {
                const RopePair c = *(const RopePair *)(cos_t + o + e), s = *(const RopePair *)(sin_t + o + e);
                uint32_t *wl = (uint32_t *)(lo + e), *wh = (uint32_t *)(lo + e + H2);
                const uint32_t a = *wl, b = *wh;
                uint32_t y1w = 0, y2w = 0;
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    const float x1 = __bfloat162float(__ushort_as_bfloat16((unsigned short)(a >> 16 * k)));
                    const float x2 = __bfloat162float(__ushort_as_bfloat16((unsigned short)(b >> 16 * k)));
                    float y1, y2;
                    rope_rotate(x1, x2, c.e[k], dir * s.e[k], y1, y2);
                    y1w |= (uint32_t)__bfloat16_as_ushort(__float2bfloat16(y1)) << 16 * k;
                    y2w |= (uint32_t)__bfloat16_as_ushort(__float2bfloat16(y2)) << 16 * k;
                }
                *wl = y1w;
                *wh = y2w;
            }
        }
    }
}

#endif /* !VRL_CUDA_CPU_FP32 */

FAST_NS_END

#endif
