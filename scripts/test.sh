#!/usr/bin/env bash
# test.sh: install what is missing, build, and run the whole suite with ctest.
# Tests that need ../shared/data or a GPU skip with the reason when those are absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
