#!/usr/bin/env bash
# test_generate_fast_cpu.sh: `vrl generate --device cuda-cpu` (fast/decode.cu, fast/'s bf16 KV-cache
# decoder, on the CPU layer) gives the reference's greedy tokens (`vrl generate --precision fp64`,
# ref/decode.c and ref/gpt2_decode.c), token for token, on tiny runs trained here on a byte corpus:
# baseline (GQA), ResFormer, ResFormer with a trainable λ, SVFormer, HC (n = 4) and GPT-2.
# The decoder's logits are bf16, the reference's fp64: greedy picks the same token as long as the
# largest logit leads the second by more than their difference, so the runs are trained until the
# continuation is confident, and both sides print their smallest top-2 margin over the steps (a
# failure with a small margin is a near tie, not necessarily a bug); the reference's margin must be
# at least 0.05. Also: a variant the decoder lacks is refused by name in one line, and --precision
# with --device cuda-cpu is refused.
# usage: test_generate_fast_cpu.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

for i in $(seq 1 300); do echo "the cat sat on the mat and the dog ran far away $((i % 7))"; done >"$tmp/text.txt"
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null || { echo "FAIL data bytes"; exit 1; }
printf '{"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 64}\n' >"$tmp/llama.json"
printf '{"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4, "vocab_size": 256, "n_positions": 64,
 "n_inner": null, "resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0}\n' >"$tmp/gpt2.json"
G="generate --output ids --ids 116,104,101,32 --max-new 24"
for spec in baseline:llama:baseline resformer:llama:resformer learnable:llama:resformer:mode=learnable \
            svformer:llama:svformer hc:llama:hc:n=4 gpt2:gpt2:baseline; do
  name=${spec%%:*} rest=${spec#*:}; shape=${rest%%:*} variant=${rest#*:}
  $VRL train --quiet --model "$tmp/$shape.json" --variant "$variant" --data "$tmp/bytes/train.bin" \
    --val-data "$tmp/bytes/val.bin" --steps 300 --batch 4 --seq 32 --seed 3 --lr 3e-3 --eval-every 0 \
    --out "$tmp/$name" || { echo "FAIL training $name"; exit 1; }
  $VRL $G --ckpt "$tmp/$name" --precision fp64 >"$tmp/$name.ref" 2>"$tmp/$name.ref.err"
  $VRL $G --ckpt "$tmp/$name" --device cuda-cpu >"$tmp/$name.fast" 2>"$tmp/$name.fast.err"
  margin() { grep -o "smallest top-2 logit margin [^;]*" "$1" | sed 's/smallest top-2 logit margin //'; }
  echo "$name: ref $(cat "$tmp/$name.ref") | margin ref-fp64 $(margin "$tmp/$name.ref.err"), cuda-cpu-bf16 $(margin "$tmp/$name.fast.err")"
  check "fast_decoder_$name" cmp -s "$tmp/$name.ref" "$tmp/$name.fast"
  check "fast_decoder_${name}_says_backend" grep -q "cuda-cpu-bf16" "$tmp/$name.fast.err"
  check "${name}_tokens" test "$(wc -w <"$tmp/$name.ref")" -ge 8
  m=$(margin "$tmp/$name.ref.err" | cut -d' ' -f1)
  check "${name}_clear_margin($m)" awk -v m="$m" 'BEGIN { exit !(m >= 0.05) }'
done

# what the decoder lacks: refused by name before any work
$VRL train --quiet --model "$tmp/llama.json" --variant query_residual --data "$tmp/bytes/train.bin" --steps 2 \
  --batch 2 --seq 16 --eval-every 0 --out "$tmp/qres" || { echo "FAIL training query_residual"; exit 1; }
expect_error fast_decoder_refuses_query_mixing \
  "cannot generate with this model: variant \"query_residual\" needs queries mixed across layers" \
  $VRL generate --ckpt "$tmp/qres" --ids 1 --device cuda-cpu
expect_error fast_decoder_precision "--precision fp64: applies to --device cpu only" \
  $VRL generate --ckpt "$tmp/baseline" --ids 1 --device cuda-cpu --precision fp64
finish
