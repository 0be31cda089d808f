#!/usr/bin/env bash
# test_lmeval_golden.sh: `vrl eval` agrees with lm-evaluation-harness 0.4 on the golden
# model (built by conformance/lmeval_golden/make_model.sh) and the first documents of each
# task: every metric (WikiText word/byte perplexity and bits per byte, LAMBADA acc and
# perplexity, the six tasks' acc/acc_norm) and every request's log-likelihood within 1e-6
# relative of conformance/lmeval_golden/expected.json and within 1e-12 of expected_f64.json
# (made by make_expected.sh). The task
# files, WikiText and the tokenizer are read from ../shared/data (not committed); without
# them the test says SKIP and passes.
# usage: test_lmeval_golden.sh PATH/TO/vrl PATH/TO/lmeval_golden_check
set -u
VRL=$1 CHECK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
G=$HERE/lmeval_golden
SHARED=$HERE/../../shared/data
TOK=$SHARED/tokenizers/gpt-neox-20b.tokenizer.json
WIKI=$SHARED/corpora/wikitext-2-raw/wiki.test.raw
for f in "$TOK" "$WIKI" "$SHARED"/eval/{piqa,arc_easy,arc_challenge,openbook_qa,winogrande,lambada_openai}.jsonl; do
  [ -f "$f" ] || { echo "SKIP: $f is absent (the lm-eval golden reads the shared data)"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/eval"
for t in piqa arc_easy arc_challenge openbook_qa winogrande lambada_openai; do ln -s "$SHARED/eval/$t.jsonl" "$tmp/eval/"; done
ln -s "$G/hellaswag.jsonl" "$tmp/eval/"
# the settings of make_expected.py: window 64, fp64, the first 10 documents, 2 WikiText pages
# the model: built by make_model.sh (deterministic fp64 training), as for expected*.json
bash "$G/make_model.sh" "$VRL" "$tmp/model" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL make_model.sh"; exit 1; }
E="$VRL eval --ckpt $tmp/model --tokenizer $TOK --seq 64 --precision fp64"
$E --tasks all --eval-dir "$tmp/eval" --limit 10 --out "$tmp/tasks.json" --log-samples "$tmp/tasks.jsonl" \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL vrl eval (tasks)"; exit 1; }
$E --wikitext "$WIKI" --limit 2 --out "$tmp/wiki.json" --log-samples "$tmp/wiki.jsonl" \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL vrl eval (wikitext)"; exit 1; }
# against lm-eval on transformers as it is (float32 RoPE/RMSNorm/softmax inside its float64
# Llama: about 1e-7 relative), and with those in float64 too (then only rounding differs)
"$CHECK" 1e-6 "$G/expected.json" "$tmp/tasks.json" "$tmp/wiki.json" -- "$tmp/tasks.jsonl" "$tmp/wiki.jsonl"
rc1=$?
"$CHECK" 1e-12 "$G/expected_f64.json" "$tmp/tasks.json" "$tmp/wiki.json" -- "$tmp/tasks.jsonl" "$tmp/wiki.jsonl"
rc2=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]
