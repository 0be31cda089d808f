#!/usr/bin/env bash
# test_eval_cli.sh: `vrl eval` and `vrl analyze` end to end on tiny runs trained on the
# synthetic corpus: bad input (a checkpoint of another shape than its config, a task
# file with a missing field, an unknown metric) gives one line naming the file and a
# non-zero exit; analyze writes the per-layer CSVs, analysis.json and (with gnuplot)
# PNGs for two runs side by side; the relative loss of a run against itself is 0;
# depth-attention of an AttnRes run writes a CSV whose rows sum to 1, and of a baseline
# run is a one-line error.
# usage: test_eval_cli.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

T="$VRL train --quiet --model tiny --batch 2 --seq 16 --steps 3 --synthetic-tokens 4096"
$T --seed 1 --out "$tmp/a" || { echo "FAIL training run a"; exit 1; }
$T --seed 2 --out "$tmp/b" || { echo "FAIL training run b"; exit 1; }

# a checkpoint whose tensors do not match its config
cp -r "$tmp/a" "$tmp/wrong"
sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$tmp/wrong/config.json"
# the keys recorded with the weights (common/run/model_record.c) name the edit before any tensor is read
expect_error ckpt_shape "wrong/config.json: num_hidden_layers is 3 but .*model.safetensors was trained with 2" \
  $VRL eval --ckpt "$tmp/wrong" --tasks none
sed -i 's/"num_hidden_layers": 3/"num_hidden_layers": 2/; s/"intermediate_size": 56/"intermediate_size": 48/' "$tmp/wrong/config.json"
expect_error ckpt_shape_ffn "config.json: intermediate_size is 48 but .*model.safetensors was trained with 56" \
  $VRL eval --ckpt "$tmp/wrong" --tasks none
expect_error analyze_ckpt_shape "wrong/.*model.safetensors" $VRL analyze --ckpt "$tmp/wrong" --metric entropy --out "$tmp/x"
expect_error ckpt_missing "nope/config.json" $VRL eval --ckpt "$tmp/nope" --tasks none

# a task file with a missing field: the file and the line
mkdir -p "$tmp/ev"
printf '{"query": "a", "choices": ["x", "y"], "gold": 0}\n{"query": "b", "gold": 1}\n' >"$tmp/ev/piqa.jsonl"
expect_error task_missing_field "ev/piqa.jsonl:2: missing field \"choices\"" \
  $VRL eval --ckpt "$tmp/a" --tasks piqa --eval-dir "$tmp/ev" --tokenizer "$tmp/any.json"
expect_error task_unknown "unknown task \"squad\"" $VRL eval --ckpt "$tmp/a" --tasks squad --tokenizer x
expect_error metric_unknown "\"bogus\" is not entropy" $VRL analyze --ckpt "$tmp/a" --metric bogus --out "$tmp/x"

# the task folder: missing (given or by default) is an error unless --tasks none; the
# default does not depend on the current directory
expect_error eval_dir_missing "nowhere: no such folder" $VRL eval --ckpt "$tmp/a" --eval-dir "$tmp/nowhere"
expect_error eval_dir_default_missing "nowhere: no such folder" env VRL_EVAL_DIR="$tmp/nowhere" $VRL eval --ckpt "$tmp/a"
expect_error task_file_missing "ev/winogrande.jsonl: no such task file" \
  $VRL eval --ckpt "$tmp/a" --tasks winogrande --eval-dir "$tmp/ev" --tokenizer x
printf '{"query": "a", "choices": ["x", ""], "gold": 0}\n' >"$tmp/ev/arc_easy.jsonl"
expect_error task_empty_choice "ev/arc_easy.jsonl:1: field \"choices\" entry 1 is an empty string" \
  $VRL eval --ckpt "$tmp/a" --tasks arc_easy --eval-dir "$tmp/ev" --tokenizer x

# the summary: RUN/eval.json by default, never replaced silently; --out elsewhere
$VRL eval --ckpt "$tmp/a" --tasks none >"$tmp/out" 2>&1
check eval_json_written test $? -eq 0 -a -s "$tmp/a/eval.json"
expect_error eval_json_exists "a/eval.json exists" $VRL eval --ckpt "$tmp/a" --tasks none
$VRL eval --ckpt "$tmp/a" --tasks none --overwrite >"$tmp/out" 2>&1
check eval_json_overwrite test $? -eq 0

# a token file scored whole without a data folder, on a byte-level model; the length
# buckets give the one-shape path's figure (fp64: to rounding); --log-samples lines
head -c 6000 "$(dirname "$0")/../README.md" >"$tmp/text.txt"
$VRL data bytes --in "$tmp/text.txt" --out "$tmp/bytes" >/dev/null 2>&1 || { echo "FAIL data bytes"; exit 1; }
sed 's/"vocab_size": 64/"vocab_size": 256/' "$tmp/a/config.json" >"$tmp/bytes.json"
$T --model "$tmp/bytes.json" --data "$tmp/bytes/train.bin" --val-data "$tmp/bytes/val.bin" --seed 3 --out "$tmp/by" \
  || { echo "FAIL training run by"; exit 1; }
E="$VRL eval --ckpt $tmp/by --tokens $tmp/bytes/val.bin --precision fp64 --seq 64"
$E --out "$tmp/tok1.json" >"$tmp/out" 2>&1
check tokens_scored test $? -eq 0
$E --fixed-shape --out "$tmp/tok2.json" >"$tmp/out" 2>&1
check tokens_fixed_shape test $? -eq 0
ppl() { grep -o '"token_perplexity": [0-9.e+-]*' "$1" | cut -d' ' -f2; }
check buckets_equal_fixed_shape awk -v a="$(ppl "$tmp/tok1.json")" -v b="$(ppl "$tmp/tok2.json")" \
  'BEGIN { d = a - b; if (d < 0) d = -d; print "  token perplexity", a, b; exit !(a > 1 && d <= 1e-12 * a) }'
check tokens_no_run_eval_json test ! -e "$tmp/by/eval.json"

# non-finite weights: a clear line naming the tensor (the last float of the file -> NaN)
cp -r "$tmp/by" "$tmp/nan"
size=$(stat -L -c %s "$tmp/nan/model.safetensors") # -L: RUN/model.safetensors links to the latest step
printf '\000\000\300\177' | dd of="$tmp/nan/model.safetensors" bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null
expect_error nan_weights "nan/.*model.safetensors: tensor .* holds a non-finite value" \
  $VRL eval --ckpt "$tmp/nan" --tokens "$tmp/bytes/val.bin" --out "$tmp/nan.json"

# per-layer metrics of two runs side by side
$VRL analyze --ckpt "$tmp/a" --ckpt "$tmp/b" --metric all --seq 16 --batches 2 --out "$tmp/an" >"$tmp/out" 2>&1
check analyze_runs test $? -eq 0
for f in entropy.csv similarity.csv similarity_keys.csv spectrum_max.csv spectrum_a.csv cross_layer_eq3.csv \
         cross_layer_eq6.csv analysis.json entropy.gp; do check "analyze_writes_$f" test -s "$tmp/an/$f"; done
check entropy_two_runs_two_layers test "$(head -1 "$tmp/an/entropy.csv")" = "layer,a,b" -a "$(wc -l <"$tmp/an/entropy.csv")" -eq 3
if command -v gnuplot >/dev/null; then
  check analyze_png test -s "$tmp/an/entropy.png" -a -s "$tmp/an/similarity.png"
fi

# relative loss of a run against itself: every point 0
$VRL analyze --relative-loss "$tmp/a/metrics.jsonl" "$tmp/a/metrics.jsonl" --window 2 --out "$tmp/rel" >"$tmp/out" 2>&1
check relative_self_runs test $? -eq 0
check relative_self_zero test "$(tail -n +2 "$tmp/rel/relative_loss.csv" | cut -d, -f2 | sort -u)" = "0"
check relative_points test "$(tail -n +2 "$tmp/rel/relative_loss.csv" | wc -l)" -eq 2

# training-loss curves: with window 1 each column is the run's own logged losses
$VRL analyze --loss "$tmp/a" "$tmp/b" --window 1 --out "$tmp/lc" >"$tmp/out" 2>&1
check loss_curves_runs test $? -eq 0
check loss_curves_header test "$(head -1 "$tmp/lc/loss_curves.csv")" = "step,a,b"
logged=$(grep -o '"loss":[^,]*' "$tmp/b/metrics.jsonl" | cut -d: -f2 | awk '{printf "%.6f\n", $1}')
plotted=$(tail -n +2 "$tmp/lc/loss_curves.csv" | cut -d, -f3 | awk '{printf "%.6f\n", $1}')
check loss_curves_values test "$logged" = "$plotted"
expect_error loss_curves_missing "nope/metrics.jsonl" $VRL analyze --loss "$tmp/nope" --out "$tmp/lc2"

# depth attention of an AttnRes run: one row per (sublayer, source) for the 2L+1 sublayer
# inputs of the tiny model (L = 2), each sublayer's softmax weights summing to 1
$VRL train --quiet --model tiny --variant attnres:mode=block,size=2 --steps 3 --batch 4 --seq 16 \
  --synthetic-tokens 4096 --out "$tmp/ar" || { echo "FAIL training run ar"; exit 1; }
$VRL analyze --ckpt "$tmp/ar" --metric depth-attention --out "$tmp/dep" >"$tmp/out" 2>&1
check depth_runs test $? -eq 0
check depth_csv test -s "$tmp/dep/depth_attention.csv"
check depth_header test "$(head -1 "$tmp/dep/depth_attention.csv")" = "sublayer,source_index,source,weight"
check depth_sublayers test "$(tail -n +2 "$tmp/dep/depth_attention.csv" | cut -d, -f1 | uniq | tr '\n' ' ')" = \
  "L0.attn L0.mlp L1.attn L1.mlp head "
check depth_rows_sum_to_1 awk -F, 'NR > 1 { if (!($1 in s)) order[n++] = $1; s[$1] += $4; w = $4 + 0
    if (w < 0 || w > 1) bad = 1 }
  END { if (n != 5) bad = 1
        for (i = 0; i < n; i++) { d = s[order[i]] - 1; if (d < 0) d = -d
          if (d > 1e-6) { printf "  %s sums to %.9f\n", order[i], s[order[i]]; bad = 1 } }
        exit bad }' "$tmp/dep/depth_attention.csv"
if command -v gnuplot >/dev/null; then
  check depth_png test -s "$tmp/dep/depth_attention.png"
fi
expect_error depth_baseline "a/config.json: variant \"baseline\" has no depth attention" \
  $VRL analyze --ckpt "$tmp/a" --metric depth-attention --out "$tmp/dep_a"
check depth_baseline_no_output test ! -e "$tmp/dep_a"

finish
