#!/usr/bin/env bash
# wgmma_hazard_mutants.sh: the wgmma tests (conformance/test_cuda_cpu_wgmma.cpp on the CPU layer's
# fast/cuda_cpu/wgmma.cpp) catch one bug of each class a first Hopper kernel would make, in the
# layer's model or in a kernel: a swizzle mode decoded one mode off, scale-d ignored, D's fragment
# rows off by 8, a kernel that reads its accumulators without the final wait_group (wrong values;
# in the check build, an error naming the kernel), one that issues its wgmma on tiles other
# warps wrote with no barrier (a race only the check build names), and a two-stage pipeline that
# refills a stage while the k-step reading it is in flight (wrong values; in the check build, a
# race naming the kernel).
#
# The harness (unmodified programs first, one rebuild per mutant, each must fail with its
# words) is conformance/layer_mutants_lib.sh.
SUITE=wgmma
. "$(dirname "$0")/layer_mutants_lib.sh"

layer=fast/cuda_cpu/wgmma.cpp test=conformance/test_cuda_cpu_wgmma.cpp
mutant swizzle_mode_off_by_one $layer \
  'uint32_t swizzle_bits(int swizzle) { return swizzle == 1 ? 3 : swizzle == 2 ? 2 : swizzle == 3 ? 1 : 0; }' \
  'uint32_t swizzle_bits(int swizzle) { return swizzle == 1 ? 2 : swizzle == 2 ? 1 : swizzle == 3 ? 0 : 0; }' \
  test_cuda_cpu_wgmma every_swizzle_and_major_follows_the_isa_layouts "elements wrong"
mutant scale_d_ignored $layer \
  'double s = o.scale_d[th] ? (double)c : 0.0;' 'double s = (double)c;' \
  test_cuda_cpu_wgmma every_swizzle_and_major_follows_the_isa_layouts "scale-d 0"
mutant d_rows_off_by_8 $layer \
  'const int row = 16 * w + g + 8 * ((i >> 1) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);' \
  'const int row = 16 * w + g + 8 * ((i >> 2) & 1), col = 8 * (i >> 2) + 2 * t + (i & 1);' \
  test_cuda_cpu_wgmma every_swizzle_and_major_follows_the_isa_layouts "elements wrong"
mutant gemm_without_its_last_wait $test \
  '    wgmma_wait<0>(); /* the last k-step lands */' '' \
  test_cuda_cpu_wgmma gemm_k_loop_in_every_warp_order "of 4096 wrong"
mutant gemm_without_its_last_wait_checked $test \
  '    wgmma_wait<0>(); /* the last k-step lands */' '' \
  test_cuda_cpu_wgmma_check gemm_k_loop_in_every_warp_order "wgmma accumulators read before the wait in kernel gemm_kernel"
mutant gemm_tiles_without_a_barrier $test \
  '    __syncthreads(); /* the tiles every warp wrote, before the warpgroup reads them */' '' \
  test_cuda_cpu_wgmma_check gemm_k_loop_in_every_warp_order "shared-memory race (read after write) in kernel gemm_kernel"

# a pipelined kernel that refills a stage while the k-step that reads it is still in flight
early_refill_pattern='        wgmma_wait<1>(); /* step s - 1 has landed: the other stage is free */'
mutant stage_refilled_in_flight $test "$early_refill_pattern" '        wgmma_wait<2>();' \
  test_cuda_cpu_wgmma two_stage_gemm_refills_a_stage_only_after_its_wait "of 4096 wrong"
mutant stage_refilled_in_flight_checked $test "$early_refill_pattern" '        wgmma_wait<2>();' \
  test_cuda_cpu_wgmma_check two_stage_gemm_refills_a_stage_only_after_its_wait \
  "shared-memory race (write before a wgmma landed) in kernel gemm_two_stages_kernel"

mutants_summary
