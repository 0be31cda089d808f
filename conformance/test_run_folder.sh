#!/usr/bin/env bash
# test_run_folder.sh: the run folder's contract (docs/run-folder.md): checkpoints in
# checkpoints/step-N published through `latest`, one `vrl train` per folder at a time,
# the --resume rules per flag (vrl train --help), and folders without a checkpoint.
# usage: test_run_folder.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

T="$VRL train --quiet --model tiny --batch 2 --seq 16"

# ---- layout: three saves, the latest and one previous kept, top-level links resolve
$T --steps 3 --save-every 1 --out "$tmp/run" || { echo "FAIL the reference run"; exit 1; }
check layout_latest test "$(readlink "$tmp/run/latest")" = checkpoints/step-000003
check layout_keeps_one_previous test "$(ls "$tmp/run/checkpoints" | tr '\n' ' ')" = "step-000002 step-000003 "
check layout_model_link test "$(readlink "$tmp/run/model.safetensors")" = latest/model.safetensors
check layout_state_link cmp -s "$tmp/run/train_state.safetensors" "$tmp/run/checkpoints/step-000003/train_state.safetensors"

# ---- weights that hold NaN: analyze names the cause instead of an empty message
cp -r "$tmp/run" "$tmp/nan"
model=$(readlink -f "$tmp/nan/model.safetensors")
printf '\x00\x00\xc0\x7f' | dd of="$model" bs=1 seek=$(( $(stat -c %s "$model") - 4 )) conv=notrunc 2>/dev/null
expect_error analyze_nan_weights "the model's weights hold NaN or Inf" \
  $VRL analyze --ckpt "$tmp/nan" --metric entropy --seq 16 --batches 1 --out "$tmp/nan-an"

# ---- --resume: flags that shape the trajectory must match, the others are recorded
expect_error resume_lr "--lr 0.1: the run was started with --lr 0.003" $VRL train --quiet --resume "$tmp/run" --steps 5 --lr 0.1
expect_error resume_batch "--batch 4: the run was started with --batch 2" $VRL train --quiet --resume "$tmp/run" --steps 5 --batch 4
expect_error resume_seq "--seq 32: the run was started with --seq 16" $VRL train --quiet --resume "$tmp/run" --steps 5 --seq 32
expect_error resume_seed "--seed 7: the run was started with --seed 1337" $VRL train --quiet --resume "$tmp/run" --steps 5 --seed 7
expect_error resume_data "--data x.bin: the run was started with --data \"\"" $VRL train --quiet --resume "$tmp/run" --steps 5 --data x.bin
expect_error resume_schedule "--schedule linear: the run was started with --schedule cosine" \
  $VRL train --quiet --resume "$tmp/run" --steps 5 --schedule linear
expect_error resume_accum "--accum 2: the run was started with --accum 1" $VRL train --quiet --resume "$tmp/run" --steps 5 --accum 2
expect_error resume_precision "trained on ref-fp32, this command would resume it on ref-fp64" \
  $VRL train --quiet --resume "$tmp/run" --steps 5 --precision fp64
expect_error resume_model "--model small: differs from the run's .*config.json; a resumed run keeps its model" \
  $VRL train --quiet --resume "$tmp/run" --steps 5 --model small
before=$(cd "$tmp/run" && find . -type f -newer "$tmp/run/config.json" | sort | xargs sha256sum | sha256sum)
$VRL train --quiet --resume "$tmp/run" --steps 5 --seed 1337 --batch 2 --save-every 2 --eval-every 1 ||
  echo "FAIL resume with equal and allowed flags"
check resume_records_changes grep -qx \
  '{"step":3,"event":"resume","changed":{"decay_end":{"kept":3},"eval_every":{"from":100,"to":1},"save_every":{"from":1,"to":2},"steps":{"from":3,"to":5}}}' \
  "$tmp/run/metrics.jsonl"
check resume_analyze_reads_log $VRL analyze --loss "$tmp/run" --window 1 --out "$tmp/an"

# ---- the stored state is checked like the command line, and has its own checksum
cp -r "$tmp/run" "$tmp/flip"
state=$(readlink -f "$tmp/flip/train_state.safetensors")
size=$(stat -c %s "$state")
printf '\x55' | dd of="$state" bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
expect_error state_bit_flip "train_state.safetensors: checksum mismatch" $VRL train --quiet --resume "$tmp/flip" --steps 9

# ---- one run per folder: the second names the first's PID
$T --steps 1000000 --save-every 1 --out "$tmp/busy" &
holder=$!
for _ in $(seq 100); do [ -L "$tmp/busy/latest" ] && break; sleep 0.1; done
expect_error lock_names_pid "busy: in use by another vrl train (pid $holder)" \
  $VRL train --quiet --resume "$tmp/busy" --steps 2000000
kill "$holder"; wait "$holder" 2>/dev/null

# ---- a folder whose run stopped before its first save: --resume says so, --out reuses it
mkdir -p "$tmp/empty" && cp "$tmp/run/config.json" "$tmp/empty/"
expect_error resume_no_checkpoint "empty: holds no checkpoint yet.*start it again with --out" \
  $VRL train --quiet --resume "$tmp/empty" --steps 2
check out_reuses_folder_without_checkpoint $T --steps 1 --out "$tmp/empty"
expect_error out_refuses_folder_with_run "already holds a run" $T --steps 1 --out "$tmp/empty"
expect_error variant_lambda_inf "neutreno: lambda=\"inf\" is not a finite number" $T --steps 1 --variant neutreno:lambda=inf --out "$tmp/inf"
check no_folder_for_bad_lambda test ! -e "$tmp/inf"
expect_error variant_plus "variant \"+\" has an empty part" $T --steps 1 --variant + --out "$tmp/v1"
expect_error variant_trailing_plus "variant \"baseline+\" has an empty part" $T --steps 1 --variant baseline+ --out "$tmp/v2"
expect_error lr_negative "--lr -1: must be a finite number > 0" $T --steps 1 --lr -1 --out "$tmp/v3"
expect_error lr_end_negative "--lr-end -1: must be a finite number >= 0" $T --steps 1 --lr-end -1 --out "$tmp/v4"
expect_error wd_negative "--wd -5: must be a finite number >= 0" $T --steps 1 --wd -5 --out "$tmp/v5"
expect_error clip_negative "--clip -1: must be a finite number >= 0" $T --steps 1 --clip -1 --out "$tmp/v6"
check no_folders_for_bad_flags test ! -e "$tmp/v1" -a ! -e "$tmp/v3" -a ! -e "$tmp/v6"
# a validation set smaller than one batch: refused before the run, never "val_loss": nan
expect_error val_smaller_than_batch "synthetic validation set: .* fewer than one --batch of 4000" \
  $VRL train --quiet --model tiny --steps 1 --batch 4000 --seq 32 --out "$tmp/v7"

# ---- a folder from before checkpoints/ (plain files at the top) resumes into the new layout
mkdir "$tmp/old"
for f in config.json metrics.jsonl model.safetensors train_state.safetensors; do cp -L "$tmp/run/$f" "$tmp/old/$f"; done
touch "$tmp/old/model.safetensors.tmp.12345"
check old_layout_resumes $VRL train --quiet --resume "$tmp/old" --steps 6
check old_layout_converted test "$(readlink "$tmp/old/latest")" = checkpoints/step-000006 -a -L "$tmp/old/model.safetensors"
check old_layout_temporaries_removed test ! -e "$tmp/old/model.safetensors.tmp.12345"
finish
