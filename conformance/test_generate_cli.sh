#!/usr/bin/env bash
# test_generate_cli.sh: `vrl generate` and `vrl info --kv-cache` end to end, on tiny runs trained
# on a byte corpus (`vrl data bytes` writes its tokenizer.json; the run folder carries it):
# greedy output is deterministic and stops at --max-new; --include-eos ends the ids with the end
# token only where generation stopped there; seeded sampling repeats with the seed;
# text in, text out through the run's own tokenizer; the run folder is a Hugging Face folder
# (model_type llama for the baseline, "vrl" + auto_map + the Python classes otherwise); bad input
# is one line naming the problem; the cache sizes of the tiny preset are the hand-counted ones.
# usage: test_generate_cli.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

for i in $(seq 1 300); do echo "the cat sat on the mat and the dog ran far away $((i % 7))"; done >"$tmp/text.txt"
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null || { echo "FAIL data bytes"; exit 1; }
printf '{"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 96}\n' >"$tmp/m.json"
T="$VRL train --quiet --model $tmp/m.json --data $tmp/bytes/train.bin --val-data $tmp/bytes/val.bin --steps 30 --batch 4 --seq 48"
$T --variant baseline --out "$tmp/base" || { echo "FAIL training baseline"; exit 1; }
$T --variant resformer --out "$tmp/res" || { echo "FAIL training resformer"; exit 1; }

# the run folders are Hugging Face folders
check base_tokenizer test -s "$tmp/base/tokenizer.json" -a -s "$tmp/base/tokenizer_config.json"
# a byte tokenizer's BOS = EOS is id 0, the byte 0, named by its vocabulary entry "\u0100" (not
# "\u0000", which transformers would add as id 256, past the embedding), with split_special_tokens
# so the text "\u0100" stays two bytes; config.json and generation_config.json say id 0
check byte_tokenizer_config_bos_eos grep -q '"eos_token": "Ā"' "$tmp/base/tokenizer_config.json"
check byte_tokenizer_config_split grep -q '"split_special_tokens": true' "$tmp/base/tokenizer_config.json"
check byte_tokenizer_config_no_u0000 sh -c "! grep -q -E 'u0000|(unk|pad)_token' '$tmp/base/tokenizer_config.json'"
check byte_eos_config grep -q '"eos_token_id": 0,' "$tmp/base/config.json"
check byte_eos_generation_config grep -q '"eos_token_id": 0' "$tmp/base/generation_config.json"
check byte_tokenizer_config_class grep -q '"tokenizer_class": "PreTrainedTokenizerFast"' "$tmp/base/tokenizer_config.json"
check base_is_llama grep -q '"model_type": "llama"' "$tmp/base/config.json"
check base_no_remote_code test ! -e "$tmp/base/modeling_vrl.py"
check res_is_vrl grep -q '"model_type": "vrl"' "$tmp/res/config.json"
check res_auto_map grep -q '"AutoModelForCausalLM": "modeling_vrl.VrlForCausalLM"' "$tmp/res/config.json"
check res_classes test -s "$tmp/res/modeling_vrl.py" -a -s "$tmp/res/configuration_vrl.py"
check res_reloads sh -c "$VRL eval --ckpt '$tmp/res' --tasks none >/dev/null 2>&1"

# greedy: deterministic, --max-new tokens (or fewer at EOS), ids out
G="$VRL generate --precision fp64 --output ids --ids 116,104,101,32"
$G --ckpt "$tmp/res" --max-new 12 >"$tmp/g1" 2>"$tmp/g1.err"
$G --ckpt "$tmp/res" --max-new 12 >"$tmp/g2" 2>/dev/null
check greedy_repeats cmp -s "$tmp/g1" "$tmp/g2"
# --include-eos adds the end token only where generation stopped at it: here 12 tokens, no EOS
$G --ckpt "$tmp/res" --max-new 12 --include-eos >"$tmp/g3" 2>"$tmp/g3.err"
check include_eos_without_eos sh -c "cmp -s '$tmp/g1' '$tmp/g3' && ! grep -q 'stopped at EOS' '$tmp/g3.err'"
check greedy_count test "$(wc -w <"$tmp/g1")" -le 12 -a "$(wc -w <"$tmp/g1")" -ge 1
check tokens_per_s grep -q "tokens/s" "$tmp/g1.err"
# seeded sampling repeats with its seed
S="$VRL generate --ckpt $tmp/res --output ids --ids 116,104 --max-new 30 --temperature 1.5 --top-k 50 --top-p 0.95"
$S --seed 7 >"$tmp/s1" 2>/dev/null; $S --seed 7 >"$tmp/s2" 2>/dev/null; $S --seed 8 >"$tmp/s3" 2>/dev/null
check sample_seed_repeats cmp -s "$tmp/s1" "$tmp/s2"
check sample_seed_changes sh -c "! cmp -s '$tmp/s1' '$tmp/s3'"
# text in, text out with the run's own tokenizer: the prompt is echoed, then the continuation
$VRL generate --ckpt "$tmp/base" --prompt "the cat" --max-new 8 >"$tmp/t1" 2>/dev/null
check text_prompt_echoed grep -q "^the cat" "$tmp/t1"

# the end token is the training tokenizer's: a GPT-2 run (documents "hello world", each followed by
# <|endoftext|> = 50256 from `vrl data tokenize`) names 50256 in config.json and
# generation_config.json, and `vrl generate` stops there: "hello" -> " world" (995), then EOS (it
# ran on past 50256 while EOS was id 0, GPT-2's "!")
GPT2_TOK="$(cd "$(dirname "$0")/.." && pwd)/../shared/data/tokenizers/gpt2.tokenizer.json"
if [ -f "$GPT2_TOK" ]; then
  mkdir -p "$tmp/hw/train" "$tmp/hw/validation"
  for i in $(seq 1 200); do echo '{"text": "hello world"}'; done >"$tmp/hw/train/hello.jsonl"
  cp "$tmp/hw/train/hello.jsonl" "$tmp/hw/validation/"
  $VRL data tokenize --in "$tmp/hw" --out "$tmp/hw-tok" --tokenizer "$GPT2_TOK" --chunk 16 >/dev/null 2>&1 \
    || { echo "FAIL data tokenize (GPT-2)"; exit 1; }
  printf '{"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
 "num_attention_heads": 2, "vocab_size": 50257, "max_position_embeddings": 64}\n' >"$tmp/hw.json"
  $VRL train --quiet --model "$tmp/hw.json" --data "$tmp/hw-tok" --mixture hello=1 --steps 40 --batch 4 --seq 16 \
    --lr 1e-2 --seed 1 --out "$tmp/gpt2" || { echo "FAIL training (GPT-2)"; exit 1; }
  check gpt2_eos_config grep -q '"eos_token_id": 50256,' "$tmp/gpt2/config.json"
  check gpt2_bos_config grep -q '"bos_token_id": 50256,' "$tmp/gpt2/config.json"
  check gpt2_eos_generation_config grep -q '"eos_token_id": 50256' "$tmp/gpt2/generation_config.json"
  check gpt2_eos_tokenizer_config grep -q '"eos_token": "<|endoftext|>"' "$tmp/gpt2/tokenizer_config.json"
  $VRL generate --ckpt "$tmp/gpt2" --prompt "hello" --max-new 10 --output ids >"$tmp/hw.out" 2>"$tmp/hw.err"
  check gpt2_generate_stops_at_eos test "$(cat "$tmp/hw.out")" = 995
  check gpt2_generate_says_eos grep -q "stopped at EOS (id 50256)" "$tmp/hw.err"
  # --include-eos: the ids end with the end token, as transformers' generate() output does
  $VRL generate --ckpt "$tmp/gpt2" --prompt "hello" --max-new 10 --output ids --include-eos >"$tmp/hw.eos" 2>/dev/null
  check gpt2_generate_include_eos test "$(cat "$tmp/hw.eos")" = "995 50256"
else
  echo "SKIP gpt2_eos: $GPT2_TOK is absent (the shared data)"
fi

expect_error gen_bad_device "--device: \"tpu\" is not" $VRL generate --ckpt "$tmp/res" --ids 1 --device tpu
expect_error gen_include_eos_text "--include-eos applies to --output ids" \
  $VRL generate --ckpt "$tmp/base" --prompt "the" --include-eos
expect_error gen_bad_ids "--ids: \"1,x\" is not a comma-separated list" $VRL generate --ckpt "$tmp/res" --ids 1,x
expect_error gen_id_vocab "prompt token 300 at position 1 is outside the model's vocabulary" \
  $VRL generate --ckpt "$tmp/res" --ids 1,300
expect_error gen_top_p "--top-p in (0, 1\]" $VRL generate --ckpt "$tmp/res" --ids 1 --top-p 0
rm "$tmp/res/tokenizer.json"
expect_error gen_no_tokenizer "res has no tokenizer.json; give --tokenizer FILE or --ids" \
  $VRL generate --ckpt "$tmp/res" --prompt "hi"

# cache bytes of the tiny preset (L = 2, kv_heads 2 x head_dim 8 = 16 elements a row), fp32:
# baseline 2 K + 2 V rows = 64 elements = 256 B a token; SVFormer 2 K + 1 V = 192 B; CLA keeps
# layer 1's K and V only = 128 B; MQA (1 kv head) halves the baseline = 128 B; bf16 halves again.
kv() { $VRL info --model tiny "$@" --kv-cache --seq 64 | grep "bytes per token" | awk '{print $6}'; }
check kv_baseline test "$(kv --variant baseline)" = 256
check kv_svformer test "$(kv --variant svformer)" = 192
check kv_cla test "$(kv --variant cla)" = 128
check kv_mqa test "$(kv --kv-heads 1)" = 128
check kv_bf16 test "$(kv --dtype bf16)" = 128
check kv_per_seq sh -c "$VRL info --model tiny --kv-cache --seq 64 | grep -q 'per sequence of 64: 16384 '"
finish
