#!/usr/bin/env bash
# attention_wgmma_mutants.sh: the wgmma attention forward's tests (conformance/
# test_fast_cpu_attention_wgmma.cpp on fast/attention_wgmma_forward.cu) catch one bug of each class
# its pipeline, layouts and softmax could have: a K/V stage freed while the P·V wgmma still reads it
# (wrong values; in the check build the TMA refill is named as a write before the wgmma landed),
# the full barrier's phase counted from the tile instead of the ring (a deadlock), an expect_tx
# short of the stage, the tiles' base off the 128-byte swizzle's 1024 bytes, the k16 step of Q·Kᵀ not moving to
# the second 64-dim block (hd 128), V's N-major descriptor's LBO or k16 step wrong, P's A fragment
# rows swapped, the causal mask dropped, the online softmax's rescale of O dropped, the GQA head
# map wrong, the batch's row offset missing from the TMA coordinates, and the lse's scale dropped.
# Not among them: a consumer that skips its full-barrier wait altogether, which the CPU layer cannot
# show (docs/design/cuda-on-cpu.md, "TMA on the CPU", what is not modelled).
#
# ≈ 25 CPU-s (a compile of one object and a short run per mutant).
# The harness (unmodified programs first, one rebuild per mutant, each must fail with its words)
# is conformance/layer_mutants_lib.sh.
SUITE=attention_wgmma PROGRAM=test_fast_cpu_attention_wgmma CRITERION_SUITE=attention_wgmma
. "$(dirname "$0")/layer_mutants_lib.sh"

k=fast/attention_wgmma_forward.cu P=test_fast_cpu_attention_wgmma C=test_fast_cpu_attention_wgmma_check
ring=hd64_mqa_three_key_tiles_ring_wraps gqa=hd64_gqa_two_batches_t_past_the_tile h128=hd128_gqa
release='        wgmma_wait<0>(); /* the products read the stage: free it */'
mutant stage_freed_while_read $k "$release" '        wgmma_wait<1>();' $P $ring "out, order"
mutant stage_freed_while_read_checked $k "$release" '        wgmma_wait<1>();' $C $ring \
  "shared-memory race (write before a wgmma landed) in kernel attention_wgmma"
mutant phase_from_the_tile_not_the_ring $k '        mbarrier_wait_parity(&full[s], (j / AW_STAGES) & 1);' \
  '        mbarrier_wait_parity(&full[s], j & 1);' $P $ring "kernel attention_wgmma"
mutant expect_tx_short $k '            mbarrier_arrive_expect_tx(&full[s], D::STAGE);' \
  '            mbarrier_arrive_expect_tx(&full[s], D::STAGE - 128);' $P $ring "expect_tx"
mutant base_not_swizzle_aligned $k \
  '    unsigned char *const qs = aw_dyn + ((1024u - wgmma_smem_window(aw_dyn) % 1024u) % 1024u); /* Q, then the stages */' \
  '    unsigned char *const qs = aw_dyn + 512;' $P $ring "swizzle"
mutant qk_second_dim_block_not_reached $k \
  '                                       dk + (kk >> 2) * (AW_BLOCK(AW_BK) / 16) + 2 * (kk & 3), kk != 0);' \
  '                                       dk + 2 * (kk & 3), kk != 0);' $P $h128 "out, order"
mutant v_lbo_wrong $k \
  '        const uint64_t dv = wgmma_desc(vs, AW_BLOCK(AW_BK), 8 * AW_ROW, WGMMA_SWIZZLE_128B);' \
  '        const uint64_t dv = wgmma_desc(vs, AW_BLOCK(64), 8 * AW_ROW, WGMMA_SWIZZLE_128B);' $P $h128 "out, order"
mutant v_k16_step_wrong $k \
  '        for (int kk = 0; kk < AW_BK / 16; kk++) wgmma_bf16_rs<HD, 1>(o, pa[kk], dv + 128 * kk, 1);' \
  '        for (int kk = 0; kk < AW_BK / 16; kk++) wgmma_bf16_rs<HD, 1>(o, pa[kk], dv + 64 * kk, 1);' $P $ring "out, order"
mutant p_fragment_rows_swapped $k \
  '            for (int r = 0; r < 4; r++) pa[kk][r] = pack_bf16x2(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);' \
  '            for (int r = 0; r < 4; r++) pa[kk][r] = pack_bf16x2(sc[8 * kk + 2 * (r ^ 1)], sc[8 * kk + 2 * (r ^ 1) + 1]);' \
  $P $ring "out, order"
mutant causal_mask_dropped $k '        if (j == ntiles - 1) {' '        if (j == ntiles) {' $P $ring "out, order"
mutant o_not_rescaled $k '        for (int i = 0; i < HD / 2; i++) o[i] *= (i >> 1) & 1 ? corr_hi : corr_lo;' '' \
  $P $ring "out, order"
mutant gqa_head_map_wrong $k '    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h / (NH / NKV);' \
  '    const int b = blockIdx.y / NH, h = blockIdx.y % NH, kh = h % NKV;' $P $gqa "out, order"
mutant batch_row_offset_missing $k '        const int row0 = b * T; /* the batch'"'"'s first row of the [B·T] maps */' \
  '        const int row0 = 0;' $P $gqa "out, order"
mutant lse_unscaled $k '    if (t == 0 && row_lo < T) lrow[row_lo] = m_lo * scale + logf(l_lo);' \
  '    if (t == 0 && row_lo < T) lrow[row_lo] = m_lo + logf(l_lo);' $P $ring "lse, order"
mutants_summary
