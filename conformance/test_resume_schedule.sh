#!/usr/bin/env bash
# test_resume_schedule.sh: what raising --steps on --resume does to the learning-rate
# schedule (docs/run-folder.md, "Resume": --resume and --steps).
#   kept     --steps 6, then --resume --steps 12: the decay still ends at 6, steps 7..12 at
#            --lr-end; the weights equal a run of --steps 12 --decay-end 6 byte for byte, the
#            note is printed, metrics.jsonl records "decay_end":{"kept":6}; and they differ
#            from a plain 12-step run (so the first check can fail).
#   planned  --steps 6 --decay-end 12, then --resume --steps 12: the uninterrupted 12-step
#            run byte for byte, and no note.
#   offset   --schedule-offset 1: step 1 trains at 1e-7 + (3e-3 - 1e-7) / 2 (warm-up 2) where the
#            default trains at 1e-7, step 2 at the peak; a resume keeps it (bit for bit, as the
#            uninterrupted run) and refuses --schedule-offset 0.
# usage: test_resume_schedule.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

# Small and fast; eval only at the end and no intermediate saves, which do not touch the
# trajectory (conformance/test_resume.c checks resume with both).
T="$VRL train --quiet --model tiny --batch 2 --seq 16 --warmup 2 --eval-every 0 --eval-batches 1 --synthetic-tokens 4096"

# weights RUN: the final model file's bytes' hash.
weights() { sha256sum < "$(readlink -f "$1/model.safetensors")" | cut -d' ' -f1; }
# lr_at RUN STEP: the learning rate logged for STEP.
lr_at() { jq -r "select(.step == $2 and .loss != null) | .lr" "$1/metrics.jsonl" | head -1; }
# lr_is RUN STEP X: the rate logged for STEP is X (compared as doubles).
lr_is() { awk -v a="$(lr_at "$1" "$2")" -v b="$3" 'BEGIN { exit !(a != "" && a + 0 == b + 0) }'; }

$T --steps 6 --out "$tmp/kept" && $VRL train --quiet --resume "$tmp/kept" --steps 12 2> "$tmp/kept.err" &&
  $T --steps 12 --decay-end 6 --out "$tmp/kept-ref" && $T --steps 12 --out "$tmp/full" &&
  $T --steps 6 --decay-end 12 --out "$tmp/planned" && $VRL train --quiet --resume "$tmp/planned" --steps 12 \
    2> "$tmp/planned.err" || { echo "FAIL a training run failed"; cat "$tmp"/*.err; exit 1; }

# kept: equal to --decay-end 6 from the start, not to the plain 12-step run
check "kept: resumed 6 -> 12 = --steps 12 --decay-end 6, byte for byte" test "$(weights "$tmp/kept")" = "$(weights "$tmp/kept-ref")"
check "kept: and not the uninterrupted 12-step run" test "$(weights "$tmp/kept")" != "$(weights "$tmp/full")"
check "kept: step 7 trains at --lr-end 3e-4" lr_is "$tmp/kept" 7 3e-4
check "kept: step 12 trains at --lr-end 3e-4" lr_is "$tmp/kept" 12 3e-4
check "kept: the note names the decay end and the equivalent run" \
  grep -qF "the run's schedule is kept: its decay ends at step 6 (planned when it started), so steps 7..12 train at --lr-end 0.0003, as \`--steps 12 --decay-end 6\` would" "$tmp/kept.err"
check "kept: metrics.jsonl records it" grep -qxF \
  '{"step":6,"event":"resume","changed":{"decay_end":{"kept":6},"steps":{"from":6,"to":12}}}' "$tmp/kept/metrics.jsonl"

# planned: the decay end given at the start makes the resume the uninterrupted run
check "planned: resumed 6 -> 12 with --decay-end 12 = the uninterrupted 12-step run" \
  test "$(weights "$tmp/planned")" = "$(weights "$tmp/full")"
check "planned: step 7 still decays (lr above --lr-end)" awk -v a="$(lr_at "$tmp/planned" 7)" 'BEGIN { exit !(a > 3.1e-4) }'
check "planned: no note" test ! -s "$tmp/planned.err"
check "planned: metrics.jsonl records only the steps" grep -qxF \
  '{"step":6,"event":"resume","changed":{"steps":{"from":6,"to":12}}}' "$tmp/planned/metrics.jsonl"

# offset: update u at lr(u); stored with the run
$T --steps 4 --schedule-offset 1 --out "$tmp/off" && $T --steps 2 --decay-end 4 --schedule-offset 1 --out "$tmp/off2" &&
  $VRL train --quiet --resume "$tmp/off2" --steps 4 2> "$tmp/off2.err" ||
  { echo "FAIL a --schedule-offset run failed"; cat "$tmp"/off*.err; exit 1; }
check "offset 0: step 1 trains at 1e-7" lr_is "$tmp/full" 1 1e-7
check "offset 1: step 1 trains at (3e-3 - 1e-7) / 2 + 1e-7" awk -v a="$(lr_at "$tmp/off" 1)" 'BEGIN { exit !(a - 0.00150005 < 1e-15 && 0.00150005 - a < 1e-15) }'
check "offset 1: step 2 trains at the peak 3e-3" lr_is "$tmp/off" 2 3e-3
check "offset 1: resumed 2 -> 4 = the uninterrupted run, byte for byte" test "$(weights "$tmp/off2")" = "$(weights "$tmp/off")"
check "offset 1: the run's flags store it" grep -aqF 'schedule_offset\":1' "$(readlink -f "$tmp/off/train_state.safetensors")"
$VRL train --quiet --resume "$tmp/off" --steps 5 --schedule-offset 0 2> "$tmp/off0.err"
check "offset: a resume refuses another offset (exit 1)" test $? = 1
check "offset: and says why in one line" grep -qxF -- "vrl train: --schedule-offset 0: the run was started with --schedule-offset 1; a resumed run keeps it (see vrl train --help)" "$tmp/off0.err"
$T --steps 2 --schedule-offset 2 --out "$tmp/off-bad" 2> "$tmp/offbad.err"
check "offset: 2 is refused with one line" grep -qxF "vrl train: --schedule-offset: 2 is out of range [0, 1]" "$tmp/offbad.err"
finish
