#!/bin/sh
# ref_vs_torch.sh: vrl's reference against PyTorch, side by side, on this CPU.
#
# The same fp32 training step (forward, cross-entropy, backward, gradient clip, AdamW) with
# the same shapes: vrl's float32 reference (bench_ref_train --fp32) and Hugging Face
# LlamaForCausalLM in PyTorch eager mode (bench/ref_vs_torch.py), with 1 and 2 threads
# (OPENBLAS_NUM_THREADS / torch.set_num_threads), for `small` at B16 x T128 and 82M at
# B2 x T256. The load average is printed with every line: on a shared machine, compare
# lines taken under the same load. Without torch and transformers only vrl's figures are
# printed.
#
# Usage: bench/ref_vs_torch.sh [BUILD_DIR (build)]
# Env:   PYTHON (python3: an interpreter with torch and transformers), THREADS ("1 2"),
#        SPECS ("small:16x128 82M:2x256"), TORCH_STEPS (5)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
PYTHON=${PYTHON:-python3}
THREADS=${THREADS:-1 2}
SPECS=${SPECS:-small:16x128 82M:2x256}
TORCH_STEPS=${TORCH_STEPS:-5}
BENCH=$BUILD/bin/bench_ref_train VRL=$BUILD/bin/vrl
[ -x "$BENCH" ] && [ -x "$VRL" ] || { echo "ref_vs_torch.sh: build first (bash scripts/build.sh)" >&2; exit 1; }
torch=1
"$PYTHON" -c "import torch, transformers" 2> /dev/null ||
    { torch=0; echo "ref_vs_torch.sh: no torch/transformers in $PYTHON: vrl's figures only (set PYTHON)"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "vrl $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo '?'), $(nproc) cores"
for spec in $SPECS; do
    preset=${spec%%:*} shape=${spec#*:}
    B=${shape%x*} T=${shape#*x}
    # "model small: llama, L=4, d=128, heads=4, kv_heads=4, head_dim=32, ffn=448, vocab=512, ..."
    info=$("$VRL" info --model "$preset" | head -1)
    field() { echo "$info" | sed "s/.* $1=\([0-9]*\).*/\1/"; }
    for t in $THREADS; do
        echo "== $preset B$B x T$T, $t thread(s), load $(load)"
        OPENBLAS_NUM_THREADS=$t "$BENCH" --fp32 "$preset:${B}x$T" | tail -1 | sed 's/^/vrl   /'
        if [ "$torch" = 1 ]; then
            OMP_NUM_THREADS=$t "$PYTHON" "$ROOT/bench/ref_vs_torch.py" --threads "$t" --batch "$B" --seq "$T" \
                --layers "$(field L)" --heads "$(field heads)" --d "$(field d)" --ffn "$(field ffn)" \
                --vocab "$(field vocab)" --steps "$TORCH_STEPS" | sed 's/^/      /'
        fi
    done
done
