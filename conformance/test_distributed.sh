#!/usr/bin/env bash
# test_distributed.sh: `mpirun -np N vrl train` (docs/distributed.md) on the fp64 reference,
# tiny model, synthetic corpus, a few steps each:
#   - 2 processes equal one process with --accum 2 (losses and final weights within 1e-12;
#     the line printed says whether they are bit-identical), 3 processes --accum 3, and
#     2 processes with --accum 2 each one process with --accum 4, and a GPT-2 with dropout
#     (masks keyed by the global micro-batch index) on 2 processes --accum 2 on one;
#   - a run stopped at step 3 and resumed with the same process count is bit-exact; resumed
#     2 -> 1 and 1 -> 2 it continues with the same losses and weights within 1e-12;
#   - a resume whose process count does not divide the update is refused;
#   - one rank's error stops the job with that rank's message (no hang), and a killed rank
#     ends the job with an error naming it and leaves the last checkpoint whole (a
#     one-process resume from it runs).
# Three groups, one ctest each so each stays short: split (the first item), resume (the
# second), errors (the third and the last).
# Skips (exit 77) when mpirun is absent or vrl was built without MPI.
# usage: test_distributed.sh split|resume|errors PATH/TO/vrl PATH/TO/run_compare
set -u
GROUP=$1
VRL=$2
CMP=$3
case $GROUP in split | resume | errors) ;; *) echo "usage: $0 split|resume|errors VRL RUN_COMPARE"; exit 2 ;; esac
. "$(dirname "$0")/cli_test_lib.sh"

command -v mpirun >/dev/null || { echo "SKIP: mpirun not found (scripts/deps.sh installs openmpi-bin)"; exit 77; }
MPI=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
export OMPI_MCA_btl_base_warn_component_unused=0
# every job ends on its own within this, or the test fails instead of hanging
LIMIT=60

T=(train --quiet --precision fp64 --batch 2 --seq 16 --synthetic-tokens 5000 --warmup 1
   --decay-end 6 --eval-every 0 --eval-batches 1 --save-every 0)
# --model only on a new run: a resumed run keeps its config.json and refuses --model

# one NAME N ARGS...: vrl train with N processes (N = 1: without mpirun) into $tmp/NAME
one() {
  local name=$1 np=$2; shift 2
  local args=("${T[@]}")
  [[ " $* " == *" --resume "* || " $* " == *" --model "* ]] || args+=(--model tiny)
  if [ "$np" -eq 1 ]; then timeout $LIMIT "$VRL" "${args[@]}" "$@" >"$tmp/$name.log" 2>&1
  else timeout $LIMIT "${MPI[@]}" -np "$np" "$VRL" "${args[@]}" "$@" >"$tmp/$name.log" 2>&1; fi
  local rc=$?
  [ $rc -eq 0 ] || { echo "run $name ($np processes) failed with $rc:"; cat "$tmp/$name.log"; }
  return $rc
}

# same NAME A B TOL: runs A and B agree within TOL
same() {
  local name=$1
  if "$CMP" "$tmp/$2" "$tmp/$3" "$4" >"$tmp/cmp" 2>&1; then
    passes=$((passes + 1)); echo "ok   $name: $(cat "$tmp/cmp")"
  else
    fails=$((fails + 1)); echo "FAIL $name (tolerance $4):"; cat "$tmp/cmp"
  fi
}

# Is this vrl built with MPI? A two-process run says so at once.
one probe 2 --steps 1 --out "$tmp/probe"
if grep -q "has no MPI" "$tmp/probe.log"; then echo "SKIP: this build of vrl has no MPI (libopenmpi-dev absent at build time)"; exit 77; fi
[ -f "$tmp/probe/model.safetensors" ] || { echo "FAIL a two-process run did not write its run folder"; exit 1; }

if [ "$GROUP" = split ]; then
# the same update, split across processes
one accum2 1 --steps 6 --accum 2 --out "$tmp/accum2"
one np2 2 --steps 6 --out "$tmp/np2"
same np2_vs_accum2 accum2 np2 1e-12
one accum3 1 --steps 4 --accum 3 --out "$tmp/accum3"
one np3 3 --steps 4 --out "$tmp/np3"
same np3_vs_accum3 accum3 np3 1e-12
one accum4 1 --steps 3 --accum 4 --out "$tmp/accum4"
one np2x2 2 --steps 3 --accum 2 --out "$tmp/np2x2"
same np2_accum2_vs_accum4 accum4 np2x2 1e-12
# GPT-2 with dropout: each micro-batch's masks are keyed by its global index
printf '{"model_type": "gpt2", "n_embd": 16, "n_layer": 2, "n_head": 2, "n_positions": 64, "vocab_size": 64, %s}\n' \
  '"resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1' >"$tmp/gpt2.json"
one gpt2_accum2 1 --model "$tmp/gpt2.json" --steps 3 --accum 2 --out "$tmp/gpt2_accum2"
one gpt2_np2 2 --model "$tmp/gpt2.json" --steps 3 --out "$tmp/gpt2_np2"
same gpt2_dropout_np2_vs_accum2 gpt2_accum2 gpt2_np2 1e-12
fi

if [ "$GROUP" = resume ]; then
one accum2 1 --steps 6 --accum 2 --out "$tmp/accum2"
one np2 2 --steps 6 --out "$tmp/np2"

# stop at step 3, resume to 6: same process count, then 2 -> 1 and 1 -> 2
one r22 2 --steps 3 --out "$tmp/r22" && one r22b 2 --resume "$tmp/r22" --steps 6
same resume_2_to_2_bit_exact np2 r22 0
one r21 2 --steps 3 --out "$tmp/r21" && one r21b 1 --resume "$tmp/r21" --steps 6
same resume_2_to_1 np2 r21 1e-12
one r12 1 --steps 3 --accum 2 --out "$tmp/r12" && one r12b 2 --resume "$tmp/r12" --steps 6
same resume_1_to_2 accum2 r12 1e-12
fi

if [ "$GROUP" = errors ]; then
# 3 micro-batches per update do not split over 2 processes
one np3 3 --steps 4 --out "$tmp/np3"
timeout $LIMIT "${MPI[@]}" -np 2 "$VRL" "${T[@]}" --resume "$tmp/np3" --steps 5 >"$tmp/out" 2>"$tmp/err"
rc=$?
check resume_world_must_divide test $rc -ne 0 -a $rc -ne 124
check resume_world_must_divide_says_why grep -q "an update of 3 micro-batches does not split over 2 processes" "$tmp/err"

# rank 1 alone fails (its --data does not exist): every rank stops, with rank 1's message
timeout $LIMIT "${MPI[@]}" -np 1 "$VRL" "${T[@]}" --steps 3 --out "$tmp/bad" : \
  -np 1 "$VRL" "${T[@]}" --steps 3 --out "$tmp/bad" --data "$tmp/nope.bin" >"$tmp/out" 2>"$tmp/err"
rc=$?
check rank_error_stops_job test $rc -ne 0 -a $rc -ne 124
check rank_error_names_rank grep -q "vrl train: rank 1 of 2: .*nope.bin: cannot open" "$tmp/err"
check rank_error_writes_nothing test ! -e "$tmp/bad/config.json"

# kill rank 1 of a run resumed from a checkpoint at step 3 (no save while it runs): the job
# ends with an error naming the rank, and the checkpoint still resumes
one k 2 --steps 3 --out "$tmp/k"
"${MPI[@]}" -np 2 "$VRL" train --quiet --precision fp64 --resume "$tmp/k" --steps 1000000 >"$tmp/out" 2>"$tmp/err" &
job=$!
victim=""
for _ in $(seq 300); do  # up to 30 s for the ranks to start
  sleep 0.1
  for p in $(pgrep -P $job); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$p
  done
  [ -n "$victim" ] && break
done
if [ -n "$victim" ]; then
  sleep 1
  kill -9 "$victim"
  for _ in $(seq $((LIMIT * 10))); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  if kill -0 $job 2>/dev/null; then kill $job; echo "FAIL kill_rank: the job hangs"; fails=$((fails + 1)); fi
  wait $job
  rc=$?
  check kill_rank_stops_job test $rc -ne 0
  check kill_rank_names_rank grep -q "rank 1 .*signal 9" "$tmp/err"
  check kill_rank_checkpoint_whole one k1 1 --resume "$tmp/k" --steps 4
else
  kill $job 2>/dev/null; wait $job
  fails=$((fails + 1)); echo "FAIL kill_rank: rank 1 of the job was not found"
fi
fi

finish
