#!/usr/bin/env bash
# build.sh: configure and build vrl (Release) into ./build; binaries in build/bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# through ccache when it is there (deps.sh installs it), with the tree as ccache's base_dir:
# nvcc's compiles too (ccache handles nvcc), so the GPU slot test's build of the same sources
# (conformance/test_gpu_slot.sh, in build-gpu-slot/ beside build/) reuses these objects
launch=()
if command -v ccache >/dev/null; then
  launch=("-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;ccache"
          "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;ccache"
          "-DCMAKE_CUDA_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;ccache")
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launch[@]}" >/dev/null
cmake --build build -j"$(nproc)"
