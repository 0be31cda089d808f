#!/usr/bin/env bash
# fast_cpu_hazard_mutants.sh: the CPU layer's checkers (fast/cuda_cpu/check.h) catch one
# bug of each class a first GPU run exposes and the plain CPU tests missed (issue 37's audit),
# and the check build's cases one bug of each class issue 48's audit saw slip through.
#
# Requires the build's check-build test_fast_cpu_vs_ref and test_fast_cpu_nccl to pass, then
# injects each mutant below into a copy of its file, one at a time, rebuilds only that object
# and the one program the mutant's test runs from the build's own objects
# (conformance/mutant_build.py), and requires the run to FAIL with an error naming the kernel or
# stream operation and the hazard kind. The tree and the build are never modified. Exit 0 iff
# the unmodified programs pass and every mutant is caught. The build is VRL_BUILD_DIR (ctest
# sets it), else ./build.
#
#   MUTANTS="NAME ..."     runs only the mutants of those names (the unmodified programs still run).
#   MUTANT_DETECTOR=plain  runs the plain build's tests instead (forward order, with the
#                          guard-zone canaries, VRL_CUDA_CPU_CANARY=1, as the suite runs
#                          them) and only counts failures.
# The check detector also runs the out-of-bounds mutant with the shadows off and the canaries
# on (VRL_CUDA_CPU_CHECK=0 VRL_CUDA_CPU_CANARY=1: the layer's plain-build path), and the NCCL
# stream's missing wait in the deferred stream mode (VRL_CUDA_CPU_DEFERRED=1), where it gives
# a wrong result.
# ≈ 1 CPU-minute (a compile of one instrumented object and a short run per mutant); ctest runs
# it as fast_cpu_hazard_mutants (plain pass only).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
detector=${MUTANT_DETECTOR:-check}
case $detector in check) sfx=_check ;; plain) sfx= ; export VRL_CUDA_CPU_CANARY=1 ;; *) echo "MUTANT_DETECTOR=$detector: expected check or plain"; exit 2 ;; esac
build=${VRL_BUILD_DIR:-$root/build}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vrl-hazard-mutants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

have_nccl=0
[ -x "$build/bin/test_fast_cpu_nccl$sfx" ] && have_nccl=1

# run TEST [BIN_DIR]: run one program of BIN_DIR (default the build's bin/; nccl:
# test_fast_cpu_nccl; decode: test_fast_cpu_decode, the KV-cache decoder against ref; "ops GLOB":
# test_fast_cpu_ops's tests GLOB, the kernels alone; else the test_fast_cpu_vs_ref case TEST, or
# its arguments "mma CASE" or "flash CASE": the case with that --attention), with the variables in
# RUN_ENV; its output on stdout, its status returned
run() {
  local bin=${2:-$build/bin}
  if [ "$1" = nccl ]; then (cd "$tmp" && env TMPDIR="$tmp" ${RUN_ENV:-} "$bin/test_fast_cpu_nccl$sfx" 2>&1)
  elif [ "$1" = decode ]; then (cd "$tmp" && env TMPDIR="$tmp" ${RUN_ENV:-} "$bin/test_fast_cpu_decode$sfx" 2>&1)
  elif [ "${1%% *}" = ops ]; then
    (cd "$tmp" && env TMPDIR="$tmp" ${RUN_ENV:-} "$bin/test_fast_cpu_ops$sfx" --filter "${1#ops }" 2>&1)
  else (cd "$tmp" && read -ra args <<<"$1" && env TMPDIR="$tmp" ${RUN_ENV:-} "$bin/test_fast_cpu_vs_ref$sfx" "${args[@]}" 2>&1); fi
}

for t in tiny_baseline trainer decode $([ $have_nccl = 1 ] && echo nccl); do
  if ! out=$(run $t); then
    echo "== the UNMODIFIED tree fails $t (test_fast_cpu_vs_ref$sfx, test_fast_cpu_decode$sfx$([ $have_nccl = 1 ] && echo ", test_fast_cpu_nccl$sfx")):"
    echo "$out" | grep -v '^vrl fast' | tail -5; exit 1
  fi
done
echo "== unmodified tree passes (test_fast_cpu_vs_ref$sfx test_fast_cpu_decode$sfx$([ $have_nccl = 1 ] && echo " test_fast_cpu_nccl$sfx"))"

killed=0 total=0 missed=""
# mutant NAME FILE PATTERN REPLACEMENT TEST EXPECT...: replace the one line matching
# PATTERN (a fixed string) in FILE, run TEST, restore FILE; EXPECT: strings the error must hold
mutant() {
  local name=$1 file=$2 pattern=$3 replacement=$4 test=$5; shift 5
  if [ -n "${MUTANTS:-}" ] && [[ " $MUTANTS " != *" $name "* ]]; then return; fi
  total=$((total + 1))
  local n; n=$(grep -cF -- "$pattern" "$root/$file" || true)
  if [ "$n" != 1 ]; then echo "== $name: '$pattern' occurs $n times in $file (update this script)"; exit 1; fi
  if [ "$test" = nccl ] && [ $have_nccl = 0 ]; then echo "== $name: skipped (no MPI, no NCCL stand-in)"; total=$((total - 1)); return; fi
  # the copy keeps the file's path under $dir, so errors name it as fast/FILE:LINE
  local dir=$tmp/$name copy=$tmp/$name/$file target=test_fast_cpu_vs_ref$sfx
  [ "$test" = nccl ] && target=test_fast_cpu_nccl$sfx
  [ "$test" = decode ] && target=test_fast_cpu_decode$sfx
  [ "${test%% *}" = ops ] && target=test_fast_cpu_ops$sfx
  mkdir -p "$(dirname "$copy")"
  cp "$root/$file" "$copy"
  PAT=$pattern REP=$replacement perl -0pi -e 's/\Q$ENV{PAT}\E/$ENV{REP}/' "$copy"
  echo "== $name ($file)"
  local bin out status=0
  if ! bin=$(python3 "$root/conformance/mutant_build.py" "$build" "$target" "$file" "$copy" "$dir" 2>"$dir/build.log"); then
    echo "   the mutant does not build: $(tail -n 1 "$dir/build.log")"; missed="$missed $name"; return
  fi
  out=$(run "$test" "$(dirname "$bin")") || status=$?
  rm -rf "$dir"
  if [ $status = 0 ]; then echo "   NOT CAUGHT: the run passes"; missed="$missed $name"; return; fi
  local msg; msg=$(echo "$out" | grep -m1 -E '^vrl cuda-cpu (check|canary):' || echo "$out" | grep -v '^vrl fast' | grep -m1 -E 'FAIL|error' || true)
  echo "   $msg" | cut -c1-400
  if [ $detector = check ]; then
    for want in "$@"; do
      if ! echo "$msg" | grep -qF -- "$want"; then echo "   caught, but the error does not say '$want'"; missed="$missed $name"; return; fi
    done
  fi
  killed=$((killed + 1))
}

mutant shared_buffer_reused_across_warp_shuffles fast/ops.cu \
  's = ce_block_reduce(s, sh_sum, 1);' 's = ce_block_reduce(s, sh_max, 1);' \
  tiny_baseline "crossentropy_kernel" "shared-memory race"
mutant plain_add_from_every_block fast/adamw.cu \
  'partial[(size_t)blockIdx.x * EXACT_SUMSQ_WORDS + threadIdx.x] = s;' 'partial[threadIdx.x] += s;' \
  tiny_baseline "adamw_norm_kernel" "inter-block race"
nccl_wait='CUDA_CHECK(cudaStreamWaitEvent(z->stream, b->ready, 0));'
mutant nccl_stream_does_not_wait_for_gradients fast/zero.cu "$nccl_wait" '' \
  nccl "ncclReduceScatter" "stream race"
if [ $detector = check ]; then # the same in the deferred stream mode, checks off: a wrong result
  RUN_ENV="VRL_CUDA_CPU_CHECK=0 VRL_CUDA_CPU_DEFERRED=1" mutant nccl_stream_does_not_wait_deferred fast/zero.cu \
    "$nccl_wait" '' nccl "FAIL: step" "the NCCL path differs"
fi
mutant pinned_upload_reused_without_wait fast/model.cu \
  'CUDA_CHECK(cudaEventSynchronize(m->uploaded));' '' \
  trainer "cudaMemcpyAsync" "pinned memory"
# the cast launched over one element more than its tensors hold (the vector path then reads and
# writes a whole 16-byte pack past their ends, the scalar path one element)
cast_ok='LAUNCH_VEC(cast_to_bf16_kernel, n, vec_fits(n, {out, inp}), out, inp, n);'
cast_past='LAUNCH_VEC(cast_to_bf16_kernel, n + 1, vec_fits(n, {out, inp}), out, inp, n + 1);'
mutant one_past_the_end_inside_the_arena fast/ops.cu "$cast_ok" "$cast_past" \
  tiny_baseline "cast_to_bf16_kernel" "out of bounds"
if [ $detector = check ]; then # the same through the canaries: the shadows off, the plain build's path
  RUN_ENV="VRL_CUDA_CPU_CHECK=0 VRL_CUDA_CPU_CANARY=1" mutant one_past_the_end_canary fast/ops.cu "$cast_ok" "$cast_past" \
    tiny_baseline "cast_to_bf16_kernel" "out of bounds" "guard zone"
fi
mutant arena_memset_removed fast/model.cu \
  'if (cudaMemset(m->arena, 0, m->arena_bytes) != cudaSuccess) {' 'if (0) {' \
  tiny_baseline "kernel" "uninitialised global read"


# issue 48's audit: bugs in what a variant does, caught by the cases that exercise it (each a
# FAIL line naming the case; the check build runs every numeric comparison too)
mutant mhc_map_read_half_a_step_early fast/stream.cu \
  '    const float *Hres = M + (size_t)2 * iters * nn; /* its logarithms */' \
  '    const float *Hres = M + (size_t)(2 * iters - 1) * nn; /* its logarithms */' \
  tiny_mhc_iters1 "FAIL:" "tiny_mhc_iters1"
mutant mhc_map_stored_untransposed fast/stream.cu \
  '        rmap[(size_t)t * nn + b * n + a] = expf(Hres[k]);' '        rmap[(size_t)t * nn + a * n + b] = expf(Hres[k]);' \
  tiny_mhc_offinit "FAIL:" "tiny_mhc_offinit"
# the maps' column sums by atomicAdd from every chunk's block instead of the fixed-order pass:
# right to rounding, so only the block-order bit check sees it
colsum_atomic='__global__ void colsum_atomic_kernel(float *out, const float *x, int N, int C, int ld) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, chunk = blockIdx.y;
    if (c >= C) return;
    const int r1 = min((chunk + 1) * COLSUM_ROWS, N);
    float s = 0;
    for (int r = chunk * COLSUM_ROWS; r < r1; r++) s += x[(size_t)r * ld + c];
    atomicAdd(&out[c], s);
}
static int colsum_add_ld(float *out, float *partial, const float *x, int N, int C, int ld) {
    (void)partial;
    LAUNCH(colsum_atomic_kernel, dim3(cdiv(C, 128), cdiv(N, COLSUM_ROWS)), 128, 0, ops_stream)(out, x, N, C, ld);
    LAUNCH_CHECK();
    return 0;'
mutant column_sums_by_atomic_add fast/stream.cu \
  'static int colsum_add_ld(float *out, float *partial, const float *x, int N, int C, int ld) {' "$colsum_atomic" \
  hc4_chunks "FAIL: hc4_chunks" "differs in its bits"
mutant gpt2_position_gradient_overwritten fast/gpt2_ops.cu '    dwpe[i] += s;' '    dwpe[i] = s;' \
  gpt2_tiny_accum2 "FAIL: gpt2_tiny_accum2" "wpe"
# issue 51's RoPE inside the tensor-core attention (--attention mma). Forward: the sign of sin in
# the staged queries' rotation, the rotated queries not written back (the backward then reads
# them unrotated), the fusion in a softmax-mixing layer (attention_mix.cu calls the kernel without
# a rope, so its queries are never rotated). Backward: the sign of sin in the same-lane rotation (hd >= 16), the hd-8
# partner one lane off, and the fusion where a later layer's kept share of d(k) is added after
# attention (Eq. 2's k_m). Each a wrong loss or gradient.
mutant rope_fwd_sin_sign_flipped fast/attention_mma_forward.cu \
  'rope_rotate(x1, x2, c.e[e], s.e[e], y1[e], y2[e]);' 'rope_rotate(x1, x2, c.e[e], -s.e[e], y1[e], y2[e]);' \
  "mma gqa_hd16_resformer" "FAIL: gqa_hd16_resformer@mma"
mutant rope_fwd_queries_not_written_back fast/attention_mma_forward.cu \
  'mma_store_staged_rows<HD>(q + (size_t)b * T * ld.q + h * HD, qstage, ld.q, q0, T);' '' \
  "mma tiny_baseline" "FAIL: tiny_baseline@mma"
mutant rope_fwd_fused_in_a_mixing_layer fast/model.cu \
  'return m->attention == FAST_ATTENTION_MMA && !amix_layer(m, l);' 'return m->attention == FAST_ATTENTION_MMA;' \
  "mma tiny_attn_residual" "FAIL: tiny_attn_residual@mma"
mutant rope_bwd_sin_sign_flipped fast/attention_mma_backward.cu \
  'rope_rotate(x1, x2, c.e[k], -s.e[k],' 'rope_rotate(x1, x2, c.e[k], s.e[k],' \
  "mma gqa_hd16_resformer" "FAIL: gqa_hd16_resformer@mma" "q_proj"
mutant rope_bwd_partner_lane_off_by_one fast/attention_mma_backward.cu \
  '__shfl_xor_sync(0xffffffffu, x, 2)' '__shfl_xor_sync(0xffffffffu, x, 1)' \
  "mma tiny_baseline" "FAIL: tiny_baseline@mma" "q_proj"
mutant rope_bwd_fused_before_kept_shares fast/model.cu \
  'return !(m->amix && (kind == MIX_Q ? m->amix->dq_keep[l] : m->amix->dk_keep[l]));' 'return 1;' \
  "mma tiny_cross_layer" "FAIL: tiny_cross_layer@mma" "k_proj"
# The keys' RoPE at the tensor-core attention's K loads (AttnRope.k, fast/attention_mma_rope.cuh; no
# rope_forward pass over k): the forward's K tiles left unrotated (below the diagonal and on it:
# the rotation is in mma_next_tile), the dQ kernel's diagonal K tiles left unrotated, the sign of
# sin at the forward's K loads and at the dK/dV kernel's (its own keys), the pass dropped for flash too
# (which reads k as it is: rotated by the pass or not at all), dropped where a later layer's
# attention_mix.cu call reads k_l (Eq. 2's k_m: the kernels get no rope there), and dropped in the
# decoder (its prefill copies acts[l].k into the KV cache as RoPE'd keys). Each a wrong loss,
# gradient or logits, except where K only enters the scores (the forward, dK/dV's own keys): the
# models of test_fast_cpu_vs_ref attend nearly uniformly (small scores), so a wrong rotation there
# stays inside its bounds; test_fast_cpu_ops's attention tests, which want rope_forward's bits,
# catch those three.
mutant rope_k_fwd_tiles_unrotated fast/attention_mma_forward.cu \
  'if (kcos) mma_rope_k_rows<HD, BK>(tiles[j & 1][0], kcos, ksin, j * BK, T, 1.0f);' '' \
  "ops fast_cpu_ops/attention_mma_hd64_mqa_two_tiles" "FAIL" "attention_mma_hd64_mqa_two_tiles"
mutant rope_k_dq_diagonal_tiles_unrotated fast/attention_mma_backward.cu \
  'if (kcos) mma_rope_k_rows<HD, R>(stages + (j & 1) * 2 * R * RS, kcos, ksin, j * R, T, 1.0f); /* as above */' '' \
  "mma tiny_baseline" "FAIL: tiny_baseline@mma" "q_proj"
mutant rope_k_fwd_sin_sign_flipped fast/attention_mma_forward.cu \
  'mma_rope_k_rows<HD, BK>(tiles[j & 1][0], kcos, ksin, j * BK, T, 1.0f);' \
  'mma_rope_k_rows<HD, BK>(tiles[j & 1][0], kcos, ksin, j * BK, T, -1.0f);' \
  "ops fast_cpu_ops/attention_mma_hd8_padded_to_16" "FAIL" "attention_mma_hd8_padded_to_16"
mutant rope_k_dkdv_sin_sign_flipped fast/attention_mma_backward.cu \
  'mma_rope_k_rows<HD, MMA_BWD_OWN>(stages, kcos, ksin, j0, T, 1.0f);' \
  'mma_rope_k_rows<HD, MMA_BWD_OWN>(stages, kcos, ksin, j0, T, -1.0f);' \
  "ops fast_cpu_ops/attention_mma_backward_hd128" "FAIL" "attention_mma_backward_hd128"
mutant rope_k_pass_dropped_for_flash fast/model.cu \
  'return m->attention == FAST_ATTENTION_MMA && rope_fused(m, l, MIX_K) && !m->decoder;' 'return !amix_layer(m, l) && !m->decoder;' \
  "flash tiny_baseline" "FAIL: tiny_baseline@flash"
mutant rope_k_pass_dropped_for_a_later_reader fast/model.cu \
  'return m->attention == FAST_ATTENTION_MMA && rope_fused(m, l, MIX_K) && !m->decoder;' 'return m->attention == FAST_ATTENTION_MMA && !amix_layer(m, l) && !m->decoder;' \
  "mma tiny_cross_layer" "FAIL: tiny_cross_layer@mma"
mutant rope_k_pass_dropped_in_the_decoder fast/model.cu \
  'return m->attention == FAST_ATTENTION_MMA && rope_fused(m, l, MIX_K) && !m->decoder;' \
  'return m->attention == FAST_ATTENTION_MMA && rope_fused(m, l, MIX_K);' \
  decode "FAIL:" "decoder"
# Not here, each caught by its own test (this script's runs are test_fast_cpu_vs_ref's cases
# and test_fast_cpu_nccl at one rank): fast/mma.cuh's asm without .trans (test_mma_ptx builds
# that mutant itself), ZeRO's uneven-bucket reduce from a wrong offset (needs 3 ranks:
# test_fast_cpu_train's -np 3 check), the race checker forgetting reads by several warps
# (test_cuda_cpu_check's every_shared_memory_pattern)

echo "== $detector detector: $killed of $total mutants caught${missed:+ (missed:$missed)}"
[ $detector = plain ] || [ "$killed" = "$total" ]
