#!/usr/bin/env bash
# gpu.sh: fast/ on a short GPU slot (docs/fast.md, "GPU slot").
#
# GPU time comes as slots on a bare machine with no package registry: a few minutes per
# command, the machine gone soon after. So the work is two prepared commands, each under one
# deadline, and everything the build needs travels in .gpu/:
#
#   bash scripts/gpu.sh pack [--prebuilt]  # here (apt and PyPI work): .gpu/ (git-ignored); --prebuilt
#                                        # adds the two programs built here (a rebuild there if stale)
#   bash scripts/gpu.sh slot1 [OUTDIR]   # there, first command: build, check, sanitize, time 468M
#   bash scripts/gpu.sh slot2 [OUTDIR]   # there, at once on the warm machine: repeatability, more timings, PyTorch
#   bash scripts/gpu.sh plan             # the steps of both commands with their caps and estimates
#
# Each slot writes exactly two files into OUTDIR (default $OUT, the device tool's output
# folder, else results/gpu-slotN-DATE): report.md (a summary table first: every step's
# status, time and figures) and logs.tar.gz (every step's full log).
#
# The deadline: VRL_GPU_BUDGET seconds for the whole command (default: the slot's budget in
# `plan`). A step starts only if the time left holds its estimate plus the closing reserve,
# and runs under a hard limit of its cap or the time left, whichever is smaller, so the
# command ends inside its budget; a step that does not start is reported as skipped, with
# the reason. Steps that need a GPU are skipped, saying so, where no device answers (this
# is how CI tests the plumbing: conformance/test_gpu_slot.sh).
# VRL_GPU_CAP_SCALE=N multiplies every cap (a slow or busy machine: the plumbing test);
# VRL_GPU_PREBUILT=0 builds even where .gpu/prebuilt matches; VRL_GPU_CUDNN=OFF builds
# without the cuDNN path.
# VRL_GPU_BUILD: the build folder (default build-gpu; slot2 reuses slot1's while the machine
# is warm, and compares with slot1's kept logs). VRL_GPU_SYSROOT=1 uses the packed
# libraries even where the system has them. The exit status is the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."

# The Debian packages the targeted build links or runs (bookworm, amd64). Criterion is
# needed only because CMake's configure asks for it.
DEBS=(libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
      libjansson-dev libjansson4 libzstd-dev libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2
      libcriterion-dev libcriterion3 libgit2-1.5 libnanomsg5 libhttp-parser2.9 libssh2-1
      libmbedtls14 libmbedx509-1 libmbedcrypto7
      libomp5-14 pkgconf-bin libpkgconf3)
MODULES=(openblas jansson criterion libpcre2-8 libutf8proc libzstd)

# ---------------------------------------------------------------- the steps
# name cap estimate (seconds) gpu(1: needs a device) what
SLOT1_BUDGET=450 # + the machine's start (1-2 min): the first command within 9.5 minutes
SLOT1=(
  "probe 30 5 0 machine, toolkit, sanitizer, pkg-config, libomp, cuDNN, torch"
  "deps 60 5 0 the packed libraries, unpacked only where the system lacks them"
  "configure 90 20 0 cmake: CUDA on, sm_90, no CPU layer, no MPI"
  "build 300 60 0 test_fast_vs_ref and bench_fast only"
  "fast_vs_ref_flash 150 40 1 every case and the trainer against ref, flash attention"
  "fast_vs_ref_cudnn 150 60 1 every case with cuDNN attention, against ref and flash"
  "memcheck 150 70 1 compute-sanitizer memcheck, one case per kernel family"
  "racecheck 90 45 1 compute-sanitizer racecheck, hd64_baseline"
  "synccheck 60 20 1 compute-sanitizer synccheck, hd64_baseline"
  "initcheck 60 30 1 compute-sanitizer initcheck, hd64_baseline"
  "bench_468M_flash 90 35 1 bench_fast 468M baseline, B 8, T 2048, flash"
  "bench_468M_cudnn 90 40 1 bench_fast 468M baseline, B 8, T 2048, cuDNN"
)
SLOT2_BUDGET=240 # what is left of 15 minutes after the start, slot 1, transfers and the 30 s idle
SLOT2=(
  "deps 60 10 0 as in slot 1"
  "build 300 10 0 incremental: slot 1's build folder is kept while the machine is warm"
  "repeat_fast_vs_ref 120 40 1 the flash run again; its figure lines must equal slot 1's"
  "fast_vs_ref_mma 120 40 1 every case and the trainer with --attention mma (tensor cores), against ref"
  "bench_468M_variants 90 35 1 bench_fast 468M ResFormer and SVFormer, flash"
  "bench_468M_mma 90 40 1 bench_fast 468M baseline, B 8, T 2048, --attention mma, per-kernel table"
  "roofline 30 5 0 bench/roofline.py's prediction for 468M, beside the measurement"
  "torch_eager 120 45 1 bench/bench_torch.py 468M, eager PyTorch"
)
RESERVE=10 # seconds kept for the report and the archive

# the cases whose kernels memcheck covers: both attention head sizes, GQA, every value-path
# mix (λ rows, NeuTRENO, CLA, Q/K residuals, shared Q/K, SVFormer anchors) and every stream
MEMCHECK_CASES=(hd64_baseline hd128_gqa_resformer gqa4_resformer_dense gqa4_neutreno_resformer gqa4_cla
                gqa4_query_residual gqa4_shared_k gqa4_svformer_anchors13 gqa4_denseformer_dilated
                gqa4_attnres_block3 gqa4_hidden_residual_attnres gqa4_learnable_denseformer)
RACE_CASE=hd64_baseline

# The targeted build: the two programs the GPU steps run, for sm_90, without the CPU layer or MPI.
# VRL_TENSORBOARD=OFF: the packed libraries (DEBS) have no protobuf-c or ISA-L, and the two programs
# write no run folder
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DVRL_MPI=OFF -DVRL_CUDA_CPU=OFF "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual"
             -DVRL_TENSORBOARD=OFF)
# VRL_GPU_CCACHE=1: compile through ccache with the tree as its base_dir, as scripts/build.sh
# does (test_gpu_slot: the slot's build then reuses the plain build's objects, nvcc's included)
if [ "${VRL_GPU_CCACHE:-0}" = 1 ] && command -v ccache >/dev/null; then
  for l in C CXX CUDA; do CMAKE_FLAGS+=("-DCMAKE_${l}_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;ccache"); done
fi
[ "${VRL_GPU_CUDNN:-AUTO}" = OFF ] && CMAKE_FLAGS+=(-DVRL_CUDNN=OFF) # the plumbing test: no 2-minute cuDNN TU

# source_stamp: a hash of every file the two programs are built from (no git needed: the
# GPU machine gets a copy of the working tree)
source_stamp() {
  find CMakeLists.txt cmake common ref fast bench/bench.cmake bench/bench_fast.c conformance/tests.cmake \
       conformance/test_fast_vs_ref.c python/vrl_hf -type f \
       \( -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.txt' -o -name '*.cmake' -o -name '*.py' \) |
    LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c 1-16
}
# prebuilt_ok: .gpu/prebuilt holds binaries of this source whose libraries all resolve here
prebuilt_ok() {
  [ "${VRL_GPU_PREBUILT:-1}" != 0 ] || { echo "VRL_GPU_PREBUILT=0"; return 1; }
  [ -x .gpu/prebuilt/test_fast_vs_ref ] && [ -x .gpu/prebuilt/bench_fast ] || { echo "no .gpu/prebuilt"; return 1; }
  local want; want=$(source_stamp)
  [ "$(cat .gpu/prebuilt/STAMP 2>/dev/null)" = "$want" ] || { echo "stale: .gpu/prebuilt is of another source than $want"; return 1; }
  local f missing
  for f in .gpu/prebuilt/test_fast_vs_ref .gpu/prebuilt/bench_fast; do
    missing=$(ldd "$f" 2>&1 | grep 'not found')
    [ -z "$missing" ] || { echo "$f: $missing" | head -n 3; return 1; }
  done
  .gpu/prebuilt/test_fast_vs_ref --list >/dev/null || { echo "the prebuilt test_fast_vs_ref does not run here"; return 1; }
  echo "prebuilt binaries of source $want, every library resolved"
}

# ---------------------------------------------------------------- pack (here)
if [ "${1:-}" = pack ]; then
  set -e
  rm -rf .gpu/debs && mkdir -p .gpu/debs
  fetch() { (cd .gpu/debs && apt-get download "${DEBS[@]}" 2>&1 | grep -v '^Get:\|unsandboxed' || true); }
  fetch
  n=$(ls .gpu/debs/*.deb 2>/dev/null | wc -l)
  # a machine whose package lists were never read (a fresh CI machine with every package there)
  if [ "$n" -ne "${#DEBS[@]}" ]; then apt-get update -qq >/dev/null 2>&1 || true; fetch; n=$(ls .gpu/debs/*.deb 2>/dev/null | wc -l); fi
  [ "$n" -eq "${#DEBS[@]}" ] || { echo "gpu.sh pack: got $n of ${#DEBS[@]} packages in .gpu/debs (run apt-get update first?)" >&2; exit 1; }
  [ -f .deps/cudnn-frontend/include/cudnn_frontend.h ] || bash scripts/cudnn_frontend.sh
  rm -rf .gpu/cudnn-frontend && cp -r .deps/cudnn-frontend .gpu/cudnn-frontend
  printf '%s\n' "${DEBS[@]}" >.gpu/PACKED
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (+ uncommitted changes)')" >.gpu/COMMIT
  rm -rf .gpu/prebuilt
  if [ "${2:-}" = --prebuilt ]; then
    # the two programs built here, as slot1 would build them there (cuDNN from this toolkit)
    cmake -S . -B build-gpu-pack "${CMAKE_FLAGS[@]}" -DCUDNN_FRONTEND_INCLUDE_DIR="$PWD/.deps/cudnn-frontend/include" >.gpu/configure.log
    cmake --build build-gpu-pack -j"$(nproc)" --target test_fast_vs_ref bench_fast >/dev/null
    mkdir -p .gpu/prebuilt
    cp build-gpu-pack/bin/test_fast_vs_ref build-gpu-pack/bin/bench_fast .gpu/prebuilt/
    strip .gpu/prebuilt/test_fast_vs_ref .gpu/prebuilt/bench_fast
    mv .gpu/configure.log .gpu/prebuilt/configure.log
    source_stamp >.gpu/prebuilt/STAMP
    echo "gpu.sh pack: prebuilt test_fast_vs_ref and bench_fast, source $(cat .gpu/prebuilt/STAMP), $(du -sh .gpu/prebuilt | cut -f1)"
  fi
  echo "gpu.sh pack: ${#DEBS[@]} packages and cudnn-frontend $(cat .gpu/cudnn-frontend/VERSION), $(du -sh .gpu | cut -f1) in .gpu/ (carry it: the device tool's carry [\".gpu\"])"
  exit 0
fi

if [ "${1:-}" = plan ]; then
  for slot in 1 2; do
    if [ $slot = 1 ]; then steps=("${SLOT1[@]}"); budget=$SLOT1_BUDGET; else steps=("${SLOT2[@]}"); budget=$SLOT2_BUDGET; fi
    total=0
    echo "slot$slot: budget $budget s"
    printf '| %-20s | %5s | %8s | %s |\n' step 'cap s' 'est. s' what
    echo '|---|---|---|---|'
    for s in "${steps[@]}"; do
      read -r name cap est gpu what <<<"$s"
      printf '| %-20s | %5s | %8s | %s%s |\n' "$name" "$cap" "$est" "$what" "$([ "$gpu" = 1 ] && echo ' (GPU)')"
      total=$((total + est))
    done
    echo "slot$slot: estimates add up to $total s of $budget s (closing reserve $RESERVE s)"
  done
  exit 0
fi

case "${1:-}" in
  slot1) steps=("${SLOT1[@]}"); budget=${VRL_GPU_BUDGET:-$SLOT1_BUDGET}; slot=1 ;;
  slot2) steps=("${SLOT2[@]}"); budget=${VRL_GPU_BUDGET:-$SLOT2_BUDGET}; slot=2 ;;
  *) echo "usage: bash scripts/gpu.sh pack | plan | slot1 [OUTDIR] | slot2 [OUTDIR]" >&2; exit 2 ;;
esac
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu.sh: VRL_GPU_BUDGET '$budget' is not a number of seconds" >&2; exit 2; }
start=$SECONDS
out=${2:-${OUT:-results/gpu-slot$slot-$(date -u +%Y%m%d-%H%M)}}
mkdir -p "$out" || { echo "gpu.sh: cannot make the output folder $out" >&2; exit 2; }
build=${VRL_GPU_BUILD:-build-gpu}
mkdir -p "$build" || { echo "gpu.sh: cannot make the build folder $build" >&2; exit 2; }
build=$(cd "$build" && pwd)
logs=$build/slot-logs/slot$slot # kept on a warm machine: slot 2 reads slot 1's
rm -rf "$logs" && mkdir -p "$logs" "$build/tmp"
export TMPDIR=$build/tmp
bin=$build/bin

# ---------------------------------------------------------------- bookkeeping
rows=()    # the summary table, one row a step
details=() # per step: the lines of its log the report shows
failed=0
# record NAME STATUS SECONDS CAP EST FIGURES
record() { rows+=("| $1 | $2 | $3 | $4 | $5 | $6 |"); }
left() { echo $((budget - (SECONDS - start))); }

# step NAME CMD...: run under the deadline; sets $rc and $status. The log is $logs/NAME.log.
step() {
  local name=$1; shift
  local cap est gpu
  read -r cap est gpu <<<"$(info "$name")"
  local l; l=$(left)
  rc=-1 status=""
  if [ "$gpu" = 1 ] && [ -z "$gpu_name" ]; then
    status="skipped: no CUDA device ($no_gpu_reason)"
  elif [ "$l" -lt $((est + RESERVE)) ]; then
    status="skipped: budget ($l s left, needs ~$est s + $RESERVE s reserve)"
  fi
  if [ -n "$status" ]; then
    record "$name" "$status" 0 "$cap" "$est" ""
    : >"$logs/$name.log"
    return 1
  fi
  local limit=$((cap * ${VRL_GPU_CAP_SCALE:-1}))
  [ $((l - RESERVE)) -lt "$limit" ] && limit=$((l - RESERVE))
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  took=$((SECONDS - t0))
  if [ $rc = 0 ]; then status=ok
  elif [ $rc = 124 ] || [ $rc = 137 ]; then status="**timed out** (limit $limit s)"; failed=$((failed + 1))
  else status="**failed** (exit $rc)"; failed=$((failed + 1)); fi
  return $rc
}
# finish NAME FIGURES: the row of a step that ran
finish() {
  local cap est gpu
  read -r cap est gpu <<<"$(info "$1")"
  record "$1" "$status" "$took" "$cap" "$est" "$2"
}
# info NAME: "cap estimate gpu" from this slot's table
info() {
  local s
  for s in "${steps[@]}"; do
    read -r n c e g _ <<<"$s"
    [ "$n" = "$1" ] && { echo "$c $e $g"; return; }
  done
  echo "0 0 0"
}
# skip NAME REASON: a step that cannot run for a reason of its own (no cuDNN path, no tool)
skip() {
  local cap est gpu reason=$2
  read -r cap est gpu <<<"$(info "$1")"
  [ "$gpu" = 1 ] && [ -z "$gpu_name" ] && reason="no CUDA device ($no_gpu_reason)" # the first reason
  record "$1" "skipped: $reason" 0 "$cap" "$est" ""
  : >"$logs/$1.log"
}
# the commit: git's where there is one, else the one `pack` recorded
commit() {
  git rev-parse --short HEAD >/dev/null 2>&1 &&
    { echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (+ uncommitted changes)')"; return; }
  echo "$(cat .gpu/COMMIT 2>/dev/null || echo unknown) (as packed)"; }
tail_of() { details+=("### $1" '```' "$(tail -n "${2:-25}" "$logs/$1.log")" '```'); }
# worst "worst gradient rel X" over a fast_vs_ref log, with the count of FAIL lines
vs_ref_figures() {
  local f=$logs/$1.log
  local cases worst fails
  cases=$(grep -c ': worst gradient rel' "$f")
  worst=$(grep -o 'worst gradient rel [0-9.e+-]*' "$f" | awk '{ if ($4 + 0 > w) w = $4 + 0 } END { printf "%.2e", w }')
  fails=$(grep -c '^FAIL' "$f")
  echo "$cases cases, worst gradient rel $worst, $fails failed checks"
}
sanitizer_figures() { grep -o 'ERROR SUMMARY: [0-9]* error[s]*' "$logs/$1.log" | tail -n 1; }
bench_figures() { grep -E 'tok/s' "$logs/$1.log" | awk '{ printf "%s%s %s %s tok/s, MFU %s", (n++ ? "; " : ""), $1, $2, $5, $10 }'; }

# ---------------------------------------------------------------- the machine
gpu_name="" no_gpu_reason=""
if ! command -v nvidia-smi >/dev/null; then no_gpu_reason="nvidia-smi not found"
elif ! gpu_name=$(timeout 15 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) || [ -z "$gpu_name" ]; then
  gpu_name="" no_gpu_reason="nvidia-smi lists no GPU"
fi

probe() {
  echo "gpu: ${gpu_name:-none ($no_gpu_reason)}"
  [ -n "$gpu_name" ] && timeout 15 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
  echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found')"
  echo "compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | grep -o 'Version [0-9.]*' | head -n 1 || echo 'not found')"
  echo "pkg-config: $(command -v pkg-config || echo 'not found')"
  echo "libomp: $(system_libomp || echo 'not found')"
  echo "cmake: $(cmake --version 2>/dev/null | head -n 1 || echo 'not found')"
  echo "gcc: $(gcc -dumpfullversion 2>/dev/null || echo 'not found')"
  local inc
  inc=$(ls "$cuda_root"/include/cudnn_version.h "$cuda_root"/targets/*/include/cudnn_version.h 2>/dev/null | head -n 1)
  if [ -n "$inc" ]; then
    echo "cuDNN (toolkit): $(awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{ v = v (v ? "." : "") $3 } END { print v }' "$inc") in $(dirname "$inc")"
  else echo "cuDNN (toolkit): not found"; fi
  echo "torch: $(timeout 30 python3 -c 'import torch, transformers; print(torch.__version__, "cuda", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "transformers", transformers.__version__)' 2>/dev/null || echo 'not importable')"
  echo "cpu cores: $(nproc), memory: $(free -g 2>/dev/null | awk '/^Mem/{ print $2 " GiB" }')"
}
system_libomp() {
  local f
  for f in /usr/lib/llvm-*/lib/libomp.so.5 /usr/lib/x86_64-linux-gnu/libomp.so.5 /usr/lib64/libomp.so.5 /usr/local/lib/libomp.so.5; do
    [ -e "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}
cuda_root=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")

# ---------------------------------------------------------------- deps: what the system lacks, from .gpu/
# Sets PKG (the pkg-config program), LIBOMP and the environment for the packed root.
PKG="" LIBOMP="" sysroot=$build/sysroot
unpack() {
  [ -d "$sysroot/usr" ] && return 0
  ls .gpu/debs/*.deb >/dev/null 2>&1 || { echo "the system lacks $1 and .gpu/debs is empty: run 'bash scripts/gpu.sh pack' where apt works and carry .gpu"; return 1; }
  mkdir -p "$sysroot"
  # under the deps step's cap; a .deb is an ar archive holding data.tar.*, which dpkg-deb
  # unpacks, or ar and tar where there is no dpkg (a machine that is not Debian's)
  timeout 50 bash -c '
    for f in .gpu/debs/*.deb; do
      if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$f" "$1" || { echo "cannot unpack $f"; exit 1; }
      else
        data=$(ar t "$f" | grep "^data\.tar") || { echo "no data archive in $f"; exit 1; }
        case $data in *.xz) z=-J ;; *.zst) z=--zstd ;; *.gz) z=-z ;; *) z= ;; esac
        ar p "$f" "$data" | tar -x $z -C "$1" || { echo "cannot unpack $f"; exit 1; }
      fi
    done' unpack "$sysroot" || { echo "unpacking .gpu/debs failed or took over 50 s"; rm -rf "$sysroot"; return 1; }
  echo "unpacked $(ls .gpu/debs/*.deb | wc -l) packages into $sysroot"
}
deps() {
  local lib=$sysroot/usr/lib/x86_64-linux-gnu
  if [ "${VRL_GPU_SYSROOT:-0}" != 1 ] && PKG=$(command -v pkg-config) && [ -x "$PKG" ]; then echo "pkg-config: the system's, $PKG"
  else
    unpack "pkg-config" || return 1
    PKG=$sysroot/usr/bin/pkgconf
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "pkg-config: the packed pkgconf, $PKG"
  fi
  if [ "${VRL_GPU_SYSROOT:-0}" != 1 ] && "$PKG" --exists "${MODULES[@]}" 2>/dev/null; then echo "libraries: the system's (${MODULES[*]})"
  else
    unpack "some of ${MODULES[*]}" || return 1
    # criterion.pc names its static-link dependencies as Requires.private, whose .pc files come
    # with -dev packages a shared link never needs
    sed -i '/^Requires.private/d' "$lib/pkgconfig/criterion.pc"
    export PKG_CONFIG_SYSROOT_DIR=$sysroot
    export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$sysroot/usr/share/pkgconfig
    export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LIBRARY_PATH=$lib:$lib/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}
    "$PKG" --exists "${MODULES[@]}" || { echo "the packed libraries do not answer pkg-config: $("$PKG" --print-errors --exists "${MODULES[@]}" 2>&1 | head -n 3)"; return 1; }
    echo "libraries: the packed Debian packages (${MODULES[*]})"
  fi
  if [ "${VRL_GPU_SYSROOT:-0}" != 1 ] && LIBOMP=$(system_libomp); then echo "libomp: the system's, $LIBOMP"
  else
    unpack "libomp" || return 1
    LIBOMP=$(ls "$sysroot"/usr/lib/llvm-*/lib/libomp.so.5 2>/dev/null | head -n 1)
    [ -n "$LIBOMP" ] || { echo "no libomp.so.5 in the packed libomp5 package"; return 1; }
    export LD_LIBRARY_PATH=$(dirname "$LIBOMP")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "libomp: the packed one, $LIBOMP"
  fi
  # the toolkit's libraries, for binaries built elsewhere (`pack --prebuilt`)
  local d
  for d in "$cuda_root"/lib64 "$cuda_root"/lib "$cuda_root"/targets/x86_64-linux/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  done
  # cuDNN attention: the frontend headers (.deps here, .gpu carried); cuDNN from the toolkit
  # (CMake looks there), else PyTorch's nvidia-cudnn wheel
  cudnn_flags=()
  if [ ! -f .deps/cudnn-frontend/include/cudnn_frontend.h ] && [ -f .gpu/cudnn-frontend/include/cudnn_frontend.h ]; then
    cudnn_flags+=("-DCUDNN_FRONTEND_INCLUDE_DIR=$PWD/.gpu/cudnn-frontend/include")
  fi
  if ! ls "$cuda_root"/lib*/libcudnn.so* "$cuda_root"/targets/*/lib/libcudnn.so* >/dev/null 2>&1; then
    local wheel
    wheel=$(timeout 20 python3 -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null || true)
    if [ -n "$wheel" ] && ls "$wheel"/lib/libcudnn.so* >/dev/null 2>&1; then
      cudnn_flags+=("-DCUDNN_ROOT=$wheel")
      export LD_LIBRARY_PATH=$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      echo "cuDNN: PyTorch's wheel, $wheel"
    fi
  fi
}

# ---------------------------------------------------------------- run the slot
t0=$SECONDS
probe >"$logs/probe.log" 2>&1
status=ok took=$((SECONDS - t0))
[ "$slot" = 1 ] && finish probe "${gpu_name:-no GPU}"

t0=$SECONDS
cudnn_flags=()
# in this shell, not a child: it sets the environment the later steps build and run with
if deps >"$logs/deps.log" 2>&1; then status=ok; else status="**failed**"; failed=$((failed + 1)); fi
took=$((SECONDS - t0))
finish deps "$(grep -c 'the system' "$logs/deps.log") of 3 from the system"
deps_ok=$([ "$status" = ok ] && echo 1 || echo 0)

built=0
if [ "$deps_ok" = 1 ] && [ "$slot" = 1 ] && prebuilt_ok >"$logs/prebuilt.log" 2>&1; then
  # the binaries `pack --prebuilt` made here from this very source: no compiler time spent
  mkdir -p "$bin" && cp .gpu/prebuilt/test_fast_vs_ref .gpu/prebuilt/bench_fast "$bin/" && cp .gpu/prebuilt/configure.log "$logs/configure.log"
  touch "$build/PREBUILT"
  status="ok: prebuilt" took=0
  finish configure "$(grep -o 'cuDNN attention [A-Za-z ]*' "$logs/configure.log" | head -n 1) (as packed)"
  finish build "$(cat "$logs/prebuilt.log")"
  built=1
elif [ "$deps_ok" = 1 ]; then
  if [ "$slot" = 1 ]; then
    rm -f "$build/PREBUILT"
    if step configure cmake -S . -B "$build" "${CMAKE_FLAGS[@]}" -DPKG_CONFIG_EXECUTABLE="$PKG" -DVRL_LIBOMP="$LIBOMP" \
        "${cudnn_flags[@]}"; then
      grep -q 'CUDA backend ON' "$logs/configure.log" || { status="**failed** (CUDA backend not enabled)"; failed=$((failed + 1)); }
    fi
    [ "$rc" = -1 ] || finish configure "$(grep -o 'cuDNN attention [A-Za-z ]*' "$logs/configure.log" | head -n 1)"
  fi
  if [ "$slot" = 1 ] && [ "$status" != ok ]; then
    case $status in "skipped: budget"*) skip build "budget (configure did not run)" ;; *) skip build "configure did not pass" ;; esac
  elif [ "$slot" = 2 ] && [ -f "$build/PREBUILT" ] && [ -x "$bin/test_fast_vs_ref" ]; then
    status="ok: slot 1's prebuilt binaries" took=0; finish build ""; built=1
  elif [ "$slot" = 2 ] && [ ! -f "$build/CMakeCache.txt" ]; then
    skip build "no configured $build (run slot1 first, on the same warm machine)"
  elif step build cmake --build "$build" -j"$(nproc)" --target test_fast_vs_ref bench_fast; then
    built=1; finish build ""
  else [ "$rc" = -1 ] || finish build "$(grep -m 1 -E 'error' "$logs/build.log")"; fi
else
  [ "$slot" = 1 ] && skip configure "deps failed"
  skip build "deps failed"
fi
have_cudnn=0
grep -q 'cuDNN attention ON' "$build/slot-logs/slot1/configure.log" 2>/dev/null && have_cudnn=1
no_build() { skip "$1" "the build failed or did not run"; }

if [ "$slot" = 1 ]; then
  if [ $built = 1 ]; then
    mapfile -t all_cases < <("$bin/test_fast_vs_ref" --list)
    step fast_vs_ref_flash "$bin/test_fast_vs_ref" "${all_cases[@]}" trainer
    [ "$rc" = -1 ] || finish fast_vs_ref_flash "$(vs_ref_figures fast_vs_ref_flash)"
    if [ $have_cudnn = 1 ]; then
      step fast_vs_ref_cudnn "$bin/test_fast_vs_ref" cudnn
      if [ "$rc" != -1 ]; then
        if grep -q '^SKIP cudnn part' "$logs/fast_vs_ref_cudnn.log"; then
          status="refused by cuDNN: $(grep -m 1 '^SKIP cudnn part' "$logs/fast_vs_ref_cudnn.log" | cut -c 17-)"
        fi
        finish fast_vs_ref_cudnn "$(vs_ref_figures fast_vs_ref_cudnn); $(grep -c 'cudnn vs flash: worst gradient' "$logs/fast_vs_ref_cudnn.log") compared with flash"
      fi
    else skip fast_vs_ref_cudnn "the build has no cuDNN path ($(grep -o 'cuDNN attention not built.*' "$logs/configure.log" | cut -c 1-120))"; fi
    if command -v compute-sanitizer >/dev/null || [ -z "$gpu_name" ]; then
      step memcheck compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 "$bin/test_fast_vs_ref" "${MEMCHECK_CASES[@]}"
      [ "$rc" = -1 ] || finish memcheck "$(sanitizer_figures memcheck), ${#MEMCHECK_CASES[@]} cases"
      for tool in racecheck synccheck initcheck; do
        step $tool compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 "$bin/test_fast_vs_ref" $RACE_CASE
        [ "$rc" = -1 ] || finish $tool "$(sanitizer_figures $tool), $RACE_CASE"
      done
    else for tool in memcheck racecheck synccheck initcheck; do skip $tool "compute-sanitizer not found"; done; fi
    step bench_468M_flash "$bin/bench_fast" --presets 468M --variants baseline --steps 10
    [ "$rc" = -1 ] || finish bench_468M_flash "$(bench_figures bench_468M_flash)"
    if [ $have_cudnn = 1 ]; then
      step bench_468M_cudnn "$bin/bench_fast" --presets 468M --variants baseline --steps 10 --attention cudnn
      if [ "$rc" != -1 ]; then
        grep -qi 'cudnn' "$logs/bench_468M_cudnn.log" && [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
          status="refused by cuDNN: $(grep -m 1 -i 'cudnn' "$logs/bench_468M_cudnn.log" | cut -c 1-160)"
        finish bench_468M_cudnn "$(bench_figures bench_468M_cudnn)"
      fi
    else skip bench_468M_cudnn "the build has no cuDNN path"; fi
  else
    for s in fast_vs_ref_flash fast_vs_ref_cudnn memcheck racecheck synccheck initcheck bench_468M_flash bench_468M_cudnn; do no_build $s; done
  fi
else
  if [ $built = 1 ]; then
    mapfile -t all_cases < <("$bin/test_fast_vs_ref" --list)
    step repeat_fast_vs_ref "$bin/test_fast_vs_ref" "${all_cases[@]}" trainer
    if [ "$rc" != -1 ]; then
      # the figure lines only (losses, errors, the trainer's steps): nothing else may differ
      figures() { grep -E '^[A-Za-z0-9_@]+: (loss|logits|gradient|worst|step|scoring|cudnn)|^trainer step' "$1"; }
      first=$build/slot-logs/slot1/fast_vs_ref_flash.log
      if [ -s "$first" ]; then
        if cmp -s <(figures "$first") <(figures "$logs/repeat_fast_vs_ref.log"); then
          note="$(figures "$first" | wc -l) figure lines identical to slot 1's"
        else
          note="figure lines differ from slot 1's: $(diff <(figures "$first") <(figures "$logs/repeat_fast_vs_ref.log") | grep -c '^<') of $(figures "$first" | wc -l)"
          status="**not repeatable**"; failed=$((failed + 1))
        fi
      else note="no slot 1 log on this machine to compare with"; fi
      finish repeat_fast_vs_ref "$note"
    fi
    # the tensor-core attention (fast/attention_mma_*.cu): it becomes the default only after
    # this step has passed on a GPU (docs/fast.md, "Attention on tensor cores")
    step fast_vs_ref_mma "$bin/test_fast_vs_ref" mma trainer
    [ "$rc" = -1 ] || finish fast_vs_ref_mma "$(vs_ref_figures fast_vs_ref_mma)"
    step bench_468M_variants "$bin/bench_fast" --presets 468M --variants resformer,svformer --steps 10
    [ "$rc" = -1 ] || finish bench_468M_variants "$(bench_figures bench_468M_variants)"
    step bench_468M_mma "$bin/bench_fast" --presets 468M --variants baseline --steps 10 --attention mma --kernels
    [ "$rc" = -1 ] || finish bench_468M_mma "$(bench_figures bench_468M_mma)"
  else
    for s in repeat_fast_vs_ref fast_vs_ref_mma bench_468M_variants bench_468M_mma; do no_build $s; done
  fi
  step roofline bash -c 'for v in baseline resformer svformer; do python3 bench/roofline.py --preset 468M --variant $v || exit; done'
  [ "$rc" = -1 ] || finish roofline "planned for baseline, ResFormer, SVFormer: $(grep -oE '[0-9,]+ tokens/s planned' "$logs/roofline.log" | cut -d ' ' -f 1 | paste -sd '/') tokens/s"
  step torch_eager python3 bench/bench_torch.py --presets 468M
  [ "$rc" = -1 ] || finish torch_eager "$(grep -E 'tok/s' "$logs/torch_eager.log" | tr -s ' ' | tr '\n' ';' | cut -c 1-200)"
fi

# ---------------------------------------------------------------- the report and the archive
for s in "${steps[@]}"; do
  read -r name _ <<<"$s"
  [ -s "$logs/$name.log" ] && tail_of "$name"
done
report=$out/report.md
{
  echo "# vrl GPU slot $slot"
  echo
  echo "commit $(commit), source $(source_stamp), $(date -u '+%Y-%m-%d %H:%M UTC'), ${gpu_name:-no GPU ($no_gpu_reason)}; budget $budget s, used $((SECONDS - start)) s; failed steps: $failed"
  echo
  echo "| step | status | s | cap s | estimate s | figures |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "## machine"
  echo '```'
  cat "$logs/probe.log" 2>/dev/null || probe
  echo '```'
  echo
  echo "## the last lines of each log (all of them in logs.tar.gz)"
  printf '%s\n' "${details[@]}"
} >"$report"
tar -czf "$out/logs.tar.gz" -C "$build/slot-logs" "slot$slot"
echo "gpu.sh slot$slot: $((SECONDS - start)) s of $budget s, $failed failed step(s); $report and $out/logs.tar.gz"
exit "$failed"
