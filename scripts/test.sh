#!/usr/bin/env bash
# test.sh: install what is missing, build, and run the whole suite with ctest; then the
# same suite again in build-asan/ under AddressSanitizer + UBSan (any report fails the
# test), with the libFuzzer harnesses of fuzz/ run for a few seconds each when clang is
# there. VRL_TEST_ASAN=0 skips the second pass. Arguments go to both ctest runs.
# The Python side (torch, transformers, lm_eval for test_hf and test_lmeval_hf) is
# python/.venv (a link into ~/.cache/vrl), made from PyPI by python/make_venv.sh when missing (the first time: minutes
# and ~3 GB, see README.md; later runs reuse it). VRL_TEST_HF=0 leaves it out (those two
# tests then skip).
# Tests that need ../shared/data or a GPU skip with the reason when those are absent;
# the reasons are listed after ctest's summary.
# At the end it prints what the run cost: each step's wall and CPU seconds and the 15 most
# expensive tests (scripts/test_cost_summary.sh; per-test CPU from scripts/test_cost_run.sh).
#
# --quick: the inner loop for development (README.md): build, then the tests labelled quick
# (unit tests, the CPU layer in one thread order, the checkers' own tests), no venv, no
# sanitizer pass. CI runs the full command.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi

# The price of each step: "LABEL WALL_S CPU_S [COST_DIR]" lines, summed by test_cost_summary.sh.
passes=$(mktemp "${TMPDIR:-/tmp}/vrl-test-cost.XXXXXX")
trap 'rm -f "$passes" "$passes.t"' EXIT
cpu_now() { # CPU_NOW := user + system seconds of this shell's finished children so far
  times > "$passes.t" # in this shell: a $(...) subshell would report its own, empty, children
  CPU_NOW=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%.2f", n }' "$passes.t")
}
step_start() { step_wall=$(date +%s%N); cpu_now; step_cpu=$CPU_NOW; }
step_end() { # LABEL [COST_DIR]
  cpu_now
  echo "$1 $(( ($(date +%s%N) - step_wall) / 1000000 ))e-3 $(awk -v a="$step_cpu" -v b="$CPU_NOW" 'BEGIN { printf "%.2f", b - a }') ${2:-}" >> "$passes"
}

# run_suite DIR [ctest args]: ctest in DIR (each test's CPU and wall seconds into
# DIR/Testing/cost/), then the skip reasons of its log.
run_suite() {
  local dir=$1; shift
  local rc=0
  rm -rf "$dir/Testing/cost" && mkdir -p "$dir/Testing/cost"
  ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "$@" || rc=$?
  local log=$dir/Testing/Temporary/LastTest.log
  # Criterion prints "[SKIP] suite::test: reason"; plain test programs print "SKIP: reason".
  if [ -f "$log" ] && grep -qE '\[SKIP\]|^SKIP: ' "$log"; then
    echo "skipped checks in $dir (with reasons):"
    grep -oE '\[SKIP\].*|^SKIP: .*' "$log" | sort -u | sed 's/^/  /'
  fi
  return $rc
}

step_start
bash scripts/build.sh
step_end plain:build
rc=0
if [ $quick = 1 ]; then
  step_start
  run_suite build -L quick "$@" || rc=$?
  step_end plain:ctest-quick build/Testing/cost
  bash scripts/test_cost_summary.sh "$passes"
  exit $rc
fi
if [ "${VRL_TEST_HF:-1}" != 0 ]; then
  step_start
  bash python/make_venv.sh
  step_end venv
fi
step_start
run_suite build "$@" || rc=$?
step_end plain:ctest build/Testing/cost

if [ "${VRL_TEST_ASAN:-1}" != 0 ]; then
  # nvcc's CUDA build off (the sanitizers are for host code); fast/'s CPU build
  # (fast/cuda_cpu/) is in, so fast/'s kernels run under the sanitizers too. clang (and
  # clang++ for that C++) adds the fuzz harnesses.
  if command -v clang >/dev/null; then cc=clang cxx=clang++ fuzz=ON; else cc=cc cxx=c++ fuzz=OFF; echo "vrl: no clang: fuzz harnesses not built"; fi
  step_start
  CC=$cc CXX=$cxx cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF -DVRL_SANITIZE=ON -DVRL_FUZZ=$fuzz >/dev/null
  cmake --build build-asan -j"$(nproc)"
  step_end asan:build
  step_start
  # golden_mutation_check rebuilds test_golden per mutation (it tests the suite, not
  # memory safety) and test_reproduce_tiny trains a dozen runs through the reproduce
  # scripts (minutes of arithmetic, no code the other tests do not cover): plain pass only.
  # test_shard_memory measures peak RSS, which ASan's shadow memory and quarantine inflate
  # (741 MiB against a 590 MiB bound): its reading path runs under ASan in test_shard.
  # test_hf and test_lmeval_hf are minutes of PyTorch; the vrl commands they run (train,
  # generate, eval) run under ASan in test_generate_cli, test_eval_cli and the other tests.
  # test_reproduce_seeds and test_reproduce_seedlist test the reproduce scripts' shell and
  # arithmetic (339 s under ASan at d0d7b7a, the pass's longest test); the train and eval
  # commands they drive run under ASan in the tests above.
  # test_doc_commands checks that the docs' commands run as printed (230 s under ASan at
  # 6f7a923, the pass's second longest): the subcommands they drive (train, eval, generate,
  # data, analyze, info) run under ASan in test_cli_errors, test_cli_fuzz, test_eval_cli,
  # test_generate_cli, test_data_inspect, test_run_folder and test_reliability.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    run_suite build-asan -E "golden_mutation_check|test_reproduce_tiny|test_reproduce_seeds|test_reproduce_seedlist|test_shard_memory|test_hf|test_lmeval_hf|test_doc_commands" "$@" || rc=$?
  step_end asan:ctest build-asan/Testing/cost
fi
bash scripts/test_cost_summary.sh "$passes"
exit $rc
