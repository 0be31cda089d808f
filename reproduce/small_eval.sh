#!/bin/sh
# small_eval.sh: evaluation and analysis end to end on real text, on the CPU.
#
# slimpajama-mini (7 domains) -> `vrl data` with the GPT-NeoX tokenizer -> two small models
# trained the same way, the baseline and identity ResFormer -> `vrl eval` (per-domain
# validation loss, WikiText-2 perplexity, zero-shot accuracy) and `vrl analyze` (entropy,
# token similarity, value spectrum, Fig. 3 cosines side by side; relative training loss).
# The models are tiny (4 layers, d 64, ~6.7M parameters, almost all in the 50277-token
# embedding and head) and train for minutes: zero-shot accuracies stay near chance.
#
# Usage: reproduce/small_eval.sh [BUILD_DIR (build)] [OUT_DIR (runs/small_eval)]
# Env:   STEPS (200), BATCH (8), SEQ (64), LIMIT (100 documents per task), SEED (1337),
#        SHARED (../shared/data)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/runs/small_eval}
VRL=$BUILD/bin/vrl
SHARED=${SHARED:-$ROOT/../shared/data}
STEPS=${STEPS:-200} BATCH=${BATCH:-8} SEQ=${SEQ:-64} LIMIT=${LIMIT:-100} SEED=${SEED:-1337}
TOK=$SHARED/tokenizers/gpt-neox-20b.tokenizer.json
[ -x "$VRL" ] || { echo "small_eval.sh: $VRL not built (cmake --build $BUILD)" >&2; exit 1; }
[ -f "$TOK" ] || { echo "small_eval.sh: $TOK is missing (real data lives in ../shared/data)" >&2; exit 1; }
[ -e "$OUT" ] && { echo "small_eval.sh: $OUT exists; remove it or give another OUT_DIR" >&2; exit 1; }
mkdir -p "$OUT"

"$VRL" data reorganize --in "$SHARED/corpora/slimpajama-mini" --out "$OUT/reorg"
"$VRL" data tokenize --in "$OUT/reorg" --out "$OUT/tok" --tokenizer "$TOK" --chunk "$SEQ"
cat > "$OUT/d64.json" <<JSON
{"model_type": "llama", "hidden_size": 64, "intermediate_size": 224, "num_hidden_layers": 4,
 "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 50277,
 "max_position_embeddings": $SEQ, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "vrl_preset": "d64"}
JSON

train() {  # NAME VARIANT
    OPENBLAS_NUM_THREADS=1 "$VRL" train --model "$OUT/d64.json" --variant "$2" --data "$OUT/tok" \
        --steps "$STEPS" --batch "$BATCH" --seq "$SEQ" --warmup 20 --lr 3e-3 --seed "$SEED" \
        --eval-every 50 --eval-batches 4 --quiet --out "$OUT/$1" > "$OUT/$1.log" 2>&1 \
        || { echo "small_eval.sh: training $1 failed:" >&2; tail -3 "$OUT/$1.log" >&2; exit 1; }
}
start=$(date +%s)
train baseline baseline & p1=$!
train resformer resformer & p2=$!
wait $p1; wait $p2
echo "trained baseline and resformer in $(( $(date +%s) - start )) s"

for run in baseline resformer; do
    echo; echo "== vrl eval $run"
    "$VRL" eval --ckpt "$OUT/$run" --tokenizer "$TOK" --eval-dir "$SHARED/eval" --data "$OUT/tok" \
        --wikitext "$SHARED/corpora/wikitext-2-raw/wiki.test.raw" --tasks all --overwrite --limit "$LIMIT" --seq "$SEQ" \
        --batch "$BATCH"
done
echo; echo "== vrl analyze baseline vs resformer"
"$VRL" analyze --ckpt "$OUT/baseline" --ckpt "$OUT/resformer" --metric all --data "$OUT/tok" \
    --seq "$SEQ" --batches 4 --out "$OUT/analysis"
"$VRL" analyze --relative-loss "$OUT/baseline/metrics.jsonl" "$OUT/resformer/metrics.jsonl" --window 10 \
    --out "$OUT/analysis"
echo "plots: $OUT/analysis/*.png"
