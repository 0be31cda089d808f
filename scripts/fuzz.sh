#!/usr/bin/env bash
# fuzz.sh: long libFuzzer runs of the harnesses in fuzz/, one after the other, from the
# seed corpora (copied: fuzz/corpus/ is not written). Needs clang.
#   scripts/fuzz.sh                  every harness for 600 s
#   scripts/fuzz.sh 60 shard config  the named ones for 60 s
# Prints executions and crashes per harness; crashing inputs are kept in
# ${TMPDIR:-/tmp}/vrl-fuzz-crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
names=("$@")
((${#names[@]})) || names=(safetensors config shard tokenizer tasks train_state)
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (scripts/deps.sh installs it)" >&2; exit 1; }
bash scripts/deps.sh
CC=clang cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF -DVRL_SANITIZE=ON -DVRL_FUZZ=ON >/dev/null
cmake --build build-asan -j"$(nproc)" --target $(printf 'fuzz_%s ' "${names[@]}")
rc=0
for n in "${names[@]}"; do
  echo "== fuzz_$n, $seconds s"
  fuzz/run.sh "build-asan/bin/fuzz_$n" "fuzz/corpus/$n" "$seconds" || rc=1
done
exit $rc
