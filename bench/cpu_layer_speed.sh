#!/usr/bin/env bash
# cpu_layer_speed.sh OLD_BUILD NEW_BUILD [REPEATS]: the CUDA-on-CPU layer's speed, two builds
# side by side in one run (issue 47's measure). Each workload runs REPEATS times (default 3),
# the two builds alternating, and the median CPU seconds (user + system) of each is printed
# with the ratio OLD/NEW. The workloads:
#   check:    test_fast_cpu_vs_ref_check tiny_baseline tiny_hc4 tiny_attn_residual
#             gqa_hd16_resformer, threads and blocks reversed (every checker on)
#   baseline: vrl train --device cuda-cpu --model tiny --steps 10 --seq 64 --batch 4
#   hc4:      the same with --variant hc:n=4
# Both builds must give the same trained weights (checked: cmp of model.safetensors), so the
# figures compare the same work. CPU seconds stand a busy machine better than wall seconds,
# but take them on a quiet one.
#   bench/cpu_layer_speed.sh /path/to/old/build build
set -euo pipefail
old=$(cd "${1:?usage: cpu_layer_speed.sh OLD_BUILD NEW_BUILD [REPEATS]}" && pwd)
new=$(cd "${2:?usage: cpu_layer_speed.sh OLD_BUILD NEW_BUILD [REPEATS]}" && pwd)
reps=${3:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-cpu-speed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# cpu_of CMD...: CPU seconds of CMD (bash's times of this subshell's children); output dropped
cpu_of() {
  ( "$@" >/dev/null 2>&1 || { echo "cpu_layer_speed.sh: failed: $*" >&2; exit 1; }
    times >"$tmp/times" # a file, not a pipe: `times` in a pipeline reports a subshell's own children
    awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%.2f\n", n }' "$tmp/times" )
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

work() { # WHICH BUILD OUT
  case $1 in
    check) env TMPDIR="$tmp" VRL_CUDA_CPU_ORDER=reverse VRL_CUDA_CPU_BLOCKS=reverse \
             "$2/bin/test_fast_cpu_vs_ref_check" tiny_baseline tiny_hc4 tiny_attn_residual gqa_hd16_resformer ;;
    baseline) rm -rf "$3"; "$2/bin/vrl" train --device cuda-cpu --model tiny --steps 10 --seq 64 --batch 4 --out "$3" ;;
    hc4) rm -rf "$3"; "$2/bin/vrl" train --device cuda-cpu --model tiny --steps 10 --seq 64 --batch 4 --variant hc:n=4 --out "$3" ;;
  esac
}

printf '%-9s %10s %10s %7s  %s\n' workload "old CPU s" "new CPU s" ratio "(median of $reps, alternating)"
for w in check baseline hc4; do
  : >"$tmp/old" ; : >"$tmp/new"
  for ((i = 0; i < reps; i++)); do
    cpu_of work $w "$old" "$tmp/run_old" >>"$tmp/old"
    cpu_of work $w "$new" "$tmp/run_new" >>"$tmp/new"
  done
  if [ $w != check ]; then
    cmp -s "$tmp/run_old/model.safetensors" "$tmp/run_new/model.safetensors" ||
      { echo "cpu_layer_speed.sh: $w: the two builds trained different weights"; exit 1; }
  fi
  o=$(median <"$tmp/old") n=$(median <"$tmp/new")
  printf '%-9s %10.2f %10.2f %6.2fx\n' $w "$o" "$n" "$(awk -v a="$o" -v b="$n" 'BEGIN { print a / b }')"
done
