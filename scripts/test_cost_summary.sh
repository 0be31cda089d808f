#!/usr/bin/env bash
# test_cost_summary.sh PASSES_FILE: the suite's price, printed at the end of scripts/test.sh.
# PASSES_FILE has one line per step: "LABEL WALL_S CPU_S [COST_DIR]"; a step with a COST_DIR
# is a ctest run whose tests wrote "cpu_s wall_s exit" to COST_DIR/NAME (scripts/test_cost_run.sh).
# Prints each step's wall and CPU seconds, the total, and the 15 most expensive tests by CPU.
set -euo pipefail
passes=$1
[ -f "$passes" ] || { echo "test_cost_summary.sh: $passes: no such file"; exit 2; }
echo "vrl: the suite's cost (this run; 'CPU' is user + system seconds of every process)"
awk '{ printf "  %-22s %7.0f s wall %7.0f s CPU\n", $1, $2, $3; w += $2; c += $3 }
     END { printf "  %-22s %7.0f s wall %7.0f s CPU  (%.1f min wall, %.1f CPU-min)\n", "total", w, c, w / 60, c / 60 }' "$passes"
tests=$(mktemp)
trap 'rm -f "$tests"' EXIT
while read -r label _ _ dir; do
  [ -n "${dir:-}" ] && [ -d "$dir" ] || continue
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    read -r cpu wall rc < "$f" || continue
    printf '%s %s %s %s %s\n' "$cpu" "$wall" "$rc" "$label" "$(basename "$f")" >> "$tests"
  done
done < "$passes"
if [ -s "$tests" ]; then
  echo "vrl: the 15 most expensive tests (CPU s, wall s, exit status, step, test)"
  # awk reads sort's whole output (head would close the pipe early: a SIGPIPE that pipefail turns
  # into the suite's exit status 141, as a fresh-clone CI run at 6b5b026 showed)
  sort -k1,1 -g -r "$tests" | awk 'NR <= 15 { printf "  %7.1f %7.1f %4d  %-14s %s\n", $1, $2, $3, $4, $5 }'
fi
