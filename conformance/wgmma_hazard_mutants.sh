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
# Requires the unmodified test programs to pass, then injects each mutant into a copy of its file,
# rebuilds only that object and the one program from the build's own objects
# (conformance/mutant_build.py), runs the named test, and requires it to FAIL with the expected
# words. The tree and the build are never modified. Exit 0 iff all are caught. The build is
# VRL_BUILD_DIR (ctest sets it), else ./build. About 20 CPU-seconds (one compile per mutant).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${VRL_BUILD_DIR:-$root/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-wgmma-mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run BIN TEST: one criterion test of BIN (test_cuda_cpu_wgmma or its _check twin), output on stdout
run() { (cd "$tmp" && "$1" --filter "cuda_cpu_wgmma/$2" 2>&1); }

for p in test_cuda_cpu_wgmma test_cuda_cpu_wgmma_check; do
  if ! out=$(run "$build/bin/$p" '*'); then
    echo "== the UNMODIFIED tree fails $p:"; echo "$out" | tail -5; exit 1
  fi
done
echo "== unmodified tree passes (test_cuda_cpu_wgmma, test_cuda_cpu_wgmma_check)"

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
  if [ -z "$msg" ]; then echo "   fails, but its output never says '$expect': $(echo "$out" | grep -m1 -E 'Assert|FAIL' || true)"; missed="$missed $name"; return; fi
  echo "   $msg" | cut -c1-300
  killed=$((killed + 1))
}

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

echo "== $killed of $total mutants caught${missed:+; missed:$missed}"
[ $killed = $total ]
