#!/usr/bin/env bash
# test_cli_errors.sh: bad input to `vrl` gives one line naming the file and the
# problem, a non-zero exit, no crash, and leaves run folders untouched.
# usage: test_cli_errors.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

T="$VRL train --quiet --model tiny --batch 2 --seq 16 --steps 2"

expect_error missing_data "$tmp/nope.bin" $T --data "$tmp/nope.bin" --out "$tmp/r1"
check no_folder_for_missing_data test ! -e "$tmp/r1"

head -c 4096 /dev/urandom >"$tmp/garbage.bin"
expect_error garbage_data "garbage.bin.*not a vrl token shard" $T --data "$tmp/garbage.bin" --out "$tmp/r2"
check no_folder_for_garbage_data test ! -e "$tmp/r2"

cat >"$tmp/bad.json" <<'JSON'
{"model_type": "llama", "hidden_size": 30, "intermediate_size": 56, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 64, "max_position_embeddings": 64,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0}
JSON
expect_error config_heads "bad.json.*not divisible" $T --model "$tmp/bad.json" --out "$tmp/r3"
check no_folder_for_bad_config test ! -e "$tmp/r3"

expect_error unknown_preset "unknown model preset" $T --model nosuch --out "$tmp/r4"
expect_error bad_number "\"--steps\".*not an integer\|--steps: .* is not an integer" $VRL train --steps 1x
expect_error bad_threads "--threads: 0 is out of range" $VRL train --threads 0
# the default --seq fits a model with fewer positions than 128 (tiny: 64)
check seq_default_fits $VRL train --quiet --model tiny --batch 2 --steps 1 --synthetic-tokens 4096 --out "$tmp/seqfit"
expect_error seq_too_long "max_position_embeddings" $T --seq 1000 --out "$tmp/r5"

# A real run, then a corrupt checkpoint: resume refuses, naming the file; nothing changes.
$T --out "$tmp/run" 2>/dev/null || { echo "FAIL could not train the reference run"; exit 1; }
check run_folder_complete test -s "$tmp/run/config.json" -a -s "$tmp/run/model.safetensors" -a -s "$tmp/run/train_state.safetensors" -a -s "$tmp/run/metrics.jsonl"
expect_error existing_run "already holds a run" $T --out "$tmp/run"
cp "$tmp/run/model.safetensors" "$tmp/model.orig"
truncate -s 1000 "$tmp/run/model.safetensors"
before=$(cd "$tmp/run" && sha256sum * | sha256sum)
expect_error corrupt_checkpoint "model.safetensors" $VRL train --quiet --resume "$tmp/run" --steps 4
after=$(cd "$tmp/run" && sha256sum * | sha256sum)
check corrupt_run_untouched test "$before" = "$after"
cp "$tmp/model.orig" "$tmp/run/model.safetensors"
printf 'garbage' >"$tmp/run/train_state.safetensors"
expect_error corrupt_state "train_state.safetensors" $VRL train --quiet --resume "$tmp/run" --steps 4

expect_error cuda_absent "CUDA" $T --device cuda --out "$tmp/r6"

# value-path variants (common/model/value_path.c): the origin is --variant or the config file
expect_error variant_layers "--variant: variant resformer: layers=\"9-12\" names layers outside 2..4" \
  $T --model small --variant resformer:mode=sparse,layers=9-12 --out "$tmp/r7"
check no_folder_for_bad_variant test ! -e "$tmp/r7"
expect_error variant_unknown "--variant: unknown variant \"resformr\"" $T --variant resformr --out "$tmp/r8"
sed 's/"rope_theta": 10000.0}/"rope_theta": 10000.0, "vrl_variant": "svformer:anchors=2"}/' "$tmp/bad.json" |
  sed 's/"hidden_size": 30/"hidden_size": 32/' >"$tmp/badvar.json"
expect_error variant_in_config "badvar.json: variant svformer: anchors=\"2\" must include layer 1" \
  $T --model "$tmp/badvar.json" --out "$tmp/r9"
expect_error info_variant "--variant: variant resformer: unknown mode" $VRL info --variant resformer:mode=x

# --mixture: weights for a `vrl data tokenize` folder (names checked against the folder: test_resume.c)
expect_error mixture_no_data "--mixture: needs --data DIR" $T --mixture RedPajamaC4=1 --out "$tmp/r10"
check no_folder_for_mixture_no_data test ! -e "$tmp/r10"
expect_error mixture_syntax "--mixture: \"RedPajamaC4\" is not NAME=W" $T --mixture RedPajamaC4 --out "$tmp/r11"
expect_error mixture_weight "--mixture: weight \"x\" of \"RedPajamaC4\" is not a finite number >= 0" \
  $T --mixture RedPajamaC4=x --out "$tmp/r12"
expect_error mixture_on_resume "--mixture: a resumed run keeps the weights" \
  $VRL train --quiet --resume "$tmp/run" --steps 4 --mixture RedPajamaC4=1

# Capabilities (common/model/backend.h): the reference trains GPT-2 but declares no analysis
# views for it, so `vrl analyze` refuses by the backend's name before reading any data.
cat >"$tmp/gpt2.json" <<'JSON'
{"model_type": "gpt2", "n_embd": 16, "n_layer": 2, "n_head": 2, "vocab_size": 64, "n_positions": 64, "n_inner": null}
JSON
$T --model "$tmp/gpt2.json" --out "$tmp/gpt2run" 2>/dev/null
check gpt2_trains test -s "$tmp/gpt2run/model.safetensors"
expect_error analyze_gpt2_refused "backend ref-fp64 cannot analyze this model: .*gpt2" \
  $VRL analyze --ckpt "$tmp/gpt2run" --metric entropy --seq 16 --batches 1 --out "$tmp/an_gpt2"

finish
