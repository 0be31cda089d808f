#!/usr/bin/env bash
# cudnn_frontend.sh: fetch cudnn-frontend's C++ headers (PyPI nvidia-cudnn-frontend) into
# .deps/cudnn-frontend/include (git-ignored), where CMake looks for them (-DVRL_CUDNN,
# docs/design/kernels.md "Attention through cuDNN"). Header-only: nothing is installed, no Python
# package is imported; the wheel is only unzipped. Run once, where PyPI is reachable;
# scripts/gpu.sh pack carries the result to a GPU machine that has no registry.
# Safe to run again (it replaces the folder). The default build never needs it: without
# the headers the cuDNN path is compiled out.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${VRL_CUDNN_FRONTEND_VERSION:-1.32.0}"   # the version the cuDNN path was written against
dest=.deps/cudnn-frontend
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "nvidia-cudnn-frontend==$VERSION"
wheel=$(ls "$tmp"/nvidia_cudnn_frontend-*.whl)
python3 - "$wheel" "$tmp/x" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith("include/")]
    if not names:
        sys.exit("cudnn_frontend.sh: the wheel has no include/ folder: " + sys.argv[1])
    z.extractall(sys.argv[2], members=names)
PY
[ -f "$tmp/x/include/cudnn_frontend.h" ] || { echo "cudnn_frontend.sh: no cudnn_frontend.h in $wheel" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/x/include" "$dest/include"
echo "$VERSION" > "$dest/VERSION"
echo "cudnn_frontend.sh: cudnn-frontend $VERSION headers in $dest/include ($(du -sh "$dest/include" | cut -f1))"
