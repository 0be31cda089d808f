#!/usr/bin/env bash
# test_eval_fast.sh: `vrl eval --device DEVICE` (the CUDA backend: cuda on a GPU, cuda-cpu its
# code on the CPU) against `vrl eval --device cpu --precision fp64` on the same run and inputs
# (docs/evaluation.md, "On the CUDA backend").
#
# Everything is made here, nothing read from ../shared/data: a text's bytes (`vrl data bytes`,
# whose tokenizer.json is byte-level), a tokenized folder of the seven formulas.md §3 domains
# built from docs/formulas.md's lines, a tiny model with a 300-id vocabulary (fast/ pads it to
# 384, so pad columns exist) trained 30 steps on the reference, a 12-document multiple-choice
# task (piqa's schema) and a 4-line LAMBADA file. Both devices score per-domain losses (--data),
# the byte file's token perplexity (--tokens), the tasks (--log-samples), and
# eval_device_check compares them (its head comment lists the checks).
#
# The bound R = 2^-8 (two bf16 roundings, u = 2^-9 each), relative to each log-likelihood:
# fast/ computes every log-probability as x_t − logsumexp(x) from logits whose inputs (the
# final norm's output and the head's weights) are bf16, so each logit carries at least those
# two roundings of relative size u; earlier layers' roundings reach the logits damped by the
# final RMSNorm. A loss or log-likelihood is a sum of such terms of one sign, so the same
# relative bound holds for sums and means. test_fast_cpu_vs_ref measures logits within ~6e-3
# relative (L2) on random weights; the figures here are printed and are far below R.
# With cuda-cpu the logits are cut into 7-row chunks (VRL_FAST_CE_ROWS), so scoring crosses
# chunk borders and a short last chunk.
#
# usage: test_eval_fast.sh DEVICE PATH/TO/vrl PATH/TO/eval_device_check
# DEVICE cuda without a GPU (or without the CUDA build): exit 77 (ctest's skip) with the reason.
set -u
DEVICE=$1 VRL=$2 CHECK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/cli_test_lib.sh"
R=0.00390625 # 2^-8, see above
fail() { echo "FAIL: $*"; exit 1; }

# data: bytes of README.md; seven domains of lines of formulas.md without quotes or backslashes
head -c 20000 "$HERE/../README.md" >"$tmp/text.txt"
"$VRL" data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null || fail "vrl data bytes"
grep -v '[\\"]' "$HERE/../docs/formulas.md" | tr -d '\r\t' | awk 'length($0) > 60' >"$tmp/lines.txt"
mkdir -p "$tmp/reorg/train" "$tmp/reorg/validation"
k=0
for d in RedPajamaCommonCrawl RedPajamaC4 RedPajamaGithub RedPajamaBook RedPajamaArXiv RedPajamaWikipedia \
    RedPajamaStackExchange; do
  awk -v k=$k 'NR % 7 == k { printf "{\"text\": \"%s\"}\n", $0 }' "$tmp/lines.txt" >"$tmp/reorg/train/$d.jsonl"
  tail -6 "$tmp/reorg/train/$d.jsonl" >"$tmp/reorg/validation/$d.jsonl"
  k=$((k + 1))
done
"$VRL" data tokenize --in "$tmp/reorg" --out "$tmp/tok" --tokenizer "$tmp/bytes/tokenizer.json" --chunk 64 --eos 10 \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "vrl data tokenize"; }

# the model: tiny, vocabulary 300, 30 reference steps
"$VRL" train --quiet --model tiny --steps 1 --out "$tmp/shape" >/dev/null 2>&1 || fail "vrl train (shape)"
sed 's/"vocab_size": 64/"vocab_size": 300/' "$tmp/shape/config.json" >"$tmp/m300.json"
"$VRL" train --quiet --model "$tmp/m300.json" --data "$tmp/tok" --seq 64 --batch 4 --steps 30 --lr 1e-2 \
  --eval-batches 1 --out "$tmp/run" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "vrl train"; }

# tasks: multiple choice (gold first or not) and LAMBADA's last word
mkdir "$tmp/ev"
cat >"$tmp/ev/piqa.jsonl" <<'EOF'
{"query": "Question: How is a model trained?", "choices": ["with a loss and a step", "with a hammer"], "gold": 0}
{"query": "Question: What does the reference compute?", "choices": ["nothing", "the same formulas", "a recipe"], "gold": 1}
{"query": "Question: Where do the tokens go?", "choices": ["to the moon", "into the embedding"], "gold": 1}
{"query": "Question: What is a token?", "choices": ["an id of the vocabulary", "a coin", "a ticket", "a word"], "gold": 0}
{"query": "Question: What does the attention mix?", "choices": ["the values of the layer", "paint"], "gold": 0}
{"query": "Question: What is the residual stream?", "choices": ["a river", "the sum of the layer outputs"], "gold": 1}
{"query": "Question: What is a value residual?", "choices": ["V of the first layer added", "a tax"], "gold": 0}
{"query": "Question: How is the loss computed?", "choices": ["by guessing", "as a mean of log probabilities"], "gold": 1}
{"query": "Question: What normalises the input?", "choices": ["RMSNorm", "a committee", "the weather"], "gold": 0}
{"query": "Question: What does RoPE rotate?", "choices": ["queries and keys", "wheels"], "gold": 0}
{"query": "Question: What does the head produce?", "choices": ["hats", "the logits of the vocabulary"], "gold": 1}
{"query": "Question: What does AdamW update?", "choices": ["the parameters", "the calendar"], "gold": 0}
EOF
cat >"$tmp/ev/lambada_openai.jsonl" <<'EOF'
{"text": "the model reads the tokens of the batch and predicts the next token"}
{"text": "every value of the residual stream is the sum of the layer outputs"}
{"text": "the loss is the mean of the log probabilities of the targets"}
{"text": "the attention of each layer reads the values of the first layer"}
EOF

E=(eval --ckpt "$tmp/run" --data "$tmp/tok" --tokens "$tmp/bytes/val.bin" --tasks piqa,lambada_openai
   --eval-dir "$tmp/ev" --tokenizer "$tmp/bytes/tokenizer.json" --seq 64)
"$VRL" "${E[@]}" --device cpu --precision fp64 --out "$tmp/ref.json" --log-samples "$tmp/ref.jsonl" >"$tmp/log" 2>&1 \
  || { cat "$tmp/log"; fail "vrl eval --device cpu"; }
VRL_FAST_CE_ROWS=7 "$VRL" "${E[@]}" --device "$DEVICE" --out "$tmp/dev.json" --log-samples "$tmp/dev.jsonl" \
  >"$tmp/log" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ] && [ "$DEVICE" = cuda ] && grep -q -- "--device cuda: " "$tmp/err"; then
  echo "SKIP: $(head -1 "$tmp/err")"
  exit 77
fi
[ $rc -eq 0 ] || { cat "$tmp/log" "$tmp/err"; fail "vrl eval --device $DEVICE"; }
check "vrl eval --device $DEVICE within 2^-8 of the fp64 reference" \
  "$CHECK" $R "$tmp/ref.json" "$tmp/ref.jsonl" "$tmp/dev.json" "$tmp/dev.jsonl"

# what the CUDA backend refuses, in one line each (a flag that does not fit: exit 2, as vrl eval's usage errors)
"$VRL" eval --ckpt "$tmp/run" --device "$DEVICE" --precision fp64 --tokens "$tmp/bytes/val.bin" --out "$tmp/x.json" \
  2>"$tmp/err"
rc=$?
check "precision_not_for_device: exit 2, one line: $(cat "$tmp/err")" test $rc -eq 2 -a "$(wc -l <"$tmp/err")" -eq 1 \
  -a -n "$(grep -- "--precision fp64: applies to --device cpu only" "$tmp/err")"
# a shape the kernels refuse for good (head_dim 12: the attention tiles take powers of two)
"$VRL" train --quiet --model tiny --steps 1 --out "$tmp/tiny" >/dev/null 2>&1 || fail "vrl train tiny"
sed -e 's/"hidden_size": 16/"hidden_size": 24/' -e 's/"head_dim": 8/"head_dim": 12/' "$tmp/tiny/config.json" >"$tmp/hd12.json"
"$VRL" train --quiet --model "$tmp/hd12.json" --steps 1 --out "$tmp/hd12" >/dev/null 2>&1 || fail "vrl train head_dim 12"
expect_error model_not_scored "backend cuda.*-bf16 cannot score this model: head_dim must be 8, 16, 32, 64 or 128 (got 12)" \
  "$VRL" eval --ckpt "$tmp/hd12" --device "$DEVICE" --tasks none --out "$tmp/x.json"
finish
