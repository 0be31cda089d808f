#!/bin/sh
# small_compare.sh: a scaled-down comparison of variants on real text, on the CPU.
#
# TinyShakespeare as byte tokens (`vrl data bytes`, vocab 256, last 10% = validation),
# the `small` preset (4 layers, 4 heads, d 128, SwiGLU 448), the same seed, data order and
# schedule for every model; only --variant differs. Prints each model's parameter count,
# final validation loss and difference to the first model, and plots the training-loss
# curves (OUT/plots/loss_curves.png). Two runs at a time, one BLAS thread each.
#
# Usage: reproduce/small_compare.sh BUILD_DIR OUT_DIR NAME:VARIANT [NAME:VARIANT ...]
#        (the first model is the reference, e.g. baseline:baseline)
# Env:   STEPS (600), BATCH (16), SEQ (64), EVAL_BATCHES (32), SEED (1337),
#        DATA (../shared/data/corpora/tinyshakespeare/input.txt),
#        DEVICE (cpu: ref/; cuda: fast/ on a GPU; cuda-cpu: fast/'s kernels on the CPU layer,
#        slow: a check, not a way to train)
# A tiny run shows the direction of each variant, not the papers' 82M numbers (formulas.md §8).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 3 ] || { echo "usage: small_compare.sh BUILD_DIR OUT_DIR NAME:VARIANT [NAME:VARIANT ...]" >&2; exit 2; }
BUILD=$1 OUT=$2
shift 2
VRL=$BUILD/bin/vrl
DATA=${DATA:-$ROOT/../shared/data/corpora/tinyshakespeare/input.txt}
STEPS=${STEPS:-600} BATCH=${BATCH:-16} SEQ=${SEQ:-64} EVAL_BATCHES=${EVAL_BATCHES:-32} SEED=${SEED:-1337}
DEVICE=${DEVICE:-cpu}
case $DEVICE in cpu|cuda|cuda-cpu) ;; *) echo "small_compare.sh: DEVICE=$DEVICE: expected cpu, cuda or cuda-cpu" >&2; exit 2 ;; esac
[ -x "$VRL" ] || { echo "small_compare.sh: $VRL not built (cmake --build $BUILD)" >&2; exit 1; }
[ -f "$DATA" ] || { echo "small_compare.sh: $DATA is missing (real data lives in ../shared/data)" >&2; exit 1; }
[ -e "$OUT" ] && { echo "small_compare.sh: $OUT exists; remove it or give another OUT_DIR" >&2; exit 1; }
mkdir -p "$OUT"
"$VRL" data bytes --in "$DATA" --out "$OUT/data" --val-fraction 0.1

train() {  # NAME VARIANT
    OPENBLAS_NUM_THREADS=1 "$VRL" train --device "$DEVICE" --model small --variant "$2" \
        --data "$OUT/data/train.bin" --val-data "$OUT/data/val.bin" \
        --steps "$STEPS" --batch "$BATCH" --seq "$SEQ" --seed "$SEED" \
        --eval-every 0 --eval-batches "$EVAL_BATCHES" --quiet --out "$OUT/$1" > "$OUT/$1.log" 2>&1 \
        || { echo "small_compare.sh: $1 failed:" >&2; tail -3 "$OUT/$1.log" >&2; exit 1; }
}
start=$(date +%s)
pending=""
for run in "$@"; do  # two at a time
    train "${run%%:*}" "${run#*:}" &
    pending="$pending $!"
    if [ "$(echo $pending | wc -w)" -ge 2 ]; then
        for p in $pending; do wait "$p"; done
        pending=""
    fi
done
for p in $pending; do wait "$p"; done

val() { grep '"split":"val"' "$OUT/$1/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.eE+-]*\).*/\1/'; }
first=${1%%:*}
base=$(val "$first")
echo
echo "small preset, TinyShakespeare bytes, $STEPS steps x $BATCH x $SEQ tokens, seed $SEED, device $DEVICE ($(( $(date +%s) - start )) s)"
printf '%-16s %-28s %12s %12s %12s\n' model variant parameters val_loss "vs_$first"
runs=""
for run in "$@"; do
    name=${run%%:*} variant=${run#*:}
    runs="$runs $OUT/$name"
    params=$("$VRL" info --model small --variant "$variant" | sed -n 's/^parameters: //p')
    v=$(val "$name")
    awk -v n="$name" -v var="$variant" -v p="$params" -v v="$v" -v b="$base" \
        'BEGIN { printf "%-16s %-28s %12s %12.4f %+12.4f\n", n, var, p, v, v - b }'
done
# shellcheck disable=SC2086 # one argument per run folder
"$VRL" analyze --loss $runs --window 20 --out "$OUT/plots" > /dev/null
echo "training-loss curves: $OUT/plots/loss_curves.png"
