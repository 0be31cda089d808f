#!/bin/sh
# table5_efficiency.sh: the paper's headline claims at scale bytes, each model at its own best
# learning rate (issue 52; the design is registered in docs/results/reproduction.md, "Reproduce III:
# registered before the main run"). Two phases, in one work folder with table5.sh's data:
#   pilot  the lr grid EFF_LRS (factor 2) for Transformer and ResFormer at each size of the
#          width family EFF_SIZES, EFF_PILOT_SEEDS seeds, 150 steps, the in-training validation at
#          the end only; each model's best lr per size by the registered rule (eff_best)
#   main   with --seeds (8 by default, not the pilot's): both models at each size at their own
#          best lr (parameter efficiency; b8's pair is Table 5 at each model's best lr), ResFormer
#          at b8 also at the Transformer's best lr (the shared lr), and the Transformer at b8 with
#          EFF_BUDGETS times the steps, each on its own full cosine schedule (data efficiency);
#          `vrl eval --limit 200` on every main run; and for EFF_PAIR_SEEDS more seeds b8's pair
#          alone at their best lrs (Table 5's difference over 16 seeds)
# --dry-run prints both phases and their CPU price (before the pilot, the main phase's lrs are
# the placeholders BEST_MODEL_SIZE); --pilot-only trains the pilot and prints each best lr;
# --power trains nothing: it prints the pilot's table and the power computed from it (docs/results/reproduction.md,
# "Reproduce III", item 5) and writes them to RESULTS/table5_efficiency-pilot.md. The main phase refuses to start
# before the whole pilot has run; after it the registered analysis (table5_efficiency_analysis.sh)
# writes RESULTS/table5_efficiency.md.
# Usage: reproduce/table5_efficiency.sh [--pilot-only|--power] [--dry-run] [--seeds N|S1,...] [--tps N] ... (lib.sh's flags; scale bytes only)
set -eu
PILOT_ONLY=0 POWER=0
for a in "$@"; do
    shift
    case $a in --pilot-only) PILOT_ONLY=1 ;; --power) POWER=1 ;; *) set -- "$@" "$a" ;; esac
done
. "$(dirname "$0")/lib.sh"
SEEDS_ARG_GIVEN=0
for a in "$@"; do [ "$a" = --seeds ] && SEEDS_ARG_GIVEN=1; done
[ "$SEEDS_ARG_GIVEN" = 1 ] || set -- "$@" --seeds 8
case " $* " in *" --scale "*) case " $* " in *" --scale bytes "*) ;; *) echo "table5_efficiency.sh: scale bytes only (the design is registered there)" >&2; exit 2 ;; esac ;; *) set -- --scale bytes "$@" ;; esac
repro_init table5_efficiency "$@"
CURVE_EVERY=0  # every run has its own full schedule; only its end is compared
SCHED_OFFSET=1 # the first update trains at lr / 20, not 1e-7 (issue 52's fix; formulas.md §2)
[ "$POWER" = 1 ] || repro_data  # table5.sh's data (skipped when it made it already; --power reads runs only)

EFF_SIZES=${EFF_SIZES:-"b8-d48 b8 b8-d96"}
EFF_LRS=${EFF_LRS:-"3e-3 6e-3 1.2e-2 2.4e-2"}  # x1 (table5.sh's registered lr) to x8, factor 2
EFF_LR_BELOW=${EFF_LR_BELOW:-1.5e-3} EFF_LR_ABOVE=${EFF_LR_ABOVE:-4.8e-2}  # the rule's one point beyond each edge
EFF_PILOT_SEEDS=${EFF_PILOT_SEEDS:-"2024 2025"}
EFF_BUDGETS=${EFF_BUDGETS:-"1.5 2"}            # beside the 1x run: three budgets
EFF_PAIR_SEEDS=${EFF_PAIR_SEEDS-"1345 1346 1347 1348 1349 1350 1351 1352"}  # b8's pair only: Table 5's power
SIZES=$EFF_SIZES                               # repro_eval finds a run's size among them
for s in $EFF_PILOT_SEEDS; do case " $SEEDS $EFF_PAIR_SEEDS " in *" $s "*)
    echo "table5_efficiency.sh: --seeds and EFF_PAIR_SEEDS must not hold the pilot's seeds ($EFF_PILOT_SEEDS)" >&2; exit 2 ;; esac; done
for s in $EFF_PAIR_SEEDS; do case " $SEEDS " in *" $s "*)
    echo "table5_efficiency.sh: EFF_PAIR_SEEDS ($EFF_PAIR_SEEDS) must not repeat --seeds" >&2; exit 2 ;; esac; done

# eff_params SIZE: non-embedding parameters (the layers and the final norm; the byte embedding
# and head, 2 x 256 d, left out as the paper's parameter counts of Table 3 are compared on).
eff_params() {
    # shellcheck disable=SC2046
    set -- $(repro_shape "$1")
    awk -v L="$1" -v d="$3" -v f="$4" 'BEGIN { printf "%.0f", L * (4 * d * d + 3 * d * f + 2 * d) + d }'
}

# eff_final RUN: the unweighted mean over the domains of RUN's last in-training validation
# ("nan" when it has none or it is not finite: a diverged run).
eff_final() {
    jq -r 'select(.split == "val" and .domain != null) | "\(.step) \(.val_loss)"' "$1/metrics.jsonl" 2>/dev/null |
        awk '{ if ($1 != last) { s = 0; n = 0; bad = 0; last = $1 } if ($2 == $2 + 0 && $2 < 1e30) s += $2; else bad = 1; n++ }
             END { if (n && !bad) printf "%.6f\n", s / n; else print "nan" }'  # jq writes NaN as null
}

# eff_pilot_scores: EFF_SCORES, a line "SIZE MODEL LR SEED SCORE" for every pilot run of the grid:
# SCORE is eff_final's, "missing" when the run is not done (each run read once: jq per run is the cost).
# The edge points of the rule (EFF_LR_BELOW, EFF_LR_ABOVE) are read only where they were started
# (eff_extend): a model and size whose grid best is inside the grid has none.
eff_pilot_scores() {
    EFF_SCORES=""
    for size in $EFF_SIZES; do for model in transformer resformer; do for lr in $EFF_LR_BELOW $EFF_LRS $EFF_LR_ABOVE; do
        case " $EFF_LRS " in *" $lr "*) ;; *) [ -d "$RUNS/pilot_${model}_lr$lr-$size-seed${EFF_PILOT_SEEDS%% *}" ] || continue ;; esac
        for seed in $EFF_PILOT_SEEDS; do
            r=$RUNS/pilot_${model}_lr$lr-$size-seed$seed sc=missing
            [ ! -f "$r/.done" ] || sc=$(eff_final "$r")
            EFF_SCORES="$EFF_SCORES$size $model $lr $seed $sc
"
        done
    done; done; done
}

# eff_best MODEL SIZE: the registered rule on EFF_SCORES. The lr of EFF_LRS with the lowest mean over
# the pilot seeds of eff_final (a diverged run counts as +infinity; ties go to the smaller lr, by
# value wherever it stands in EFF_LRS); nothing when a pilot run of the model and size is missing.
# The sums are of whole millionths (eff_final's 6 decimals), so equal means tie exactly (in doubles
# 2.400 + 2.406 is above 2.401 + 2.405).
eff_best() {
    printf '%s' "$EFF_SCORES" | awk -v m="$1" -v z="$2" '
        $1 == z && $2 == m { if ($5 == "missing") bad = 1; v = ($5 == "nan") ? 1e30 : int($5 * 1e6 + 0.5); s[$3] += v; if (!($3 in o)) { o[$3] = ++k; name[k] = $3 } }
        END { if (bad || !k) exit
              for (i = 1; i <= k; i++) if (i == 1 || s[name[i]] < best || (s[name[i]] == best && name[i] + 0 < lr + 0)) { best = s[name[i]]; lr = name[i] } print lr }'
}

if [ "$POWER" = 1 ]; then  # after the pilot, before the main run: its table and the power, nothing trained
    . "$REPRO_ROOT/reproduce/table5_efficiency_analysis.sh"
    eff_pilot_scores
    out=$(eff_pilot_report) || exit 1
    echo "$out"
    [ "$DRY" = 1 ] || { echo "$out" > "$RESULTS/table5_efficiency-pilot.md"; echo "wrote $RESULTS/table5_efficiency-pilot.md"; }
    exit 0
fi

pilot=0 main=0
set --
for size in $EFF_SIZES; do
    for model in transformer resformer; do
        variant=$( [ $model = transformer ] && echo baseline || echo resformer )
        for lr in $EFF_LRS; do
            for seed in $EFF_PILOT_SEEDS; do
                set -- "$@" "pilot_${model}_lr$lr-$size-seed$seed $size $variant 1 $seed $STEPS $lr"
                pilot=$((pilot + 1))
            done
        done
    done
done
echo "== pilot: $pilot runs (2 models x $(echo $EFF_SIZES | wc -w) sizes x $(echo $EFF_LRS | wc -w) lrs x $(echo $EFF_PILOT_SEEDS | wc -w) seeds), $STEPS steps each, validated at the end only"
for size in $EFF_SIZES; do
    echo "   $size: $(repro_shape "$size" | awk '{ printf "%d layers, %d heads, d %d, FFN %d", $1, $2, $3, $4 }'), $(repro_commas "$(eff_params "$size")") non-embedding parameters"
done
repro_parallel repro_train "$@"

# eff_find_bests: BESTS, the best lr per model and size (placeholders until the pilot has run),
# found once: " MODEL:SIZE=LR ..."
eff_find_bests() {
    eff_pilot_scores
    BESTS=" "
    for size in $EFF_SIZES; do for model in transformer resformer; do
        b=$(eff_best $model "$size")
        [ -z "$b" ] || BESTS="$BESTS$model:$size=$b "
    done; done
}
eff_find_bests
best() {
    b=${BESTS#* "$1:$2="}
    [ "$b" != "$BESTS" ] && echo "${b%% *}" || echo "BEST_$1_$2"
}
# edge LR: " (at the grid's edge)" when LR is the first or last of EFF_LRS (the rule then adds a
# point), " (at the edge of the extended grid)" when it is the added point itself
# (EDGE_MODEL, EDGE_SIZE: whose; a grid edge whose point beyond was piloted is no edge any more)
edge() {
    case $1 in
    "${EFF_LRS%% *}") [ -d "$RUNS/pilot_${EDGE_MODEL}_lr$EFF_LR_BELOW-$EDGE_SIZE-seed${EFF_PILOT_SEEDS%% *}" ] || echo " (at the grid's edge)" ;;
    "${EFF_LRS##* }") [ -d "$RUNS/pilot_${EDGE_MODEL}_lr$EFF_LR_ABOVE-$EDGE_SIZE-seed${EFF_PILOT_SEEDS%% *}" ] || echo " (at the grid's edge)" ;;
    "$EFF_LR_BELOW" | "$EFF_LR_ABOVE") echo " (at the edge of the extended grid)" ;;
    esac
}
# The rule's edge points: a model and size whose best is at an edge of EFF_LRS gets the next point
# beyond it with the same seeds, once; the rule is then applied to the five points.
set --
for size in $EFF_SIZES; do for model in transformer resformer; do
    b=$(best $model "$size") x=""
    [ "$b" != "${EFF_LRS%% *}" ] || x=$EFF_LR_BELOW
    [ "$b" != "${EFF_LRS##* }" ] || x=$EFF_LR_ABOVE
    [ -n "$x" ] || continue
    variant=$( [ $model = transformer ] && echo baseline || echo resformer )
    for seed in $EFF_PILOT_SEEDS; do
        set -- "$@" "pilot_${model}_lr$x-$size-seed$seed $size $variant 1 $seed $STEPS $x"
        pilot=$((pilot + 1))
    done
done; done
if [ $# -gt 0 ]; then
    echo "== the rule's edge points: $(for r in "$@"; do echo "$r"; done | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }')"
    [ "$DRY" = 1 ] || mkdir -p $(for r in "$@"; do echo "$RUNS/${r%% *}"; done)  # started: eff_pilot_scores reads them
    repro_parallel repro_train "$@"
    eff_find_bests
fi
echo "== best lr per model and size (the rule of docs/results/reproduction.md, \"Reproduce III\", item 1; BEST_...: the pilot has not run):"
for size in $EFF_SIZES; do
    bt=$(best transformer "$size") br=$(best resformer "$size")
    echo "   $size: transformer $bt$(EDGE_MODEL=transformer EDGE_SIZE=$size edge "$bt"), resformer $br$(EDGE_MODEL=resformer EDGE_SIZE=$size edge "$br")"
done
if [ "$PILOT_ONLY" = 1 ]; then
    repro_estimate
    exit 0
fi

pilot_cost=$PLAN_COST
set --
for seed in $SEEDS; do
    for size in $EFF_SIZES; do  # parameter efficiency (b8: Table 5 at each model's best lr)
        for model in transformer resformer; do
            variant=$( [ $model = transformer ] && echo baseline || echo resformer )
            set -- "$@" "$(repro_seed_name "eff_${model}-$size" "$seed") $size $variant 1 $seed $STEPS $(best $model "$size")"
            main=$((main + 1))
        done
    done
    # the shared lr: ResFormer at the Transformer's best (a run of its own even where they agree,
    # so the plan's size does not depend on the pilot)
    set -- "$@" "$(repro_seed_name "eff_resformer_shared-b8" "$seed") b8 resformer 1 $seed $STEPS $(best transformer b8)"
    main=$((main + 1))
    for x in $EFF_BUDGETS; do  # data efficiency: more tokens, each on its own full schedule
        steps=$(awk -v s="$STEPS" -v x="$x" 'BEGIN { printf "%d", s * x + 0.5 }')
        set -- "$@" "$(repro_seed_name "eff_transformer_x$x-b8" "$seed") b8 baseline 1 $seed $steps $(best transformer b8)"
        main=$((main + 1))
    done
done
for seed in $EFF_PAIR_SEEDS; do  # more seeds for Table 5's difference at b8 alone
    for model in transformer resformer; do
        variant=$( [ $model = transformer ] && echo baseline || echo resformer )
        set -- "$@" "$(repro_seed_name "eff_${model}-b8" "$seed") b8 $variant 1 $seed $STEPS $(best $model b8)"
        main=$((main + 1))
    done
done
echo "== main: $main runs: for each of $NSEEDS seeds ($(echo $SEEDS)) 2 models x $(echo $EFF_SIZES | wc -w) sizes at their own best lr," \
    "ResFormer b8 at the Transformer's best (the shared lr), the Transformer b8 at $(echo "$EFF_BUDGETS" | sed 's/ /x and /')x the tokens;" \
    "for $(echo $EFF_PAIR_SEEDS | wc -w) more seeds ($(echo $EFF_PAIR_SEEDS)) b8's pair at their best lrs; each evaluated (vrl eval --limit $EVAL_LIMIT)"
if [ "$DRY" = 0 ]; then
    for size in $EFF_SIZES; do for model in transformer resformer; do
        case $BESTS in *" $model:$size="*) ;; *) echo "table5_efficiency.sh: the pilot of $model at $size is not complete: the main phase needs every best lr (--pilot-only first)" >&2; exit 1 ;; esac
    done; done
fi
# Runs of like cost side by side: repro_parallel trains two at a time and waits for both, so the
# plan is grouped by size and steps (stable: within a group the order above). Every group holds an
# even number of runs (2 models or 2 seeds at a time), so no pair mixes a short run with a long one.
eff_plan=$(for r in "$@"; do echo "$r"; done | sort -s -k2,2 -k6,6n)
set --
while read -r r; do set -- "$@" "$r"; done <<EOF_PLAN
$eff_plan
EOF_PLAN
eff_run() { repro_train "$@" && repro_eval "$1" domains; }
repro_parallel eff_run "$@"
if [ "$DRY" = 0 ]; then  # the registered analysis of the run folders (a dry run has none)
    . "$REPRO_ROOT/reproduce/table5_efficiency_analysis.sh"
    md=$RESULTS/table5_efficiency.md
    eff_results > "$md"
    cat "$md"
    echo "wrote $md"
fi
repro_estimate
# the two phases apart, and the whole against the 150 minutes of both cores
eff_hours() {  # COST_LINES: CPU hours at RATES (or --tps), training at 1 x, evaluation at 3 x
    echo "$1" | while read -r kind name size tokens; do
        [ -n "$kind" ] || continue
        r=${GIVEN_TPS:-$(echo "$RATES" | awk -v s="$size" '$1 == s { print $2 }')}
        awk -v n="$tokens" -v r="$r" -v k="$kind" 'BEGIN { printf "%.6f\n", n / (r * (k == "train" ? 1 : 3)) / 3600 }'
    done | awk '{ s += $1 } END { printf "%.4f", s }'
}
[ -n "$GIVEN_TPS${RATES:-}" ] || exit 0  # (a real run sets no RATES)
ph=$(eff_hours "$pilot_cost") all=$(eff_hours "$PLAN_COST")
awk -v p="$ph" -v a="$all" 'BEGIN {
    printf "== price: pilot %.0f CPU-minutes, main %.0f CPU-minutes, together %.0f CPU-minutes: %.0f minutes of wall on 2 free cores, %s the 150 minutes of both cores\n",
        p * 60, (a - p) * 60, a * 60, a * 30, (a * 30 <= 150 ? "within" : "over") }'
