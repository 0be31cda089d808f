#!/bin/sh
# small_stream_variants.sh: baseline vs DenseFormer vs Block AttnRes (blocks of 2
# sublayers = 1 layer) vs mHC (n = 4) (formulas.md §5) on TinyShakespeare bytes, the `small`
# preset, a few minutes on the CPU (mHC steps take about twice as long).
# Usage: reproduce/small_stream_variants.sh [BUILD_DIR (build)] [OUT_DIR (runs/small_stream_variants)]
# Env: see reproduce/small_compare.sh (STEPS, BATCH, SEQ, EVAL_BATCHES, SEED, DATA).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec "$ROOT/reproduce/small_compare.sh" "${1:-$ROOT/build}" "${2:-$ROOT/runs/small_stream_variants}" \
    baseline:baseline denseformer:denseformer attnres_block:attnres:mode=block,size=2 mhc:mhc:n=4,iters=20
