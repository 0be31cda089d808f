#!/usr/bin/env bash
# test.sh: install what is missing, build, and run the whole suite with ctest.
# Tests that need ../shared/data or a GPU skip with the reason when those are absent;
# the reasons are listed after ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
rc=0
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@" || rc=$?
log=build/Testing/Temporary/LastTest.log
# Criterion prints "[SKIP] suite::test: reason"; plain test programs print "SKIP: reason".
if [ -f "$log" ] && grep -qE '\[SKIP\]|^SKIP: ' "$log"; then
  echo "skipped checks (with reasons):"
  grep -oE '\[SKIP\].*|^SKIP: .*' "$log" | sort -u | sed 's/^/  /'
fi
exit $rc
