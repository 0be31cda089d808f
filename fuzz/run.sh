#!/usr/bin/env bash
# run.sh: run one libFuzzer harness for SECONDS from a copy of its seed corpus (the
# repository's corpus is never written). Prints executions and the result; exit 0 when
# no input crashed, leaked or tripped a sanitizer. A crashing input is kept in
# $TMPDIR/vrl-fuzz-crashes/ and named in the output.
# usage: fuzz/run.sh HARNESS CORPUS_DIR SECONDS
set -u
bin=$1 corpus=$2 seconds=$3
# scratch in memory when possible: each input is written to a file and read back
scratch=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && scratch=/dev/shm
work=$(mktemp -d "$scratch/vrl-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
crashes="${TMPDIR:-/tmp}/vrl-fuzz-crashes"
mkdir -p "$crashes" "$work/corpus"
cp "$corpus"/* "$work/corpus/"
TMPDIR="$work" "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$crashes/$(basename "$bin")-" "$work/corpus" >"$work/log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^Done|ERROR|SUMMARY|^artifact_prefix|Test unit written' "$work/log" | head -20
[ $rc -eq 0 ] || { tail -40 "$work/log"; echo "FAIL $(basename "$bin"): exit $rc"; }
exit $rc
