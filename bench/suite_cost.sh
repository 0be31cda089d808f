#!/usr/bin/env bash
# suite_cost.sh [--quick] COMMIT [COMMIT ...]: what the test suite costs at each commit, side by
# side. Each commit is checked out (git worktree, detached) under ${VRL_COST_DIR:-/tmp/vrl-cost},
# its own `scripts/test.sh` (or `scripts/test.sh --quick`, where that commit has it) runs there
# with every test behind this tree's cmake/test_cost.cmake (injected with CMAKE_PROJECT_INCLUDE
# into commits older than it), and the table at the end gives, per commit: the whole command's
# wall and CPU seconds, each ctest pass's summed test CPU seconds, and the 15 most expensive
# tests. Run it on a quiet machine: wall seconds are only comparable there (CPU seconds mostly
# are anyway). A full run of one commit takes 20-60 minutes on 2 cores.
#   bench/suite_cost.sh faab088 HEAD
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
quick=()
if [ "${1:-}" = --quick ]; then quick=(--quick); shift; fi
[ $# -ge 1 ] || { echo "usage: bench/suite_cost.sh [--quick] COMMIT [COMMIT ...]"; exit 2; }
root=${VRL_COST_DIR:-/tmp/vrl-cost}
mkdir -p "$root"
include=$here/cmake/test_cost.cmake
report=$root/report.txt
: > "$report"
for c in "$@"; do
  sha=$(git -C "$here" rev-parse --short "$c^{commit}") || { echo "suite_cost.sh: $c: not a commit"; exit 2; }
  wt=$root/$sha
  [ -d "$wt" ] || git -C "$here" worktree add --detach "$wt" "$sha" >/dev/null
  # the caches of both builds carry the include; the commit's own scripts configure them again
  # with their options, and CMake keeps the cached include
  cmake -S "$wt" -B "$wt/build" -DCMAKE_PROJECT_INCLUDE="$include" >/dev/null
  if [ ${#quick[@]} = 0 ] && command -v clang >/dev/null; then
    CC=clang CXX=clang++ cmake -S "$wt" -B "$wt/build-asan" -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF -DVRL_SANITIZE=ON \
      -DVRL_FUZZ=ON -DCMAKE_PROJECT_INCLUDE="$include" >/dev/null
  fi
  rm -rf "$wt/build/Testing/cost" "$wt/build-asan/Testing/cost"
  log=$root/$sha.log
  echo "suite_cost.sh: $sha: running scripts/test.sh ${quick[*]} (log: $log)"
  times > "$root/times"
  cpu0=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%.0f", n }' "$root/times")
  start=$(date +%s%N)
  rc=0
  (cd "$wt" && bash scripts/test.sh "${quick[@]}") > "$log" 2>&1 || rc=$?
  end=$(date +%s%N)
  times > "$root/times"
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%.0f", n }' "$root/times")
  cpu=$((cpu - cpu0))
  {
    echo "== $sha ($(git -C "$here" log -1 --format=%cd --date=short "$sha")): exit $rc"
    echo "   whole command: $(( (end - start) / 1000000000 )) s wall, $cpu s CPU"
    for d in build build-asan; do
      [ -d "$wt/$d/Testing/cost" ] || continue
      awk -v d="$d" '{ c += $1; w += $2; n++ } END { printf "   %s ctest: %d tests, %.0f s CPU (sum), %.0f s wall (sum)\n", d, n, c, w }' "$wt/$d/Testing/cost"/*
    done
    echo "   15 most expensive tests (CPU s, wall s, pass, test):"
    for d in build build-asan; do
      [ -d "$wt/$d/Testing/cost" ] || continue
      for f in "$wt/$d/Testing/cost"/*; do read -r a b _ < "$f"; echo "$a $b $d $(basename "$f")"; done
    done | sort -g -r | head -15 | awk '{ printf "   %7.1f %7.1f  %-10s %s\n", $1, $2, $3, $4 }'
  } | tee -a "$report"
done
echo "suite_cost.sh: the table above is in $report"
