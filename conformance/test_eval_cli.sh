#!/usr/bin/env bash
# test_eval_cli.sh: `vrl eval` and `vrl analyze` end to end on tiny runs trained on the
# synthetic corpus: bad input (a checkpoint of another shape than its config, a task
# file with a missing field, an unknown metric) gives one line naming the file and a
# non-zero exit; analyze writes the per-layer CSVs, analysis.json and (with gnuplot)
# PNGs for two runs side by side; the relative loss of a run against itself is 0.
# usage: test_eval_cli.sh PATH/TO/vrl
set -u
VRL=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
expect_error() { # NAME PATTERN CMD...: exit 1, exactly one stderr line matching PATTERN
  local name=$1 pattern=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then
    passes=$((passes + 1)); echo "ok   $name: $(cat "$tmp/err")"
  else
    fails=$((fails + 1)); echo "FAIL $name: exit $rc, $lines lines, expected /$pattern/:"; cat "$tmp/err"
  fi
}
check() { local name=$1; shift; if "$@"; then passes=$((passes + 1)); echo "ok   $name"; else fails=$((fails + 1)); echo "FAIL $name"; fi; }

T="$VRL train --quiet --model tiny --batch 2 --seq 16 --steps 3 --synthetic-tokens 4096"
$T --seed 1 --out "$tmp/a" || { echo "FAIL training run a"; exit 1; }
$T --seed 2 --out "$tmp/b" || { echo "FAIL training run b"; exit 1; }

# a checkpoint whose tensors do not match its config
cp -r "$tmp/a" "$tmp/wrong"
sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$tmp/wrong/config.json"
expect_error ckpt_shape "wrong/model.safetensors: missing tensor model.layers.2" $VRL eval --ckpt "$tmp/wrong" --tasks none
sed -i 's/"num_hidden_layers": 3/"num_hidden_layers": 2/; s/"intermediate_size": 56/"intermediate_size": 48/' "$tmp/wrong/config.json"
expect_error ckpt_shape_ffn "model.safetensors: tensor .* has shape \[56, 16\], the model needs \[48, 16\]" \
  $VRL eval --ckpt "$tmp/wrong" --tasks none
expect_error analyze_ckpt_shape "wrong/model.safetensors" $VRL analyze --ckpt "$tmp/wrong" --metric entropy --out "$tmp/x"
expect_error ckpt_missing "nope/config.json" $VRL eval --ckpt "$tmp/nope" --tasks none

# a task file with a missing field: the file and the line
mkdir -p "$tmp/ev"
printf '{"query": "a", "choices": ["x", "y"], "gold": 0}\n{"query": "b", "gold": 1}\n' >"$tmp/ev/piqa.jsonl"
expect_error task_missing_field "ev/piqa.jsonl:2: missing field \"choices\"" \
  $VRL eval --ckpt "$tmp/a" --tasks piqa --eval-dir "$tmp/ev" --tokenizer "$tmp/any.json"
expect_error task_unknown "unknown task \"squad\"" $VRL eval --ckpt "$tmp/a" --tasks squad --tokenizer x
expect_error metric_unknown "\"bogus\" is not entropy" $VRL analyze --ckpt "$tmp/a" --metric bogus --out "$tmp/x"

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

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
