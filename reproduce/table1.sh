#!/bin/sh
# table1.sh: the paper's Table 1: zero-shot accuracy (HellaSwag, OpenBookQA, WinoGrande,
# ARC-c, ARC-e, PIQA) and WikiText perplexity of the trained Transformer and ResFormer.
# Uses table5.sh's runs in the same work folder (trains them when missing), then
# `vrl eval --tokenizer --wikitext --tasks all` per run -> results/table1-SCALE.md.
# The paper's Table 1 rows are its 82M models at 2,048 tokens (HellaSwag is compared only
# when ../shared/data/eval holds hellaswag.jsonl).
# Usage: reproduce/table1.sh [--scale paper|small|tiny] [--dry-run] (see --help, docs/reproduce.md)
set -eu
. "$(dirname "$0")/lib.sh"
repro_init table1 "$@"

repro_data
set --
for size in $SIZES; do set -- "$@" "transformer-$size $size baseline" "resformer-$size $size resformer"; done
repro_train_all "$@"
for size in $SIZES; do
    repro_eval "transformer-$size" downstream
    repro_eval "resformer-$size" downstream
done
repro_estimate
[ "$DRY" = 1 ] && exit 0

TASKS="hellaswag openbook_qa winogrande arc_challenge arc_easy piqa"
# Table 1, 82M, max length 2,048: the six tasks in TASKS order, then the average.
paper_row() {
    case $1 in
    transformer) echo "0.263 0.142 0.492 0.199 0.331 0.572 0.333" ;;
    resformer) echo "0.273 0.148 0.512 0.182 0.414 0.604 0.355" ;;
    esac
}
md=$RESULTS/table1-$SCALE.md
{
    repro_header "Table 1: zero-shot accuracy and WikiText perplexity"
    echo
    echo "Accuracy is acc (lm-eval-harness), averaged over the tasks the run evaluated; a task"
    echo "without its data file shows —. The paper's rows are its 82M models (the first size here)."
    [ "$TASK_LIMIT" = 0 ] || echo "This scale evaluates at most $TASK_LIMIT documents per task and WikiText document (--limit): small samples, wide error bars."
    echo
    echo "| model | source | HellaSwag | OBQA | WinoGrande | ARC-c | ARC-e | PIQA | Avg. |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for size in $SIZES; do
        for arch in transformer resformer; do
            name=$arch-$size f=$RUNS/$name/eval-downstream.json
            run="" diff=""
            i=1
            for t in $TASKS avg; do
                p=$(paper_row $arch | cut -d' ' -f$i)
                if [ "$t" = avg ]; then v=$(repro_json "$f" '.zero_shot.average.acc')
                else v=$(repro_json "$f" ".zero_shot.$t.acc"); fi
                run="$run | $v" diff="$diff | $(repro_diff "$v" "$p")"
                i=$((i + 1))
            done
            echo "| $name | run$run |"
            if [ "$size" = "${SIZES%% *}" ]; then
                echo "| $arch 82M | paper | $(paper_row $arch | sed 's/ / | /g') |"
                echo "| | diff$diff |"
            fi
        done
    done
    echo
    echo "Run averages cover the tasks present here; the paper's average covers all six."
    echo
    echo "WikiText-2 perplexity (paper: not in Table 1; lm-eval word perplexity is the usual figure):"
    echo
    echo "| model | token ppl | word ppl | documents |"
    echo "|---|---|---|---|"
    for size in $SIZES; do
        for arch in transformer resformer; do
            f=$RUNS/$arch-$size/eval-downstream.json
            echo "| $arch-$size | $(repro_json "$f" '.wikitext.token_perplexity') | $(repro_json "$f" '.wikitext.word_perplexity') | $(jq -r '.wikitext.documents // "—"' "$f" 2>/dev/null || echo —) |"
        done
    done
} > "$md"
cat "$md"
echo "wrote $md"
