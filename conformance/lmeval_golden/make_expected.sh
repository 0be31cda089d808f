#!/usr/bin/env bash
# make_expected.sh: regenerate conformance/lmeval_golden/expected{,_f64}.json with
# lm-evaluation-harness (HFLM on transformers, CPU, offline). Run by hand when the
# evaluation's definitions change; CI never needs Python (the file is committed).
# Needs ../shared/data (task files, WikiText-2 raw, the GPT-NeoX tokenizer).
# Usage: conformance/lmeval_golden/make_expected.sh        (VENV=DIR: use that venv)
# The venv (made here unless VENV names one): lm_eval, torch, transformers and
# accelerate from PyPI, pinned to the versions expected.json was made with.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${VENV:-$HERE/.venv}"
SHARED="$HERE/../../../shared/data"
if [ ! -x "$VENV/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import lm_eval, torch, transformers, accelerate" 2>/dev/null; then
    "$VENV/bin/pip" install "lm_eval==0.4.13" "torch==2.15.0" "transformers==5.23.0" "accelerate==1.15.0"
fi
VRL="${VRL:-$HERE/../../build/bin/vrl}"
MODEL_DIR=$(mktemp -d)
trap 'rm -rf "$MODEL_DIR"' EXIT
bash "$HERE/make_model.sh" "$VRL" "$MODEL_DIR/model"
export VRL_GOLDEN_MODEL="$MODEL_DIR/model"
cd "$HERE"
OMP_NUM_THREADS=1 "$VENV/bin/python" make_expected.py "$SHARED" expected.json
OMP_NUM_THREADS=1 "$VENV/bin/python" make_expected.py "$SHARED" expected_f64.json --float64-everywhere
