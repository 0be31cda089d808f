#!/usr/bin/env bash
# gpu.sh: the GPU runbook. On a machine with an NVIDIA GPU and nvcc, build vrl, check fast/
# against ref, and benchmark it against PyTorch, writing one report (docs/fast.md, "GPU runbook").
#
#   bash scripts/gpu.sh pack            # here, with Debian's apt: fetch the build's libraries into .gpu/
#   bash scripts/gpu.sh [check] [bench] [torch]  # there: build, then the stages named (default: these three)
#   bash scripts/gpu.sh cudnn           # there: bench_fast --attention cudnn (a fourth call)
#
# check: ctest -R fast, then test_fast_vs_ref three times (bit-repeatability: the three
#        logs must be identical). bench: bench_fast (82M and 468M × baseline, ResFormer,
#        SVFormer at T = 2048, per-kernel table) and bench/roofline.py's prediction beside it.
# torch: bench/bench_torch.py (HF LlamaForCausalLM, bf16, SDPA, fused AdamW), eager and
#        torch.compile. Each stage fits a 10-minute call; all three take about 20 minutes.
# cudnn: bench_fast with cuDNN's fused attention (--attention cudnn), the same presets and
#        variants, per-kernel table with the cuDNN rows; only when the build has the cuDNN path.
# cuDNN attention (docs/fast.md, "Attention through cuDNN"): `pack` also puts cudnn-frontend's
# headers (scripts/cudnn_frontend.sh, 3 MB) into .gpu/cudnn-frontend; cuDNN itself (~475 MB of
# libraries) is too large to carry, so the build uses the GPU machine's: the CUDA toolkit's
# folders, else PyTorch's nvidia-cudnn wheel. Without either, the cuDNN path is compiled out,
# test_fast_vs_ref skips its cudnn part and the report says so.
# The GPU machine may have no package registry: `pack` downloads the Debian packages the
# build links (OpenBLAS, jansson, PCRE2, utf8proc, zstd headers, Criterion and its libraries)
# into .gpu/debs; there they are unpacked into a private root (no install, nothing in /) and
# found through pkg-config's sysroot. The report goes to $OUT/gpu-report.md when $OUT is set
# (the device tool's output folder), else to results/gpu-report-DATE.md. Every step runs
# under a time limit and the report records each step's exit status; the script's own exit
# status is the number of failed steps (0: all passed).
set -uo pipefail
cd "$(dirname "$0")/.."

DEBS=(libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
      libjansson-dev libjansson4 libzstd-dev libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2
      libcriterion-dev libcriterion3 libgit2-1.5 libnanomsg5 libhttp-parser2.9 libssh2-1
      libmbedtls14 libmbedx509-1 libmbedcrypto7)

if [ "${1:-}" = pack ]; then
  set -e
  mkdir -p .gpu/debs
  (cd .gpu/debs && apt-get download "${DEBS[@]}" 2>&1 | grep -v '^Get:\|unsandboxed' || true)
  n=$(ls .gpu/debs/*.deb 2>/dev/null | wc -l)
  [ "$n" -eq "${#DEBS[@]}" ] || { echo "gpu.sh pack: got $n of ${#DEBS[@]} packages in .gpu/debs (apt-get update first?)" >&2; exit 1; }
  [ -f .deps/cudnn-frontend/include/cudnn_frontend.h ] || bash scripts/cudnn_frontend.sh
  rm -rf .gpu/cudnn-frontend && cp -r .deps/cudnn-frontend .gpu/cudnn-frontend
  echo "gpu.sh pack: ${#DEBS[@]} packages and cudnn-frontend $(cat .gpu/cudnn-frontend/VERSION), $(du -sh .gpu | cut -f1) in .gpu/ (carry it: the device tool's carry [\".gpu\"])"
  exit 0
fi

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(check bench torch)
for s in "${stages[@]}"; do
  case $s in check | bench | torch | cudnn) ;; *) echo "gpu.sh: unknown stage '$s' (pack, check, bench, torch, cudnn)" >&2; exit 2 ;; esac
done

if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; report=$OUT/gpu-report.md; logs=$OUT; else
  mkdir -p results; report=results/gpu-report-$(date -u +%Y%m%d-%H%M).md; logs=results; fi
failed=0
say() { printf '%s\n' "$*" | tee -a "$report"; }
# step NAME SECONDS CMD...: run under a limit, log to $logs/NAME.log, record the status.
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  timeout "$limit" "$@" >"$logs/$name.log" 2>&1 || rc=$?
  say "- **$name**: exit $rc, $((SECONDS - t0)) s$([ $rc = 124 ] && echo " (time limit $limit s)")"
  [ $rc = 0 ] || failed=$((failed + 1))
  return $rc
}
fence() { say '```'; tail -n "${2:-60}" "$logs/$1.log" | tee -a "$report"; say '```'; }

: >"$report"
say "# vrl GPU report"
say ""
say "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)'), $(date -u '+%Y-%m-%d %H:%M UTC'), stages: ${stages[*]}"
say ""
say '```'
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: not found"
  nvcc --version 2>&1 | tail -n 2 || echo "nvcc: not found"
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1 | tail -n 1
  echo "cpu cores: $(nproc)"; } | tee -a "$report"
say '```'

# ---- dependencies: the system's, or the packed Debian libraries in a private root
# VRL_GPU_SYSROOT=1 uses the packed libraries even where the system has them (to test packing).
if [ "${VRL_GPU_SYSROOT:-0}" = 1 ] || ! pkg-config --exists openblas jansson criterion libpcre2-8 libutf8proc libzstd 2>/dev/null; then
  if ! ls .gpu/debs/*.deb >/dev/null 2>&1; then
    say "gpu.sh: the build's libraries are missing here and .gpu/debs is empty: run 'bash scripts/gpu.sh pack' where apt works and carry .gpu"
    exit 1
  fi
  root=/tmp/vrl-sysroot
  rm -rf "$root" && mkdir -p "$root"
  for f in .gpu/debs/*.deb; do dpkg-deb -x "$f" "$root" || { say "gpu.sh: cannot unpack $f"; exit 1; }; done
  lib=$root/usr/lib/x86_64-linux-gnu
  # criterion.pc names its static-link dependencies (boxfort, libffi, libgit2, nanomsg) as
  # Requires.private, whose .pc files come with -dev packages the shared link never needs.
  sed -i '/^Requires.private/d' "$lib/pkgconfig/criterion.pc"
  export PKG_CONFIG_SYSROOT_DIR=$root
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$root/usr/share/pkgconfig
  export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LIBRARY_PATH=$lib:$lib/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}
  say "libraries: the packed Debian packages, unpacked into $root"
fi

# ---- cuDNN attention: the frontend headers from .deps (made here) or .gpu (carried); cuDNN from
# the CUDA toolkit (CMake looks there) or, failing that, PyTorch's nvidia-cudnn wheel
cudnn_flags=()
if [ ! -f .deps/cudnn-frontend/include/cudnn_frontend.h ] && [ -f .gpu/cudnn-frontend/include/cudnn_frontend.h ]; then
  cudnn_flags+=("-DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.gpu/cudnn-frontend/include")
fi
cuda_root=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
if ! ls "$cuda_root"/lib*/libcudnn.so* "$cuda_root"/targets/*/lib/libcudnn.so* >/dev/null 2>&1; then
  wheel=$(python3 -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null || true)
  if [ -n "$wheel" ] && ls "$wheel"/lib/libcudnn.so* >/dev/null 2>&1; then
    cudnn_flags+=("-DCUDNN_ROOT=$wheel")
    export LD_LIBRARY_PATH=$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    say "cuDNN: PyTorch's wheel, $wheel"
  fi
fi

jobs=$(nproc)
say ""
say "## build"
step configure 300 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DVRL_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 "${cudnn_flags[@]}" &&
  step build 600 cmake --build build-gpu -j"$jobs" || { fence configure 30; fence build 40; exit 1; }
grep -q 'CUDA backend ON' "$logs/configure.log" || { say "gpu.sh: CMake did not enable the CUDA backend"; fence configure 30; exit 1; }
have_cudnn=0
if grep -q 'cuDNN attention ON' "$logs/configure.log"; then have_cudnn=1; say "- $(grep -o 'cuDNN attention ON.*' "$logs/configure.log")"
else say "- cuDNN attention not built: $(grep -o 'cuDNN attention not built.*' "$logs/configure.log" || echo 'no cuDNN line')"; fi

for s in "${stages[@]}"; do
  if [ "$s" = check ]; then
    say ""
    say "## check: fast vs ref"
    step ctest_fast 400 ctest --test-dir build-gpu -R fast --output-on-failure
    fence ctest_fast 40
    # Bit-repeatability: three runs of the conformance test print the same losses and errors.
    for i in 1 2 3; do step "fast_vs_ref_$i" 300 build-gpu/bin/test_fast_vs_ref; done
    if cmp -s "$logs/fast_vs_ref_1.log" "$logs/fast_vs_ref_2.log" && cmp -s "$logs/fast_vs_ref_1.log" "$logs/fast_vs_ref_3.log"; then
      say "- test_fast_vs_ref: three runs, identical output (bit-repeatable)"
    else
      say "- test_fast_vs_ref: the three runs differ (a race, or a nondeterministic library path)"
      failed=$((failed + 1))
    fi
    if grep -q '^SKIP cudnn part' "$logs/fast_vs_ref_1.log"; then say "- test_fast_vs_ref: $(grep '^SKIP cudnn part' "$logs/fast_vs_ref_1.log")"
    elif [ $have_cudnn = 1 ]; then say "- test_fast_vs_ref ran its cudnn part: $(grep -c '@cudnn: cudnn vs flash: worst gradient' "$logs/fast_vs_ref_1.log") cases compared with flash"; fi
    fence fast_vs_ref_1 80
  elif [ "$s" = bench ]; then
    say ""
    say "## bench: fast/ (B = 8, T = 2048), and the roofline's prediction"
    step bench_fast 420 build-gpu/bin/bench_fast --presets 82M,468M --variants baseline,resformer,svformer --kernels
    fence bench_fast 80
    for v in baseline resformer svformer; do step "roofline_$v" 30 python3 bench/roofline.py --preset 468M --variant $v; done
    for v in baseline resformer svformer; do fence "roofline_$v" 1; done
  elif [ "$s" = cudnn ]; then
    say ""
    say "## cudnn: fast/ with --attention cudnn (B = 8, T = 2048)"
    if [ $have_cudnn = 1 ]; then
      step bench_fast_cudnn 420 build-gpu/bin/bench_fast --presets 82M,468M --variants baseline,resformer,svformer --kernels --attention cudnn
      fence bench_fast_cudnn 80
    else
      say "- skipped: the build has no cuDNN path (see the configure line above)"
    fi
  else
    say ""
    say "## torch: Hugging Face LlamaForCausalLM, same shapes"
    step torch_eager 240 python3 bench/bench_torch.py --presets 82M,468M
    fence torch_eager 3
    step torch_compile 330 python3 bench/bench_torch.py --presets 82M,468M --compile
    fence torch_compile 3
  fi
done
say ""
say "failed steps: $failed (logs beside this report)"
exit "$failed"
