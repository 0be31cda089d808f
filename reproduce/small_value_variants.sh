#!/bin/sh
# small_value_variants.sh: a scaled-down value-path comparison on real text, on the CPU.
#
# TinyShakespeare as byte tokens (vocab 256: `vrl data bytes`, last 10% = validation), the
# `small` preset (4 layers, 4 heads, d 128, SwiGLU 448), the same seed, data order and
# schedule for every model; only --variant differs. Prints the final validation loss of:
#   baseline, identity ResFormer, SVFormer, NeuTRENO (lambda 0.4)
# and each one's difference to the baseline. Two runs at a time, one BLAS thread each.
#
# Usage: reproduce/small_value_variants.sh [BUILD_DIR (build)] [OUT_DIR (runs/small_value_variants)]
# Env:   STEPS (600), BATCH (16), SEQ (64), EVAL_BATCHES (32), SEED (1337),
#        DATA (../shared/data/corpora/tinyshakespeare/input.txt)
# Takes ~4-8 minutes on 2 free cores. A tiny run like this shows the direction of each
# variant, not the paper's 82M numbers (SPEC §8).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/runs/small_value_variants}
VRL=$BUILD/bin/vrl
DATA=${DATA:-$ROOT/../shared/data/corpora/tinyshakespeare/input.txt}
STEPS=${STEPS:-600} BATCH=${BATCH:-16} SEQ=${SEQ:-64} EVAL_BATCHES=${EVAL_BATCHES:-32} SEED=${SEED:-1337}
[ -x "$VRL" ] || { echo "small_value_variants.sh: $VRL not built (cmake --build $BUILD)" >&2; exit 1; }
[ -f "$DATA" ] || { echo "small_value_variants.sh: $DATA is missing" >&2; exit 1; }
[ -e "$OUT" ] && { echo "small_value_variants.sh: $OUT exists; remove it or give another OUT_DIR" >&2; exit 1; }
mkdir -p "$OUT"
"$VRL" data bytes --in "$DATA" --out "$OUT/data" --val-fraction 0.1

train() {  # NAME VARIANT
    OPENBLAS_NUM_THREADS=1 "$VRL" train --model small --variant "$2" \
        --data "$OUT/data/train.bin" --val-data "$OUT/data/val.bin" \
        --steps "$STEPS" --batch "$BATCH" --seq "$SEQ" --seed "$SEED" \
        --eval-every 0 --eval-batches "$EVAL_BATCHES" --quiet --out "$OUT/$1" > "$OUT/$1.log" 2>&1 \
        || { echo "small_value_variants.sh: $1 failed:" >&2; tail -3 "$OUT/$1.log" >&2; exit 1; }
}
start=$(date +%s)
train baseline baseline & p1=$!
train resformer resformer & p2=$!
wait $p1; wait $p2
train svformer svformer & p1=$!
train neutreno neutreno:lambda=0.4 & p2=$!
wait $p1; wait $p2

val() { grep '"split":"val"' "$OUT/$1/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.eE+-]*\).*/\1/'; }
base=$(val baseline)
echo
echo "small preset, TinyShakespeare bytes, $STEPS steps x $BATCH x $SEQ tokens, seed $SEED ($(( $(date +%s) - start )) s)"
printf '%-22s %-24s %12s %12s %12s\n' model variant parameters val_loss vs_baseline
for run in baseline:baseline resformer:resformer svformer:svformer neutreno:neutreno:lambda=0.4; do
    name=${run%%:*} variant=${run#*:}
    params=$("$VRL" info --model small --variant "$variant" | sed -n 's/^parameters: //p')
    v=$(val "$name")
    awk -v n="$name" -v var="$variant" -v p="$params" -v v="$v" -v b="$base" \
        'BEGIN { printf "%-22s %-24s %12s %12.4f %+12.4f\n", n, var, p, v, v - b }'
done
