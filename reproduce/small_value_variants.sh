#!/bin/sh
# small_value_variants.sh: baseline vs identity ResFormer vs SVFormer vs NeuTRENO
# (formulas.md §4) on TinyShakespeare bytes, the `small` preset, a few minutes on the CPU.
# Usage: reproduce/small_value_variants.sh [BUILD_DIR (build)] [OUT_DIR (runs/small_value_variants)]
# Env: see reproduce/small_compare.sh (STEPS, BATCH, SEQ, EVAL_BATCHES, SEED, DATA).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec "$ROOT/reproduce/small_compare.sh" "${1:-$ROOT/build}" "${2:-$ROOT/runs/small_value_variants}" \
    baseline:baseline resformer:resformer svformer:svformer neutreno:neutreno:lambda=0.4
