#!/usr/bin/env bash
# fast_cpu_mutation_check.sh: show that the CPU layer catches a missing barrier in fast/.
#
# Checks that the build's test_fast_cpu_vs_ref passes its two baseline cases (tiny, hd 8, and
# hd 64, T = 130; the whole test runs in the suite anyway), then deletes the first
# __syncthreads() of fast/ops.cu in a copy, rebuilds only that object and the test program from
# the build's own objects (conformance/mutant_build.py), and requires the cases to FAIL,
# printing what caught it. The tree and the build are never modified. Exit 0 iff both hold.
# The build is VRL_BUILD_DIR (ctest sets it), else ./build. ≈ 15 CPU-seconds; ctest runs it as
# fast_cpu_mutation_check (plain pass only).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${VRL_BUILD_DIR:-$root/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-fast-mutation.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

run() { # BINARY: the two cases; output on stdout, status returned
  (cd "$tmp" && TMPDIR="$tmp" "$1" tiny_baseline hd64_baseline 2>/dev/null)
}

if ! out=$(run "$build/bin/test_fast_cpu_vs_ref"); then
  echo "== the UNMODIFIED tree fails test_fast_cpu_vs_ref:"; echo "$out" | grep FAIL | head -20; exit 1
fi
echo "== unmodified tree: test_fast_cpu_vs_ref passes"

file=$tmp/fast/ops.cu
mkdir -p "$tmp/fast"
cp "$root/fast/ops.cu" "$file"
line=$(grep -n '__syncthreads();' "$file" | head -1 | cut -d: -f1)
[ -n "$line" ] || { echo "== no __syncthreads() in fast/ops.cu (update this script)"; exit 1; }
echo "== mutation: delete the first __syncthreads() of fast/ops.cu (line $line: $(sed -n "${line}p" "$file" | sed 's/^ *//'))"
sed -i "${line}s/__syncthreads();//" "$file"
bin=$(python3 "$root/conformance/mutant_build.py" "$build" test_fast_cpu_vs_ref fast/ops.cu "$file" "$tmp/mutant")
if out=$(run "$bin"); then
  echo "   NOT CAUGHT: test_fast_cpu_vs_ref still passes"; exit 1
fi
echo "$out" | grep FAIL | head -8 | sed 's/^/   /'
echo "   caught ($(echo "$out" | grep -c FAIL) failed checks)"
