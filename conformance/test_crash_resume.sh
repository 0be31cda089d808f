#!/usr/bin/env bash
# test_crash_resume.sh: a run killed (SIGKILL) or hitting a full disk (ENOSPC) at any
# file-system step of its checkpoints always continues, and ends bit for bit where an
# uninterrupted run ends: same losses, learning rates, gradient norms and validation
# losses in metrics.jsonl, same model.safetensors and train_state.safetensors.
# The failures are injected by the VRL_FAULT_AT_WRITE hook (common/base/fault.h) at
# every step of the saves except the middle of a file's run of tensor writes (its
# first and last write are kept).
# usage: test_crash_resume.sh PATH/TO/vrl
set -u
VRL=$1
. "$(dirname "$0")/cli_test_lib.sh"

T="$VRL train --quiet --model tiny --batch 2 --seq 16 --steps 2 --save-every 1 --eval-every 2"

# The trajectory of a run: metrics.jsonl without the timings.
trajectory() { sed -E 's/,"tokens_per_s":[^,]*,"elapsed_s":[^}]*//' "$1/metrics.jsonl"; }

$T --out "$tmp/ref" || { echo "FAIL the uninterrupted run"; exit 1; }
trajectory "$tmp/ref" >"$tmp/ref.traj"

# The numbered file-system steps of one run, and the ones to fail at.
VRL_FAULT_TRACE=1 $T --out "$tmp/trace" 2>"$tmp/trace.txt" || { echo "FAIL the traced run"; exit 1; }
points=$(awk '/^fault point/ { n = $3 + 0; sub(/^[^:]*: /, ""); label[n] = $0; last = n }
  END { for (i = 1; i <= last; i++)
          if (label[i] != "write" || label[i-1] != "write" || label[i+1] != "write") print i }' \
  "$tmp/trace.txt")
echo "$(grep -c '^fault point' "$tmp/trace.txt") file-system steps, failing at $(echo $points | wc -w) of them"

# run_to_end DIR: continue a run whatever state the failure left it in (a run killed
# after its last save is complete: the resume only tidies the folder and says so).
run_to_end() {
  # no step folder: the run died before its first save and starts again; a step folder
  # without `latest` (killed between the rename and the publish) is found by --resume
  if ! compgen -G "$1/checkpoints/step-*" >/dev/null; then $T --out "$1"; return; fi
  $VRL train --quiet --resume "$1" 2>"$tmp/resume.err" && return
  grep -q "already at step 2 of 2" "$tmp/resume.err" || { cat "$tmp/resume.err" >&2; return 1; }
}

for mode in kill enospc; do
  bad=0
  for n in $points; do
    d="$tmp/$mode-$n"
    # (in a subshell: the killed command is reported there, not on the test's output)
    rc=$( (VRL_FAULT_MODE=$mode VRL_FAULT_AT_WRITE=$n $T --out "$d" 2>"$tmp/err"; echo $?) 2>/dev/null)
    if [ $mode = kill ] && [ $rc -ne 137 ]; then echo "FAIL $mode at $n: exit $rc, not killed"; bad=1; continue; fi
    if [ $mode = enospc ] && { [ $rc -ne 1 ] || ! grep -q "No space left on device" "$tmp/err"; }; then
      echo "FAIL $mode at $n: exit $rc, expected one error naming ENOSPC:"; cat "$tmp/err"; bad=1; continue
    fi
    if ! run_to_end "$d" 2>"$tmp/err"; then echo "FAIL $mode at $n: no resume: $(cat "$tmp/err")"; bad=1; continue; fi
    if ! trajectory "$d" | cmp -s - "$tmp/ref.traj"; then
      echo "FAIL $mode at $n: metrics differ"; trajectory "$d" | diff - "$tmp/ref.traj" | head -5; bad=1; continue
    fi
    for f in model.safetensors train_state.safetensors; do
      cmp -s "$d/$f" "$tmp/ref/$f" || { echo "FAIL $mode at $n: $f differs"; bad=1; }
    done
    left=$(cd "$d" && find . -name '*.tmp.*' -o -name '.stage-*')
    [ -z "$left" ] || { echo "FAIL $mode at $n: leftovers: $left"; bad=1; }
    [ "$(ls "$d/checkpoints" | wc -l)" -eq 2 ] || { echo "FAIL $mode at $n: checkpoints/ holds $(ls "$d/checkpoints")"; bad=1; }
    rm -rf "$d"
  done
  check "${mode}_at_every_step_resumes_bit_exact" test $bad -eq 0
done
finish
