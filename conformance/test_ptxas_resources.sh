#!/usr/bin/env bash
# test_ptxas_resources.sh: the static GPU check. Compiles every fast/*.cu that holds a kernel for
# sm_90 (H100) with ptxas' resource report and fails when a kernel spills registers to local
# memory or its occupancy falls under its floor in fast/occupancy_floors.txt (the formula and the
# rules: conformance/ptxas_resources.py). No GPU is needed; without nvcc or python3 it is skipped
# (exit 77) with the reason.
#
# Cheap by construction: device code only (-cubin, no host compile, no PTX embedding), one
# architecture, each file once. The reports stay in $PTXAS_REPORT_DIR when it is set (docs/results/gpu-static.md's
# table is made from them).
# usage: test_ptxas_resources.sh NVCC REPO_ROOT [NVCC_FLAG...]   (the build's defines and includes)
set -u
NVCC=${1:-} ROOT=${2:?usage: test_ptxas_resources.sh NVCC REPO_ROOT [NVCC_FLAG...]}
shift 2 || shift $#
[ -n "$NVCC" ] && [ -x "$(command -v "$NVCC")" ] || NVCC=$(command -v nvcc || true)
if [ -z "$NVCC" ]; then
  echo "SKIP: no nvcc (CUDA compiler) on this machine: the ptxas resource check needs one"
  exit 77
fi
if ! command -v python3 >/dev/null; then
  echo "SKIP: no python3 on this machine: conformance/ptxas_resources.py needs it"
  exit 77
fi
if [ -n "${PTXAS_REPORT_DIR:-}" ]; then
  out=$PTXAS_REPORT_DIR
  mkdir -p "$out" || exit 1
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/ptxas.XXXXXX") || exit 1
  trap 'rm -rf "$out"' EXIT
fi
reports=()
for src in "$ROOT"/fast/*.cu; do
  grep -q '__global__' "$src" || continue   # host-only files (model.cu, zero.cu) have nothing to report
  name=$(basename "$src" .cu)
  # the library's flags (fast/fast.cmake: -O3, C++17) for sm_90 only; -Xptxas -v is the report
  # -keep: the PTX (its .maxntid are the kernels' __launch_bounds__) at no extra compile
  mkdir -p "$out/keep-$name" || exit 1
  # a file whose kernels use sm_90a's instructions (wgmma, TMA) says so with the marker
  # "nvcc-arch: sm_90a" (fast/fast.cmake compiles it for that target alone)
  arch=sm_90
  grep -q 'nvcc-arch: sm_90a' "$src" && arch=sm_90a
  if ! "$NVCC" -std=c++17 -O3 -arch=$arch -cubin -I"$ROOT" "$@" -Xptxas -v -keep -keep-dir "$out/keep-$name" \
       -o "$out/$name.cubin" "$src" >"$out/$name.txt" 2>&1; then
    echo "FAIL nvcc could not compile $src:"
    tail -20 "$out/$name.txt"
    exit 1
  fi
  reports+=("$out/$name.txt" "$out/keep-$name/$name.ptx")
done
python3 "$(dirname "$0")/ptxas_resources.py" "$ROOT/fast/occupancy_floors.txt" "${reports[@]}"
