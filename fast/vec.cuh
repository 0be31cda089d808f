/* vec.cuh: 16-byte vector loads and stores for the memory-bound kernels (docs/design/kernels.md,
 * "Vector access, padding and alignment").
 *
 * A Pack<T> is 16 bytes of T (8 bf16 or 4 floats; in the fp32-storage CPU build a bf16 is
 * 4 bytes, so 4 of them). One load_pack / store_pack is one 128-bit LDG / STG on a GPU,
 * where the scalar kernels made 8 (or 4) narrow accesses: the DRAM traffic is the same,
 * but a warp issues a quarter to an eighth of the memory instructions.
 *
 * The address must be a multiple of 16: a GPU faults on a misaligned vector access, and the
 * CPU layer reports it as a launch error (fast/cuda_cpu/runtime.h). So every kernel that
 * uses packs has a scalar twin, and its launcher takes the pack path only when
 * packs_fit() says every pointer is 16-byte aligned and every extent a whole number of
 * packs; the model's shapes always are (tests: test_fast_cpu_ops). Elementwise kernels do
 * the same arithmetic per element in both paths, so the bits do not depend on the path. */
#ifndef VRL_FAST_VEC_CUH
#define VRL_FAST_VEC_CUH

#include <initializer_list>

#include "fast/ops.cuh" /* vec_scalar_launches */

#define VEC_BYTES 16

template <class T> struct alignas(VEC_BYTES) Pack {
    static constexpr int N = VEC_BYTES / (int)sizeof(T); /* elements per pack */
    T e[N];
};
static_assert(sizeof(Pack<float>) == VEC_BYTES && sizeof(Pack<bf16>) == VEC_BYTES, "a pack is 16 bytes");

/* The pack at p (p a multiple of 16 bytes). */
template <class T> __device__ __forceinline__ Pack<T> load_pack(const T *p) {
#if VRL_CUDA_CPU
    return CUDA_CPU_VECTOR_LOAD(Pack<T>, p);
#else
    return *(const Pack<T> *)p;
#endif
}

template <class T> __device__ __forceinline__ void store_pack(T *p, const Pack<T> &v) {
#if VRL_CUDA_CPU
    CUDA_CPU_VECTOR_STORE(p, v);
#else
    *(Pack<T> *)p = v;
#endif
}

/* VEC_W: the elements one thread handles in the vector path of a kernel over bf16 tensors
 * (one bf16 pack; its fp32 operands are VEC_W·4 bytes, one or two float packs). */
#define VEC_W (VEC_BYTES / (int)sizeof(bf16))

/* W consecutive elements of T: whole packs when W of them fill packs, else W scalar
 * accesses (W = 1: the scalar path). */
template <int W, class T> struct Vec {
    T e[W];
};

template <int W, class T> __device__ __forceinline__ Vec<W, T> load_vec(const T *p) {
    Vec<W, T> v;
    if constexpr (W * sizeof(T) % VEC_BYTES == 0) {
        constexpr int P = Pack<T>::N;
#pragma unroll
        for (int k = 0; k < W / P; k++) {
            const Pack<T> q = load_pack(p + k * P);
#pragma unroll
            for (int j = 0; j < P; j++) v.e[k * P + j] = q.e[j];
        }
    } else {
#pragma unroll
        for (int k = 0; k < W; k++) v.e[k] = p[k];
    }
    return v;
}

template <int W, class T> __device__ __forceinline__ void store_vec(T *p, const Vec<W, T> &v) {
    if constexpr (W * sizeof(T) % VEC_BYTES == 0) {
        constexpr int P = Pack<T>::N;
#pragma unroll
        for (int k = 0; k < W / P; k++) {
            Pack<T> q;
#pragma unroll
            for (int j = 0; j < P; j++) q.e[j] = v.e[k * P + j];
            store_pack(p + k * P, q);
        }
    } else {
#pragma unroll
        for (int k = 0; k < W; k++) p[k] = v.e[k];
    }
}

FAST_NS_BEGIN

/* 1 when p is 16-byte aligned. */
static inline int vec_aligned(const void *p) { return p == NULL || (uintptr_t)p % VEC_BYTES == 0; }

/* The vector path of a kernel over n elements fits: n a multiple of VEC_W, every pointer
 * 16-byte aligned (NULL: an absent operand). */
static inline int vec_fits(size_t n, std::initializer_list<const void *> ptrs) {
    if (n % VEC_W) return 0;
    for (const void *p : ptrs)
        if (!vec_aligned(p)) return 0;
    return 1;
}

/* fits, counting a launch that goes the scalar way */
static inline int vec_path(int fits) {
    if (!fits) vec_scalar_launches++;
    return fits;
}
FAST_NS_END

/* An elementwise kernel<W> over n elements, W per thread: the vector path (W = VEC_W) when
 * `fits`, else the scalar one (W = 1). Each element's arithmetic is the same in both, so
 * are its bits. */
#define LAUNCH_VEC(kernel, n, fits, ...)                                                                     \
    do {                                                                                                     \
        if (vec_path(fits)) LAUNCH(kernel<VEC_W>, cdiv((n) / VEC_W, 256), 256, 0, ops_stream)(__VA_ARGS__);  \
        else LAUNCH(kernel<1>, cdiv((n), 256), 256, 0, ops_stream)(__VA_ARGS__);                             \
    } while (0)

#endif
