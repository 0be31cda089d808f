#!/usr/bin/env bash
# make_golden.sh: regenerate conformance/golden/fixtures/*.safetensors from PyTorch + transformers.
#
# Run by hand when a variant is added; CI never needs PyTorch (the fixtures are committed).
# Usage: conformance/golden/make_golden.sh [case ...]     (no case: all of them)
#
# Install method that works here (only PyPI reachable, no download.pytorch.org):
#   a plain `pip install torch transformers safetensors` from PyPI. The Linux x86_64 torch wheel
#   pulls the nvidia-* CUDA packages (about 5 GB installed in the venv); on this machine the whole
#   install took ~1.5 minutes, so no --no-deps trick is needed. Torch runs on the CPU here.
#   If the nvidia-* packages are ever impractical: `pip install --no-deps torch` plus
#   `pip install filelock typing-extensions sympy networkx jinja2 fsspec` is the fallback.
# Versions used for the committed fixtures: see README.md (and each fixture's "generator" metadata).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import torch, transformers, safetensors" 2>/dev/null; then
    start=$(date +%s)
    "$VENV/bin/pip" install --upgrade pip >/dev/null
    # pin to the versions the committed fixtures were made with (override with GOLDEN_UNPINNED=1)
    if [ "${GOLDEN_UNPINNED:-0}" = 1 ]; then
        "$VENV/bin/pip" install torch transformers safetensors numpy
    else
        "$VENV/bin/pip" install "torch==2.15.0" "transformers==5.23.0" "safetensors==0.8.0" numpy
    fi
    echo "make_golden.sh: venv installed in $(( $(date +%s) - start )) s"
fi
cd "$HERE"
OMP_NUM_THREADS=1 "$VENV/bin/python" make_golden.py "$@"
du -sh "$HERE/fixtures"
