# cost.sh: what a plan costs, training and evaluation, for --dry-run (sourced by lib.sh,
# POSIX sh). repro_train and repro_eval add each step they would run with repro_cost_add;
# repro_estimate prints the sum at a stated throughput.
#
# Throughput, in this order:
#   --tps N   N training tokens/s for the whole job, given; evaluation at 3 N (forward only)
#   tiny, cpu (this CPU) measured, per size in the plan: the median step tokens/s that finished
#             runs of that size in the work folder recorded (metrics.jsonl, steps after the
#             first), else a 3-step run of the size's model shape at the plan's batch and
#             sequence on one thread, as each of the two runs at a time trains (median of steps
#             2-3); the estimate is CPU time per run, and wall time with two runs at a time
#   paper, small   assumed, not measured (fast/ has not run on a GPU yet, docs/fast.md): each
#             GPU delivers COST_MFU of the H100's dense bf16 peak, COST_PEAK_FLOPS, a
#             utilisation that stays an assumption until a GPU measures one; a training token
#             costs 6 (P - d V) + 12 L d T FLOPs (P parameters, of them d V in the input
#             embedding, a lookup; L layers, width d, sequence T), an evaluated token a third of
#             that (forward only); `vrl eval` runs on one GPU
COST_PEAK_FLOPS=989e12   # H100 SXM, bf16 dense, NVIDIA's data sheet
COST_MFU=0.30            # assumed model FLOPs utilisation, until a GPU measures one
PLAN_COST=""             # lines "train|eval NAME SIZE TOKENS"

# repro_cost_add KIND NAME SIZE TOKENS
repro_cost_add() { PLAN_COST="$PLAN_COST$1 $2 $3 $4
"; }

# repro_flop_per_token SIZE: training FLOPs per token (see above).
repro_flop_per_token() {
    # shellcheck disable=SC2046
    set -- $(repro_shape "$1") "$(repro_params "$1")"
    awk -v L="$1" -v d="$3" -v P="$5" -v T="$SEQ" -v V="$VOCAB" 'BEGIN { printf "%.0f", 6 * (P - d * V) + 12 * L * d * T }'
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

# repro_median: the median of the numbers on stdin, one a line (nothing when there are none).
repro_median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# repro_step_tps FILE...: tokens/s of every step after the first in the metrics.jsonl FILEs.
repro_step_tps() { jq -r 'select(.step != null and .step > 1 and .tokens_per_s != null) | .tokens_per_s' "$@" 2>/dev/null; }

# repro_recorded_tps SIZE: "TPS RUNS" from the finished runs of SIZE in $RUNS (every variant and
# seed: NAME-SIZE, NAME-SIZE-seedS), or nothing when there are none.
repro_recorded_tps() {
    # shellcheck disable=SC2046 # one argument per metrics file (run folders have plain names)
    set -- $(for m in "$RUNS"/*-"$1"/metrics.jsonl "$RUNS"/*-"$1"-seed*/metrics.jsonl; do
        [ -f "${m%/metrics.jsonl}/.done" ] && echo "$m"; done)
    [ $# -gt 0 ] || return 0
    tps=$(repro_step_tps "$@" | repro_median)
    [ -z "$tps" ] || echo "$tps $#"
}

# repro_measure_tps SIZE: training tokens/s of SIZE's model on this CPU, now: 3 steps of
# MICRO x SEQ tokens on one thread (the plan trains two runs at a time, one thread each), the
# median of steps 2 and 3 as metrics.jsonl times them (step 1 carries the warm-up).
repro_measure_tps() {
    # a dry run may come from a checkout without its own build: then the vrl on the PATH
    vrl=$VRL
    [ -x "$vrl" ] || vrl=$(command -v vrl) || { echo "could not measure $1: $VRL is not built (bash scripts/build.sh)"; return 1; }
    tmp=$(mktemp -d)
    model=$(WORK=$tmp; DRY=0; repro_model "$1")
    OPENBLAS_NUM_THREADS=1 "$vrl" train --model "$model" --steps 3 --batch "$MICRO" --seq "$SEQ" --warmup 1 \
        --threads 1 --eval-every 0 --eval-batches 1 --save-every 0 --quiet --out "$tmp/run" > "$tmp/log" 2>&1 ||
        { echo "could not measure $1: $(tail -1 "$tmp/log")"; rm -rf "$tmp"; return 1; }
    tps=$(repro_step_tps "$tmp/run/metrics.jsonl" | repro_median)
    rm -rf "$tmp"
    [ -n "$tps" ] || { echo "could not measure $1: no step times in metrics.jsonl"; return 1; }
    echo "$tps"
}

# repro_local_rates: RATES, lines "SIZE TPS" for every size in the plan, each printed with how
# it was obtained (tiny, cpu). Fails, having printed why, when a size can be neither read nor
# measured.
repro_local_rates() {
    RATES=""
    load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown)
    for size in $(echo "$PLAN_COST" | awk 'NF { print $3 }' | awk '!seen[$0]++'); do
        rec=$(repro_recorded_tps "$size")
        if [ -n "$rec" ]; then
            rate=${rec% *}
            echo "   rate $size: $(repro_commas "$rate") tokens/s, the median step of ${rec#* } finished run$([ "${rec#* }" = 1 ] || echo s) of $size in $RUNS (their metrics.jsonl)"
        elif rate=$(repro_measure_tps "$size"); then
            echo "   rate $size: $(repro_commas "$rate") tokens/s, measured here now (3 steps of $MICRO x $SEQ tokens, one thread, median of steps 2-3; load average $load on $(nproc) cores)"
        else
            echo "== estimate: $rate; use --tps N"
            return 1
        fi
        RATES="$RATES$size $rate
"
    done
}

# repro_estimate: the plan's cost, printed by --dry-run.
repro_estimate() {
    [ "$DRY" = 1 ] || return 0
    rate="" how="" unit="" RATES=""
    if [ -n "$GIVEN_TPS" ]; then
        rate=$GIVEN_TPS how="$(repro_commas "$GIVEN_TPS") tokens/s (given with --tps), evaluation at 3 x that (forward only)"
    elif repro_local; then
        echo "== this CPU's training speed per size (evaluation counted at 3 x that, forward only, not measured):"
        repro_local_rates || return 0
        how="the rates above: CPU time, one thread per run"
        unit=" CPU"
    else
        how="an assumed, not measured, $COST_MFU x $COST_PEAK_FLOPS FLOP/s per GPU (the H100's bf16 dense peak at an MFU of 30%, an assumption until a GPU measures one: fast/ has not run on a GPU yet): $GPUS GPU$([ "$GPUS" = 1 ] || echo s) for training, 1 for \`vrl eval\`; FLOPs per token 6 (P - d V) + 12 L d T, a third for evaluation"
    fi
    total_h=0 train_tokens=0 eval_tokens=0 n_train=0 n_eval=0
    echo "== cost at $how:"
    while read -r kind name size tokens; do
        [ -n "$kind" ] || continue
        f=$(repro_flop_per_token "$size")
        [ -z "$RATES" ] || rate=$(echo "$RATES" | awk -v s="$size" '$1 == s { print $2 }')
        if [ "$kind" = train ]; then
            h=$(repro_cost_hours "$tokens" "$f" "$GPUS" "$rate" 1)
            train_tokens=$((train_tokens + tokens)) n_train=$((n_train + 1))
        else
            f=$((f / 3))
            h=$(repro_cost_hours "$tokens" "$f" 1 "$rate" 3)
            eval_tokens=$((eval_tokens + tokens)) n_eval=$((n_eval + 1))
        fi
        total_h=$(awk -v a="$total_h" -v b="$h" 'BEGIN { print a + b }')
        printf '   %-5s %-28s %18s tokens x %5.0f MFLOP: %s%s\n' "$kind" "$name" "$(repro_commas "$tokens")" \
            "$(awk -v f="$f" 'BEGIN { print f / 1e6 }')" "$(repro_hours_text "$h")" "$unit"
    done <<EOF
$PLAN_COST
EOF
    wall=""
    if [ -n "$RATES" ]; then
        # repro_parallel trains and evaluates two at a time, one thread each
        wall="; wall about $(repro_hours_text "$(awk -v h="$total_h" 'BEGIN { print h / 2 }')") with two runs at a time on 2 free cores"
        unit=" of CPU time"
    elif [ -z "$GIVEN_TPS" ]; then
        wall=" at an MFU of $COST_MFU that no GPU has measured yet"
    fi
    echo "== estimate: $(repro_commas "$train_tokens") training tokens in $n_train runs and" \
        "$(repro_commas "$eval_tokens") evaluated tokens in $n_eval evaluations: $(repro_hours_text "$total_h")$unit$wall" \
        "(data preparation and analysis not included; docs/results/reproduction.md, \"Data preparation throughput\", has its rate)"
}
