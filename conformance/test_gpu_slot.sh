#!/usr/bin/env bash
# test_gpu_slot.sh: the GPU slot's plumbing (scripts/gpu.sh, docs/fast.md "GPU slot"), here,
# where no GPU answers. The slot script runs from a packed .gpu/ inside a private mount
# namespace in which the system's libomp and pkg-config are hidden, as on the bare GPU
# machine; its GPU steps must skip, saying so, and everything else must pass:
#   plan:  slot 1 holds the essential checks (fast-vs-ref flash, mma and --gemm wgmma, the
#          sanitizers with the tensor-core attention's and the wgmma GEMM's racecheck, the 468M
#          benchmark with its per-kernel table); each
#          slot's estimates fit its budget; the device budget adds up, its first pass within
#          600 of the 900 device-seconds and a rerun of slot 1 in what is left.
#   slot1: configure and the targeted nvcc build pass with the packed pkgconf, libraries and
#          libomp; the two programs need no NCCL, MPI, cuDNN or shared CUDA runtime; exactly 2
#          files land in the output folder; the report's table names every step of `gpu.sh
#          plan`; logs.tar.gz holds each step's log.
#   slot1 with a budget smaller than its steps: the later steps are skipped "budget", said so.
#   slot2 on slot1's build folder: the incremental build and the CPU-only roofline (run in
#          the check group, beside the skipped GPU steps) pass.
# Needs root (a mount namespace), unshare and nvcc; `gpu.sh pack` is run when .gpu/ is not
# packed (apt and PyPI). Without any of these it skips (77) and says why.
# usage: test_gpu_slot.sh SOURCE_DIR
set -u
SRC=$(cd "$1" && pwd)
. "$SRC/conformance/cli_test_lib.sh"

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root: a private mount namespace (to hide libomp and pkg-config) needs root"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
unshare -m true 2>/dev/null || skip "unshare -m is not permitted here"
command -v nvcc >/dev/null || skip "no nvcc: the slot's build is the CUDA build"

cd "$SRC"
want=$(sed -n '/^DEBS=(/,/)$/p' scripts/gpu.sh | tr -d '()' | sed 's/^DEBS=//' | tr -s ' \n' '\n' | grep -v '^$')
if [ "$want" != "$(cat .gpu/PACKED 2>/dev/null)" ] || [ ! -f .gpu/cudnn-frontend/include/cudnn_frontend.h ]; then
  bash scripts/gpu.sh pack >"$tmp/pack.log" 2>&1 || skip "gpu.sh pack failed (no apt or PyPI here?): $(tail -n 1 "$tmp/pack.log")"
fi

# ---- the plan (`gpu.sh plan`): the essential checks in slot 1, each slot's estimates inside its
# budget, the first pass within 10 of the 15 device-minutes, and a rerun of slot 1 in what is left
plan_steps() { bash scripts/gpu.sh plan | awk -v s="slot$1:" '$1 == s { on = !on; next } on && /^\| [a-z]/ && $2 != "step" { print $2 }'; }
bash scripts/gpu.sh plan >"$tmp/plan.txt"
for s in fast_vs_ref_flash fast_vs_ref_mma memcheck racecheck memcheck_mma racecheck_mma fast_vs_ref_wgmma racecheck_wgmma bench_468M_mma; do
  check "plan_slot1_has_$s" grep -qx "$s" <(plan_steps 1)
done
check plan_slot1_bench_has_kernel_table grep -qE '^\| bench_468M_mma .*--attention mma, per-kernel table' "$tmp/plan.txt"
# estimates SLOT [prebuilt]: the slot's rows added up, a run of 'together' rows at its largest
estimates() {
  awk -F'|' -v s="slot$1:" -v pre="${2:-}" '
    $1 ~ "^" s { on = !on; next }
    on && /^\| [a-z]/ && $2 !~ / step / {
      name = $2; gsub(/ /, "", name); runs = $5; gsub(/ /, "", runs); est = $4 + 0
      if (pre && (name == "configure" || name == "build")) est = 0
      if (runs == "together") { if (est > g) g = est } else { t += g + est; g = 0 }
    }
    END { print t + g }' "$tmp/plan.txt"
}
budget_of() { sed -n "s/^slot$1: budget \([0-9]*\) s$/\1/p" "$tmp/plan.txt"; }
reserve=$(grep -o 'closing reserve [0-9]* s' "$tmp/plan.txt" | head -n 1 | awk '{ print $3 }')
check plan_slot1_fits test $(($(estimates 1) + reserve)) -le "$(budget_of 1)"
check plan_slot2_fits test $(($(estimates 2) + reserve)) -le "$(budget_of 2)"
check plan_slot1_sum_printed grep -q "slot1: estimates add up to $(estimates 1 prebuilt) s with the prebuilt binaries, $(estimates 1) s building" "$tmp/plan.txt"
check plan_slot2_sum_printed grep -q "slot2: estimates add up to $(estimates 2) s" "$tmp/plan.txt"
# the device budget: its rows up to "first pass" add up to it; the limits are the device tool's
row() { awk -F'|' -v r="$1" 'index($2, r) == 2 { gsub(/ /, "", $3); print $3; exit }' "$tmp/plan.txt"; }
first=$(row 'first pass')
sum=$(awk -F'|' '/^device budget/ { on = 1; next } on && /^\| first pass/ { exit } on && $3 ~ /[0-9]/ { t += $3 } END { print t }' "$tmp/plan.txt")
check plan_first_pass_is_its_rows test "$sum" = "$first"
check plan_first_pass_within_600 test "$first" -le 600
check plan_first_pass_holds_both_slots test "$first" -ge $(($(row 'machine start') + $(budget_of 1) + $(budget_of 2)))
rerun=$(row 'rerun of slot1')
check plan_rerun_fits_what_is_left test $((first + rerun)) -le 900
rerun_budget=$(grep -o 'VRL_GPU_BUDGET=[0-9]*' <(grep '^| rerun of slot1' "$tmp/plan.txt") | cut -d = -f 2)
check plan_rerun_holds_slot1_prebuilt test $(($(estimates 1 prebuilt) + reserve)) -le "${rerun_budget:-0}"
check plan_rerun_row_adds_up test "$rerun" = $(($(row 'machine start') + $(row 'slot1 call: transfers') + rerun_budget + $(row 'idle')))
for t in $(grep -o 'timeout_s [0-9]*' "$tmp/plan.txt" | awk '{ print $2 }'); do check "plan_timeout_${t}_within_600" test "$t" -le 600; done

# run_hidden CMD...: CMD in a private mount namespace where the system's libomp (LLVM's lib
# folders) and pkg-config (pkgconf, which pkg-config links to) are gone
run_hidden() {
  : >"$tmp/nothing"
  unshare -m --propagation private bash -c '
    for d in /usr/lib/llvm-*/lib; do mount -t tmpfs none "$d" || exit 90; done
    for f in /usr/bin/pkgconf /usr/bin/pkg-config; do
      [ -e "$f" ] && ! [ -L "$f" ] && { mount --bind "$0" "$f" || exit 91; }
    done
    [ -x /usr/bin/pkg-config ] && { echo "pkg-config still visible"; exit 92; }
    [ -e /usr/lib/x86_64-linux-gnu/libomp.so.5 ] && { echo "libomp still visible"; exit 93; }
    exec "$@"' "$tmp/nothing" "$@"
}

# in the tree beside build/ (one level down, as build/ is) and through ccache like
# scripts/build.sh: the slot's compiles then read the plain build's objects from the cache
# (nvcc's too) instead of compiling fast/ again. Removed at the end.
build=$SRC/build-gpu-slot
rm -rf "$build"
trap 'rm -rf "$tmp" "$build"' EXIT # (cli_test_lib.sh's own trap removes $tmp)
export VRL_GPU_CCACHE=1
# no prebuilt binaries (the build is what is tested), no cuDNN path (its one file costs ~2 CPU
# minutes and is built by the plain build wherever its headers are), and caps ten times the
# slot's with a budget to match: a busy CI machine must not turn plumbing into a time-out
export VRL_GPU_PREBUILT=0 VRL_GPU_CUDNN=OFF VRL_GPU_CAP_SCALE=10
# ---- slot1: the whole command, GPU steps skipped
VRL_GPU_BUDGET=4000 VRL_GPU_SYSROOT=1 VRL_GPU_BUILD=$build run_hidden bash scripts/gpu.sh slot1 "$tmp/out1" >"$tmp/slot1.log" 2>&1
rc=$?
check slot1_exit_0 test "$rc" = 0
[ "$rc" = 0 ] || { tail -n 30 "$tmp/slot1.log"; cat "$tmp/out1/report.md" 2>/dev/null | head -n 40; }
check slot1_two_files test "$(ls -A "$tmp/out1" | sort | tr '\n' ' ')" = "logs.tar.gz report.md "
report=$tmp/out1/report.md
# every step of the plan has a row, in order
rows() { awk -F'|' '/^\| [A-Za-z0-9_]+ \|/ { gsub(/ /, "", $2); if ($2 != "step") print $2 }' "$1"; }
check slot1_rows_are_the_plan test "$(rows "$report")" = "$(plan_steps 1)"
check slot1_has_13_steps test "$(plan_steps 1 | wc -l)" = 13
for s in probe deps configure build; do
  check "slot1_${s}_ok" grep -qE "^\| $s \| ok \|" "$report"
done
for s in fast_vs_ref_flash fast_vs_ref_mma memcheck racecheck memcheck_mma racecheck_mma fast_vs_ref_wgmma racecheck_wgmma bench_468M_mma; do
  check "slot1_${s}_skipped_no_device" grep -qE "^\| $s \| skipped: no CUDA device" "$report"
done
tar -tzf "$tmp/out1/logs.tar.gz" >"$tmp/tar.list" 2>/dev/null
for s in $(plan_steps 1); do check "slot1_log_$s" grep -qx "slot1/$s.log" "$tmp/tar.list"; done
# the packed pieces were the ones used, and the build made the two programs
check slot1_packed_pkgconf grep -q 'pkg-config: the packed pkgconf' "$build/slot-logs/slot1/deps.log"
check slot1_packed_libraries grep -q 'libraries: the packed Debian packages' "$build/slot-logs/slot1/deps.log"
check slot1_packed_libomp grep -q 'libomp: the packed one' "$build/slot-logs/slot1/deps.log"
check slot1_cuda_backend grep -q 'CUDA backend ON' "$build/slot-logs/slot1/configure.log"
check slot1_built test -x "$build/bin/test_fast_vs_ref" -a -x "$build/bin/bench_fast"
n=$(LD_LIBRARY_PATH=$build/sysroot/usr/lib/x86_64-linux-gnu "$build/bin/test_fast_vs_ref" --list | wc -l)
check slot1_lists_cases test "$n" -ge 30
# what the programs need of the GPU machine: no NCCL, MPI or cuDNN (loaded on first use), and the
# CUDA runtime linked in (so of CUDA only libcublasLt.so.13)
for f in test_fast_vs_ref bench_fast; do
  needed=$(readelf -d "$build/bin/$f" | grep -o 'NEEDED.*\[.*\]' | tr -d '[]' | awk '{ print $NF }')
  check "slot1_${f}_needs_no_nccl_mpi_cudnn_cudart" test -z "$(grep -E '^lib(nccl|mpi|cudnn|cudart|nvrtc)' <<<"$needed")"
  check "slot1_${f}_needs_cublaslt" grep -qx 'libcublasLt.so.13' <<<"$needed"
done

# ---- slot1 under a budget smaller than its steps: configure and everything after skip
VRL_GPU_BUDGET=25 VRL_GPU_SYSROOT=1 VRL_GPU_BUILD=$build run_hidden bash scripts/gpu.sh slot1 "$tmp/out2" >"$tmp/slot2.log" 2>&1
check budget_exit_0 test $? = 0
check budget_two_files test "$(ls -A "$tmp/out2" | wc -l)" = 2
check budget_rows_are_the_plan test "$(rows "$tmp/out2/report.md")" = "$(plan_steps 1)"
# (the time left is negative where probe and deps alone outlast 25 s: a loaded machine)
check budget_configure_skipped grep -qE '^\| configure \| skipped: budget \(-?[0-9]+ s left, needs ~20 s' "$tmp/out2/report.md"
check budget_build_skipped grep -qE '^\| build \| skipped: budget' "$tmp/out2/report.md"
check budget_later_skipped grep -qE '^\| bench_468M_mma \| skipped: ' "$tmp/out2/report.md"
check budget_says_budget grep -q 'budget 25 s' "$tmp/out2/report.md"

# ---- slot2 on slot1's build folder (a warm machine): incremental build, roofline
VRL_GPU_BUDGET=4000 VRL_GPU_SYSROOT=1 VRL_GPU_BUILD=$build run_hidden bash scripts/gpu.sh slot2 "$tmp/out3" >"$tmp/slot3.log" 2>&1
rc=$?
check slot2_exit_0 test "$rc" = 0
[ "$rc" = 0 ] || head -n 30 "$tmp/out3/report.md"
check slot2_two_files test "$(ls -A "$tmp/out3" | wc -l)" = 2
check slot2_rows_are_the_plan test "$(rows "$tmp/out3/report.md")" = "$(plan_steps 2)"
check slot2_build_ok grep -qE '^\| build \| ok \|' "$tmp/out3/report.md"
check slot2_roofline_ok grep -qE '^\| roofline \| ok \| [0-9]+ \| 30 \| 5 \| planned for baseline, ResFormer, SVFormer: [0-9,]+/[0-9,]+/[0-9,]+ tokens/s' "$tmp/out3/report.md"
for s in repeat_fast_vs_ref fast_vs_ref_cudnn synccheck initcheck synccheck_mma memcheck_wgmma bench_468M_wgmma bench_468M_cudnn \
         bench_468M_variants torch_eager; do
  check "slot2_${s}_skipped_no_device" grep -qE "^\| $s \| skipped: no CUDA device" "$tmp/out3/report.md"
done

# ---- docs/fast.md carries the plan's table, row for row
plan_rows=$(bash scripts/gpu.sh plan | grep '^| [a-z]' | grep -v '^| step' | tr -s ' ')
missing=0
while IFS= read -r r; do grep -qF -- "$r" <(tr -s ' ' <docs/fast.md) || { echo "docs/fast.md lacks: $r"; missing=$((missing + 1)); }; done <<<"$plan_rows"
check docs_budget_table test "$missing" = 0
finish
