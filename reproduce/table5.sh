#!/bin/sh
# table5.sh: the paper's Table 5 (appendix A.4): validation loss per SlimPajama domain and
# the average, Transformer vs ResFormer (identity, λ = 0.5) at 82M / 180M / 468M.
# Pipeline: data (reorganize, select, tokenize) -> 6 trainings -> `vrl eval --data` per run
# -> results/table5-SCALE.md with the paper's numbers beside the run's.
# With --seeds N or --seeds S1,S2,... (3 seeds at --scale cpu) every model trains with each seed
# (lib.sh: repro_seeds, repro_seed_name) and, for more than one, the table gives each
# domain's mean ± sample sd per model and the paired difference ResFormer − Transformer (same
# seed: same initial weights where shapes agree, same data order) with its standard error.
# Usage: reproduce/table5.sh [--scale paper|small|bytes|cpu|tiny] [--seeds N|S1,S2,...] [--dry-run] (see --help, docs/reproduce.md)
set -eu
. "$(dirname "$0")/lib.sh"
repro_init table5 "$@"

repro_data
set --
for size in $SIZES; do  # size by size: a table cut short still has every seed of its first sizes
    for seed in $SEEDS; do
        t=$(repro_seed_name "transformer-$size" "$seed") r=$(repro_seed_name "resformer-$size" "$seed")
        set -- "$@" "$t $size baseline 1 $seed" "$r $size resformer 1 $seed"
    done
    # scale bytes: SVFormer, and the Transformer LONG times as long (the tokens-to-equal-loss
    # ratio), for the first EXTRA_SEEDS seeds, after every seed's pair; two like runs at a time
    # (repro_parallel)
    if [ "$LONG" -gt 0 ] && [ "$EXTRA_SEEDS" -gt 0 ]; then  # BYTES_EXTRA_SEEDS=0: neither
        extra=$(echo $SEEDS | cut -d' ' -f1-"$EXTRA_SEEDS")  # the first EXTRA_SEEDS seeds
        for seed in $extra; do set -- "$@" "$(repro_seed_name "svformer-$size" "$seed") $size svformer 1 $seed"; done
        for seed in $extra; do
            set -- "$@" "$(repro_seed_name "transformer_long-$size" "$seed") $size baseline 1 $seed $((STEPS * LONG))"
        done
    fi
done
# each run is evaluated as soon as it is trained (on this CPU, two runs at a time)
table5_run() { repro_train "$@" && repro_eval "$1" domains; }
repro_parallel table5_run "$@"
repro_estimate
[ "$DRY" = 1 ] && exit 0

DOMAINS="RedPajamaCommonCrawl RedPajamaC4 RedPajamaGithub RedPajamaStackExchange RedPajamaWikipedia RedPajamaBook RedPajamaArXiv"
# Table 5 of the paper (validation loss, 10k steps, 20B tokens), in DOMAINS order then the average.
paper_row() {
    case $1 in
    transformer-82M|transformer-tiny-s|transformer-cpu-s|transformer-b8) echo "3.3595 3.5388 1.4247 2.3872 2.9047 3.3797 2.1779 2.7389" ;;
    transformer-180M|transformer-tiny-m|transformer-cpu-m) echo "3.0961 3.2834 1.2451 2.1651 2.5897 3.1309 2.0001 2.5015" ;;
    transformer-468M|transformer-tiny-l|transformer-cpu-l) echo "2.8514 3.0430 1.0908 1.9628 2.2821 2.8979 1.8362 2.2806" ;;
    resformer-82M|resformer-tiny-s|resformer-cpu-s|resformer-b8) echo "3.3362 3.5191 1.3941 2.3592 2.8646 3.3572 2.1518 2.7117" ;;
    resformer-180M|resformer-tiny-m|resformer-cpu-m) echo "3.0631 3.2504 1.2200 2.1350 2.5435 3.0994 1.9732 2.4692" ;;
    resformer-468M|resformer-tiny-l|resformer-cpu-l) echo "2.8214 3.0115 1.0730 1.9388 2.2477 2.8696 1.8142 2.2537" ;;
    esac
}
paper_size() { case $1 in *tiny-s|*cpu-s|*82M|*b8) echo 82M ;; *tiny-m|*cpu-m|*180M) echo 180M ;; *) echo 468M ;; esac; }
md=$RESULTS/table5-$SCALE.md
if [ "$LONG" -gt 0 ]; then  # scale bytes: the analysis registered in docs/results/reproduction.md
    . "$REPRO_ROOT/reproduce/table5_registered.sh"
    table5_registered > "$md"
    cat "$md"
    echo "wrote $md"
    exit 0
fi
if [ "$NSEEDS" -gt 1 ]; then
    . "$REPRO_ROOT/reproduce/table5_seeds.sh"
    table5_seeds > "$md"
    cat "$md"
    echo "wrote $md"
    exit 0
fi
{
    repro_header "Table 5: validation loss per domain"
    echo
    echo "Each run row is followed by the paper's row for the model it stands for and the difference."
    [ "$SCALE" = paper ] || echo "At scale $SCALE the models are smaller than the paper's and see far fewer tokens: compare directions, not values."
    echo
    echo "| model | source | CommonCrawl | C4 | Github | StackExchange | Wikipedia | Book | ArXiv | Avg. |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for size in $SIZES; do
        for arch in transformer resformer; do
            name=$arch-$size run_name=$(repro_seed_name "$name" "$FIRST_SEED")
            f=$RUNS/$run_name/eval-domains.json
            run="" diff=""
            i=1
            for d in $DOMAINS mean; do
                p=$(echo $(paper_row "$name") | cut -d' ' -f$i)
                if [ "$d" = mean ]; then v=$(repro_json "$f" '.domains.mean')
                else v=$(repro_json "$f" ".domains.$d.loss"); fi
                run="$run | $v" diff="$diff | $(repro_diff "$v" "$p")"
                i=$((i + 1))
            done
            echo "| $run_name | run$run |"
            echo "| $arch $(paper_size "$name") | paper | $(paper_row "$name" | sed 's/ / | /g') |"
            echo "| | diff$diff |"
        done
    done
    echo
    echo "ResFormer − Transformer, average over domains (paper: −0.0272, −0.0323, −0.0269):"
    echo
    for size in $SIZES; do
        t=$(repro_json "$RUNS/$(repro_seed_name "transformer-$size" "$FIRST_SEED")/eval-domains.json" '.domains.mean')
        r=$(repro_json "$RUNS/$(repro_seed_name "resformer-$size" "$FIRST_SEED")/eval-domains.json" '.domains.mean')
        echo "- $size: run $(repro_diff "$r" "$t")"
    done
} > "$md"
cat "$md"
echo "wrote $md"
