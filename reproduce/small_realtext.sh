#!/bin/sh
# small_realtext.sh: baseline against identity ResFormer on real text, on the CPU.
#
# slimpajama-mini (7 RedPajama domains, ~2.3M NeoX tokens of training text) -> `vrl data
# reorganize` + `vrl data tokenize` with the GPT-NeoX tokenizer -> the `8M` preset (8 layers,
# d 256, 4 heads, SwiGLU 896, vocab 50277: 7.6M non-embedding parameters, 33.3M in all)
# trained twice, same seed, data order and schedule, only --variant differs. Both runs go
# side by side, one BLAS thread each. Prints the final validation loss per domain and
# overall for both models and writes the training-loss curves and the relative training
# loss (ResFormer / baseline - 1) as PNGs.
#
# The step count is fixed (not the time): 200 steps of 8 x 128 tokens per model, about
# 10 minutes for the pair on 2 idle cores; much longer when the machine is shared
# (docs/results/cpu-runs.md has the figures and the load). A run this short shows the direction of the
# difference, not the papers' 82M/20B-token numbers (formulas.md §8).
#
# Usage: reproduce/small_realtext.sh [BUILD_DIR (build)] [OUT_DIR (runs/small_realtext)]
# Env:   MODEL (8M), STEPS (200), BATCH (8), SEQ (128), LR (3e-3), WARMUP (20),
#        EVAL_EVERY (100), EVAL_BATCHES (4), SEED (1337), SHARED (../shared/data)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/runs/small_realtext}
VRL=$BUILD/bin/vrl
SHARED=${SHARED:-$ROOT/../shared/data}
MODEL=${MODEL:-8M} STEPS=${STEPS:-200} BATCH=${BATCH:-8} SEQ=${SEQ:-128} LR=${LR:-3e-3} WARMUP=${WARMUP:-20}
EVAL_EVERY=${EVAL_EVERY:-100} EVAL_BATCHES=${EVAL_BATCHES:-4} SEED=${SEED:-1337}
TOK=$SHARED/tokenizers/gpt-neox-20b.tokenizer.json
CORPUS=$SHARED/corpora/slimpajama-mini
[ -x "$VRL" ] || { echo "small_realtext.sh: $VRL not built (bash scripts/build.sh)" >&2; exit 1; }
[ -f "$TOK" ] || { echo "small_realtext.sh: $TOK is missing (real data lives in ../shared/data)" >&2; exit 1; }
[ -d "$CORPUS" ] || { echo "small_realtext.sh: $CORPUS is missing (real data lives in ../shared/data)" >&2; exit 1; }
[ -e "$OUT" ] && { echo "small_realtext.sh: $OUT exists; remove it or give another OUT_DIR" >&2; exit 1; }
mkdir -p "$OUT"

"$VRL" data reorganize --in "$CORPUS" --out "$OUT/reorg" > "$OUT/data.log" 2>&1
"$VRL" data tokenize --in "$OUT/reorg" --out "$OUT/tok" --tokenizer "$TOK" --chunk "$SEQ" >> "$OUT/data.log" 2>&1

train() {  # NAME VARIANT
    OPENBLAS_NUM_THREADS=1 "$VRL" train --model "$MODEL" --variant "$2" --data "$OUT/tok" \
        --steps "$STEPS" --batch "$BATCH" --seq "$SEQ" --lr "$LR" --warmup "$WARMUP" --seed "$SEED" \
        --eval-every "$EVAL_EVERY" --eval-batches "$EVAL_BATCHES" --quiet --out "$OUT/$1" > "$OUT/$1.log" 2>&1 \
        || { echo "small_realtext.sh: training $1 failed:" >&2; tail -3 "$OUT/$1.log" >&2; exit 1; }
}
start=$(date +%s)
train baseline baseline & p1=$!
train resformer resformer & p2=$!
wait $p1
wait $p2
secs=$(( $(date +%s) - start ))

# final validation loss of RUN for DOMAIN ("" = all domains together)
val() {
    if [ -z "$2" ]; then
        grep '"split":"val"' "$OUT/$1/metrics.jsonl" | grep -v '"domain"' | tail -1
    else
        grep "\"domain\":\"$2\"" "$OUT/$1/metrics.jsonl" | tail -1
    fi | sed 's/.*"val_loss":\([0-9.eE+-]*\).*/\1/'
}
tps() { grep '"tokens_per_s"' "$OUT/$1/metrics.jsonl" | sed 's/.*"tokens_per_s":\([0-9.]*\).*/\1/' |
        awk '{ s += $1; n++ } END { printf "%.0f", s / n }'; }
{
    echo "$MODEL preset, slimpajama-mini (NeoX tokens), $STEPS steps x $BATCH x $SEQ tokens, lr $LR, seed $SEED;"
    echo "both runs side by side in $secs s; mean tokens/s: baseline $(tps baseline), resformer $(tps resformer)"
    echo
    echo "| validation domain | baseline | ResFormer | difference |"
    echo "|---|---|---|---|"
    for d in $(grep -o '"domain":"[^"]*"' "$OUT/baseline/metrics.jsonl" | sort -u | sed 's/.*:"\(.*\)"/\1/') ""; do
        awk -v d="${d:-all domains (mixture)}" -v b="$(val baseline "$d")" -v r="$(val resformer "$d")" \
            'BEGIN { printf "| %s | %.4f | %.4f | %+.4f |\n", d, b, r, r - b }'
    done
} | tee "$OUT/table.md"
"$VRL" analyze --loss "$OUT/baseline" "$OUT/resformer" --window 20 --out "$OUT/plots" > /dev/null
"$VRL" analyze --relative-loss "$OUT/baseline/metrics.jsonl" "$OUT/resformer/metrics.jsonl" --window 20 \
    --out "$OUT/plots" > /dev/null
echo "plots: $OUT/plots/loss_curves.png $OUT/plots/relative_loss.png"
