#!/usr/bin/env bash
# test_lmeval_hf.sh: lm-evaluation-harness itself (0.4.13, on transformers) on vrl run folders gives
# `vrl eval`'s numbers. Three small run folders, each trained here on the first 60 kB of
# TinyShakespeare and evaluated as lm-eval loads them, with no model argument but
# pretrained=RUN,trust_remote_code=True,dtype=float64,device=cpu (the folder's own tokenizer.json,
# tokenizer_config.json and generation_config.json, VrlForCausalLM through trust_remote_code for the
# non-baseline ones):
#   bytes  `vrl data bytes` tokenizer (256 ids; BOS = EOS = id 0, the byte 0), ResFormer;
#   gpt2   GPT-2 tokenizer (`vrl data tokenize`; <|endoftext|> 50256), baseline LLaMA;
#   neox   GPT-NeoX-20B tokenizer (<|endoftext|> 0), SVFormer.
# On each: WikiText-2 (first 2 pages), LAMBADA and PIQA (first 8 documents), window 256 (the
# folder's max_position_embeddings), float64. Every metric and every request's log-likelihood of
# lm-eval within 1e-6 relative of `vrl eval --precision fp64` (transformers keeps RoPE, RMSNorm and
# softmax in float32 inside a float64 model: about 1e-7), checked by lmeval_golden_check. And a
# generate_until task on the 8 PIQA questions: lm-eval's left-padded batches of 4 give the texts
# it gives one prompt at a time (conformance/hf/lmeval_runs.py).
# Python: $VRL_PYTHON, else python/.venv/bin/python (python/make_venv.sh; scripts/test.sh makes it).
# The tokenizers, WikiText and the task files come from ../shared/data; without them, or without a
# Python that imports lm_eval, the test is skipped (exit 77).
# usage: test_lmeval_hf.sh PATH/TO/vrl PATH/TO/lmeval_golden_check
set -u
VRL=$1 CHECK=$2
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY=${VRL_PYTHON:-$ROOT/python/.venv/bin/python}
SHARED=$ROOT/../shared/data
if ! "$PY" -c "import torch, transformers, lm_eval" 2>/dev/null; then
  echo "SKIP: no Python with torch + transformers + lm_eval at $PY (set VRL_PYTHON or run python/make_venv.sh)"
  exit 77
fi
for f in "$SHARED"/tokenizers/{gpt2,gpt-neox-20b}.tokenizer.json "$SHARED"/corpora/wikitext-2-raw/wiki.test.raw \
         "$SHARED"/corpora/tinyshakespeare/input.txt "$SHARED"/eval/{piqa,lambada_openai}.jsonl; do
  [ -f "$f" ] || { echo "SKIP: $f is absent (this test reads the shared data)"; exit 77; }
done
. "$(dirname "$0")/cli_test_lib.sh"
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
WINDOW=256 DOCS=8 PAGES=2

# the corpus: 60 kB of TinyShakespeare as one document per 2 kB, for both kinds of data folder
head -c 60000 "$SHARED/corpora/tinyshakespeare/input.txt" >"$tmp/text.txt"
mkdir -p "$tmp/jsonl/train" "$tmp/jsonl/validation"
"$PY" - "$tmp/text.txt" "$tmp/jsonl" <<'EOF'
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
docs = [text[i:i + 2000] for i in range(0, len(text), 2000)]
for split, part in (("train", docs[:-3]), ("validation", docs[-3:])):
    with open(f"{sys.argv[2]}/{split}/shakespeare.jsonl", "w") as f:
        f.writelines(json.dumps({"text": d}) + "\n" for d in part)
EOF
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null || { echo "FAIL data bytes"; exit 1; }
for t in gpt2 gpt-neox-20b; do
  $VRL data tokenize --in "$tmp/jsonl" --out "$tmp/tok-$t" --tokenizer "$SHARED/tokenizers/$t.tokenizer.json" \
    --chunk 64 >/dev/null || { echo "FAIL data tokenize $t"; exit 1; }
done

mk() {  # NAME VOCAB
  printf '{"model_type": "llama", "hidden_size": 16, "intermediate_size": 48, "num_hidden_layers": 3,
 "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": %d, "max_position_embeddings": %d}\n' \
    "$2" "$WINDOW" >"$tmp/$1.json"
}
mk bytes 256; mk gpt2 50257; mk neox 50277
TRAIN="$VRL train --quiet --steps 20 --batch 4 --seq 64 --lr 3e-3 --seed 5 --eval-batches 1"
$TRAIN --model "$tmp/bytes.json" --variant resformer --data "$tmp/bytes/train.bin" --val-data "$tmp/bytes/val.bin" \
  --out "$tmp/run-bytes" || { echo "FAIL training bytes"; exit 1; }
$TRAIN --model "$tmp/gpt2.json" --variant baseline --data "$tmp/tok-gpt2" --mixture shakespeare=1 --out "$tmp/run-gpt2" \
  || { echo "FAIL training gpt2"; exit 1; }
$TRAIN --model "$tmp/neox.json" --variant svformer --data "$tmp/tok-gpt-neox-20b" --mixture shakespeare=1 --out "$tmp/run-neox" \
  || { echo "FAIL training neox"; exit 1; }

# vrl eval on the same slices, with the tokenizer each run folder carries
mkdir "$tmp/eval"
for t in piqa lambada_openai; do ln -s "$SHARED/eval/$t.jsonl" "$tmp/eval/"; done
for r in bytes gpt2 neox; do
  $VRL eval --ckpt "$tmp/run-$r" --tokenizer "$tmp/run-$r/tokenizer.json" --seq $WINDOW --precision fp64 \
    --tasks piqa,lambada_openai --eval-dir "$tmp/eval" --limit $DOCS --out "$tmp/$r.tasks.json" \
    --log-samples "$tmp/$r.tasks.jsonl" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL vrl eval $r (tasks)"; exit 1; }
  $VRL eval --ckpt "$tmp/run-$r" --tokenizer "$tmp/run-$r/tokenizer.json" --seq $WINDOW --precision fp64 \
    --wikitext "$SHARED/corpora/wikitext-2-raw/wiki.test.raw" --limit $PAGES --out "$tmp/$r.wiki.json" \
    --log-samples "$tmp/$r.wiki.jsonl" >"$tmp/$r.wiki.log" 2>&1 || { cat "$tmp/$r.wiki.log"; echo "FAIL vrl eval $r (wikitext)"; exit 1; }
done
# what vrl eval says its rolling windows start after: the byte tokenizer has no <|endoftext|>
check byte_eval_prefix_is_id0 grep -q 'rolling windows of 256 after id 0)' "$tmp/bytes.wiki.log"
check gpt2_eval_prefix_is_eot grep -q 'rolling windows of 256 after <|endoftext|>)' "$tmp/gpt2.wiki.log"

# lm-eval on the folders as they are
"$PY" "$ROOT/conformance/hf/lmeval_runs.py" "$SHARED" $WINDOW $DOCS $PAGES "$tmp/run-bytes" "$tmp/run-gpt2" \
  "$tmp/run-neox" >"$tmp/lmeval.log" 2>&1 || { tail -20 "$tmp/lmeval.log"; echo "FAIL lm_eval on the run folders"; exit 1; }
for r in bytes gpt2 neox; do
  check "lmeval_equals_vrl_eval_$r" "$CHECK" 1e-6 "$tmp/run-$r.lmeval.json" "$tmp/$r.tasks.json" "$tmp/$r.wiki.json" \
    -- "$tmp/$r.tasks.jsonl" "$tmp/$r.wiki.jsonl"
done
grep '^/' "$tmp/lmeval.log" | sed "s|$tmp/||"
finish
