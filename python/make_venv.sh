#!/usr/bin/env bash
# make_venv.sh: python/.venv with what the Hugging Face side of vrl needs (python/vrl_hf,
# conformance/test_hf.sh, lm-evaluation-harness on run folders), from PyPI. Run by hand; CI does
# not (test_hf skips without it). ~5 GB: the Linux torch wheel pulls the nvidia-* packages.
# Versions: the ones the golden fixtures and the figures in docs/huggingface.md were made with.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
"${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/pip" install --upgrade pip >/dev/null
"$VENV/bin/pip" install "torch==2.15.0" "transformers==5.23.0" "safetensors==0.8.0" "lm_eval==0.4.13" numpy
echo "make_venv.sh: $VENV ready (conformance/test_hf.sh uses it; or point VRL_PYTHON at another Python)"
