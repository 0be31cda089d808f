#!/bin/sh
# ablations.sh: the paper's value-path ablations at its smallest size (82M): forms of λ
# (identity, constant λ = 2, sparse on the last 3/8 of the layers with λ = 5, learnable-plus),
# which V feeds the residual (V_1, the previous layer's, the mean of earlier ones), residuals
# on Q, K, A or the hidden state instead of V, and the KV-saving family (SVFormer, NeuTRENO,
# CLA, GQA with half the KV heads). Validation loss averaged over the 7 domains, beside the
# paper's (formulas.md §8; rows the paper shows only as curves have no number) ->
# results/ablations-SCALE.md. Shares the Transformer and ResFormer runs with table5.sh.
# Seeds: every row trains with each seed --seeds gives (lib.sh; 1 seed, 1337, except 3 at
# --scale cpu), and each row's Δ is paired against the same seed's Transformer: mean ± se (t)
# over the seeds when there are several.
# Usage: reproduce/ablations.sh [--scale paper|small|cpu|tiny] [--seeds N|S1,S2,...] [--dry-run] (see --help, docs/reproduce.md)
set -eu
. "$(dirname "$0")/lib.sh"
repro_init ablations "$@"

S=${SIZES%% *}
L=$(repro_layers "$S")
SPARSE="$((L - (3 * L + 7) / 8 + 1))-$L"   # 8 layers: 6-8, as the paper
# name variant kv-divisor paper-loss what (the paper's figure when it gives no number)
ROWS="transformer-$S|baseline|1|2.739|Transformer
resformer-$S|resformer|1|2.712|identity ResFormer (λ = 0.5)
constant-$S|resformer:mode=constant,lambda=2|1|2.700|constant λ = 2
sparse-$S|resformer:mode=sparse,layers=$SPARSE,lambda=5|1|2.687|sparse, layers $SPARSE, λ = 5
learnable_plus-$S|resformer:mode=learnable-plus|1|2.681|learnable-plus
source_prev-$S|resformer:source=prev|1|—|V from the previous layer (Fig. 8)
source_mean-$S|resformer:source=mean|1|—|V mean of earlier layers (Fig. 8)
hidden_residual-$S|hidden_residual|1|2.781|hidden residual to H_0
query_residual-$S|query_residual|1|2.742|query residual
key_residual-$S|key_residual|1|2.746|key residual
attn_residual-$S|attn_residual|1|2.757|attention residual
svformer-$S|svformer|1|—|SVFormer (Fig. 10)
neutreno-$S|neutreno:lambda=0.4|1|—|NeuTRENO λ = 0.4 (Fig. 1)
cla-$S|cla|1|—|CLA (Fig. 10)
gqa-$S|baseline|2|—|GQA, half the KV heads (Fig. 10)"
# scale bytes (docs/results/reproduction.md, "The CPU-scale experiment"): the comparisons the paper draws in
# numbers, and SVFormer and NeuTRENO; the V-source and KV-saving curves (Fig. 8, 10) are left out to
# keep the ~2 hours, and the loss is the registered token-weighted mean
[ "$LONG" = 0 ] || ROWS=$(echo "$ROWS" | grep -v -e '^source_prev-' -e '^source_mean-' -e '^cla-' -e '^gqa-')
. "$REPRO_ROOT/reproduce/table5_registered.sh"  # the paired statistics (REG_STATS), at every scale

repro_data
set --
for seed in $SEEDS; do  # seed by seed: a table cut short has every row of its first seeds
    while IFS='|' read -r name variant kv paper what; do
        set -- "$@" "$(repro_seed_name "$name" "$seed") $S $variant $kv $seed"
    done <<EOF2
$ROWS
EOF2
done
repro_train_all "$@"
for seed in $SEEDS; do
    while IFS='|' read -r name variant kv paper what; do repro_eval "$(repro_seed_name "$name" "$seed")" domains; done <<EOF2
$ROWS
EOF2
done
repro_estimate
[ "$DRY" = 1 ] && exit 0

md=$RESULTS/ablations-$SCALE.md
# ablation_loss FILE: the row's loss from an eval-domains.json: the mean of the 7 domains, or at
# scale bytes the registered token-weighted mean (— when missing)
ablation_loss() {
    if [ "$LONG" -gt 0 ]; then
        [ -f "$1" ] && reg_tokmean "$1" | awk '{ if ($1 + 0 == $1) printf "%.6f\n", $1; else print "—" }' || echo "—"
    else
        repro_json "$1" '.domains.mean'
    fi
}
# ablation_cells NAME: "loss|Δ" for the row NAME over SEEDS: the mean loss, and the difference
# from the same seed's Transformer (mean ± se (t, two-sided p) over several seeds); — when a run is
# missing.
ablation_cells() {
    for seed in $SEEDS; do
        echo "$(ablation_loss "$RUNS/$(repro_seed_name "$1" "$seed")/eval-domains.json")" \
            "$(ablation_loss "$RUNS/$(repro_seed_name "transformer-$S" "$seed")/eval-domains.json")"
    done | awk -v long="$LONG" "$REG_STATS"'
        $1 == "—" || $2 == "—" { bad = 1 }
        { n++; v[n] = $1; t[n] = $2 }
        END {  # meansd and paired: table5_registered.sh (REG_STATS)
            if (bad || n == 0) { print "—|—"; exit }
            meansd(v, n); paired(t, v, n)
            if (n == 1) { printf "%.4f|%+.4f\n", MM, PM; exit }
            tt = PSE > 0 ? sprintf("%.1f", PT) : "—"  # in printf a bare > would redirect
            if (PSE > 0 && long > 0) tt = tt sprintf(", p %s", pfmt(PP))
            printf "%.4f|%+.4f ± %.4f (%s)\n", MM, PM, PSE, tt
        }'
}
{
    repro_header "Ablations of the value residual ($S)"
    echo
    if [ "$LONG" -gt 0 ]; then
        echo "Validation loss, token-weighted over the 7 domains' validation chunks (the registered measure,"
        echo "docs/results/reproduction.md, \"The CPU-scale experiment\"). The paper's numbers are its 82M models' domain means (formulas.md §8);"
    else
        echo "Validation loss, mean of the 7 domains. The paper's numbers are its 82M models (formulas.md §8);"
    fi
    echo "Δ columns are each model minus the Transformer of the same source."
    [ "$NSEEDS" = 1 ] || echo "Over $NSEEDS seeds ($SEEDS): run loss is the mean over the seeds; Δ run is paired, each seed's model minus the same seed's Transformer, as mean ± standard error (t$( [ "$LONG" = 0 ] || echo ", two-sided p"))."
    [ "$SCALE" = paper ] || echo "At scale $SCALE compare the Δ columns' signs, not the losses."
    echo
    echo "| run | model | variant | run loss | paper loss | diff | Δ run | Δ paper |"
    echo "|---|---|---|---|---|---|---|---|"
    while IFS='|' read -r name variant kv paper what; do
        cells=$(ablation_cells "$name")
        v=${cells%%|*}
        [ "$kv" = 1 ] || variant="$variant, kv heads / $kv"
        label=$( [ "$NSEEDS" = 1 ] && repro_seed_name "$name" "$FIRST_SEED" || echo "$name")  # one seed: its run folder
        echo "| $label | $what | \`$variant\` | $v | $paper | $(repro_diff "$v" "$paper") | ${cells#*|} | $(repro_diff "$paper" 2.739) |"
    done <<EOF2
$ROWS
EOF2
} > "$md"
cat "$md"
echo "wrote $md"
