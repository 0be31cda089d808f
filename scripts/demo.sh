#!/usr/bin/env bash
# demo.sh: install what is missing, build, and run the main job: `vrl train` with no
# arguments trains the `small` model on vrl's own synthetic corpus on the CPU (about a
# minute or two) and writes a run folder runs/DATE-TIME/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/bin/vrl train "$@"
