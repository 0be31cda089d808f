#!/usr/bin/env bash
# test_reliability.sh: issue 24's reproductions (an attacker, a crashing cluster, a careless
# user) each fail cleanly. One group per guarded property, each its own ctest.
# usage: test_reliability.sh GROUP PATH/TO/vrl
set -u
GROUP=$1 VRL=$2
. "$(dirname "$0")/cli_test_lib.sh"
T="$VRL train --quiet --model tiny --batch 2 --seq 16"

# no_shell_in_paths: a quote in --out or in a run folder's name is text, never a command
no_shell_in_paths() {
  (cd "$tmp" && $T --steps 2 --out "r'x" >/dev/null 2>&1) || { echo "FAIL could not train"; fails=1; return; }
  (cd "$tmp" && "$VRL" analyze --ckpt "r'x" --metric entropy --out "a'; touch PWNED; '" >/dev/null 2>&1)
  check analyze_out_quote_runs_nothing test ! -e "$tmp/PWNED"
  check analyze_out_quote_is_a_folder test -s "$tmp/a'; touch PWNED; '/entropy.csv"
  if command -v gnuplot >/dev/null; then
    check analyze_quoted_label_plots test -s "$tmp/a'; touch PWNED; '/entropy.png"
  fi
  (cd "$tmp" && "$VRL" analyze --loss "r'x" --out "b\$(touch PWNED2)" >/dev/null 2>&1)
  check analyze_loss_dollar_runs_nothing test ! -e "$tmp/PWNED2"
}

# strict_numeric_flags: overflow, leading or trailing junk are refused at once, naming the flag
strict_numeric_flags() {
  expect_error shard_chunks_2_60 "--shard-chunks\|shard-chunks" timeout 10 "$VRL" data tokenize --in "$tmp/x" --out "$tmp/y" \
    --tokenizer "$tmp/z" --shard-chunks 1152921504606846976
  check shard_chunks_wrote_nothing test ! -e "$tmp/y"
  expect_error leading_space "--steps: \" 1\" is not an integer" "$VRL" train --steps " 1"
  expect_error leading_plus "--steps: \"+1\" is not an integer" "$VRL" train --steps "+1"
  expect_error trailing_junk "--batch: \"2 \" is not an integer" "$VRL" train --batch "2 "
  expect_error long_overflow "--steps: \"99999999999999999999999\" is out of range" "$VRL" train --steps 99999999999999999999999
  expect_error u64_overflow "--chunk: \"99999999999999999999999\" is larger than" "$VRL" data tokenize --chunk 99999999999999999999999
  expect_error u64_space "--seed: \" 7\" is not an unsigned integer" "$VRL" data select --seed " 7"
  expect_error double_space "--lr: \" 1e-3\" is not a finite number" "$VRL" train --lr " 1e-3"
  expect_error double_inf "--lr: \"inf\" is not a finite number" "$VRL" train --lr inf
}

# diverged_run_is_json: a run whose loss blows up stops with one line, keeps its last good
# checkpoint, and its metrics.jsonl stays valid JSON line by line (null for NaN/inf)
diverged_run_is_json() {
  expect_error diverged_stops "step 10: the validation loss is NaN (diverged); stopped, the last checkpoint in .* is intact" \
    $T --steps 20 --eval-every 2 --save-every 4 --lr 1e3 --out "$tmp/d"
  check diverged_keeps_step_8 test "$(readlink "$tmp/d/latest")" = checkpoints/step-000008
  check diverged_wrote_null grep -q '"val_loss":null' "$tmp/d/metrics.jsonl"
  check diverged_no_bare_nan bash -c "! grep -qi 'nan\|inf' '$tmp/d/metrics.jsonl'"
  if command -v python3 >/dev/null; then
    check diverged_every_line_json python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/d/metrics.jsonl"
  fi
  check diverged_log_reads_back "$VRL" analyze --loss "$tmp/d" --out "$tmp/dplot"
  check diverged_resumes_from_step_8 $T --resume "$tmp/d" --steps 9 --lr 1e3
}

# crafted_sizes_refused: sizes that multiply past 2^64, or past memory, exit 1 with a line
# naming the problem, never a signal (the parameter count used to wrap and overflow the heap)
crafted_sizes_refused() {
  llama() { # hidden intermediate layers vocab
    printf '{"model_type": "llama", "hidden_size": %s, "intermediate_size": %s, "num_hidden_layers": %s,
 "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": %s, "max_position_embeddings": 64,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0}\n' "$@"
  }
  llama 1048576 2147483647 341 358613162 >"$tmp/crafted.json"
  expect_error crafted_issue_config "crafted.json: hidden_size 1048576 / intermediate_size 2147483647: at most" \
    $T --steps 1 --model "$tmp/crafted.json" --out "$tmp/c1"
  llama 1048576 1048576 341 358613162 >"$tmp/wrap.json"
  expect_error crafted_table_past_2_40 "more than 1099511627776" $T --steps 1 --model "$tmp/wrap.json" --out "$tmp/c2"
  expect_error crafted_info "more than 1099511627776" "$VRL" info --model "$tmp/wrap.json"
  llama 65536 1024 4 1000 >"$tmp/big.json"
  expect_error crafted_larger_than_memory "a model of 69656444928 parameters needs .* GiB of memory, more than this machine" \
    $T --steps 1 --model "$tmp/big.json" --out "$tmp/c3"
  echo '{"model_type": "gpt2", "n_embd": 1073741824, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 64, "n_inner": null}' >"$tmp/gpt2.json"
  expect_error crafted_gpt2_4x "gpt2.json: n_embd 1073741824: must be 1..262144 (4 \* n_embd is the MLP width" \
    $T --steps 1 --model "$tmp/gpt2.json" --out "$tmp/c4"
  # negative: 4 * n_embd overflowed below zero before the bound covered both ends (found by fuzz_config)
  echo '{"model_type": "gpt2", "n_embd": -1073741824, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 64, "n_inner": null}' >"$tmp/gpt2n.json"
  expect_error crafted_gpt2_4x_negative "gpt2n.json: n_embd -1073741824: must be 1..262144" \
    $T --steps 1 --model "$tmp/gpt2n.json" --out "$tmp/c5"
  check crafted_left_no_folder test ! -e "$tmp/c1" -a ! -e "$tmp/c2" -a ! -e "$tmp/c3" -a ! -e "$tmp/c4" -a ! -e "$tmp/c5"
}

# special_files_refused: a FIFO or device where a file is read is refused within seconds
# (it used to hang every reader); a shard truncated under a running trainer is named
special_files_refused() {
  $T --steps 2 --out "$tmp/f" >/dev/null 2>&1 || { echo "FAIL could not train"; fails=1; return; }
  rm "$tmp/f/checkpoints/step-000002/model.safetensors"
  mkfifo "$tmp/f/checkpoints/step-000002/model.safetensors"
  local fifo="model.safetensors: not a regular file (a FIFO)"
  timeout 10 "$VRL" eval --ckpt "$tmp/f" --tokenizer "$(dirname "$0")/fixtures/tiny_tokenizer.json" >/dev/null 2>"$tmp/eval.err"
  check fifo_model_eval_exit_1 test $? -eq 1
  check fifo_model_eval_named grep -q "$fifo" "$tmp/eval.err"
  expect_error fifo_model_resume "$fifo" timeout 10 "$VRL" train --quiet --resume "$tmp/f" --steps 4
  expect_error fifo_model_generate "$fifo" timeout 10 "$VRL" generate --ckpt "$tmp/f" --ids 1,2 --max-new 2
  mkfifo "$tmp/data.bin" "$tmp/tok.json"
  expect_error fifo_shard "data.bin: not a regular file (a FIFO)" timeout 10 $T --steps 1 --data "$tmp/data.bin" --out "$tmp/g"
  expect_error fifo_tokenizer "tok.json: not a regular file (a FIFO)" timeout 10 "$VRL" tokenize --tokenizer "$tmp/tok.json" hi
  expect_error device_shard "/dev/zero: not a regular file (a character device)" timeout 10 $T --steps 1 --data /dev/zero --out "$tmp/g"
  # a shard cut to one page while a run reads it: the run names the file instead of dying of SIGBUS
  head -c 3000000 /dev/urandom | base64 >"$tmp/text.txt"
  "$VRL" data bytes --in "$tmp/text.txt" --out "$tmp/by" >/dev/null
  sed 's/"vocab_size": 64/"vocab_size": 256/' >"$tmp/b256.json" <<'JSON'
{"model_type": "llama", "hidden_size": 16, "intermediate_size": 56, "num_hidden_layers": 2,
 "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0}
JSON
  "$VRL" train --quiet --model "$tmp/b256.json" --batch 2 --seq 16 --steps 1000000 --data "$tmp/by/train.bin" \
    --val-data "$tmp/by/val.bin" --out "$tmp/tb" 2>"$tmp/tb.err" &
  local pid=$!
  for _ in $(seq 300); do [ -s "$tmp/tb/metrics.jsonl" ] && break; sleep 0.1; done
  truncate -s 4096 "$tmp/by/train.bin"
  wait $pid; local rc=$?
  check shard_truncated_exit_1 test "$rc" -eq 1
  check shard_truncated_named grep -q "train.bin: changed on disk while in use (truncated); stopped" "$tmp/tb.err"
}

# checkpoints_survive_copy: a folder whose `latest` is missing, a file, a folder (cp -rL,
# scp -r), a loop or dangling resumes from its newest verified step and re-creates the
# link; --out refuses it; no checkpoints/step-N is ever deleted by the advice
checkpoints_survive_copy() {
  $T --steps 4 --save-every 2 --out "$tmp/c0" >/dev/null 2>&1 || { echo "FAIL could not train"; fails=1; return; }
  cp -r "$tmp/c0" "$tmp/ref" && $T --resume "$tmp/ref" --steps 6 2>/dev/null
  for mode in missing file folder loop dangling cp_rL; do
    local d="$tmp/c-$mode"
    case $mode in
      cp_rL) cp -rL "$tmp/c0" "$d" ;;
      *) cp -r "$tmp/c0" "$d"; rm "$d/latest" ;;
    esac
    case $mode in
      file) echo x >"$d/latest" ;;
      folder) cp -r "$tmp/c0/checkpoints/step-000004" "$d/latest" ;;
      loop) ln -s latest "$d/latest" ;;
      dangling) ln -s checkpoints/step-000009 "$d/latest" ;;
    esac
    expect_error "${mode}_latest_out_refused" "already holds a run; continue it with --resume" $T --steps 4 --out "$d"
    check "${mode}_latest_steps_kept" test -d "$d/checkpoints/step-000002" -a -d "$d/checkpoints/step-000004"
    $T --resume "$d" --steps 6 2>"$tmp/err"
    check "${mode}_latest_resumes" test $? -eq 0
    check "${mode}_latest_says_so" grep -q "latest was not a link to a checkpoint; it points at .*step-000004 again (verified)" "$tmp/err"
    check "${mode}_latest_recreated" test "$(readlink "$d/latest")" = checkpoints/step-000006
    check "${mode}_latest_bit_exact" cmp -s "$d/model.safetensors" "$tmp/ref/model.safetensors"
  done
  # a damaged newest step is passed over for the one before it
  cp -r "$tmp/c0" "$tmp/dmg" && rm "$tmp/dmg/latest"
  truncate -s 100 "$tmp/dmg/checkpoints/step-000004/model.safetensors"
  $T --resume "$tmp/dmg" --steps 6 2>"$tmp/err"
  check damaged_newest_step_skipped grep -q "points at .*step-000002 again (verified)" "$tmp/err"
  # a copy with no verifiable step is refused, and nothing is removed
  cp -r "$tmp/c0" "$tmp/bad" && rm "$tmp/bad/latest"
  for s in 2 4; do truncate -s 100 "$tmp/bad/checkpoints/step-00000$s/model.safetensors"; done
  expect_error no_step_verifies "bad: no step folder in checkpoints/ verifies" $T --resume "$tmp/bad" --steps 6
  check no_step_verifies_kept test -d "$tmp/bad/checkpoints/step-000002" -a -d "$tmp/bad/checkpoints/step-000004"
  # the advice on a folder that never saved still works, and keeps its log
  mkdir "$tmp/nosave" && cp "$tmp/c0/config.json" "$tmp/c0/metrics.jsonl" "$tmp/nosave/"
  $T --steps 1 --out "$tmp/nosave" 2>/dev/null
  check restart_keeps_old_log cmp -s "$tmp/nosave/metrics.jsonl.restarted" "$tmp/c0/metrics.jsonl"
}

# edited_config_refused: config.json edited after training (variant, rope_theta,
# rms_norm_eps) is refused by resume and every reader, naming the key and both values
edited_config_refused() {
  $T --steps 2 --out "$tmp/e" >/dev/null 2>&1 || { echo "FAIL could not train"; fails=1; return; }
  cp "$tmp/e/config.json" "$tmp/config.orig"
  local tok; tok="$(dirname "$0")/fixtures/tiny_tokenizer.json"
  sed 's/baseline/resformer/' "$tmp/config.orig" >"$tmp/e/config.json"
  local want="config.json: vrl_variant is resformer but .*model.safetensors was trained with baseline"
  expect_error variant_edit_resume "$want" "$VRL" train --quiet --resume "$tmp/e" --steps 4
  "$VRL" eval --ckpt "$tmp/e" --tokenizer "$tok" >/dev/null 2>"$tmp/err"
  check variant_edit_eval_exit_1 test $? -eq 1
  check variant_edit_eval_named grep -q "$want" "$tmp/err"
  sed 's/"rope_theta": [0-9.e+]*/"rope_theta": 20000.0/' "$tmp/config.orig" >"$tmp/e/config.json"
  expect_error rope_theta_edit_resume "rope_theta is 20000 but .*model.safetensors was trained with 10000;" \
    "$VRL" train --quiet --resume "$tmp/e" --steps 4
  sed 's/"rms_norm_eps": [0-9.e-]*/"rms_norm_eps": 1e-06/' "$tmp/config.orig" >"$tmp/e/config.json"
  expect_error rms_norm_eps_edit_generate "rms_norm_eps is 1e-06 but .*model.safetensors was trained with 1e-05;" \
    "$VRL" generate --ckpt "$tmp/e" --ids 1,2 --max-new 2
  expect_error rms_norm_eps_edit_analyze "rms_norm_eps is 1e-06 but" "$VRL" analyze --ckpt "$tmp/e" --metric entropy --out "$tmp/p"
  cp "$tmp/config.orig" "$tmp/e/config.json"
  check unedited_config_resumes "$VRL" train --quiet --resume "$tmp/e" --steps 4
}

# wait_for_log RUN: until the run has logged a step (a run in the background)
wait_for_log() { for _ in $(seq 300); do [ -s "$1/metrics.jsonl" ] && return; sleep 0.1; done; }

# sigterm_saves_step: SIGTERM/SIGINT finish the step in hand, save it and exit 143/130 with a
# line saying so (the resume is bit for bit the uninterrupted run); a second signal exits at once
sigterm_saves_step() {
  set -m # background jobs keep SIGINT (a non-interactive shell would ignore it for them)
  local S="$T --steps 400 --save-every 100000 --eval-every 100000"
  $S --out "$tmp/ref" 2>/dev/null || { echo "FAIL the uninterrupted run"; fails=1; return; }
  for sig in TERM INT; do
    local want; want=$([ $sig = TERM ] && echo 143 || echo 130)
    $S --out "$tmp/s$sig" 2>"$tmp/s$sig.err" &
    local pid=$!
    wait_for_log "$tmp/s$sig"
    kill -$sig $pid; wait $pid; local rc=$?
    check "sig${sig}_exit_$want" test $rc -eq $want
    check "sig${sig}_says_so" grep -q "stopped by SIG$sig after step [0-9]* of 400; checkpoint saved in .*; exit $want" "$tmp/s$sig.err"
    local step; step=$(sed -n 's/.*stopped by SIG[A-Z]* after step \([0-9]*\) .*/\1/p' "$tmp/s$sig.err")
    check "sig${sig}_saved_step_in_hand" test "$(readlink "$tmp/s$sig/latest")" = "checkpoints/step-$(printf %06d "${step:-0}")"
    check "sig${sig}_before_the_end" test "${step:-400}" -lt 400
    "$VRL" train --quiet --resume "$tmp/s$sig" 2>/dev/null
    check "sig${sig}_resume_bit_exact" cmp -s "$tmp/s$sig/model.safetensors" "$tmp/ref/model.safetensors"
  done
  # a second signal while the first is being honoured: out at once
  $VRL train --quiet --model small --batch 16 --seq 128 --steps 100000 --out "$tmp/s2" 2>"$tmp/s2.err" &
  local pid=$!
  wait_for_log "$tmp/s2"
  kill -TERM $pid; sleep 0.05; kill -TERM $pid; wait $pid; local rc=$?
  check second_signal_exit_143 test $rc -eq 143
  check second_signal_says_so grep -q "second SIGTERM: exiting now" "$tmp/s2.err"
  set +m
}

# folder_deleted_fails: a run folder deleted under a running trainer stops it with rc 1 and a
# line, and is not half re-created
folder_deleted_fails() {
  $T --steps 1000000 --save-every 50 --out "$tmp/dd" 2>"$tmp/dd.err" &
  local pid=$!
  wait_for_log "$tmp/dd"
  until rm -rf "$tmp/dd" 2>/dev/null; do sleep 0.05; done # the trainer may write while rm lists
  wait $pid; local rc=$?
  check folder_deleted_exit_1 test $rc -eq 1
  check folder_deleted_says_so grep -q "dd: the run folder was deleted or replaced while training" "$tmp/dd.err"
  check folder_deleted_not_recreated test ! -e "$tmp/dd"
}

# threads_recorded: the reference's results do not depend on its thread count (test_thread_bits),
# so a resume may change --threads: two runs resumed with 2 and 1 threads end byte-identical, and
# each records the count it used
threads_recorded() {
  $T --steps 2 --threads 1 --out "$tmp/th1" 2>/dev/null || { echo "FAIL could not train"; fails=1; return; }
  $T --steps 2 --threads 1 --out "$tmp/th2" 2>/dev/null || { echo "FAIL could not train"; fails=1; return; }
  check threads_change_accepted "$VRL" train --quiet --resume "$tmp/th1" --steps 4 --threads 2
  check threads_same_accepted "$VRL" train --quiet --resume "$tmp/th2" --steps 4 --threads 1
  check threads_same_bits cmp "$tmp/th1/model.safetensors" "$tmp/th2/model.safetensors"
  check threads_in_state_2 grep -aq '\\"threads\\":2' "$tmp/th1/train_state.safetensors"
  check threads_in_state_1 grep -aq '\\"threads\\":1' "$tmp/th2/train_state.safetensors"
}

# small_items: a regenerated data folder refused on resume (fingerprint), an empty .zst is an
# error, an empty validation/ is read without qsort(NULL) (UBSan in the sanitizer pass), the
# lock always names its holder's pid
small_items() {
  mkdir -p "$tmp/sp/train/chunk1" "$tmp/sp/validation/chunk1"
  for split in train validation; do
    for i in $(seq 200); do
      echo "{\"text\": \"the cat sat on the mat, line $i of $split, again and again\", \"meta\": {\"redpajama_set_name\": \"RedPajamaC4\"}}"
    done >"$tmp/sp/$split/chunk1/example_${split}_0.jsonl"
  done
  local tok; tok="$(dirname "$0")/fixtures/tiny_tokenizer.json"
  "$VRL" data reorganize --in "$tmp/sp" --out "$tmp/rg" >/dev/null 2>&1
  "$VRL" data tokenize --in "$tmp/rg" --out "$tmp/tk" --tokenizer "$tok" --chunk 16 >/dev/null 2>&1
  sed 's/"vocab_size": 64/"vocab_size": 512/' >"$tmp/v512.json" <<'JSON'
{"model_type": "llama", "hidden_size": 16, "intermediate_size": 56, "num_hidden_layers": 2,
 "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0}
JSON
  local D="$VRL train --quiet --model $tmp/v512.json --data $tmp/tk --mixture RedPajamaC4=1 --seq 16 --batch 2"
  check fingerprint_run $D --steps 2 --out "$tmp/fp"
  check fingerprint_same_data_resumes "$VRL" train --quiet --resume "$tmp/fp" --steps 3
  sed -i 's/cat/dog/' "$tmp/rg/train/RedPajamaC4.jsonl"
  rm -rf "$tmp/tk"
  "$VRL" data tokenize --in "$tmp/rg" --out "$tmp/tk" --tokenizer "$tok" --chunk 16 >/dev/null 2>&1
  expect_error fingerprint_regenerated_refused "--data .*tk: the shards differ from those the run started on" \
    "$VRL" train --quiet --resume "$tmp/fp" --steps 4
  rm -f "$tmp/tk/validation/"*
  check empty_validation_inspect "$VRL" data inspect --in "$tmp/tk"
  check empty_validation_trains $D --steps 2 --out "$tmp/ev"
  mkdir -p "$tmp/ez/train/chunk1" && : >"$tmp/ez/train/chunk1/example_train_0.jsonl.zst"
  expect_error empty_zst "example_train_0.jsonl.zst: empty file (a .zst file holds at least one zstd frame)" \
    "$VRL" data reorganize --in "$tmp/ez" --out "$tmp/ezo"
  # the lock: a second run on the folder while the first starts names a pid, never "unknown"
  local unknown=0
  for i in 1 2 3; do
    $T --steps 100000 --out "$tmp/lk$i" 2>/dev/null &
    local pid=$!
    for _ in $(seq 200); do
      $T --steps 1 --out "$tmp/lk$i" 2>"$tmp/lk.err" && break
      grep -q "in use by another vrl train" "$tmp/lk.err" && break
    done
    grep -q "pid unknown" "$tmp/lk.err" && unknown=1
    kill $pid; wait $pid 2>/dev/null
  done
  check lock_names_pid test $unknown -eq 0
}

# the group is one of the functions above
case $GROUP in
  *_*) if declare -F "$GROUP" >/dev/null; then "$GROUP"; else echo "unknown group $GROUP"; exit 2; fi ;;
  *) echo "unknown group $GROUP"; exit 2 ;;
esac
finish
