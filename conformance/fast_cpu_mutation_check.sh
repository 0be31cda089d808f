#!/usr/bin/env bash
# fast_cpu_mutation_check.sh: show that the CPU layer catches a missing barrier in fast/.
#
# Copies the working tree to a temp folder, builds test_fast_cpu_vs_ref there (-DVRL_CUDA=OFF:
# the CPU build only), checks that the unmodified tree passes its two baseline cases (tiny,
# hd 8, and hd 64, T = 130; the whole test runs in the suite anyway), then deletes the
# first __syncthreads() of fast/ops.cu and requires them to FAIL, printing what caught it.
# The mutation is made in the copy only, never in the tree. Exit 0 iff both hold.
# ≈ 1 CPU-minute, most of it the build of the copy; ctest runs it as
# fast_cpu_mutation_check (plain pass only).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-fast-mutation.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$root/conformance/tree_copy.sh"
tree_copy "$root" "$tmp"
run() { # build and run the test; its output on stdout, its status returned
  cmake --build "$tmp/build" --target test_fast_cpu_vs_ref -j"${MUTATION_JOBS:-$(nproc)}" >/dev/null
  (cd "$tmp/build" && TMPDIR="$tmp" ./bin/test_fast_cpu_vs_ref tiny_baseline hd64_baseline 2>/dev/null)
}

if ! out=$(run); then
  echo "== the UNMODIFIED tree fails test_fast_cpu_vs_ref:"; echo "$out" | grep FAIL | head -20; exit 1
fi
echo "== unmodified tree: test_fast_cpu_vs_ref passes"

file=$tmp/fast/ops.cu
line=$(grep -n '__syncthreads();' "$file" | head -1 | cut -d: -f1)
[ -n "$line" ] || { echo "== no __syncthreads() in fast/ops.cu (update this script)"; exit 1; }
echo "== mutation: delete the first __syncthreads() of fast/ops.cu (line $line: $(sed -n "${line}p" "$file" | sed 's/^ *//'))"
sed -i "${line}s/__syncthreads();//" "$file"
if out=$(run); then
  echo "   NOT CAUGHT: test_fast_cpu_vs_ref still passes"; exit 1
fi
echo "$out" | grep FAIL | head -8 | sed 's/^/   /'
echo "   caught ($(echo "$out" | grep -c FAIL) failed checks)"
