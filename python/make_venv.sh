#!/usr/bin/env bash
# make_venv.sh: python/.venv (git-ignored) with what the Hugging Face side of vrl needs
# (python/vrl_hf, conformance/test_hf.sh, test_lmeval_hf.sh, lm-evaluation-harness on run folders),
# from PyPI. scripts/test.sh runs it; it returns at once when the venv already imports everything.
#
# The packages of python/requirements.txt are installed pinned and with --no-deps: the real
# torch 2.15.0 wheel from PyPI without its ~3 GB of nvidia-* CUDA packages, since torch runs on the
# CPU here and finds the CUDA 13 runtime libraries it loads at import in the machine's CUDA toolkit
# (ldconfig), plus the four small nvidia-* packages the toolkit lacks or has too old. Where that
# import still fails (a machine without the toolkit), torch's full dependency set is installed.
# The venv itself lives in the user's cache, named by a hash of requirements.txt
# (~/.cache/vrl/venv-HASH, or $VRL_VENV_DIR), and python/.venv links to it: a fresh clone on the
# same machine (CI's) reuses it, and a change of pins makes a new one.
# usage: make_venv.sh          (PYTHON=python3.X to choose the interpreter)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
hash=$(sha256sum "$HERE/requirements.txt" | cut -c1-12)
REAL="${VRL_VENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vrl/venv-$hash}"
VENV="$REAL"
ready() { "$VENV/bin/python" -c "import torch, transformers, safetensors, lm_eval, accelerate, tensorboard.backend.event_processing.event_accumulator" 2>/dev/null; }
link() { [ "$(readlink "$HERE/.venv" 2>/dev/null)" = "$REAL" ] || { rm -rf "$HERE/.venv" && ln -s "$REAL" "$HERE/.venv"; }; }
if [ -x "$VENV/bin/python" ] && ready; then
  link
  exit 0
fi
mkdir -p "$(dirname "$REAL")"
start=$(date +%s)
echo "make_venv.sh: installing python/requirements.txt into $VENV from PyPI (first time: a few minutes)"
"${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$HERE/requirements.txt"
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "make_venv.sh: torch does not import with this machine's CUDA libraries; adding its nvidia-* packages"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==2.15.0"
fi
if ! ready; then
  echo "make_venv.sh: $VENV: torch, transformers, safetensors, lm_eval, accelerate or tensorboard still does not import" >&2
  exit 1
fi
link
echo "make_venv.sh: $VENV ready (python/.venv links to it) in $(( $(date +%s) - start )) s, $(du -sh "$VENV" | cut -f1)"
