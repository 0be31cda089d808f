/* tma.cuh: Hopper's tensor memory accelerator (sm_90) for 2-D bf16 tiles: a host encoder of the
 * tensor map and the device load, for warp-specialised wgmma kernels (fast/wgmma.cuh,
 * fast/mbarrier.cuh).
 *
 *   tma_map_2d_bf16(map, global, rows, cols, row_stride_bytes, box_rows, box_cols, swizzle, err, errlen)
 *       host: the tensor map of a rows x cols bf16 tensor, row r at (char *)global +
 *       r·row_stride_bytes (cols contiguous), copied box_rows x box_cols elements at a time;
 *       swizzle TMA_SWIZZLE_{NONE,32B,64B,128B}. 0, or -1 with a one-line reason in err. The
 *       driver's rules (CUDA driver API, cuTensorMapEncodeTiled): global 16-byte aligned,
 *       row_stride_bytes a multiple of 16 below 2^40 and at least cols·2, rows and cols 1 .. 2^32,
 *       box_rows and box_cols 1 .. 256, box_cols·2 a multiple of 16 and, swizzled, at most the
 *       swizzle span (32, 64, 128 bytes).
 *   tma_load_2d(dst, map, col, row, bar)
 *       device: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
 *       [dst], [map, {col, row}], [bar]: the box whose first element is (row, col) lands at dst,
 *       box row i at dst + i·box_cols·2, the 16-byte chunks permuted by the swizzle (Swizzle<B,4,3>
 *       of the shared address: fast/cuda_cpu/swizzle.h); elements outside the tensor (negative
 *       coordinates included) land as zeros; bar's tx-count gets the whole box, box_rows·box_cols·2
 *       bytes, out-of-bounds part included. dst 128-byte aligned, and aligned to the swizzle
 *       pattern (256, 512, 1024 bytes for 32B, 64B, 128B) when swizzled.
 *
 * Kernels take the map by value, `const __grid_constant__ TmaMap map`, and pass &map.
 * With box_cols·2 equal to the span, a box is exactly wgmma's K-major tile with that swizzle
 * (wgmma_desc(dst, 0, 8·span, ...)); without swizzle, 8-column boxes are its core matrices
 * (LBO = box_rows·16, SBO 128). Loaded from the transpose (box rows along K), the boxes are the
 * M/N-major tile (imm-trans 1): SBO 8·span, LBO the next box (without swizzle LBO 128, SBO the
 * box). conformance/test_cuda_cpu_tma.cpp multiplies both ways.
 *
 * Under nvcc: inline PTX for sm_90 and later, and the encoder calls the driver's
 * cuTensorMapEncodeTiled through cudaGetDriverEntryPoint[ByVersion] (no link against libcuda:
 * prebuilt binaries must not depend on the driver library's version). In the CPU build
 * (VRL_CUDA_CPU): fast/cuda_cpu/tma.h, where the encoder keeps the fields in the map's 128 bytes
 * and the load lands with its barrier's phase, as the layer's bulk copies do
 * (docs/design/cuda-on-cpu.md "TMA on the CPU"). */
#ifndef VRL_FAST_TMA_CUH
#define VRL_FAST_TMA_CUH

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 128 bytes, like the driver's CUtensorMap; 128-byte aligned as CUDA 13's is (CUDA 12's: 64) */
typedef struct {
    alignas(128) uint64_t opaque[16];
} TmaMap;
enum { TMA_SWIZZLE_NONE = 0, TMA_SWIZZLE_32B = 1, TMA_SWIZZLE_64B = 2, TMA_SWIZZLE_128B = 3 }; /* CUtensorMapSwizzle's values */

/* The driver's rules for a 2-D bf16 tiled map (both builds check them, with the same words):
 * 0, or -1 with the reason in err. */
static inline int tma_check_2d_bf16(const TmaMap *map, const void *global, uint64_t rows, uint64_t cols,
                                    uint64_t row_stride_bytes, uint32_t box_rows, uint32_t box_cols, int swizzle,
                                    char *err, size_t errlen) {
    const uint64_t dim_max = (uint64_t)1 << 32, stride_max = (uint64_t)1 << 40;
#define TMA_REFUSE(...) (snprintf(err, errlen, "tma_map_2d_bf16: " __VA_ARGS__), -1)
    if (!map || ((uintptr_t)map & 63u)) return TMA_REFUSE("the map at %p is not 64-byte aligned", (const void *)map);
    if (!global || ((uintptr_t)global & 15u))
        return TMA_REFUSE("the global address %p is not 16-byte aligned", global);
    if (rows < 1 || rows > dim_max || cols < 1 || cols > dim_max)
        return TMA_REFUSE("a %llu x %llu tensor: each dimension must be 1 .. 2^32", (unsigned long long)rows,
                          (unsigned long long)cols);
    if (row_stride_bytes % 16 || row_stride_bytes >= stride_max || row_stride_bytes < cols * 2)
        return TMA_REFUSE("row stride %llu bytes for %llu bf16 columns: a multiple of 16, below 2^40, at least "
                          "cols * 2 bytes",
                          (unsigned long long)row_stride_bytes, (unsigned long long)cols);
    if (box_rows < 1 || box_rows > 256 || box_cols < 1 || box_cols > 256 || (box_cols * 2) % 16)
        return TMA_REFUSE("a %u x %u box: each dimension 1 .. 256, box_cols * 2 bytes a multiple of 16", box_rows,
                          box_cols);
    if (swizzle < TMA_SWIZZLE_NONE || swizzle > TMA_SWIZZLE_128B)
        return TMA_REFUSE("swizzle %d: TMA_SWIZZLE_NONE, _32B, _64B or _128B", swizzle);
    if (swizzle != TMA_SWIZZLE_NONE && box_cols * 2 > (16u << swizzle))
        return TMA_REFUSE("a box row of %u bytes is wider than the %u-byte swizzle span", box_cols * 2,
                          16u << swizzle);
#undef TMA_REFUSE
    return 0;
}

#if VRL_CUDA_CPU
#include "fast/cuda_cpu/tma.h"

static inline int tma_map_2d_bf16(TmaMap *map, const void *global, uint64_t rows, uint64_t cols,
                                  uint64_t row_stride_bytes, uint32_t box_rows, uint32_t box_cols, int swizzle,
                                  char *err, size_t errlen) {
    if (tma_check_2d_bf16(map, global, rows, cols, row_stride_bytes, box_rows, box_cols, swizzle, err, errlen))
        return -1;
    cuda_cpu::tma_encode_2d(map->opaque, global, rows, cols, row_stride_bytes, box_rows, box_cols, swizzle);
    return 0;
}
/* the call site names the instruction in the layer's errors */
static inline void tma_load_2d(void *dst, const TmaMap *map, int32_t col, int32_t row, uint64_t *bar,
                               const char *site_file = __builtin_FILE(), int site_line = __builtin_LINE()) {
    cuda_cpu::tma_load_2d(dst, map->opaque, col, row, bar, site_file, site_line);
}

#else /* nvcc */
#include <cuda.h> /* CUtensorMap and its enums only: the driver is reached through the runtime's entry point */
#include <cuda_runtime.h>

static_assert(sizeof(TmaMap) == sizeof(CUtensorMap) && alignof(TmaMap) >= alignof(CUtensorMap),
              "TmaMap is a CUtensorMap");

static inline int tma_map_2d_bf16(TmaMap *map, const void *global, uint64_t rows, uint64_t cols,
                                  uint64_t row_stride_bytes, uint32_t box_rows, uint32_t box_cols, int swizzle,
                                  char *err, size_t errlen) {
    if (tma_check_2d_bf16(map, global, rows, cols, row_stride_bytes, box_rows, box_cols, swizzle, err, errlen))
        return -1;
    /* cuTensorMapEncodeTiled's signature since CUDA 12.0 (cudaTypedefs.h, PFN_cuTensorMapEncodeTiled_v12000) */
    typedef CUresult (*Encode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                               const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                               CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    static Encode encode = NULL;
    if (!encode) {
        void *fn = NULL;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050 /* cudaGetDriverEntryPoint is deprecated from 12.5 on */
        const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                               cudaEnableDefault, &found);
#else
        const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
        if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
            snprintf(err, errlen, "tma_map_2d_bf16: the driver has no cuTensorMapEncodeTiled (%s)",
                     e != cudaSuccess ? cudaGetErrorString(e) : "entry point not found");
            return -1;
        }
        encode = (Encode)fn;
    }
    const cuuint64_t dims[2] = {cols, rows}, strides[1] = {row_stride_bytes}; /* innermost first */
    const cuuint32_t box[2] = {box_cols, box_rows}, steps[2] = {1, 1};
    const CUresult r = encode((CUtensorMap *)map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)global, dims, strides,
                              box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle)swizzle,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(err, errlen, "tma_map_2d_bf16: cuTensorMapEncodeTiled returned CUresult %d", (int)r);
        return -1;
    }
    return 0;
}

/* map: the generic address of a __grid_constant__ kernel parameter; dst and bar in shared memory */
static __device__ __forceinline__ void tma_load_2d(void *dst, const TmaMap *map, int32_t col, int32_t row,
                                                   uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3}], [%4];\n" ::"r"((uint32_t)__cvta_generic_to_shared(dst)),
                 "l"((uint64_t)(uintptr_t)map), "r"(col), "r"(row), "r"((uint32_t)__cvta_generic_to_shared(bar))
                 : "memory");
}
#endif

#endif
