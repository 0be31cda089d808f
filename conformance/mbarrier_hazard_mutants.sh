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
# Requires the unmodified test programs to pass, then injects each mutant into a copy of its file,
# rebuilds only that object and the one program from the build's own objects
# (conformance/mutant_build.py), runs the named test, and requires it to FAIL with the expected
# words. The tree and the build are never modified. Exit 0 iff all are caught. The build is
# VRL_BUILD_DIR (ctest sets it), else ./build. One compile per mutant.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${VRL_BUILD_DIR:-$root/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-mbarrier-mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run BIN TEST: one criterion test of BIN (test_cuda_cpu_mbarrier or its _check twin), output on stdout
run() { (cd "$tmp" && "$1" --filter "cuda_cpu_mbarrier/$2" 2>&1); }

for p in test_cuda_cpu_mbarrier test_cuda_cpu_mbarrier_check; do
  if ! out=$(run "$build/bin/$p" '*'); then
    echo "== the UNMODIFIED tree fails $p:"; echo "$out" | tail -5; exit 1
  fi
done
echo "== unmodified tree passes (test_cuda_cpu_mbarrier, test_cuda_cpu_mbarrier_check)"

killed=0 total=0 missed=""
# mutant NAME FILE PATTERN REPLACEMENT PROGRAM TEST EXPECT: replace the one line matching PATTERN
# (a fixed string) in FILE, rebuild PROGRAM, run its TEST; it must fail and its output hold EXPECT
mutant() {
  local name=$1 file=$2 pattern=$3 replacement=$4 program=$5 test=$6 expect=$7
  total=$((total + 1))
  local n; n=$(grep -cF -- "$pattern" "$root/$file" || true)
  if [ "$n" != 1 ]; then echo "== $name: '$pattern' occurs $n times in $file (update this script)"; exit 1; fi
  local dir=$tmp/$name copy=$tmp/$name/$file
  mkdir -p "$(dirname "$copy")"
  cp "$root/$file" "$copy"
  PAT=$pattern REP=$replacement perl -0pi -e 's/\Q$ENV{PAT}\E/$ENV{REP}/' "$copy"
  echo "== $name ($file, $program $test)"
  local bin out status=0
  if ! bin=$(python3 "$root/conformance/mutant_build.py" "$build" "$program" "$file" "$copy" "$dir" 2>"$dir/build.log"); then
    echo "   the mutant does not build: $(tail -n 1 "$dir/build.log")"; missed="$missed $name"; return
  fi
  out=$(run "$bin" "$test") || status=$?
  rm -rf "$dir"
  if [ $status = 0 ]; then echo "   NOT CAUGHT: the test passes"; missed="$missed $name"; return; fi
  local msg; msg=$(echo "$out" | grep -m1 -F -- "$expect" || true)
  if [ -z "$msg" ]; then echo "   fails, but its output never says '$expect': $(echo "$out" | grep -m1 -E 'Assert|FAIL|kernel' || true)"; missed="$missed $name"; return; fi
  echo "   $msg" | cut -c1-300
  killed=$((killed + 1))
}

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

echo "== $killed of $total mutants caught${missed:+; missed:$missed}"
[ $killed = $total ]
