#!/bin/sh
# figures.sh: the paper's analysis figures from trained runs, PNGs (gnuplot) named by figure:
#   Fig. 1 left  relative training loss vs the Transformer: ResFormer, DenseFormer, NeuTRENO,
#                NeuTRENO + ResFormer (82M)
#   Fig. 1 middle / Fig. 9 / Fig. 15 / Fig. 3  attention entropy, value spectrum, token
#                similarity and the cross-layer cosines, Transformer vs ResFormer (82M)
#   Fig. 5       relative training loss of ResFormer at every size
# Shares runs with table5.sh and ablations.sh -> results/figures-SCALE/ and
# results/figures-SCALE.md (which figure is which file, and each curve's last value).
# Usage: reproduce/figures.sh [--scale paper|small|tiny] [--dry-run] (see --help, docs/reproduce.md)
set -eu
. "$(dirname "$0")/lib.sh"
repro_init figures "$@"

S=${SIZES%% *}
FIG=$RESULTS/figures-$SCALE
repro_data
set -- "transformer-$S $S baseline" "resformer-$S $S resformer" "denseformer-$S $S denseformer" \
    "neutreno-$S $S neutreno:lambda=0.4" "neutreno_resformer-$S $S neutreno_resformer"
for size in $SIZES; do
    [ "$size" = "$S" ] || set -- "$@" "transformer-$size $size baseline" "resformer-$size $size resformer"
done
repro_train_all "$@"
[ "$DRY" = 1 ] || { rm -rf "$FIG"; mkdir -p "$FIG"; }
# Fig. 1 middle (entropy), Fig. 9 (spectrum), Fig. 15 (similarity), Fig. 3 (cross-layer)
repro_do "$VRL" analyze --ckpt "$RUNS/transformer-$S" --ckpt "$RUNS/resformer-$S" --metric all --data "$DATA/tok" \
    --seq "$SEQ" --batch "$ANALYSIS_BATCH" --batches "$ANALYSIS_BATCHES" --out "$FIG/analysis"
for m in resformer denseformer neutreno neutreno_resformer; do   # Fig. 1 left
    repro_do "$VRL" analyze --relative-loss "$RUNS/transformer-$S/metrics.jsonl" "$RUNS/$m-$S/metrics.jsonl" \
        --window "$WINDOW" --out "$FIG/fig1_left_$m"
done
for size in $SIZES; do   # Fig. 5
    repro_do "$VRL" analyze --relative-loss "$RUNS/transformer-$size/metrics.jsonl" "$RUNS/resformer-$size/metrics.jsonl" \
        --window "$WINDOW" --out "$FIG/fig5_$size"
done
repro_estimate
[ "$DRY" = 1 ] && exit 0

# the last smoothed point of a relative-loss curve (its CSV's last row, second column)
last_rel() { tail -1 "$1/relative_loss.csv" | awk -F, '{ printf "%+.4f", $2 }'; }
md=$RESULTS/figures-$SCALE.md
{
    repro_header "Analysis figures"
    echo
    echo "Files under results/figures-$SCALE/. The paper shows these as plots; its curves are not"
    echo "reproduced as numbers here, so the table gives the run's value and the paper's direction."
    echo
    echo "| paper figure | what | file | run: last point of the curve | paper: direction |"
    echo "|---|---|---|---|---|"
    for m in resformer denseformer neutreno neutreno_resformer; do
        echo "| Fig. 1 (left) | relative training loss, $m − Transformer ($S, window $WINDOW) | fig1_left_$m/relative_loss.png | $(last_rel "$FIG/fig1_left_$m") | below 0 (ResFormer lowest of the three, NeuTRENO + ResFormer lower still) |"
    done
    for size in $SIZES; do
        echo "| Fig. 5 | relative training loss, ResFormer − Transformer ($size) | fig5_$size/relative_loss.png | $(last_rel "$FIG/fig5_$size") | below 0 at every size |"
    done
    for p in "Fig. 1 (middle)|attention entropy per layer|entropy" "Fig. 9|value spectrum per layer|spectrum" \
        "Fig. 15|token similarity of hidden states|similarity" "Fig. 3|cross-layer approximation cosines|cross"; do
        fig=${p%%|*} rest=${p#*|} what=${rest%%|*} key=${rest#*|}
        files=$(cd "$FIG/analysis" && ls ./*"$key"*.png 2>/dev/null | sed 's|^\./|analysis/|' | tr '\n' ' ')
        echo "| $fig | $what, Transformer vs ResFormer ($S) | ${files:-—} | see analysis/analysis.json | ResFormer keeps entropy and spectrum higher, similarity lower in deep layers |"
    done
} > "$md"
cat "$md"
echo "wrote $md"
