#!/usr/bin/env bash
# attention_wgmma_backward_mutants.sh: the wgmma attention backward's tests (conformance/
# test_fast_cpu_attention_wgmma_backward.cpp on fast/attention_wgmma_backward.cu) catch one bug of
# each class its pipelines, layouts and gradient arithmetic could have: a Q/dO or K/V stage freed
# while the RS products still read it (wrong values; in the check build named as a write before the
# wgmma landed), the full barrier's phase counted from the tile (a deadlock), the own tile's second
# 64-row box not reached, Pᵀ's A fragment rows swapped, the causal mask dropped (either kernel), a
# diagonal tile skipped, dS's D term dropped (either kernel), the tile's query head of the GQA walk
# wrong, dQ's kv head map wrong, the +inf lse of queries past T (the next batch's rows) lost, the
# lse/D shuffle's source lane wrong, dQ's N-major K descriptor's LBO (hd 128) or k16 step wrong,
# dK/dV's N-major Q descriptor's LBO at hd 128, the hd-128 producer warpgroup's issuing thread
# not its first (four threads issue every load: the layer reports a deadlock), dK's scale dropped, and
# RoPE's transpose with the wrong sign. Not here: setmaxnreg's counts, a no-op on the CPU layer
# (ptxas' spill report checks them).
#
# ≈ 65 CPU-s (a compile of one object and a short run per mutant; 21 of 21 caught at its commit).
# The harness: conformance/layer_mutants_lib.sh.
SUITE=attention_wgmma_backward PROGRAM=test_fast_cpu_attention_wgmma_backward CRITERION_SUITE=attention_wgmma_backward
. "$(dirname "$0")/layer_mutants_lib.sh"

k=fast/attention_wgmma_backward.cu P=test_fast_cpu_attention_wgmma_backward C=test_fast_cpu_attention_wgmma_backward_check
g=hd64_gqa_two_batches_t_past_the_tiles h128=hd128_mqa
dkdv_release='            wgmma_wait<0>(); /* the products read the stage: free it */'
dq_release='            wgmma_wait<0>(); /* the product read the stage: free it */'
mutant dkdv_stage_freed_while_read $k "$dkdv_release" '            wgmma_wait<1>();' $P $g "hd=64 d"
mutant dkdv_stage_freed_while_read_checked $k "$dkdv_release" '            wgmma_wait<1>();' $C $g \
  "shared-memory race (write before a wgmma landed) in kernel attention_wgmma_bwd_dkdv"
mutant dq_stage_freed_while_read $k "$dq_release" '            wgmma_wait<1>();' $P $g "hd=64 dq"
mutant phase_from_the_tile_not_the_ring $k '        mbarrier_wait_parity(&full[s], (n / WB_STAGES) & 1);' \
  '        mbarrier_wait_parity(&full[s], n & 1);' $P $g "kernel attention_wgmma_bwd_dkdv"
mutant own_tile_second_box_not_reached $k '                        row + WB_TILE * half, bar);' \
  '                        row, bar);' $P $g "hd=64 d"
mutant p_fragment_rows_swapped $k \
  'pa[c >> 1][2 * (c & 1) + r] = pack_bf16x2(st[4 * c + 2 * r], st[4 * c + 2 * r + 1]);' \
  'pa[c >> 1][2 * (c & 1) + r] = pack_bf16x2(st[4 * c + 2 * (1 - r)], st[4 * c + 2 * (1 - r) + 1]);' \
  $P $g "hd=64 dv"
mutant dkdv_mask_dropped $k '            const bool mask = i0 < kw + 64;' '            const bool mask = false;' \
  $P $g "hd=64 d"
mutant dq_mask_dropped $k '            const bool mask = j0 + WB_TILE - 1 > qw;' '            const bool mask = false;' \
  $P $g "hd=64 dq"
mutant dkdv_diagonal_tile_skipped $k '        if (i0 + WB_TILE > kw) {' '        if (i0 > kw) {' $P $g "hd=64 d"
mutant dkdv_ds_without_d $k '                        dpt[i] = p * (dpt[i] - dd);' '                        dpt[i] = p * dpt[i];' \
  $P $g "hd=64 dk"
mutant dq_ds_without_d $k '                    dp[i] = p * (dp[i] - (hi ? d_hi : d_lo));' '                    dp[i] = p * dp[i];' \
  $P $g "hd=64 dq"
mutant gqa_tile_query_head_wrong $k '            wb_load_tile<HD>(qs, &q_map, h * HD, row0 + i0, &full[s]);' \
  '            wb_load_tile<HD>(qs, &q_map, kh * HD, row0 + i0, &full[s]);' $P $g "hd=64 dk"
mutant dq_kv_head_map_wrong $k '    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);' \
  '    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h % NKV;' $P $g "hd=64 dq"
mutant queries_past_t_not_zeroed $k 'l2r[u] = qi < T ? lrow[qi] * WB_LOG2E : INFINITY;' \
  'l2r[u] = qi < T ? lrow[qi] * WB_LOG2E : 0.0f;' $P $g "hd=64 d"
mutant lse_shuffle_lane_wrong $k 'const float l2 = __shfl_sync(0xffffffffu, l2r[c >> 2], 8 * (c & 3) + 2 * t + e);' \
  'const float l2 = __shfl_sync(0xffffffffu, l2r[c >> 2], 8 * (c & 3) + 2 * t);' $P $g "hd=64 d"
mutant dq_k_lbo_wrong $k 'const uint64_t dkn = wgmma_desc(kt, WB_BLOCK(WB_TILE), 8 * WB_ROW, WGMMA_SWIZZLE_128B);' \
  'const uint64_t dkn = wgmma_desc(kt, WB_BLOCK(WB_OWN), 8 * WB_ROW, WGMMA_SWIZZLE_128B);' $P $h128 "hd=128 dq"
mutant dq_k16_step_wrong $k 'wgmma_bf16_rs<HD, 1>(dqa, sa[kk], dkn + 128 * kk, 1);' \
  'wgmma_bf16_rs<HD, 1>(dqa, sa[kk], dkn + 64 * kk, 1);' $P $g "hd=64 dq"
mutant dkdv_q_lbo_wrong_hd128 $k 'const uint64_t dq = wgmma_desc(qs, WB_BLOCK(WB_TILE), 8 * WB_ROW, WGMMA_SWIZZLE_128B);' \
  'const uint64_t dq = wgmma_desc(qs, WB_BLOCK(WB_OWN), 8 * WB_ROW, WGMMA_SWIZZLE_128B);' $P $h128 "hd=128 dk"
mutant dkdv_hd128_producer_thread_wrong $k '        if (threadIdx.x % (WB_DKDV_THREADS(HD) - 256)) return;' \
  '        if (threadIdx.x % 32) return;' $P $h128 "kernel attention_wgmma_bwd_dkdv"
mutant dk_unscaled $k '__float2bfloat16(dka[i] * scale);' '__float2bfloat16(dka[i]);' $P $g "hd=64 dk"
mutant rope_transpose_sign $k 'cos_t[o], -sin_t[o], acc[i]' 'cos_t[o], sin_t[o], acc[i]' $P $g "(rope)"
mutants_summary
