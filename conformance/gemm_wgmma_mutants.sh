#!/usr/bin/env bash
# gemm_wgmma_mutants.sh: the wgmma GEMM's tests (conformance/test_fast_cpu_gemm_wgmma.cpp on
# fast/gemm_wgmma.cu) catch one bug of each class its pipeline, layouts and epilogues could have:
# a stage freed while a wgmma still reads it (wrong values; in the check build the TMA refill is
# named as a write before the wgmma landed), the consumers' phase parity counted from the tile's
# k steps instead of the ring's (a stage read before its bytes: wrong values), the tile's last
# stage never freed (a deadlock), an
# expect_tx short of the stage (an error), the k16 step not advancing through the stage, the
# N-major descriptor's LBO (the next 64-column block) wrong, the up rows read from the gate's,
# the tiles' base not aligned to the 128-byte swizzle's 1024 bytes, the accumulator's first
# k step adding to the last tile's, each epilogue's rounding point moved, and the RoPE epilogue's
# sine sign, position (per sequence) and pair partner.
# Not among them: a consumer that skips its full-barrier wait altogether. On the layer the producer,
# which never blocks before its ring is full, lands its boxes before the consumer warpgroup's first
# rendezvous completes, so no schedule reads a stage early (docs/design/cuda-on-cpu.md, "TMA on the
# CPU", what is not modelled).
#
# The harness (unmodified programs first, one rebuild per mutant, each must fail with its words)
# is conformance/layer_mutants_lib.sh.
SUITE=gemm_wgmma PROGRAM=test_fast_cpu_gemm_wgmma CRITERION_SUITE=gemm_wgmma
. "$(dirname "$0")/layer_mutants_lib.sh"

k=fast/gemm_wgmma.cu P=test_fast_cpu_gemm_wgmma C=test_fast_cpu_gemm_wgmma_check
fwd=edge_tiles_k_tail_and_wrapping_stages swi=swiglu_epilogue_writes_gate_up_and_the_product
dx=down_projection_dx_with_the_swiglu_backward
release='            wgmma_wait<1>(); /* the previous k step'"'"'s products have landed: free its stage */'
mutant stage_freed_while_read $k "$release" '            wgmma_wait<2>();' $P $fwd "expected"
mutant stage_freed_while_read_checked $k "$release" '            wgmma_wait<2>();' $C $fwd \
  "shared-memory race (write before a wgmma landed) in kernel gemm_wgmma"
mutant phase_from_the_tile_not_the_ring $k '            mbarrier_wait_parity(&full[s], (it / GW_STAGES) & 1);' \
  '            mbarrier_wait_parity(&full[s], (kt / GW_STAGES) & 1);' $P $fwd "kernel gemm_wgmma"
mutant last_stage_never_freed $k \
  '        if (tid == 0) mbarrier_arrive(&empty[(it - 1) % GW_STAGES]); /* the tile'"'"'s last stage */' '' $P $fwd "deadlock"
mutant expect_tx_short $k '                mbarrier_arrive_expect_tx(&full[s], stage_bytes);' \
  '                mbarrier_arrive_expect_tx(&full[s], stage_bytes - 128);' $P $fwd "expect_tx"
mutant k16_step_not_advanced $k '                wgmma_bf16_ss<BN, 0, BT>(acc, da + 2 * k, db + b_step * k, kt > 0 || k > 0);' \
  '                wgmma_bf16_ss<BN, 0, BT>(acc, da, db + b_step * k, kt > 0 || k > 0);' $P $fwd "expected"
mutant n_major_lbo_wrong $k \
  '            const uint64_t db = BT ? wgmma_desc(b_tile, 64 * GW_ROW_BYTES, 8 * GW_ROW_BYTES, WGMMA_SWIZZLE_128B)' \
  '            const uint64_t db = BT ? wgmma_desc(b_tile, 32 * GW_ROW_BYTES, 8 * GW_ROW_BYTES, WGMMA_SWIZZLE_128B)' \
  $P $dx "expected"
mutant up_rows_from_the_gate $k \
  '                    tma_load_2d(b_tile + (BN / 2) * GW_ROW_BYTES, &b_map, kt * GW_BK, N + n0, &full[s]);' \
  '                    tma_load_2d(b_tile + (BN / 2) * GW_ROW_BYTES, &b_map, kt * GW_BK, n0, &full[s]);' $P $swi "expected"
mutant base_not_swizzle_aligned $k '    unsigned char *base = gw_dyn + ((1024u - wgmma_smem_window(gw_dyn) % 1024u) % 1024u);' \
  '    unsigned char *base = gw_dyn + 512;' $P $fwd "swizzle"
mutant first_k_step_accumulates $k \
  '                wgmma_bf16_ss<BN, 0, BT>(acc, da + 2 * k, db + b_step * k, kt > 0 || k > 0);' \
  '                wgmma_bf16_ss<BN, 0, BT>(acc, da + 2 * k, db + b_step * k, 1);' $P $fwd "expected"
mutant dh_not_rounded_first $k \
  '            const float dh = __bfloat162float(__float2bfloat16(acc[i])); /* cuBLASLt'"'"'s bf16 dh, then the pass */' \
  '            const float dh = acc[i];' $P $dx "expected"
mutant swiglu_from_unrounded_gate $k \
  '            out2[(size_t)row * N + f] = swiglu_value(__bfloat162float(gb), __bfloat162float(ub));' \
  '            out2[(size_t)row * N + f] = swiglu_value(acc[i], __bfloat162float(ub));' $P $swi "swiglu_forward gives"
rope=qkv_with_rope_in_the_epilogue_hd64_gqa
mutant rope_sin_sign_flipped $k \
  '                            rope.cos_t[pos * h2 + j], rope.sin_t[pos * h2 + j], y1, y2);' \
  '                            rope.cos_t[pos * h2 + j], -rope.sin_t[pos * h2 + j], y1, y2);' $P $rope "qkv + RoPE"
mutant rope_position_not_per_sequence $k '                const int pos = row % rope.T, i2 = i + h2 / 2;' \
  '                const int pos = row % (rope.T + 1), i2 = i + h2 / 2;' $P $rope "qkv + RoPE"
mutant rope_partner_one_group_off $k '                const int pos = row % rope.T, i2 = i + h2 / 2;' \
  '                const int pos = row % rope.T, i2 = i + h2 / 2 - 4;' $P $rope "qkv + RoPE"
mutants_summary
