#!/usr/bin/env bash
# test_fast_cpu_train.sh: `vrl train --device cuda-cpu` (fast/'s CUDA code on the CPU,
# docs/fast.md) end to end, tiny model, synthetic corpus:
#   - thread orders: for every value-path family fast/ trains (ResFormer, trainable and
#     dense λ, NeuTRENO, SVFormer with anchors, CLA, Q/K residuals, the hidden residual) and
#     the residual-stream variants (DenseFormer, AttnRes full and block, HC with n = 4, mHC),
#     VRL_CUDA_CPU_ORDER=forward, reverse and random:SEED, each with the grid blocks in that
#     order too (VRL_CUDA_CPU_BLOCKS), give byte-identical model.safetensors (a kernel whose
#     result depends on the order its threads run between barriers, or its blocks, would
#     differ); and HC and mHC over 9 x 64 = 576 tokens a step, where the maps' gradients are
#     summed over 3 of fast/stream.cu's 256-row column-sum chunks, with the blocks reversed;
#   - the step as CUDA graphs (captured once, replayed; the default) against the same kernels
#     queued one by one (VRL_FAST_GRAPH=0), for the baseline, ResFormer, SVFormer, a
#     trainable λ, DenseFormer, AttnRes, mHC and --accum 2: byte-identical model.safetensors and train_state.safetensors,
#     and the same logged losses and gradient norms (docs/design/kernels.md, "The step");
#   - GPT-2 (a model_type gpt2 config without dropout): 2 steps, the same bytes in every thread
#     order and uncaptured, and resumed to step 3 the same bytes as 3 steps; with dropout,
#     refused in one line;
#   - a bad VRL_CUDA_CPU_ORDER is one error line;
#   - ZeRO-2 over the NCCL-over-MPI stand-in: `mpirun -np 2` equals one process with
#     --accum 2 (baseline and AttnRes), `mpirun -np 3` (buckets that do not split evenly)
#     one process with --accum 3, and `mpirun -np 2 --accum 4` (four rounds per rank) one process with
#     --accum 8 (losses and weights within 1e-6; the line printed says whether they are
#     bit-identical); where the gradients are the same bits (-np 2 against --accum 2) the
#     logged gradient norms are the same bytes (fast/adamw.cu sums the squares exactly,
#     fast/exact_sumsq.h, so neither the ranks' shards nor the grid change them: issue 40);
#     an AttnRes -np 2 run of 2 steps resumed by one process to step 4 logs, and saves,
#     exactly what the -np 2 4-step run does.
#     Skipped with the reason when mpirun is absent or vrl has no MPI.
# VRL_TEST_ONE_ORDER=1 (the sanitizer pass, whose job is memory errors: conformance/tests.cmake)
# runs each model in the forward order only, without the order comparisons, which the plain
# pass makes.
# usage: test_fast_cpu_train.sh PATH/TO/vrl PATH/TO/run_compare
set -u
VRL=$1
CMP=$2
. "$(dirname "$0")/cli_test_lib.sh"
LIMIT=300
orders=(reverse random)
[ "${VRL_TEST_ONE_ORDER:-0}" = 1 ] && orders=() && echo "VRL_TEST_ONE_ORDER=1: the forward thread order only"
# --model only on a new run: a resumed run keeps its config.json and refuses --model
R=(train --quiet --device cuda-cpu --batch 2 --seq 32 --synthetic-tokens 5000 --warmup 1
   --decay-end 6 --eval-every 0 --eval-batches 1 --save-every 0)
T=("${R[@]}" --model tiny)

# run NAME ARGS...: one process into $tmp/NAME
run() {
  local name=$1; shift
  timeout $LIMIT "$VRL" "${T[@]}" --out "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || { echo "run $name failed with $rc:"; cat "$tmp/$name.log"; }
  return $rc
}

for v in resformer svformer:anchors=1 resformer:mode=learnable-plus resformer:mode=dense neutreno_resformer cla \
    query_residual key_residual hidden_residual denseformer attnres attnres:mode=block,size=3 hc:n=4 mhc; do
  n=${v//[:=,]/_}
  VRL_CUDA_CPU_ORDER=forward run "${n}_forward" --variant $v --steps 3
  for o in "${orders[@]}"; do
    case $o in
      reverse) VRL_CUDA_CPU_ORDER=reverse VRL_CUDA_CPU_BLOCKS=reverse run "${n}_reverse" --variant $v --steps 3 ;;
      random) VRL_CUDA_CPU_ORDER=random:12345 VRL_CUDA_CPU_BLOCKS=random:321 run "${n}_random" --variant $v --steps 3 ;;
    esac
    check "${v}: thread and block order $o gives the forward order's weights byte for byte" \
      cmp "$tmp/${n}_forward/model.safetensors" "$tmp/${n}_$o/model.safetensors"
  done
done
# blocks that share a reduction: 576 tokens a step, 3 column-sum chunks (a sum by atomicAdd
# across them would depend on the block order); one step (~2.5 CPU-seconds a run)
for v in $([ ${#orders[@]} = 0 ] || echo hc:n=4 mhc); do
  n=chunks_${v//[:=,]/_}
  run "${n}_forward" --variant $v --steps 1 --batch 9 --seq 64
  VRL_CUDA_CPU_BLOCKS=reverse run "${n}_reverse" --variant $v --steps 1 --batch 9 --seq 64
  check "${v} over 576 tokens: the blocks reversed give the forward order's weights byte for byte" \
    cmp "$tmp/${n}_forward/model.safetensors" "$tmp/${n}_reverse/model.safetensors"
done
# graph on (default) vs off
for v in baseline resformer svformer resformer:mode=learnable denseformer attnres mhc "resformer --accum 2"; do
  n=graph_${v//[:=, -]/_}
  # shellcheck disable=SC2086  # "$v" carries the variant and, once, --accum 2
  run "${n}_on" --variant $v --steps 3
  # shellcheck disable=SC2086
  VRL_FAST_GRAPH=0 run "${n}_off" --variant $v --steps 3
  for f in model.safetensors train_state.safetensors; do
    check "${v}: graph replay gives the uncaptured run's $f byte for byte" \
      cmp "$tmp/${n}_on/$f" "$tmp/${n}_off/$f"
  done
  check "${v}: the graph run logged 3 steps" test "$(grep -c '"grad_norm":' "$tmp/${n}_on/metrics.jsonl")" -eq 3
  check "${v}: graph replay logs the uncaptured run's losses and gradient norms" \
    cmp <(grep -o '"loss":[^,]*,"lr":[^,]*,"grad_norm":[^,]*' "$tmp/${n}_on/metrics.jsonl") \
        <(grep -o '"loss":[^,]*,"lr":[^,]*,"grad_norm":[^,]*' "$tmp/${n}_off/metrics.jsonl")
done

# GPT-2 (fast/gpt2.cu), selected by a model_type gpt2 config: 2 steps in each thread order and
# uncaptured give the same bytes; with GPT2Config's default dropout (0.1) it is refused in one line
printf '%s\n' '{"model_type": "gpt2", "n_embd": 16, "n_layer": 2, "n_head": 2, "vocab_size": 64, "n_positions": 64,' \
  ' "n_inner": null, "resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0}' >"$tmp/gpt2.json"
sed 's/, "resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0//' "$tmp/gpt2.json" >"$tmp/gpt2_dropout.json"
gpt2() { local name=$1; shift; timeout $LIMIT "$VRL" "${R[@]}" --model "$tmp/gpt2.json" --steps 2 --out "$tmp/$name" "$@" \
  >"$tmp/$name.log" 2>&1 || { echo "run $name failed:"; cat "$tmp/$name.log"; }; }
gpt2 gpt2_forward
gpt2_orders=(reverse off_random)
[ ${#orders[@]} = 0 ] && gpt2_orders=()
[ ${#orders[@]} = 0 ] || VRL_CUDA_CPU_ORDER=reverse gpt2 gpt2_reverse
[ ${#orders[@]} = 0 ] || VRL_FAST_GRAPH=0 VRL_CUDA_CPU_ORDER=random:12345 gpt2 gpt2_off_random
check "gpt2: 2 steps logged" test "$(grep -c '"grad_norm":' "$tmp/gpt2_forward/metrics.jsonl")" -eq 2
for o in "${gpt2_orders[@]}"; do
  for f in model.safetensors train_state.safetensors; do
    check "gpt2: $o gives the forward order's $f byte for byte" cmp "$tmp/gpt2_forward/$f" "$tmp/gpt2_$o/$f"
  done
done
# stopped after 2 steps and resumed to 3 (its checkpoint read back): the uninterrupted run's bytes
gpt2 gpt2_three --steps 3
cp -r "$tmp/gpt2_forward" "$tmp/gpt2_resumed"
timeout $LIMIT "$VRL" "${R[@]}" --resume "$tmp/gpt2_resumed" --steps 3 >"$tmp/gpt2_resumed.log" 2>&1 ||
  { echo "gpt2 resume failed:"; cat "$tmp/gpt2_resumed.log"; }
for f in model.safetensors train_state.safetensors; do
  check "gpt2: resumed from step 2 to 3 gives the 3-step run's $f byte for byte" \
    cmp "$tmp/gpt2_three/$f" "$tmp/gpt2_resumed/$f"
done
expect_error gpt2_dropout_refused "cannot train this model: GPT-2 with dropout 0.1 is not implemented on CUDA" \
  "$VRL" "${R[@]}" --model "$tmp/gpt2_dropout.json" --steps 1 --out "$tmp/gpt2_dropout"

VRL_CUDA_CPU_ORDER=sideways expect_error bad_order "VRL_CUDA_CPU_ORDER=sideways: expected forward, reverse or random" \
  "$VRL" "${T[@]}" --steps 1 --out "$tmp/bad_order"

# ZeRO-2 on two processes
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (scripts/deps.sh installs openmpi-bin): no two-process check"
else
  MPI=(mpirun --oversubscribe --bind-to none)
  [ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
  export OMPI_MCA_btl_base_warn_component_unused=0
  # same_norms A B STEPS: runs A and B logged STEPS "grad_norm" fields, the same bytes
  # (metrics.jsonl prints a double with %.17g: the same bytes are the same bits)
  same_norms() {
    local a b
    a=$(grep -o '"grad_norm":[^,]*' "$1/metrics.jsonl")
    b=$(grep -o '"grad_norm":[^,]*' "$2/metrics.jsonl")
    [ "$(grep -c . <<<"$a")" -eq "$3" ] && [ "$a" = "$b" ] && return 0
    echo "grad_norm fields of $1 and $2 (expected $3 each):"; diff <(echo "$a") <(echo "$b")
    return 1
  }
  # zero2 NAME "ONE-PROCESS ARGS" "PER-RANK ARGS" [STEPS]: one process into $tmp/NAME_one,
  # NP ranks (2 unless NP is set) into $tmp/NAME_np2; losses and weights must agree within 1e-6
  # (run_compare), and with STEPS the STEPS logged gradient norms byte for byte
  zero2() {
    local name=$1 one=$2 two=$3 steps=${4:-}
    # shellcheck disable=SC2086  # the argument strings are word lists
    run "${name}_one" $one
    # shellcheck disable=SC2086
    timeout $LIMIT "${MPI[@]}" -np "${NP:-2}" "$VRL" "${T[@]}" $two --out "$tmp/${name}_np2" >"$tmp/${name}_np2.log" 2>&1
    if grep -q "has no MPI" "$tmp/${name}_np2.log"; then
      echo "SKIP: this build of vrl has no MPI: no $name check"; return 1
    elif "$CMP" "$tmp/${name}_one" "$tmp/${name}_np2" 1e-6 >"$tmp/$name.cmp" 2>&1; then
      passes=$((passes + 1)); echo "ok   $name: $(cat "$tmp/$name.cmp")"
    else
      fails=$((fails + 1)); echo "FAIL $name:"; cat "$tmp/$name.cmp" "$tmp/${name}_np2.log"; return 1
    fi
    [ -z "$steps" ] || check "$name: one process and two log the same gradient norms, byte for byte" \
      same_norms "$tmp/${name}_one" "$tmp/${name}_np2" "$steps"
  }
  zero2 zero2_np2_vs_accum2 "--steps 4 --accum 2" "--steps 4" 4 &&
    check "the two-process run went through fast/zero.cu's NCCL path" grep -q "vrl fast: NCCL 2 ranks" \
      "$tmp/zero2_np2_vs_accum2_np2.log"
  # three ranks: a bucket of len elements is cut into blocks of ceil(len/3) rounded up to 8
  # (whole vectors), so where len is no multiple of 24 the last block is short and
  # fast/zero.cu reduces the blocks one by one to their owners (ncclReduce, not
  # ncclReduceScatter: a wrong offset there fails this); one process takes --accum 3
  NP=3 zero2 zero2_np3_vs_accum3 "--steps 3 --accum 3" "--steps 3"
  # a residual-stream variant: its mixing weights sit after the head in the table (ZERO_LATE)
  zero2 zero2_np2_vs_accum2_attnres "--steps 4 --accum 2 --variant attnres" "--steps 4 --variant attnres" 4
  # --accum is per process: four rounds per rank, of which only the last one's backward
  # reduce-scatters (Backend.reduce_next), while the losses are handed over after the step
  # (Backend.micro_losses); one process takes the same update with --accum 8. No norm check:
  # each rank's four micro-batches are added in place before the fp32 reduce-scatter, one
  # process adds the eight in a row, so the gradients themselves differ in the last bits.
  zero2 zero2_np2_accum4_vs_accum8 "--steps 3 --accum 8" "--steps 3 --accum 4"
  # AttnRes -np 2 for 2 steps, resumed by one process (--accum 2 from the run's stored
  # update) to step 4: the same logged steps (loss, lr, norm) and the same saved state, byte
  # for byte, as the uninterrupted -np 2 run (zero2_np2_vs_accum2_attnres_np2). AttnRes
  # because with the norm summed in double (before issue 40) its step 3 was 1 ulp apart
  # between one process and two (the baseline's only step 1, before the resume)
  if grep -q "has no MPI" "$tmp/zero2_np2_vs_accum2_np2.log"; then
    echo "SKIP: this build of vrl has no MPI: no resume -np 2 -> 1 check"
  elif timeout $LIMIT "${MPI[@]}" -np 2 "$VRL" "${T[@]}" --steps 2 --variant attnres --out "$tmp/resume_2to1" \
      >"$tmp/resume_2to1.log" 2>&1 &&
      timeout $LIMIT "$VRL" "${R[@]}" --resume "$tmp/resume_2to1" --steps 4 >>"$tmp/resume_2to1.log" 2>&1; then
    check "resume -np 2 -> 1: the same 4 gradient norms as the -np 2 run, byte for byte" \
      same_norms "$tmp/resume_2to1" "$tmp/zero2_np2_vs_accum2_attnres_np2" 4
    check "resume -np 2 -> 1: the same logged steps as the -np 2 run" \
      cmp <(grep -o '"step":[^,]*,"loss":[^,]*,"lr":[^,]*,"grad_norm":[^,]*' "$tmp/resume_2to1/metrics.jsonl") \
          <(grep -o '"step":[^,]*,"loss":[^,]*,"lr":[^,]*,"grad_norm":[^,]*' "$tmp/zero2_np2_vs_accum2_attnres_np2/metrics.jsonl")
    for f in model.safetensors train_state.safetensors; do
      check "resume -np 2 -> 1: the -np 2 run's $f byte for byte" \
        cmp "$tmp/resume_2to1/$f" "$tmp/zero2_np2_vs_accum2_attnres_np2/$f"
    done
  else
    fails=$((fails + 1)); echo "FAIL resume -np 2 -> 1 did not run:"; cat "$tmp/resume_2to1.log"
  fi
fi
finish
