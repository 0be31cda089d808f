#!/usr/bin/env bash
# gpu.sh: fast/ on a short GPU slot (docs/fast.md, "GPU slot").
#
# GPU time comes as slots on a bare machine with no package registry: a few minutes per
# command, the machine gone soon after. So the work is two prepared commands, each under one
# deadline, and everything the build needs travels in .gpu/:
#
#   bash scripts/gpu.sh pack [--prebuilt]  # here (apt and PyPI work): .gpu/ (git-ignored); --prebuilt
#                                        # adds the two programs built here (a rebuild there if stale)
#   bash scripts/gpu.sh slot1 [OUTDIR]   # there, first command, the essential checks: fast-vs-ref with
#                                        # flash, mma and --gemm wgmma, the sanitizers (mma's and the
#                                        # wgmma GEMM's racecheck too), 468M with mma
#   bash scripts/gpu.sh slot2 [OUTDIR]   # there, at once on the warm machine: repeatability, cuDNN, the
#                                        # other sanitizers, more timings (--gemm wgmma's), PyTorch
#   bash scripts/gpu.sh plan             # the steps of both commands, their caps and estimates, and
#                                        # the device budget with the reserve for a rerun of slot1
#
# Each slot writes exactly two files into OUTDIR (default $OUT, the device tool's output
# folder, else results/gpu-slotN-DATE): report.md (a summary table first: every step's
# status, time and figures) and logs.tar.gz (every step's full log).
#
# The deadline: VRL_GPU_BUDGET seconds for the whole command (default: the slot's budget in
# `plan`). A step starts only if the time left holds its estimate plus the closing reserve,
# and runs under a hard limit of its cap or the time left, whichever is smaller, so the
# command ends inside its budget; a step that does not start is reported as skipped, with
# the reason. The check group (neighbouring steps of kind gpu+ or cpu+) runs at once, each
# step under its own limit; the timings run alone. Steps that need a GPU are skipped, saying so, where no device answers (this
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

# ---------------------------------------------------------------- the steps and the device budget
# The device tool lends 15 minutes of device time in all (900 s: the machine's start, the
# transfers, the commands and the idle before it goes back), at most 10 minutes a command. The
# first pass (slot 1, then slot 2 at once on the warm machine) is planned within 10 minutes, so
# that one rerun of slot 1, on a fresh machine, fits in what is left (`plan` adds it up).
DEVICE_TOTAL=900      # device time for a session
COMMAND_LIMIT=600     # one command's limit (timeout_s)
FIRST_PASS_LIMIT=600  # the first pass, the machine's start included
MACHINE_START=120     # a fresh machine's start (the tool: "a minute or more"; planned at 2 minutes)
TRANSFER=10           # per call: the tree and .gpu/ (~30 MB) there, the two result files back
IDLE=30               # a machine stays warm this long after a call before it goes back
RESERVE=10            # seconds kept for the report and the archive, inside each slot's budget
RERUN_BUDGET=140      # the rerun: `VRL_GPU_BUDGET=140 gpu.sh slot1` with the prebuilt binaries

# name cap estimate (seconds) kind what. kind: cpu; gpu (needs a device); gpu+ or cpu+ (runs at
# the same time as the steps next to it of kind gpu+ or cpu+: the check group, whose time is its
# longest member's). The caps are the steps' hard limits; the estimates are what the budget
# plans with (guesses until a GPU has run them: docs/fast.md, "GPU slot").
# Slot 1: the essential checks. Its estimates add up to 105 s with the prebuilt binaries
# (configure and build then take none), 185 s when it builds.
SLOT1_BUDGET=200
SLOT1=(
  "probe 30 5 cpu machine, toolkit, sanitizer, pkg-config, libomp, cuDNN, torch"
  "deps 60 5 cpu the packed libraries, unpacked only where the system lacks them"
  "configure 90 20 cpu cmake: CUDA on, sm_90, no CPU layer, MPI, NCCL; static CUDA runtime (0 s: prebuilt)"
  "build 180 60 cpu test_fast_vs_ref and bench_fast only (0 s: prebuilt)"
  "fast_vs_ref_flash 150 40 gpu+ every case and the trainer against ref, flash attention"
  "fast_vs_ref_mma 150 40 gpu+ every case and the trainer with --attention mma (tensor cores), against ref"
  "memcheck 150 60 gpu+ compute-sanitizer memcheck, flash, one case per kernel family"
  "racecheck 150 60 gpu+ compute-sanitizer racecheck, flash, hd64_baseline"
  "memcheck_mma 150 30 gpu+ memcheck of the attention kernels, --attention mma: hd 64 and 128, GQA, forward and backward"
  "racecheck_mma 150 45 gpu+ racecheck of the attention kernels, --attention mma: the same cases"
  "fast_vs_ref_wgmma 150 40 gpu+ every case and the trainer on the Hopper path (--attention wgmma, --gemm wgmma: TMA + wgmma), against ref"
  "racecheck_wgmma 150 40 gpu+ racecheck of the wgmma kernels (attention forward, GEMMs): hd64_baseline, hd128_gqa_resformer"
  "bench_468M_mma 90 35 gpu bench_fast 468M baseline, B 8, T 2048, --attention mma, per-kernel table"
)
# Slot 2: the rest, at once on the warm machine (slot 1's build folder is kept there).
SLOT2_BUDGET=220
SLOT2=(
  "deps 60 5 cpu as in slot 1"
  "build 180 5 cpu incremental: slot 1's build folder is kept while the machine is warm"
  "repeat_fast_vs_ref 150 40 gpu+ the default (mma) run again; its figure lines must equal slot 1's"
  "fast_vs_ref_cudnn 150 60 gpu+ every case with cuDNN attention, against ref and flash"
  "synccheck 120 30 gpu+ compute-sanitizer synccheck, flash, hd64_baseline"
  "initcheck 120 40 gpu+ compute-sanitizer initcheck, flash, hd64_baseline"
  "synccheck_mma 120 30 gpu+ synccheck of the attention kernels, --attention mma, as memcheck_mma"
  "memcheck_wgmma 120 30 gpu+ memcheck of the wgmma kernels, as racecheck_wgmma"
  "roofline 30 5 cpu+ bench/roofline.py's prediction for 468M, beside the measurement"
  "bench_468M_wgmma 90 35 gpu bench_fast 468M baseline, B 8, T 2048, the Hopper path (--attention wgmma --gemm wgmma), per-kernel table"
  "bench_468M_cudnn 90 35 gpu bench_fast 468M baseline, B 8, T 2048, cuDNN"
  "bench_468M_variants 90 35 gpu bench_fast 468M ResFormer and SVFormer, the default attention (mma)"
  "torch_eager 120 30 gpu bench/bench_torch.py 468M, eager PyTorch"
)

# the cases whose kernels memcheck covers: both attention head sizes, GQA, every value-path
# mix (λ rows, NeuTRENO, CLA, Q/K residuals, shared Q/K, SVFormer anchors) and every stream.
# These steps name flash (fast/'s default is mma): every kernel is instrumented, and the
# tensor-core attention has steps of its own (MMA_SANITIZE_CASES below)
MEMCHECK_CASES=(hd64_baseline hd128_gqa_resformer gqa4_resformer_dense gqa4_neutreno_resformer gqa4_cla
                gqa4_query_residual gqa4_shared_k gqa4_svformer_anchors13 gqa4_denseformer_dilated
                gqa4_attnres_block3 gqa4_hidden_residual_attnres gqa4_learnable_denseformer)
RACE_CASE=hd64_baseline
# the tensor-core attention under the sanitizers: head size 64 (T 130: two full 64-query tiles,
# a partial one, diagonal tiles) and 128 with GQA (2 query heads per kv head, T 70); every case
# runs the backward. Only kernels whose names hold MMA_KERNELS are instrumented: the rest (cuBLASLt's
# GEMMs among them) run at full speed, and the flash steps check fast/'s other kernels.
MMA_SANITIZE_CASES=(hd64_baseline hd128_gqa_resformer)
MMA_KERNELS=attention
# the Hopper path (--attention wgmma --gemm wgmma) under the sanitizers: the same cases; only the
# kernels whose names hold WGMMA_KERNELS (gemm_wgmma_kernel, attention_wgmma_forward_kernel) instrumented
WGMMA_KERNELS=wgmma

# The targeted build: the two programs the GPU steps run, for sm_90, without the CPU layer or MPI.
# VRL_TENSORBOARD=OFF: the packed libraries (DEBS) have no protobuf-c or ISA-L, and the two programs
# write no run folder
# VRL_NCCL=OFF and VRL_CUDART_STATIC=ON: neither program needs NCCL, and the CUDA runtime is linked
# in, so the prebuilt binaries need of the GPU machine's CUDA only the driver and libcublasLt.so.13
# (cuDNN is loaded on first use of `--attention cudnn`: fast/fast.cmake)
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DVRL_MPI=OFF -DVRL_CUDA_CPU=OFF "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual"
             -DVRL_TENSORBOARD=OFF -DVRL_NCCL=OFF -DVRL_CUDART_STATIC=ON)
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
    # what they need of the GPU machine: of CUDA only the driver and libcublasLt.so.13 (too
    # large to carry: 517 MB; no static cuBLASLt in this toolkit), the rest from .gpu/debs
    for f in test_fast_vs_ref bench_fast; do
      readelf -d ".gpu/prebuilt/$f" | sed -n "s/.*(NEEDED).*\[\(.*\)\]/$f: \1/p"
    done >.gpu/prebuilt/NEEDED
    if grep -E ': lib(nccl|cudnn|cudart|nvrtc|mpi)' .gpu/prebuilt/NEEDED >&2; then
      echo "gpu.sh pack: the prebuilt programs link the libraries above, which a bare GPU machine may lack" >&2; exit 1
    fi
    mv .gpu/configure.log .gpu/prebuilt/configure.log
    source_stamp >.gpu/prebuilt/STAMP
    echo "gpu.sh pack: prebuilt test_fast_vs_ref and bench_fast, source $(cat .gpu/prebuilt/STAMP), $(du -sh .gpu/prebuilt | cut -f1); of CUDA they need $(grep -o 'libcu[a-zA-Z]*\.so[.0-9]*' .gpu/prebuilt/NEEDED | sort -u | paste -sd ' ')"
  fi
  echo "gpu.sh pack: ${#DEBS[@]} packages and cudnn-frontend $(cat .gpu/cudnn-frontend/VERSION), $(du -sh .gpu | cut -f1) in .gpu/ (carry it: the device tool's carry [\".gpu\"])"
  exit 0
fi

# estimates SLOT [prebuilt]: the slot's planned seconds, its check group counted once at its
# longest member's estimate; with "prebuilt", configure and build take none
estimates() {
  local -n spec=SLOT$1
  local s name cap est kind what total=0 group=0
  for s in "${spec[@]}"; do
    read -r name cap est kind what <<<"$s"
    [ "${2:-}" = prebuilt ] && [ "$1" = 1 ] && { [ "$name" = configure ] || [ "$name" = build ]; } && est=0
    if [[ $kind == *+ ]]; then [ "$est" -gt "$group" ] && group=$est
    else total=$((total + group + est)); group=0; fi
  done
  echo $((total + group))
}

if [ "${1:-}" = plan ]; then
  for slot in 1 2; do
    if [ $slot = 1 ]; then steps=("${SLOT1[@]}"); budget=$SLOT1_BUDGET; else steps=("${SLOT2[@]}"); budget=$SLOT2_BUDGET; fi
    echo "slot$slot: budget $budget s"
    printf '| %-20s | %5s | %6s | %-8s | %s |\n' step 'cap s' 'est. s' runs what
    echo '|---|---|---|---|---|'
    for s in "${steps[@]}"; do
      read -r name cap est kind what <<<"$s"
      printf '| %-20s | %5s | %6s | %-8s | %s%s |\n' "$name" "$cap" "$est" "$([[ $kind == *+ ]] && echo together || echo alone)" \
        "$what" "$([[ $kind == gpu* ]] && echo ' (GPU)')"
    done
    if [ $slot = 1 ]; then
      echo "slot1: estimates add up to $(estimates 1 prebuilt) s with the prebuilt binaries, $(estimates 1) s building, of $budget s (closing reserve $RESERVE s)"
    else echo "slot2: estimates add up to $(estimates 2) s of $budget s (closing reserve $RESERVE s)"; fi
  done
  first=$((MACHINE_START + TRANSFER + SLOT1_BUDGET + TRANSFER + SLOT2_BUDGET + IDLE))
  rerun=$((MACHINE_START + TRANSFER + RERUN_BUDGET + IDLE))
  echo "device budget: $DEVICE_TOTAL s in all, $COMMAND_LIMIT s a command; each slot at its whole budget"
  echo '| item | s |'
  echo '|---|---|'
  echo "| machine start | $MACHINE_START |"
  echo "| slot1 call: transfers | $TRANSFER |"
  echo "| slot1 call: budget (timeout_s $((SLOT1_BUDGET + 20))) | $SLOT1_BUDGET |"
  echo "| slot2 call, at once on the warm machine: transfers | $TRANSFER |"
  echo "| slot2 call: budget (timeout_s $((SLOT2_BUDGET + 20))) | $SLOT2_BUDGET |"
  echo "| idle before the machine goes back | $IDLE |"
  echo "| first pass | $first |"
  echo "| left for a rerun ($DEVICE_TOTAL - $first) | $((DEVICE_TOTAL - first)) |"
  echo "| rerun of slot1 on a fresh machine, prebuilt, VRL_GPU_BUDGET=$RERUN_BUDGET (timeout_s $((RERUN_BUDGET + 20))): start, transfers, budget, idle | $rerun |"
  echo "| left after the rerun | $((DEVICE_TOTAL - first - rerun)) |"
  echo "totals: first_pass $first of $FIRST_PASS_LIMIT; rerun $rerun of $((DEVICE_TOTAL - first)) left; slot1 prebuilt $(estimates 1 prebuilt) + reserve $RESERVE of rerun budget $RERUN_BUDGET"
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
  local cap est kind
  read -r cap est kind <<<"$(info "$name")"
  local l; l=$(left)
  rc=-1 status=""
  if [[ $kind == gpu* ]] && [ -z "$gpu_name" ]; then
    status="skipped: no CUDA device ($no_gpu_reason)"
  elif [ "$l" -lt $((est + RESERVE)) ]; then
    status="skipped: budget ($l s left, needs ~$est s + $RESERVE s reserve)"
  fi
  if [ -n "$status" ]; then
    record "$name" "$status" 0 "$cap" "$est" ""
    : >"$logs/$name.log"
    return 1
  fi
  local limit; limit=$(limit_of "$cap" "$l")
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  took=$((SECONDS - t0))
  status_of "$rc" "$limit"
  return $rc
}
# limit_of CAP LEFT: a step's hard limit: its cap (times VRL_GPU_CAP_SCALE) or the time left
# less the reserve, whichever is smaller
limit_of() {
  local limit=$(($1 * ${VRL_GPU_CAP_SCALE:-1}))
  [ $(($2 - RESERVE)) -lt "$limit" ] && limit=$(($2 - RESERVE))
  echo "$limit"
}
# status_of RC LIMIT: $status of a step that ran, counting failures
status_of() {
  if [ "$1" = 0 ]; then status=ok
  elif [ "$1" = 124 ] || [ "$1" = 137 ]; then status="**timed out** (limit $2 s)"; failed=$((failed + 1))
  else status="**failed** (exit $1)"; failed=$((failed + 1)); fi
}
# finish NAME FIGURES: the row of a step that ran
finish() {
  local cap est kind
  read -r cap est kind <<<"$(info "$1")"
  record "$1" "$status" "$took" "$cap" "$est" "$2"
}
# info NAME: "cap estimate kind" from this slot's table
info() {
  local s
  for s in "${steps[@]}"; do
    read -r n c e k _ <<<"$s"
    [ "$n" = "$1" ] && { echo "$c $e $k"; return; }
  done
  echo "0 0 cpu"
}
# skip NAME REASON: a step that cannot run for a reason of its own (no cuDNN path, no tool)
skip() {
  local cap est kind reason=$2
  read -r cap est kind <<<"$(info "$1")"
  [[ $kind == gpu* ]] && [ -z "$gpu_name" ] && reason="no CUDA device ($no_gpu_reason)" # the first reason
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

# wheel_lib NAME: the folder of PyTorch's nvidia-* wheels that holds the library NAME
wheel_lib() {
  local root
  for root in $(timeout 20 python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null); do
    find "$root" -maxdepth 4 -name "$1" 2>/dev/null
  done | head -n 1 | xargs -r dirname
}

# ---------------------------------------------------------------- deps: what the system lacks, from .gpu/
# Sets PKG (the pkg-config program), LIBOMP and the environment for the packed root.
PKG="" LIBOMP="" sysroot=$build/sysroot
unpack() {
  [ -d "$sysroot/usr" ] && return 0
  ls .gpu/debs/*.deb >/dev/null 2>&1 || { echo "the system lacks $1 and .gpu/debs is empty: run 'bash scripts/gpu.sh pack' where apt works and carry .gpu"; return 1; }
  mkdir -p "$sysroot"
  # under the deps step's cap (times VRL_GPU_CAP_SCALE: a busy machine); a .deb is an ar archive
  # holding data.tar.*, which dpkg-deb unpacks, or ar and tar where there is no dpkg (a machine
  # that is not Debian's)
  local limit=$((50 * ${VRL_GPU_CAP_SCALE:-1}))
  timeout "$limit" bash -c '
    for f in .gpu/debs/*.deb; do
      if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$f" "$1" || { echo "cannot unpack $f"; exit 1; }
      else
        data=$(ar t "$f" | grep "^data\.tar") || { echo "no data archive in $f"; exit 1; }
        case $data in *.xz) z=-J ;; *.zst) z=--zstd ;; *.gz) z=-z ;; *) z= ;; esac
        ar p "$f" "$data" | tar -x $z -C "$1" || { echo "cannot unpack $f"; exit 1; }
      fi
    done' unpack "$sysroot" || { echo "unpacking .gpu/debs failed or took over $limit s"; rm -rf "$sysroot"; return 1; }
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
  # cuBLASLt, the one CUDA library the programs link: the toolkit's, else PyTorch's nvidia wheel
  if ls "$cuda_root"/lib*/libcublasLt.so.13 "$cuda_root"/targets/*/lib/libcublasLt.so.13 >/dev/null 2>&1 ||
     ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.13 '; then echo "cuBLASLt: the system's"
  elif d=$(wheel_lib libcublasLt.so.13) && [ -n "$d" ]; then
    export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "cuBLASLt: PyTorch's wheel, $d"
  else echo "cuBLASLt: libcublasLt.so.13 not found (neither the toolkit nor PyTorch's wheels hold it)"; fi
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
finish deps "$(grep -c 'the system' "$logs/deps.log") of 4 from the system"
deps_ok=$([ "$status" = ok ] && echo 1 || echo 0)

built=0
# slot 2 takes them too on a machine that slot 1 did not warm (no build folder there)
if [ "$deps_ok" = 1 ] && { [ "$slot" = 1 ] || [ ! -f "$build/CMakeCache.txt" ]; } && prebuilt_ok >"$logs/prebuilt.log" 2>&1; then
  # the binaries `pack --prebuilt` made here from this very source: no compiler time spent
  mkdir -p "$bin" && cp .gpu/prebuilt/test_fast_vs_ref .gpu/prebuilt/bench_fast "$bin/" && cp .gpu/prebuilt/configure.log "$logs/configure.log"
  touch "$build/PREBUILT"
  status="ok: prebuilt" took=0
  [ "$slot" = 1 ] && finish configure "$(grep -o 'cuDNN attention [A-Za-z ]*' "$logs/configure.log" | head -n 1) (as packed)"
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
have_cudnn=0 configured=$build/slot-logs/slot1/configure.log
[ -f "$build/PREBUILT" ] && configured=.gpu/prebuilt/configure.log
grep -q 'cuDNN attention ON' "$configured" 2>/dev/null && have_cudnn=1
all_cases=()
[ $built = 1 ] && mapfile -t all_cases < <("$bin/test_fast_vs_ref" --list)

# ---------------------------------------------------------------- the checks: every step after build
# The check group's programs run at once (up to 8 on the GPU machine's 16 cores), each with 2
# OpenMP and OpenBLAS threads: ref's sums then split the same way in every run, and slot 2's
# repeat can compare its figure lines with slot 1's.
REF_ENV=(env OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2)
# sanitize TOOL [SANITIZER OPTION...] -- [CASE...]: test_fast_vs_ref under compute-sanitizer
sanitize() {
  command -v compute-sanitizer >/dev/null || { WHY="compute-sanitizer not found"; return 1; }
  local tool=$1 opts=(); shift
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  CMD=("${REF_ENV[@]}" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 "${opts[@]}"
       "$bin/test_fast_vs_ref" "$@")
}
cudnn_built() {
  [ $have_cudnn = 1 ] && return 0
  WHY="the build has no cuDNN path ($(grep -o 'cuDNN attention not built.*' "$configured" 2>/dev/null | cut -c 1-120))"
  return 1
}
# prepare NAME: sets CMD to the step's command, or WHY to the reason it cannot run, and fails
prepare() {
  CMD=() WHY=""
  case $1 in
    roofline) CMD=(bash -c 'for v in baseline resformer svformer; do python3 bench/roofline.py --preset 468M --variant $v || exit; done'); return 0 ;;
    torch_eager) CMD=(python3 bench/bench_torch.py --presets 468M); return 0 ;;
  esac
  [ $built = 1 ] || { WHY="the build failed or did not run"; return 1; }
  local bench=("$bin/bench_fast" --presets 468M --steps 10)
  case $1 in
    # fast/'s default attention (mma) on every case by name (no cuDNN part); flash named
    fast_vs_ref_mma | repeat_fast_vs_ref) CMD=("${REF_ENV[@]}" "$bin/test_fast_vs_ref" "${all_cases[@]}" trainer) ;;
    fast_vs_ref_flash) CMD=("${REF_ENV[@]}" "$bin/test_fast_vs_ref" flash trainer) ;;
    fast_vs_ref_cudnn) cudnn_built || return 1; CMD=("${REF_ENV[@]}" "$bin/test_fast_vs_ref" cudnn) ;;
    memcheck) sanitize memcheck -- flash "${MEMCHECK_CASES[@]}" ;;
    racecheck | synccheck | initcheck) sanitize "$1" -- flash "$RACE_CASE" ;;
    memcheck_mma | racecheck_mma | synccheck_mma)
      # a filter that matches no kernel would pass with nothing checked
      grep -aq attention_mma "$bin/test_fast_vs_ref" || { WHY="no attention_mma kernel in $bin/test_fast_vs_ref"; return 1; }
      sanitize "${1%_mma}" --kernel-name "kns=$MMA_KERNELS" -- mma "${MMA_SANITIZE_CASES[@]}" ;;
    fast_vs_ref_wgmma) CMD=(env VRL_FAST_GEMM=wgmma "${REF_ENV[@]:1}" "$bin/test_fast_vs_ref" wgmma trainer) ;;
    racecheck_wgmma | memcheck_wgmma)
      grep -aq gemm_wgmma "$bin/test_fast_vs_ref" || { WHY="no gemm_wgmma kernel in $bin/test_fast_vs_ref"; return 1; }
      sanitize "${1%_wgmma}" --kernel-name "kns=$WGMMA_KERNELS" -- wgmma "${MMA_SANITIZE_CASES[@]}"
      CMD=(env VRL_FAST_GEMM=wgmma "${CMD[@]:1}") ;;
    bench_468M_mma) CMD=("${bench[@]}" --variants baseline --attention mma --kernels) ;;
    bench_468M_wgmma) CMD=("${bench[@]}" --variants baseline --attention wgmma --gemm wgmma --kernels) ;;
    bench_468M_cudnn) cudnn_built || return 1; CMD=("${bench[@]}" --variants baseline --attention cudnn) ;;
    bench_468M_variants) CMD=("${bench[@]}" --variants resformer,svformer) ;;
    *) WHY="gpu.sh has no command for the step $1"; return 1 ;;
  esac
  [ -n "$WHY" ] && return 1
  return 0
}
# conclude NAME: the row of a step that ran, with its figures (and its status where the log
# says more than the exit code)
conclude() {
  local name=$1 figs="" log=$logs/$1.log
  case $name in
    fast_vs_ref_flash | fast_vs_ref_mma | fast_vs_ref_wgmma) figs=$(vs_ref_figures "$name") ;;
    fast_vs_ref_cudnn)
      grep -q '^SKIP cudnn part' "$log" && status="refused by cuDNN: $(grep -m 1 '^SKIP cudnn part' "$log" | cut -c 17-)"
      figs="$(vs_ref_figures "$name"); $(grep -c 'cudnn vs flash: worst gradient' "$log") compared with flash" ;;
    repeat_fast_vs_ref)
      # the figure lines only (losses, errors, the trainer's steps): nothing else may differ
      figures() { grep -E '^[A-Za-z0-9_@]+: (loss|logits|gradient|worst|step|scoring|cudnn)|^trainer step' "$1"; }
      local first=$build/slot-logs/slot1/fast_vs_ref_mma.log
      if [ -s "$first" ]; then
        if cmp -s <(figures "$first") <(figures "$log"); then
          figs="$(figures "$first" | wc -l) figure lines identical to slot 1's"
        else
          figs="figure lines differ from slot 1's: $(diff <(figures "$first") <(figures "$log") | grep -c '^<') of $(figures "$first" | wc -l)"
          [ "$status" = ok ] && failed=$((failed + 1))
          status="**not repeatable**"
        fi
      else figs="no slot 1 log on this machine to compare with"; fi ;;
    memcheck) figs="$(sanitizer_figures "$name"), ${#MEMCHECK_CASES[@]} cases" ;;
    racecheck | synccheck | initcheck) figs="$(sanitizer_figures "$name"), $RACE_CASE" ;;
    memcheck_mma | racecheck_mma | synccheck_mma) figs="$(sanitizer_figures "$name"), kernels *$MMA_KERNELS*, ${MMA_SANITIZE_CASES[*]}" ;;
    memcheck_wgmma | racecheck_wgmma) figs="$(sanitizer_figures "$name"), kernels *$WGMMA_KERNELS*, ${MMA_SANITIZE_CASES[*]}" ;;
    bench_*)
      figs=$(bench_figures "$name")
      [ "$name" = bench_468M_cudnn ] && grep -qi 'cudnn' "$log" && [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
        status="refused by cuDNN: $(grep -m 1 -i 'cudnn' "$log" | cut -c 1-160)" ;;
    roofline) figs="planned for baseline, ResFormer, SVFormer: $(grep -oE '[0-9,]+ tokens/s planned' "$log" | cut -d ' ' -f 1 | paste -sd '/') tokens/s" ;;
    torch_eager) figs=$(grep -E 'tok/s' "$log" | tr -s ' ' | tr '\n' ';' | cut -c 1-200) ;;
  esac
  finish "$name" "$figs"
}
# run_alone NAME: one step, alone on the machine (the timings)
run_alone() {
  if ! prepare "$1"; then skip "$1" "$WHY"; return; fi
  step "$1" "${CMD[@]}"
  [ "$rc" = -1 ] || conclude "$1"
}
# run_group NAME...: the steps at the same time, each under its own limit. The group starts only
# if the time left holds its longest estimate plus the reserve; the rows keep the plan's order.
run_group() {
  local name cap est kind l need=0 go=() limit
  declare -A why=()
  for name; do
    read -r cap est kind <<<"$(info "$name")"
    if [[ $kind == gpu* ]] && [ -z "$gpu_name" ]; then why[$name]="no CUDA device ($no_gpu_reason)"
    elif ! prepare "$name"; then why[$name]=$WHY
    else go+=("$name"); [ "$est" -gt "$need" ] && need=$est; fi
  done
  l=$(left)
  if [ ${#go[@]} -gt 0 ] && [ "$l" -lt $((need + RESERVE)) ]; then
    for name in "${go[@]}"; do why[$name]="budget ($l s left, the group needs ~$need s + $RESERVE s reserve)"; done
    go=()
  fi
  for name in "${go[@]}"; do
    read -r cap est kind <<<"$(info "$name")"
    limit=$(limit_of "$cap" "$l")
    prepare "$name"
    ( t0=$SECONDS
      timeout -k 5 "$limit" "${CMD[@]}" >"$logs/$name.log" 2>&1
      echo "$? $((SECONDS - t0)) $limit" >"$logs/$name.rc" ) &
  done
  wait
  for name; do
    if [ -n "${why[$name]+set}" ]; then skip "$name" "${why[$name]}"; continue; fi
    read -r rc took limit <"$logs/$name.rc"
    rm -f "$logs/$name.rc"
    status_of "$rc" "$limit"
    conclude "$name"
  done
}
# every step after build, in the plan's order; neighbours of kind gpu+ or cpu+ as one group
after_build=0 group=()
for s in "${steps[@]}"; do
  read -r name _ _ kind _ <<<"$s"
  if [ $after_build = 0 ]; then [ "$name" = build ] && after_build=1; continue; fi
  if [[ $kind == *+ ]]; then group+=("$name"); continue; fi
  [ ${#group[@]} -gt 0 ] && { run_group "${group[@]}"; group=(); }
  run_alone "$name"
done
[ ${#group[@]} -gt 0 ] && run_group "${group[@]}"

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
