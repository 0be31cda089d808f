#!/bin/sh
# small_stream_variants.sh: a scaled-down residual-stream comparison on real text, on the CPU.
#
# The setup of reproduce/small_value_variants.sh: TinyShakespeare as byte tokens (vocab
# 256, last 10% = validation), the `small` preset's shape (4 layers, 4 heads, d 128,
# SwiGLU 448, vocab 512), the same seed, data order and schedule for every model; only
# the residual stream differs. Prints the final validation loss of
#   baseline, DenseFormer, Block AttnRes (blocks of 2 sublayers = 1 layer), mHC (n 4)
# and each one's difference to the baseline. Two runs at a time, one BLAS thread each.
#
# The variant is given in each model's config.json ("vrl_variant"), which every vrl
# build reads; `vrl train --variant` says the same thing on the command line.
#
# Usage: reproduce/small_stream_variants.sh [BUILD_DIR (build)] [OUT_DIR (runs/small_stream_variants)]
# Env:   STEPS (600), BATCH (16), SEQ (64), EVAL_BATCHES (32), SEED (1337),
#        DATA (../shared/data/corpora/tinyshakespeare/input.txt)
# A tiny run shows the direction of each variant, not the papers' numbers.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$ROOT/runs/small_stream_variants}
VRL=$BUILD/bin/vrl
DATA=${DATA:-$ROOT/../shared/data/corpora/tinyshakespeare/input.txt}
STEPS=${STEPS:-600} BATCH=${BATCH:-16} SEQ=${SEQ:-64} EVAL_BATCHES=${EVAL_BATCHES:-32} SEED=${SEED:-1337}
[ -x "$VRL" ] || { echo "small_stream_variants.sh: $VRL not built (cmake --build $BUILD)" >&2; exit 1; }
[ -f "$DATA" ] || { echo "small_stream_variants.sh: $DATA is missing" >&2; exit 1; }
[ -e "$OUT" ] && { echo "small_stream_variants.sh: $OUT exists; remove it or give another OUT_DIR" >&2; exit 1; }
mkdir -p "$OUT/data"

# Bytes -> shards: `vrl data bytes` where this build has it, else the same format here
# (common/shard.h: 64-byte header, uint16 ids, FNV-1a 64 checksum of the token bytes).
if "$VRL" data bytes --help > /dev/null 2>&1; then
    "$VRL" data bytes --in "$DATA" --out "$OUT/data" --val-fraction 0.1
else
    python3 - "$DATA" "$OUT/data" <<'PY'
import struct, sys
raw = open(sys.argv[1], "rb").read()
n_val = int(0.1 * len(raw))
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
for name, part in (("train", raw[:len(raw) - n_val]), ("val", raw[len(raw) - n_val:])):
    body = b"".join(struct.pack("<H", x) for x in part)
    head = b"VRLTOKS\0" + struct.pack("<IIQII", 1, 2, len(part), 0, 256) + b"bytes".ljust(24, b"\0") + struct.pack("<Q", fnv(body))
    open(f"{sys.argv[2]}/{name}.bin", "wb").write(head + body)
    print(f"{name}: {len(part)} byte tokens")
PY
fi

config() {  # VARIANT -> config.json of the small preset with that variant
    cat <<JSON
{"model_type": "llama", "hidden_size": 128, "intermediate_size": 448, "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 512, "max_position_embeddings": 256,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "initializer_range": 0.02, "tie_word_embeddings": false,
 "hidden_act": "silu", "vrl_variant": "$1"}
JSON
}
train() {  # NAME VARIANT
    config "$2" > "$OUT/$1.config.json"
    OPENBLAS_NUM_THREADS=1 "$VRL" train --model "$OUT/$1.config.json" \
        --data "$OUT/data/train.bin" --val-data "$OUT/data/val.bin" \
        --steps "$STEPS" --batch "$BATCH" --seq "$SEQ" --seed "$SEED" \
        --eval-every 0 --eval-batches "$EVAL_BATCHES" --quiet --out "$OUT/$1" > "$OUT/$1.log" 2>&1 \
        || { echo "small_stream_variants.sh: $1 failed:" >&2; tail -3 "$OUT/$1.log" >&2; exit 1; }
}
RUNS="baseline:baseline denseformer:denseformer attnres_block:attnres:mode=block,size=2 mhc:mhc:n=4,iters=20"
start=$(date +%s)
train baseline baseline & p1=$!
train denseformer denseformer & p2=$!
wait $p1; wait $p2
train attnres_block attnres:mode=block,size=2 & p1=$!
train mhc mhc:n=4,iters=20 & p2=$!
wait $p1; wait $p2

val() { grep '"split":"val"' "$OUT/$1/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.eE+-]*\).*/\1/'; }
base=$(val baseline)
echo
echo "small preset, TinyShakespeare bytes, $STEPS steps x $BATCH x $SEQ tokens, seed $SEED ($(( $(date +%s) - start )) s)"
printf '%-16s %-26s %12s %12s %12s\n' model variant parameters val_loss vs_baseline
for run in $RUNS; do
    name=${run%%:*} variant=${run#*:}
    params=$("$VRL" info --model "$OUT/$name.config.json" | sed -n 's/^parameters: //p')
    v=$(val "$name")
    awk -v n="$name" -v var="$variant" -v p="$params" -v v="$v" -v b="$base" \
        'BEGIN { printf "%-16s %-26s %12s %12.4f %+12.4f\n", n, var, p, v, v - b }'
done
