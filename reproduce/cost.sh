# cost.sh: what a plan costs, training and evaluation, for --dry-run (sourced by lib.sh,
# POSIX sh). repro_train and repro_eval add each step they would run with repro_cost_add;
# repro_estimate prints the sum at a stated throughput.
#
# Throughput, in this order:
#   --tps N   N training tokens/s for the whole job, given; evaluation at 3 N (forward only)
#   paper, small   assumed, not measured (fast/ has not run on a GPU yet, docs/fast.md):
#             each GPU delivers COST_MFU of the H100's dense bf16 peak, COST_PEAK_FLOPS; a
#             training token costs 6 (P - d V) + 12 L d T FLOPs (P parameters, of them d V in
#             the input embedding, a lookup; L layers, width d, sequence T), an evaluated token
#             a third of that (forward only); `vrl eval` runs on one GPU
#   tiny      measured here: 4 steps minus 1 step of the plan's smallest model on the CPU
COST_PEAK_FLOPS=989e12   # H100 SXM, bf16 dense, NVIDIA's data sheet
COST_MFU=0.30            # assumed model FLOPs utilisation
PLAN_COST=""             # lines "train|eval NAME SIZE TOKENS"

# repro_cost_add KIND NAME SIZE TOKENS
repro_cost_add() { PLAN_COST="$PLAN_COST$1 $2 $3 $4
"; }

# repro_flop_per_token SIZE: training FLOPs per token (see above).
repro_flop_per_token() {
    # shellcheck disable=SC2046
    set -- $(repro_shape "$1") "$(repro_params "$1")"
    awk -v L="$1" -v d="$3" -v P="$5" -v T="$SEQ" 'BEGIN { printf "%.0f", 6 * (P - d * 50277) + 12 * L * d * T }'
}

# repro_eval_tokens KIND: tokens one `vrl eval` of KIND reads (domains, downstream).
#   domains, whole split: SlimPajama-627B's validation split, ~0.5B tokens (its dataset card)
#   downstream, all documents: the six tasks' 62,570 scored choices (HellaSwag 10,042 x 4,
#     OpenBookQA 500 x 4, WinoGrande 1,267 x 2, ARC-c 1,172 x 4, ARC-e 2,376 x 4, PIQA 1,838
#     x 2) at an assumed 128 tokens each, and WikiText-2's test set, ~300,000 tokens in 62
#     articles; with --limit N, N documents of each
repro_eval_tokens() {
    short=$( [ "$SEQ" -lt 128 ] && echo "$SEQ" || echo 128 )
    if [ "$1" = domains ]; then
        [ "$EVAL_LIMIT" = 0 ] && echo 500000000 || echo $((EVAL_LIMIT * 7 * SEQ))
    elif [ "$TASK_LIMIT" = 0 ]; then
        echo $((62570 * 128 + 300000))
    else
        wiki_docs=$( [ "$SCALE" = tiny ] && echo 1 || echo "$TASK_LIMIT" )
        echo $((TASK_LIMIT * 6 * 4 * short + wiki_docs * 300000 / 62))
    fi
}

# repro_cost_hours TOKENS FLOP_PER_TOKEN GPUS RATE SPEEDUP: hours at RATE x SPEEDUP tokens/s
# when RATE is given, else at the assumed GPU throughput.
repro_cost_hours() {
    awk -v n="$1" -v f="$2" -v g="$3" -v r="$4" -v x="$5" -v peak="$COST_PEAK_FLOPS" -v mfu="$COST_MFU" \
        'BEGIN { s = (r != "") ? n / (r * x) : n * f / (g * peak * mfu); printf "%.4f", s / 3600 }'
}

repro_hours_text() {
    awk -v h="$1" 'BEGIN { if (h < 1 / 60) printf "under a minute"; else if (h < 1) printf "%.0f minutes", h * 60; else if (h < 48) printf "%.1f hours", h; else printf "%.1f days", h / 24 }'
}

# repro_measure_tps: training tokens/s of the plan's smallest model on this CPU (tiny scale).
repro_measure_tps() {
    size=$(echo $PLAN_RUNS | cut -d' ' -f1)
    tmp=$(mktemp -d)
    mkdir -p "$tmp/configs"
    model=$(WORK=$tmp; DRY=0; repro_model "$size")
    # two runs, 1 and 4 steps: the difference is 3 steps without the start-up cost
    for n in 1 4; do
        start=$(date +%s.%N)
        OPENBLAS_NUM_THREADS=$(nproc) "$VRL" train --model "$model" --steps $n --batch 1 --seq "$SEQ" --warmup 1 \
            --eval-every 0 --eval-batches 1 --save-every 0 --quiet --out "$tmp/run$n" > "$tmp/log" 2>&1 ||
            { echo "could not measure: $(tail -1 "$tmp/log")"; rm -rf "$tmp"; return 1; }
        end=$(date +%s.%N)
        eval "t$n=\$(awk -v a=\"\$start\" -v b=\"\$end\" 'BEGIN { print b - a }')"
    done
    awk -v t="$SEQ" -v x="$t1" -v y="$t4" 'BEGIN { d = y - x; if (d <= 0) d = 1e-3; printf "%.0f", 3 * t / d }'
    rm -rf "$tmp"
}

# repro_estimate: the plan's cost, printed by --dry-run.
repro_estimate() {
    [ "$DRY" = 1 ] || return 0
    rate="" how=""
    if [ -n "$GIVEN_TPS" ]; then
        rate=$GIVEN_TPS how="$(repro_commas "$GIVEN_TPS") tokens/s (given with --tps), evaluation at 3 x that (forward only)"
    elif [ "$SCALE" = tiny ]; then
        if ! rate=$(repro_measure_tps); then
            echo "== estimate: $rate; use --tps N"
            return 0
        fi
        how="$(repro_commas "$rate") tokens/s measured here (4 steps minus 1 step of the smallest model, 1 x $SEQ tokens, CPU), evaluation at 3 x that"
    else
        how="an assumed, not measured, $COST_MFU x $COST_PEAK_FLOPS FLOP/s per GPU (H100 bf16 dense peak at 30% utilisation; fast/ has not run on a GPU yet): $GPUS GPU$([ "$GPUS" = 1 ] || echo s) for training, 1 for \`vrl eval\`; FLOPs per token 6 (P - d V) + 12 L d T, a third for evaluation"
    fi
    total_h=0 train_tokens=0 eval_tokens=0 n_train=0 n_eval=0
    echo "== cost at $how:"
    while read -r kind name size tokens; do
        [ -n "$kind" ] || continue
        f=$(repro_flop_per_token "$size")
        if [ "$kind" = train ]; then
            h=$(repro_cost_hours "$tokens" "$f" "$GPUS" "$rate" 1)
            train_tokens=$((train_tokens + tokens)) n_train=$((n_train + 1))
        else
            f=$((f / 3))
            h=$(repro_cost_hours "$tokens" "$f" 1 "$rate" 3)
            eval_tokens=$((eval_tokens + tokens)) n_eval=$((n_eval + 1))
        fi
        total_h=$(awk -v a="$total_h" -v b="$h" 'BEGIN { print a + b }')
        printf '   %-5s %-28s %18s tokens x %5.0f MFLOP: %s\n' "$kind" "$name" "$(repro_commas "$tokens")" \
            "$(awk -v f="$f" 'BEGIN { print f / 1e6 }')" "$(repro_hours_text "$h")"
    done <<EOF
$PLAN_COST
EOF
    echo "== estimate: $(repro_commas "$train_tokens") training tokens in $n_train runs and" \
        "$(repro_commas "$eval_tokens") evaluated tokens in $n_eval evaluations: $(repro_hours_text "$total_h")" \
        "(data preparation and analysis not included; docs/reproduce.md has the data preparation's rate)"
}
