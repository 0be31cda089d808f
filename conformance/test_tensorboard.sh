#!/usr/bin/env bash
# test_tensorboard.sh: the TensorBoard events file of `vrl train` (common/run/tensorboard.c), read
# by TensorBoard's own reader (EventAccumulator, tensorboard from PyPI in python/.venv):
#   1. a tiny run on a seven-domain data folder, validation every 4 steps: every scalar of
#      metrics.jsonl (loss, lr, grad_norm, tokens_per_s, elapsed_s, val_loss and val_loss/DOMAIN)
#      at every step, equal to the number metrics.jsonl holds (in float32, TensorBoard's scalar);
#   2. the same run killed in its step-12 save (VRL_FAULT_AT_WRITE): its events file holds steps
#      11 and 12 past the step-10 checkpoint; after --resume to step 16 every tag has each step
#      once and still equals metrics.jsonl (both cut back to step 10, then appended).
# Python: $VRL_PYTHON, else python/.venv/bin/python (python/make_venv.sh). Without a Python that
# imports tensorboard the test is skipped (exit 77).
# usage: test_tensorboard.sh PATH/TO/vrl
set -u
VRL=$1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY=${VRL_PYTHON:-$ROOT/python/.venv/bin/python}
if ! "$PY" -c "from tensorboard.backend.event_processing import event_accumulator" 2>/dev/null; then
  echo "SKIP: no Python with tensorboard at $PY (set VRL_PYTHON or run python/make_venv.sh)"
  exit 77
fi
. "$(dirname "$0")/cli_test_lib.sh"
CHECK="$PY $ROOT/conformance/hf/check_tensorboard.py"

# data: seven domains of short lines, byte tokenizer
for i in $(seq 1 60); do echo "the cat sat on the mat and the dog ran far away $((i % 7))"; done >"$tmp/text.txt"
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null || { echo "FAIL data bytes"; exit 1; }
mkdir -p "$tmp/reorg/train" "$tmp/reorg/validation"
k=0
for d in RedPajamaCommonCrawl RedPajamaC4 RedPajamaGithub RedPajamaBook RedPajamaArXiv RedPajamaWikipedia \
    RedPajamaStackExchange; do
  for i in $(seq 1 12); do echo "{\"text\": \"domain $k line $i: the cat sat on the mat $((i * k))\"}"; done \
    >"$tmp/reorg/train/$d.jsonl"
  tail -3 "$tmp/reorg/train/$d.jsonl" >"$tmp/reorg/validation/$d.jsonl"
  k=$((k + 1))
done
$VRL data tokenize --in "$tmp/reorg" --out "$tmp/tok" --tokenizer "$tmp/bytes/tokenizer.json" --chunk 32 --eos 10 \
  >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL data tokenize"; exit 1; }
printf '{"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
 "num_attention_heads": 2, "vocab_size": 256, "max_position_embeddings": 32}\n' >"$tmp/m.json"
train() { $VRL train --quiet --model "$tmp/m.json" --data "$tmp/tok" --steps 12 --batch 2 --seq 32 \
  --eval-every 4 --eval-batches 1 --save-every 5 "$@"; }

# 1. a whole run
train --out "$tmp/R" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL vrl train"; exit 1; }
$CHECK "$tmp/R" >"$tmp/check.log" 2>&1
rc=$?
cat "$tmp/check.log"
check tensorboard_equals_metrics test $rc -eq 0
check per_domain_tags test "$(grep -c '^val_loss/RedPajama' "$tmp/check.log")" -eq 7

# 2. killed while saving step 12 (the third checkpoint: its staging folder's mkdir), resumed to 16
at=$(VRL_FAULT_TRACE=1 train --out "$tmp/trace" 2>&1 | grep 'mkdir stage' | sed -n 3p | sed -E 's/fault point ([0-9]+):.*/\1/')
VRL_FAULT_AT_WRITE=$at train --out "$tmp/K" >/dev/null 2>&1
check killed_in_save test $? -eq 137
check killed_run_logged_step_12 grep -q '"step":12,"loss"' "$tmp/K/metrics.jsonl"
$CHECK "$tmp/K" >/dev/null 2>&1
check killed_run_events_hold_step_12 test $? -eq 0
$VRL train --quiet --resume "$tmp/K" --steps 16 >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL vrl train --resume"; }
$CHECK "$tmp/K" >"$tmp/check.log" 2>&1
rc=$?
cat "$tmp/check.log"
check resumed_no_duplicate_steps test $rc -eq 0
check resumed_steps_1_to_16 grep -q '^loss  *16 steps 1..16' "$tmp/check.log"
check one_events_file test "$(ls "$tmp/K" | grep -c tfevents)" -eq 1
finish
