/* tma.h: Hopper's tensor memory accelerator on the CPU layer, 2-D bf16 tiled loads (fast/tma.cuh
 * wraps them; docs/design/cuda-on-cpu.md "TMA on the CPU"). CUDA driver API
 * cuTensorMapEncodeTiled (the map's rules), PTX ISA 8.5 §5.5 "Tensors" (bounding box,
 * out-of-bound elements, tile mode, swizzling modes) and the cp.async.bulk.tensor instruction of
 * §9.7.9.25 "Data Movement and Conversion Instructions: Asynchronous copy", and the CUDA C++
 * Programming Guide's TMA swizzle table (the swizzle of the shared address, swizzle.h):
 *
 *  - tma_encode_2d keeps the fields (global, rows, cols, row stride, box, swizzle) in the map's
 *    128 bytes with a check word, so a map never encoded (or overwritten) is recognised; the
 *    driver's rules were checked before (fast/tma.cuh, tma_check_2d_bf16);
 *  - tma_load_2d(dst, map, col, row, bar), cp.async.bulk.tensor.2d.shared::cluster.global.tile
 *    .mbarrier::complete_tx::bytes: the box [row, row + box_rows) x [col, col + box_cols) is read
 *    from global memory at the issue (elements outside the tensor, negative coordinates
 *    included, read as zeros), laid out box row after box row at dst's shared-window offset,
 *    each 16-byte chunk moved by the map's swizzle of its window address, and queued on bar
 *    like a bulk copy (mbarrier.h): the whole box's bytes complete on bar now, the chunks land
 *    when its phase completes (in the check build, reading them before is a race).
 *
 * Misuse, a launch error naming the kernel, the thread and the call: a map never encoded, a
 * destination not in the launch's dynamic shared memory (the layer's shared window, as for
 * wgmma), misaligned (128 bytes; 256/512/1024 when swizzled 32B/64B/128B) or running past its
 * end, a swizzled box narrower than its span (not modelled), and bar's misuse as a bulk copy's. */
#ifndef VRL_CUDA_CPU_TMA_H
#define VRL_CUDA_CPU_TMA_H

#include <stddef.h>
#include <stdint.h>

namespace cuda_cpu {

void tma_encode_2d(uint64_t opaque[16], const void *global, uint64_t rows, uint64_t cols, uint64_t row_stride_bytes,
                   uint32_t box_rows, uint32_t box_cols, int swizzle);
void tma_load_2d(void *dst, const uint64_t opaque[16], int32_t col, int32_t row, uint64_t *bar, const char *file,
                 int line);

} // namespace cuda_cpu

#endif
