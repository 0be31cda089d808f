#!/usr/bin/env bash
# build.sh: configure and build vrl (Release) into ./build; binaries in build/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
