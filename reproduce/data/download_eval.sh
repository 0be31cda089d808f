#!/bin/sh
# download_eval.sh: fetch the task files `vrl eval` reads (docs/evaluation.md, "Task
# files") into DEST, named as --eval-dir expects them:
#   piqa, arc_easy, arc_challenge, openbook_qa, winogrande: mosaicml/llm-foundry's
#     scripts/eval/local_data files (query/choices/gold; context_options/continuation/gold)
#   hellaswag: the official validation set (rowanz/hellaswag, data/hellaswag_val.jsonl)
#   lambada_openai: OpenAI's detokenised LAMBADA test set, the one lm-eval's
#     lambada_openai uses (5153 lines of {"text": ...})
# WikiText comes from download_wikitext.sh.
# NEEDS INTERNET ACCESS: it cannot run on machines without network; run it where you
# have a connection.
# Usage: download_eval.sh DEST_DIR
set -eu
DEST=${1:?usage: download_eval.sh DEST_DIR}
mkdir -p "$DEST"
get() {
    [ -s "$2" ] || { curl -fL --retry 5 -o "$2.part" "$1" && mv "$2.part" "$2"; }
}
FOUNDRY=https://raw.githubusercontent.com/mosaicml/llm-foundry/main/scripts/eval/local_data
get "$FOUNDRY/commonsense_reasoning/piqa.jsonl" "$DEST/piqa.jsonl"
get "$FOUNDRY/commonsense_reasoning/openbook_qa.jsonl" "$DEST/openbook_qa.jsonl"
get "$FOUNDRY/world_knowledge/arc_easy.jsonl" "$DEST/arc_easy.jsonl"
get "$FOUNDRY/world_knowledge/arc_challenge.jsonl" "$DEST/arc_challenge.jsonl"
get "$FOUNDRY/language_understanding/winogrande.jsonl" "$DEST/winogrande.jsonl"
get https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl "$DEST/hellaswag.jsonl"
get https://openaipublic.blob.core.windows.net/gpt-2/data/lambada_test.jsonl "$DEST/lambada_openai.jsonl"
n=$(wc -l <"$DEST/lambada_openai.jsonl")
[ "$n" -eq 5153 ] || echo "warning: $DEST/lambada_openai.jsonl has $n lines, lm-eval's lambada_openai has 5153"
echo "done: $DEST (vrl eval --eval-dir $DEST ...)"
