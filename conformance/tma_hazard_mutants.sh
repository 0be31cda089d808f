#!/usr/bin/env bash
# tma_hazard_mutants.sh: the TMA tests (conformance/test_cuda_cpu_tma.cpp on the CPU layer's
# fast/cuda_cpu/tma.cpp and mbarrier.cpp) catch one bug of each class a first TMA kernel or the
# layer's model would have: the swizzle mode off by one (TMA's 128B read as the 64B pattern, the
# slip its enum's values invite beside wgmma's), the XOR taken from the neighbouring row, no
# swizzle at all, out-of-bound elements not zero-filled, the coordinates swapped, the tx-count of
# the in-bounds part only (a deadlock), the box landing at the issue instead of at the phase, and
# a kernel that hands TMA's swizzle enum to wgmma_desc (TMA's 128B is wgmma's 32B). Not here: a
# consumer warpgroup that skips its full-barrier wait before wgmma; on the layer a producer that
# never blocks has issued (and landed) its boxes before the warpgroup's first rendezvous, so
# nothing observes the missing wait (docs/design/cuda-on-cpu.md "TMA on the CPU").
#
# The harness (unmodified programs first, one rebuild per mutant, each must fail with its
# words) is conformance/layer_mutants_lib.sh.
SUITE=tma
. "$(dirname "$0")/layer_mutants_lib.sh"

test=conformance/test_cuda_cpu_tma.cpp layer=fast/cuda_cpu/tma.cpp
gemm=tma_tiles_feed_wgmma_exactly_in_every_swizzle layout=box_layout_zero_fill_and_tx_count
chunk_at='at[q] = dyn + swizzle_address(off + 16 * (uint32_t)q, (uint32_t)m.swizzle);'
mutant swizzle_mode_off_by_one $layer "$chunk_at" \
  'at[q] = dyn + swizzle_address(off + 16 * (uint32_t)q, (uint32_t)(m.swizzle ? m.swizzle - 1 : 0));' \
  test_cuda_cpu_tma $gemm "128B swizzle, A K-major, forward order: "
mutant swizzle_xor_of_the_next_row $layer "$chunk_at" \
  'at[q] = dyn + (swizzle_address((off + 16 * (uint32_t)q) ^ 128u, (uint32_t)m.swizzle) ^ 128u);' \
  test_cuda_cpu_tma $layout "128B swizzle, box at (row 0, col 0): "
mutant swizzle_dropped $layer "$chunk_at" 'at[q] = dyn + off + 16 * (uint32_t)q;' \
  test_cuda_cpu_tma $gemm "128B swizzle, A K-major, forward order: "
mutant out_of_bounds_not_zero_filled $layer \
  '    std::vector<unsigned char> box(box_bytes, 0);' '    std::vector<unsigned char> box(box_bytes, 0x5a);' \
  test_cuda_cpu_tma $layout "128B swizzle, box at (row 0, col 0): "
mutant coordinates_swapped $layer \
  'void tma_load_2d(void *dst, const uint64_t o[16], int32_t col, int32_t row, uint64_t *bar, const char *file,' \
  'void tma_load_2d(void *dst, const uint64_t o[16], int32_t row, int32_t col, uint64_t *bar, const char *file,' \
  test_cuda_cpu_tma $layout "box at (row 15, col 37)"
mutant tx_of_the_in_bounds_part_only $layer 'n, box_bytes, "cp.async.bulk.tensor.2d completing on"' \
  'n, (uint32_t)(std::max<int64_t>(0, std::min<int64_t>(row + (int64_t)m.box_rows, (int64_t)m.rows) - std::max<int64_t>(row, 0)) * std::max<int64_t>(0, std::min<int64_t>(col + (int64_t)m.box_cols, (int64_t)m.cols) - std::max<int64_t>(col, 0)) * 2), "cp.async.bulk.tensor.2d completing on"' \
  test_cuda_cpu_tma $layout "kernel layout_kernel, block (0,0,0): deadlock: 1 thread waits for mbarrier phases"
mutant box_lands_at_issue fast/cuda_cpu/mbarrier.cpp \
  '        b->copies.emplace_back(std::move(c));' '        memcpy(c.dst, c.data.data(), 16);' \
  test_cuda_cpu_tma the_box_lands_with_its_phase "holds the old bytes"
# the kernel hands TMA's enum value to wgmma_desc (TMA_SWIZZLE_128B = 3 is wgmma's 32B)
mutant kernel_passes_the_tma_enum_to_wgmma $test \
  '    const int wg_swizzle = swizzle == TMA_SWIZZLE_128B ? WGMMA_SWIZZLE_128B' \
  '    const int wg_swizzle = swizzle == TMA_SWIZZLE_128B ? TMA_SWIZZLE_128B' \
  test_cuda_cpu_tma $gemm "128B swizzle, A K-major, forward order: "

mutants_summary
