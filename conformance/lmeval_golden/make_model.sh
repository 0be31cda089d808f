#!/usr/bin/env bash
# make_model.sh: build the golden's model folder: model_config.json (2 layers, d 16, NeoX
# vocabulary) trained 30 fp64 steps on vrl's seeded synthetic corpus. The reference trainer
# is deterministic, so this is the model expected{,_f64}.json were made from; its weights are
# built by the test rather than committed (12 MB of embedding and head).
# usage: make_model.sh PATH/TO/vrl OUT_DIR
set -euo pipefail
VRL=$1 OUT=$2
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$VRL" train --quiet --model "$HERE/model_config.json" --precision fp64 --steps 30 --batch 4 --seq 64 \
  --synthetic-tokens 20000 --eval-batches 1 --out "$OUT"
