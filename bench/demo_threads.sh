#!/bin/sh
# demo_threads.sh: the demo's training run (`vrl train` with no flags: small preset,
# synthetic corpus, 300 steps of 16 x 128) timed with the vrl of an older commit and with
# this tree's, back to back: wall, user and system seconds, and the load average before
# each, so a figure taken on a busy machine can be told apart.
#
# The older commit (default e42dee0, before BLAS threads were fitted to the model) is
# exported with `git archive` and built into BUILD_DIR-OLD (kept, so a second call reuses it).
#
# Usage: bench/demo_threads.sh [OLD_COMMIT (e42dee0)] [BUILD_DIR (build)]
# Env:   STEPS (300: the demo's)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=${1:-e42dee0}
BUILD=${2:-$ROOT/build}
STEPS=${STEPS:-300}
OLD_BUILD=$BUILD-$OLD
[ -x "$BUILD/bin/vrl" ] || { echo "demo_threads.sh: $BUILD/bin/vrl not built (bash scripts/build.sh)" >&2; exit 1; }
if [ ! -x "$OLD_BUILD/bin/vrl" ]; then
    src=$(mktemp -d)
    git -C "$ROOT" archive "$OLD" | tar -x -C "$src"
    cmake -S "$src" -B "$OLD_BUILD" -DCMAKE_BUILD_TYPE=Release -DVRL_CUDA=OFF > /dev/null
    cmake --build "$OLD_BUILD" -j2 --target vrl > /dev/null
    rm -rf "$src"
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

run() {  # LABEL VRL
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    /usr/bin/time -f "%e %U %S" -o "$scratch/time" "$2" train --steps "$STEPS" --quiet --out "$scratch/$1"
    read -r wall user sys < "$scratch/time"
    printf '%-28s %8s %8s %8s   %s\n' "$1" "$wall" "$user" "$sys" "$load"
}
echo "vrl train (demo: small preset, $STEPS steps x 16 x 128), $(nproc) cores"
printf '%-28s %8s %8s %8s   %s\n' build wall_s user_s sys_s "load average before (1/5/15 min)"
run "before ($OLD)" "$OLD_BUILD/bin/vrl"
run "after ($(git -C "$ROOT" rev-parse --short HEAD))" "$BUILD/bin/vrl"
