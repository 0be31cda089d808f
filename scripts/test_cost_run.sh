#!/usr/bin/env bash
# test_cost_run.sh COST_DIR NAME COMMAND [ARG...]: run one ctest test (cmake/test_cost.cmake
# puts every test behind this), then write "cpu_s wall_s exit" to COST_DIR/NAME: the user +
# system seconds of every process the command waited for (bash's `times`, that is
# getrusage(RUSAGE_CHILDREN)) and the wall seconds. The command's output and exit status are
# its own; a cost that cannot be written is left out silently.
dir=$1 name=$2
shift 2
start=$(date +%s%N)
"$@"
rc=$?
end=$(date +%s%N)
out=$dir/$name
# `times` prints the shell's own times, then its children's ("1m2.500s 0m0.300s"); it runs in
# this shell (in a $(...) subshell it would report the subshell's own, empty, children)
if mkdir -p "$dir" 2>/dev/null && times > "$out.times" 2>/dev/null; then
  awk -v wall_ns=$((end - start)) -v rc=$rc 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
    printf "%.2f %.2f %d\n", n, wall_ns / 1e9, rc }' "$out.times" > "$out" 2>/dev/null
  rm -f "$out.times"
fi
exit $rc
