#!/usr/bin/env bash
# test_hf.sh: vrl models in Hugging Face transformers (python/vrl_hf), with PyTorch.
#   1. the Python variant classes reproduce every llama golden fixture's logits (fp64, <= 1e-10),
#      and greedy generate() on the golden baseline model gives vrl generate's tokens;
#   2. tiny runs of several variants and of GPT-2 (trained here on a byte corpus) load with
#      AutoModelForCausalLM.from_pretrained(RUN, trust_remote_code=True) as the right class, and
#      its greedy generate() gives the same tokens as `vrl generate --precision fp64`;
#   3. plain LlamaForCausalLM.from_pretrained on a ResFormer folder warns that the model type is
#      "vrl"; AutoTokenizer.from_pretrained(RUN) gives the byte ids vrl uses;
#   4. a left-padded batch of three prompts gives each prompt's own logits and greedy generate()
#      (baseline, ResFormer, SVFormer, AttnRes, mHC; float32 and float64 as transformers ships
#      them, and fp64 mode);
#   5. forward()'s output_hidden_states, output_attentions, inputs_embeds and return_dict on every
#      folder as LlamaForCausalLM has them (and = LlamaForCausalLM on the baseline); torch_dtype is
#      the stored dtype (an fp64 run says float64 and loads as float64);
#   6. a transformers 5 save_pretrained copy of the baseline and the ResFormer folder: vrl eval gives
#      the original's loss, vrl generate its tokens.
# Python: $VRL_PYTHON, else python/.venv/bin/python (python/make_venv.sh makes it). Without a
# Python that imports torch and transformers the test is skipped (exit 77).
# usage: test_hf.sh PATH/TO/vrl
set -u
VRL=$1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY=${VRL_PYTHON:-$ROOT/python/.venv/bin/python}
if ! "$PY" -c "import torch, transformers, safetensors" 2>/dev/null; then
  echo "SKIP: no Python with torch + transformers at $PY (set VRL_PYTHON or run python/make_venv.sh)"
  exit 77
fi
. "$(dirname "$0")/cli_test_lib.sh"
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
CHECK="$PY $ROOT/conformance/hf/check_hf.py"

check fixtures $CHECK fixtures "$ROOT/conformance/golden/fixtures"

# the golden baseline model itself: vrl generate and Hugging Face generate, greedy, same tokens
$CHECK golden_run "$ROOT/conformance/golden/fixtures/baseline.safetensors" "$tmp/golden"
$VRL generate --ckpt "$tmp/golden" --precision fp64 --output ids --ids 5,17,33 --max-new 24 >"$tmp/golden.vrl" 2>/dev/null
$CHECK runs 5,17,33 24 "$tmp/golden" >"$tmp/golden.log" 2>&1 || { echo "FAIL golden generate:"; tail -5 "$tmp/golden.log"; }
check "hf_class_golden_baseline($(cat "$tmp/golden.cls"))" test "$(cat "$tmp/golden.cls")" = LlamaForCausalLM
check hf_greedy_golden_baseline cmp "$tmp/golden.vrl" "$tmp/golden.hf"
echo "golden baseline, vrl generate vs HF generate: $(cat "$tmp/golden.vrl")"

for i in $(seq 1 300); do echo "the cat sat on the mat and the dog ran far away $((i % 7))"; done >"$tmp/text.txt"
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null || { echo "FAIL data bytes"; exit 1; }
mk() {  # NAME KV_HEADS
  printf '{"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": %d, "vocab_size": 256, "max_position_embeddings": 96}\n' "$2" >"$tmp/$1.json"
}
mk mha 4; mk gqa 2
# a GPT-2-architecture run: transformers' own GPT2LMHeadModel, vrl's GPT-2 decoder (ref/gpt2_decode.c)
printf '{"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4, "vocab_size": 256, "n_positions": 96,
 "n_inner": null, "resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0}\n' >"$tmp/gpt2.json"
names=""
for spec in gpt2:gpt2:baseline baseline:mha:baseline gqa:gqa:baseline resformer:mha:resformer svformer:mha:svformer cla:mha:cla \
            neutreno:mha:neutreno:lambda=0.4 learnable:gqa:resformer:mode=learnable hc:mha:hc:n=4 \
            attnres:mha:attnres:mode=block,size=3 dense_sv:mha:denseformer+svformer mhc:mha:mhc:n=4; do
  name=${spec%%:*} rest=${spec#*:}; shape=${rest%%:*} variant=${rest#*:}
  $VRL train --quiet --model "$tmp/$shape.json" --variant "$variant" --data "$tmp/bytes/train.bin" \
    --val-data "$tmp/bytes/val.bin" --steps 150 --batch 4 --seq 48 --seed 3 --lr 3e-3 --out "$tmp/$name" \
    || { echo "FAIL training $name"; exit 1; }
  $VRL generate --ckpt "$tmp/$name" --precision fp64 --output ids --ids 116,104,101,32 --max-new 24 \
    >"$tmp/$name.vrl" 2>/dev/null
  names="$names $tmp/$name"
done
$CHECK runs 116,104,101,32 24 $names >"$tmp/hf.log" 2>&1 || { echo "FAIL check_hf.py runs:"; tail -5 "$tmp/hf.log"; exit 1; }
for run in $names; do
  name=$(basename "$run") want=VrlForCausalLM
  case $name in baseline|gqa) want=LlamaForCausalLM ;; gpt2) want=GPT2LMHeadModel ;; esac
  check "hf_class_$name($(cat "$run.cls"))" test "$(cat "$run.cls")" = "$want"
  check "hf_greedy_$name" cmp "$run.vrl" "$run.hf"
done
echo "vrl generate vs HF generate (baseline): $(cat "$tmp/baseline.vrl")"
echo "vrl generate vs HF generate (gpt2): $(cat "$tmp/gpt2.vrl")"
check gpt2_generates_tokens test -n "$(cat "$tmp/gpt2.vrl")"
check llama_warns_on_resformer grep -q "model of type \`vrl\` to instantiate a model of type \`llama\`" "$tmp/resformer.warn"
check tokenizer_bytes test "$(cat "$tmp/resformer.tok")" = "116 104 101 32 99 97 116"

# forward() options (transformers as shipped: a process without fp64 mode), on every llama-block
# folder: the GPT-2 folder loads as transformers' own GPT2LMHeadModel, whose options are its own
llama_names=$(for r in $names; do [ "$(basename "$r")" = gpt2 ] || echo "$r"; done)
# shellcheck disable=SC2086
$CHECK outputs "$tmp/baseline" $llama_names >"$tmp/outputs.log" 2>&1
outputs_rc=$?
grep "max |diff|" "$tmp/outputs.log"
[ $outputs_rc -eq 0 ] || grep -B2 -A3 "Error" "$tmp/outputs.log" | tail -6
check hf_forward_options_every_family test $outputs_rc -eq 0

# torch_dtype: the dtype model.safetensors holds
$VRL train --quiet --model "$tmp/mha.json" --variant hc:n=4 --precision fp64 --data "$tmp/bytes/train.bin" \
  --val-data "$tmp/bytes/val.bin" --steps 2 --batch 2 --seq 16 --out "$tmp/hc_f64" || echo "FAIL training hc_f64"
check torch_dtype_is_stored_dtype $CHECK dtype "$tmp/hc_f64" float64 "$tmp/resformer" float32

# transformers 5 save_pretrained copies: transformers' own config.json (dtype, pad_token_id,
# rope_parameters, ...) and model.safetensors, read by vrl
$CHECK resave "$tmp/baseline" "$tmp/baseline.saved" "$tmp/resformer" "$tmp/resformer.saved" >"$tmp/resave.log" 2>&1 \
  || tail -3 "$tmp/resave.log"
grep "save_pretrained" "$tmp/resave.log"
nll() { grep -o '"nll": [^,]*' "$1" | cut -d' ' -f2; }
for name in baseline resformer; do
  check "resaved_${name}_has_transformers5_keys" grep -q "^$name: .* dtype .* pad_token_id .* rope_parameters " \
    "$tmp/resave.log"
  for r in "$name" "$name.saved"; do
    $VRL eval --ckpt "$tmp/$r" --tokens "$tmp/bytes/val.bin" --out "$tmp/$r.eval.json" >/dev/null 2>"$tmp/eval.err" \
      || cat "$tmp/eval.err"
  done
  echo "$name: vrl eval nll: original $(nll "$tmp/$name.eval.json"), transformers' copy $(nll "$tmp/$name.saved.eval.json")"
  check "resaved_${name}_same_eval_loss" cmp <(grep -E '"(nll|tokens)"' "$tmp/$name.eval.json") \
    <(grep -E '"(nll|tokens)"' "$tmp/$name.saved.eval.json")
  $VRL generate --ckpt "$tmp/$name.saved" --precision fp64 --output ids --ids 116,104,101,32 --max-new 24 \
    >"$tmp/$name.saved.vrl" 2>/dev/null
  check "resaved_${name}_same_generate" cmp "$tmp/$name.vrl" "$tmp/$name.saved.vrl"
done

# left padding (its own process: the runs above switched transformers to fp64 mode)
$CHECK padded 24 "$tmp/baseline" "$tmp/resformer" "$tmp/svformer" "$tmp/attnres" "$tmp/mhc" >"$tmp/padded.log" 2>&1
padded_rc=$?
grep "padded vs alone" "$tmp/padded.log"
[ $padded_rc -eq 0 ] || grep -A3 "Error" "$tmp/padded.log" | tail -4
check hf_left_padded_batch test $padded_rc -eq 0
finish
