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
set -euo pipefail
cd "$(dirname "$0")/.."

# run_suite DIR [ctest args]: ctest in DIR, then the skip reasons of its log.
run_suite() {
  local dir=$1; shift
  local rc=0
  ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "$@" || rc=$?
  local log=$dir/Testing/Temporary/LastTest.log
  # Criterion prints "[SKIP] suite::test: reason"; plain test programs print "SKIP: reason".
  if [ -f "$log" ] && grep -qE '\[SKIP\]|^SKIP: ' "$log"; then
    echo "skipped checks in $dir (with reasons):"
    grep -oE '\[SKIP\].*|^SKIP: .*' "$log" | sort -u | sed 's/^/  /'
  fi
  return $rc
}

bash scripts/build.sh
if [ "${VRL_TEST_HF:-1}" != 0 ]; then bash python/make_venv.sh; fi
rc=0
run_suite build "$@" || rc=$?

if [ "${VRL_TEST_ASAN:-1}" != 0 ]; then
  # nvcc's CUDA build off (the sanitizers are for host code); fast/'s CPU build
  # (fast/cuda_cpu/) is in, so fast/'s kernels run under the sanitizers too. clang (and
  # clang++ for that C++) adds the fuzz harnesses.
  if command -v clang >/dev/null; then cc=clang cxx=clang++ fuzz=ON; else cc=cc cxx=c++ fuzz=OFF; echo "vrl: no clang: fuzz harnesses not built"; fi
  CC=$cc CXX=$cxx cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF -DVRL_SANITIZE=ON -DVRL_FUZZ=$fuzz >/dev/null
  cmake --build build-asan -j"$(nproc)"
  start=$(date +%s)
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
  echo "vrl: sanitizer suite took $(( $(date +%s) - start )) s"
fi
exit $rc
