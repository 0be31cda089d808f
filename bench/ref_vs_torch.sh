#!/bin/sh
# ref_vs_torch.sh: vrl's reference against PyTorch, side by side, on this CPU.
#
# The same fp32 training step (forward, cross-entropy, backward, gradient clip, AdamW) with
# the same shapes: vrl's float32 reference (bench_ref_train --fp32) and Hugging Face
# LlamaForCausalLM in PyTorch eager mode (bench/ref_vs_torch.py), with 1 and 2 threads
# (OPENBLAS_NUM_THREADS for vrl, which sets the reference's threads; torch.set_num_threads),
# for `small` at B16 x T128, 8M at B8 x T128 and 82M at B2 x T256. vrl and PyTorch
# alternate, ROUNDS times each, so both see the same machine. Each line gives tokens/s (wall),
# tokens per CPU-second (the steadier figure under load), and from /usr/bin/time the whole
# process's user and system seconds and peak RSS (PyTorch's includes `import torch`).
# Before every run the script samples /proc/stat for QUIET_SECONDS (2) with nothing of its
# own running and prints how many cores other processes kept busy; above QUIET_BUSY (0.2
# cores) the line is marked "LOADED": its wall figure does not count, its CPU-second figure
# only roughly. (The 1-minute load average, printed beside it, still counts this script's
# previous run for about a minute, so it cannot tell a quiet machine from a busy one here.)
# A summary at the end gives, per shape and thread count, each engine's medians over the
# ROUNDS runs and vrl / PyTorch of them: this machine's speed drifts by tens of percent
# over minutes, so one alternation (ROUNDS=1) is a rough figure and ROUNDS=3 a steadier one.
# Without torch and transformers only vrl's figures are printed.
#
# Usage: bench/ref_vs_torch.sh [BUILD_DIR (build)]
# Env:   PYTHON (python3: an interpreter with torch and transformers), THREADS ("1 2"),
#        SPECS ("small:16x128 8M:8x128 82M:2x256"), TORCH_STEPS (5), ROUNDS (1),
#        QUIET_BUSY (0.2), QUIET_SECONDS (2), ATTN (eager: PyTorch's attention as matmul + softmax;
#        sdpa: its fused kernel, transformers' default)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
PYTHON=${PYTHON:-python3}
THREADS=${THREADS:-1 2}
SPECS=${SPECS:-small:16x128 8M:8x128 82M:2x256}
TORCH_STEPS=${TORCH_STEPS:-5}
ROUNDS=${ROUNDS:-1}
QUIET_BUSY=${QUIET_BUSY:-0.2}
QUIET_SECONDS=${QUIET_SECONDS:-2}
ATTN=${ATTN:-eager}
BENCH=$BUILD/bin/bench_ref_train VRL=$BUILD/bin/vrl
[ -x "$BENCH" ] && [ -x "$VRL" ] || { echo "ref_vs_torch.sh: build first (bash scripts/build.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "ref_vs_torch.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
torch=1
"$PYTHON" -c "import torch, transformers" 2> /dev/null ||
    { torch=0; echo "ref_vs_torch.sh: no torch/transformers in $PYTHON: vrl's figures only (set PYTHON)"; }
TIMES=$(mktemp) RECORDS=$(mktemp)
trap 'rm -f "$TIMES" "$RECORDS"' EXIT
# busy_cores: cores kept busy by other processes over the next QUIET_SECONDS (/proc/stat:
# everything but idle and iowait time, as a share of all CPUs' time, times the CPU count)
busy_cores() {
    a=$(head -1 /proc/stat)
    sleep "$QUIET_SECONDS"
    b=$(head -1 /proc/stat)
    echo "$a
$b" | awk -v n="$(nproc)" '{ t = 0; for (i = 2; i <= NF; i++) t += $i; tot[NR] = t; idle[NR] = $5 + $6 }
        END { dt = tot[2] - tot[1]; printf "%.2f", (dt > 0 ? n * (dt - (idle[2] - idle[1])) / dt : 0) }'
}
# run LABEL CMD...: CMD's last line, then its process figures and the machine's state before it
run() {
    label=$1
    shift
    busy=$(busy_cores)
    load=$(cut -d' ' -f1 /proc/loadavg)
    out=$(/usr/bin/time -o "$TIMES" -f '%U %S %M' "$@" | tail -1)
    set -- $(cat "$TIMES")
    flag=$(awk -v b="$busy" -v q="$QUIET_BUSY" 'BEGIN { print (b > q ? "LOADED" : "quiet") }')
    printf '%-5s %s\n      user %.2f s, sys %.2f s, peak RSS %d MiB; before it: others busy %s cores, load %s (%s)\n' \
        "$label" "$out" "$1" "$2" $(($3 / 1024)) "$busy" "$load" "$flag"
    # for the summary: preset threads engine wall-tokens/s tokens-per-CPU-second RSS-MiB flag
    echo "$out" | awk -v k="$preset $t $label" -v m=$(($3 / 1024)) -v f="$flag" \
        '{ for (i = 2; i <= NF; i++) { if ($i == "tokens/s") w = $(i - 1); if ($i == "per" && $(i + 1) == "CPU-second)") c = $(i - 2) } }
         END { print k, w, c, m, f }' >> "$RECORDS"
}
echo "vrl $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo '?') ($BUILD), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
for spec in $SPECS; do
    preset=${spec%%:*} shape=${spec#*:}
    B=${shape%x*} T=${shape#*x}
    # "model small: llama, L=4, d=128, heads=4, kv_heads=4, head_dim=32, ffn=448, vocab=512, ..."
    info=$("$VRL" info --model "$preset" | head -1)
    field() { echo "$info" | sed "s/.* $1=\([0-9]*\).*/\1/"; }
    for t in $THREADS; do
        echo "== $preset B$B x T$T, $t thread(s)"
        round=0
        while [ "$round" -lt "$ROUNDS" ]; do
            round=$((round + 1))
            OPENBLAS_NUM_THREADS=$t run vrl "$BENCH" --fp32 "$preset:${B}x$T"
            if [ "$torch" = 1 ]; then
                OMP_NUM_THREADS=$t run torch "$PYTHON" "$ROOT/bench/ref_vs_torch.py" --threads "$t" --batch "$B" \
                    --seq "$T" --layers "$(field L)" --heads "$(field heads)" --d "$(field d)" --ffn "$(field ffn)" \
                    --vocab "$(field vocab)" --steps "$TORCH_STEPS" --attn "$ATTN"
            fi
        done
    done
done
# Summary: per shape and thread count, the median over ROUNDS of each engine's wall tokens/s
# and tokens per CPU-second, and vrl / PyTorch of the medians; "paired" is the median over
# the rounds of each round's own vrl / PyTorch (wall), which follows the machine's drift
# between rounds better; "loaded" counts the runs that were not quiet.
[ "$torch" = 1 ] || exit 0
echo "== summary (medians of $ROUNDS round(s)): shape threads | vrl wall, CPU | torch wall, CPU | vrl/torch wall, CPU, paired | peak RSS vrl/torch MiB | loaded runs"
for spec in $SPECS; do
    preset=${spec%%:*}
    for t in $THREADS; do
        # medians, in order: vrl wall, CPU, RSS; torch wall, CPU, RSS
        set -- $(for e in vrl torch; do
            for col in 4 5 6; do
                grep "^$preset $t $e " "$RECORDS" | awk -v c=$col '{ print $c }' | sort -n |
                    awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
            done
        done)
        loaded=$(grep -c "^$preset $t .* LOADED$" "$RECORDS" || true)
        # each round's vrl wall / PyTorch wall (the records alternate vrl, torch), then their median
        paired=$(grep "^$preset $t " "$RECORDS" | awk '$3 == "vrl" { v = $4 } $3 == "torch" { print v / $4 }' | sort -n |
            awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
        awk -v p="$preset" -v t="$t" -v vw="$1" -v vc="$2" -v vm="$3" -v tw="$4" -v tc="$5" -v tm="$6" -v l="$loaded" \
            -v pr="$paired" 'BEGIN { printf "%-5s %s | %8.0f %8.0f | %8.0f %8.0f | %5.2fx %5.2fx %5.2fx | %d / %d | %d\n",
                p, t, vw, vc, tw, tc, vw / tw, vc / tc, pr, vm, tm, l }'
    done
done
