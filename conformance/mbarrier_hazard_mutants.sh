#!/usr/bin/env bash
# mbarrier_hazard_mutants.sh: the mbarrier tests (conformance/test_cuda_cpu_mbarrier.cpp on the CPU
# layer's fast/cuda_cpu/mbarrier.cpp) catch one bug of each class a first warp-specialised kernel
# would make, in its pipeline or in the layer's model: a consumer that reads a stage without
# waiting for its full barrier (its arrivals run ahead: the producer is left waiting, a deadlock
# error; in the check build, the read of a stage nothing wrote, named), a producer that refills a
# stage without waiting for its empty barrier (its phases run ahead of the consumers: a deadlock),
# an expect_tx byte count too large (a deadlock naming the barriers) or too small (an error), a
# consumer waiting for the wrong parity (a deadlock; in the check build, the early read named), a
# wgmma consumer warpgroup that frees its stage before its wgmma.wait_group (wrong values; in the
# check build, the producer's refill named as a write before the wgmma landed), and the layer's
# parity test inverted, its copies landing at the issue instead of at the phase, or landing in
# issue order whatever the thread order.
#
# The harness (unmodified programs first, one rebuild per mutant, each must fail with its
# words) is conformance/layer_mutants_lib.sh.
SUITE=mbarrier
. "$(dirname "$0")/layer_mutants_lib.sh"

test=conformance/test_cuda_cpu_mbarrier.cpp layer=fast/cuda_cpu/mbarrier.cpp
pipeline=producer_consumer_pipeline_in_every_warp_order
full_wait='        mbarrier_wait_parity(&full[s], ph); /* the tile has landed */'
mutant consumer_reads_before_full_wait $test "$full_wait" '' \
  test_cuda_cpu_mbarrier $pipeline "kernel pipeline_kernel, block (0,0,0): deadlock: 1 thread waits for mbarrier phases"
mutant consumer_reads_before_full_wait_checked $test "$full_wait" '' \
  test_cuda_cpu_mbarrier_check $pipeline "uninitialised shared memory in kernel pipeline_kernel"
mutant producer_refills_before_empty_wait $test \
  '            mbarrier_wait_parity(&empty[s], ph ^ 1u); /* the consumers are done with the stage */' '' \
  test_cuda_cpu_mbarrier $pipeline "kernel pipeline_kernel, block (0,0,0): deadlock: 64 threads wait for mbarrier phases"
expect_tx='            mbarrier_arrive_expect_tx(&full[s], TILE_BYTES);'
mutant expect_tx_too_large $test "$expect_tx" '            mbarrier_arrive_expect_tx(&full[s], TILE_BYTES + 16);' \
  test_cuda_cpu_mbarrier $pipeline "kernel pipeline_kernel, block (0,0,0): deadlock: 65 threads wait for mbarrier phases"
mutant expect_tx_too_small $test "$expect_tx" '            mbarrier_arrive_expect_tx(&full[s], TILE_BYTES - 16);' \
  test_cuda_cpu_mbarrier $pipeline "wrong expect_tx on the mbarrier at shared offset 0"
mutant consumer_parity_flipped $test "$full_wait" '        mbarrier_wait_parity(&full[s], ph ^ 1u);' \
  test_cuda_cpu_mbarrier $pipeline "kernel pipeline_kernel, block (0,0,0): deadlock: 65 threads wait for mbarrier phases"
mutant consumer_parity_flipped_checked $test "$full_wait" '        mbarrier_wait_parity(&full[s], ph ^ 1u);' \
  test_cuda_cpu_mbarrier_check $pipeline "uninitialised shared memory in kernel pipeline_kernel"
# the consumer warpgroup frees a stage while its wgmma still reads it
early_free='        wgmma_wait<0>(); /* the stage'"'"'s operands are read: it may be refilled */'
mutant stage_freed_before_wgmma_landed $test "$early_free" '' \
  test_cuda_cpu_mbarrier wgmma_consumer_warpgroup_in_every_warp_order "of 512 elements wrong"
mutant stage_freed_before_wgmma_landed_checked $test "$early_free" '' \
  test_cuda_cpu_mbarrier_check wgmma_consumer_warpgroup_in_every_warp_order \
  "shared-memory race (write before a wgmma landed) in kernel wgmma_pipeline_kernel, block (0,0,0): thread (128,0,0) of warp 4 issues a bulk copy to"
mutant layer_parity_inverted $layer \
  '    return !b || (b->phase & 1u) != (parity & 1u);' '    return !b || (b->phase & 1u) == (parity & 1u);' \
  test_cuda_cpu_mbarrier phases_parity_and_landing "kernel phase_kernel"
mutant layer_copy_lands_at_issue $layer \
  '    b->copies.push_back(std::move(c));' '    memcpy(c.dst, c.data.data(), c.data.size());' \
  test_cuda_cpu_mbarrier phases_parity_and_landing "holds the old bytes"
mutant layer_landing_ignores_the_order $layer \
  '    if (oc.kind == ORDER_REVERSE) std::reverse(order.begin(), order.end());' '    if (0) std::reverse(order.begin(), order.end());' \
  test_cuda_cpu_mbarrier copies_of_one_phase_land_in_the_thread_order "the two orders landed 2 and 2"

mutants_summary
