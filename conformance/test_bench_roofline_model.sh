#!/usr/bin/env bash
# test_bench_roofline_model.sh: bench/roofline_model.py, the resource model behind roofline.py's
# --predict, --calibrate and --bytes, on inputs whose answers are worked by hand: a tiling's
# shared-memory bound, its load loops' trips, Little's law in blocks, a GEMM's and a streaming
# kernel's time, one kernel's bytes; the tilings against the ldmatrix counts of the committed SASS
# mix; the forward's new rows (fwd51: cp.async a tile ahead, the mask on the diagonal) beside
# faab088's; the switch a new backward's rows take (on synthetic rows); the figures
# docs/design/roofline.md prints. No GPU, no nvcc.
# usage: test_bench_roofline_model.sh REPO_ROOT
set -u
ROOT=$1
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
. "$(dirname "$0")/cli_test_lib.sh"
ROOFLINE="$ROOT/bench/roofline.py" MIX="$ROOT/bench/attention_sass_mix.txt"
py() { PYTHONPATH="$ROOT/bench" python3 -c "import roofline_model as m; $1"; }

# our forward at hd 64: a warp of 16 rows against a 64-key tile is 16·64·64/1024 = 64 HMMA; it
# reads K and V whole by ldmatrix (2·64·64·2 = 16384 B), the block stores both (16384 B): 4 warps
# x 16384 + 16384 = 81920 B over 128 B a clock = 640 clocks; the loads: 64 rows x 128 B = 512
# 16-byte words over 128 threads = 4 trips each for K and V: 8. Its exponentials: 16 x 64 scores
# over 32 lanes = 32 a lane, plus one a row for the running max (2 rows a lane) = 34 MUFU a warp
# (the SASS's MUFU column says 34); 4 warps x 34 x 32 lanes / 16 a clock = 272 clocks, added to
# the products' 4 x 64 / 0.5 = 512.
check "forward tiling hd 64: 64 HMMA/warp, 640 shared clocks, 8 round trips, 512 + 272 tensor clocks" py "
t = m.forward_tiling(64, 16, 4, 64, True)
_, p = m.block_tile(t, 11.234, 3, None, 0.5)
assert t['hmma_warp'] == 64 and t['trips'] == 8 and p['shared'] == 640, (t, p)
assert t['exp_warp'] == 34 and p['mufu'] == 272 and p['tensor'] == 512 + 272, (t, p)
assert abs(p['issue'] - 11.234 * 64) < 1e-9
# Little's law: (issue 718.98 + 8 x 260) / the tile's work (the tensor's 784 over the issue's
# 718.98) = 3.570 blocks hide the wait; at 3 the latency term (718.98 + 2080) / 3 = 933.0 binds
assert abs(m.blocks_to_hide(t, 11.234, 0.5) - (11.234 * 64 + 2080) / 784) < 1e-9
assert abs(p['latency'] - (11.234 * 64 + 2080) / 3) < 1e-9"
# FlashAttention-2's hd 128 tiling: 32 rows a warp, 64 keys: 256 HMMA/warp; (4 x 32768 + 32768) / 128
# = 1280 shared clocks; cp.async a tile ahead: one round trip, covered by the tile's issue
# Its exponentials: 32 rows x 64 keys / 32 lanes + 4 rows a lane = 68 a warp: 4 x 68 x 2 = 544
# clocks of MUFU. At hd 64 its tile is 128 keys (kBlockN 128): 32·128·64/1024 = 256 HMMA again,
# 32·128/32 + 4 = 132 exponentials: 1056 clocks, twice hd 128's for the same FLOPs.
check "FA2 tiling hd 128: 256 HMMA/warp, 1280 shared clocks, one trip a tile ahead, none exposed; MUFU 544, 1056 at hd 64" py "
t = m.fa2_forward_tiling(128)
_, p = m.block_tile(t, 2.7, 2, None, 0.5)
assert t['hmma_warp'] == 256 and p['shared'] == 1280 and (t['trips'], t['prefetch']) == (1, 1), (t, p)
assert p['latency'] == 2.7 * 256 / 2 and p['mufu'] == 544, p
t = m.fa2_forward_tiling(64)
_, p = m.block_tile(t, 2.7, 2, None, 0.5)
assert (t['stream'], t['hmma_warp'], p['mufu']) == (128, 256, 1056), (t, p)"
# FA2's backward at hd 64: 128 keys a block, 128 queries a tile, 8 warps: 5 products x 128·128·64 x
# 2 / 4096 / 8 = 320 HMMA a warp. ldmatrix, each product's A once per warp column, B once per warp
# row (layouts 4 x 2): S and dP 2·(128·64·2 + 64·128·4) = 98304 B each, dV, dK and dQ
# 2·(128·128·2 + 128·64·4) = 131072 each: 589824 B; stores P, dS 65536, Q, dO 32768, lse, D 1024:
# (589824 + 99328) / 128 = 5384 clocks. 16384 exponentials / 16 = 1024 clocks. Issue: 8 warps on
# 4 schedulers, 2 x 3.0 x 320 = 1920. At hd 128 (64 queries a tile, layouts 2, 4, 2) the same
# 320 HMMA and 589824 B, 8192 exponentials: 512 clocks.
check "FA2 backward tilings: 320 HMMA/warp, 5384 shared clocks, MUFU 1024 (hd 64) and 512 (hd 128), issue of 2 warps a scheduler" py "
t = m.fa2_backward_tiling(64)
_, p = m.block_tile(t, 3.0, 1, None, 0.5)
assert t['hmma_warp'] == 320 and t['smem_read_warp'] * 8 == 589824 and p['shared'] == 5384, (t, p)
assert p['mufu'] == 1024 and p['issue'] == 1920 and p['tensor'] == 8 * 320 / 0.5 + 1024, p
t = m.fa2_backward_tiling(128)
_, p = m.block_tile(t, 3.0, 1, None, 0.5)
assert (t['hmma_warp'], t['smem_read_warp'] * 8, t['stream'], p['mufu']) == (320, 589824, 64, 512), (t, p)"
# issue 51's forward at hd 64 (the fwd51 row: 5.422 instructions per HMMA): issue 5.422 x 64 =
# 347.0 clocks covers the 260-clock round trip issued a tile ahead: latency 347.0 / 3 blocks. At
# 2 instructions per HMMA (128 clocks) 132 clocks stay exposed: (128 + 132) / 3. A diagonal tile
# adds 2 instructions a score a lane: 16 rows x 64 keys / 32 lanes x 2 = 64 clocks of issue.
check "fwd51 tiling hd 64: the prefetched trip hidden at 5.42 iph, 132 clocks exposed at 2, the mask 64" py "
t = m.fwd51_tilings(64)['attention_mma_forward_kernel']
_, p = m.block_tile(t, 5.422, 3, None, 0.5)
assert (t['hmma_warp'], t['stream'], t['trips'], t['prefetch']) == (64, 64, 1, 1), t
assert abs(p['latency'] - 5.422 * 64 / 3) < 1e-9, p
_, p = m.block_tile(t, 2.0, 3, None, 0.5)
assert abs(p['latency'] - 260 / 3) < 1e-9, p
_, p = m.block_tile(t, 5.422, 3, None, 0.5, diagonal=True)
assert abs(p['issue'] - (5.422 * 64 + 64)) < 1e-9, p
assert m.fwd51_tilings(128)['attention_mma_forward_kernel']['stream'] == 32"
# the wave tail: blocks of 3, 1, 1, 1 clocks on 2 slots end at 3 launched longest first, at 4
# launched shortest first (1, 1, 1, 3: the 3 starts at 1)
check "schedule: longest first 3 clocks, shortest first 4" py "
assert m.schedule([3, 1, 1, 1], 2) == 3 and m.schedule([1, 1, 1, 3], 2) == 4"
# the backward: dK/dV at hd 64 streams 32 queries: 64 HMMA, 4·32·64·2 + 2·16·64·2 = 20480 B of
# ldmatrix per warp, 2 x 2 trips (Q, dO) + 1 (lse, D); dQ 48 HMMA, 3·32·64·2 + 4096 = 16384 B, 4 trips
check "backward tilings hd 64: dK/dV 64 HMMA 20480 B 5 trips, dQ 48 HMMA 16384 B 4 trips" py "
a, b = m.dkdv_tiling(64, 16, 4, 32), m.dq_tiling(64, 16, 4, 32)
assert (a['hmma_warp'], a['smem_read_warp'], a['trips']) == (64, 20480, 5), a
assert (b['hmma_warp'], b['smem_read_warp'], b['trips']) == (48, 16384, 4), b"

# the tilings against the SASS: hot-loop HMMA count = HMMA per warp per tile, LDSM (x4, 512 B)
# x 512 = ldmatrix bytes per warp per tile, MUFU = the exponentials a lane (one a score, and in the
# forward one a row: 16·64/32 + 2 = 34 at hd 64, 16·32/32 + 2 = 18 for fwd51 at hd 128; the
# backward's 16 x 32 / 32 = 16, 8 at hd 128), for every mma, fwd51, bwd51 and rope51 row at hd 64 and 128
check "tilings match the committed SASS's HMMA, LDSM and MUFU counts (mma, fwd51, bwd51, rope51 rows)" py "
rows = [l.split() for l in open('$MIX') if l.split()[:1] in (['mma'], ['fwd51'], ['bwd51'], ['rope51'])]
n = 0
for r in rows:
    name, hd = r[1].split('<')[0], int(r[1].split('<')[1].rstrip('>'))
    t = m.TILINGS[r[0]](hd)[name]
    assert t['hmma_warp'] == int(r[4]) and t['smem_read_warp'] == 512 * int(r[5]), (r, t)
    assert t['exp_warp'] == int(r[9]), (r, t)
    n += 1
assert n == 18, n"
awk '$1 == "rope51" && $2 ~ /dq_kernel<64>/ { $10 = 17 } { print }' "$MIX" >"$tmp/badmufu.txt"
expect_error "--predict: a rope51 row whose MUFU count is not its tiling's exponentials" \
  "'rope51' attention_mma_backward_dq_kernel<64>: the SASS's 17 MUFU a tile differ from its tiling's 16 exponentials a lane" \
  python3 "$ROOFLINE" --predict --mix-file "$tmp/badmufu.txt"

# a GEMM of one 128x256 tile, K = 640 (10 steps of 64) at rate 1: 10 x 128·256·64·2/4096 = 10240
# clocks + a 600-clock fill, on a 1-SM GPU at 1 GHz: 10.84 us; a streaming kernel on a GPU whose
# SM needs 64 B/ns x 600 ns = 38400 B in flight but has 32 warps x 32 x 16 = 16384: 1 GB at
# 64 GB/s x 0.8 x 16384/38400
check "gemm_time and mem_time on a one-SM GPU" py "
g = {'sms': 1, 'clock': 1e9, 'hbm': 64e9}
t, bound, cfg = m.gemm_time(128, 256, 640, 0, g, 1.0)
assert abs(t - 10.84e-6) < 1e-12 and cfg == '128x256 split 1', (t, cfg)
assert abs(m.mem_time(1e9, g) - 1e9 / (64e9 * 0.8 * 16384 / 38400)) < 1e-9"

# the byte count: swiglu fwd reads gate|up and writes h, 3 x 16384 x 3584 x 2 B = 352.3 MB a call,
# 24 calls 8.46 GB; the sums docs/design/roofline.md prints
python3 "$ROOFLINE" --bytes >"$tmp/bytes.txt" 2>&1
check "--bytes: swiglu fwd 352.3 MB a call, 8.46 GB a step" \
  grep -qE '^swiglu fwd +mem +24 +352\.3 +8\.46$' "$tmp/bytes.txt"
# d(ln) in bf16 (the dX GEMMs write it, the norms' backward reads it): N·d·(2 + 2 + 2·4 + 2) + N·4 + 512 chunks·d·4
# = 237.0 MB a call; 2 B an element less each way than fp32,
# 16384 x 1024 x 2 B x 49 = 1.64 GB out of the norms' backward
check "--bytes: rmsnorm bwd 237.0 MB a call (dy bf16); 123.2 GB in all, 57.2 GB in the memory-bound kernels" \
  bash -c "grep -qE '^rmsnorm bwd \+ gain partials \(final, ln2, ln1\) +mem +49 +237\.0 +11\.62$' '$tmp/bytes.txt' &&
           grep -q '123.2 GB in all; 57.2 GB in the memory-bound kernels' '$tmp/bytes.txt'"
# RoPE inside the tensor-core attention: no rope bwd pass (3.22 GB), no rope fwd pass (the keys'
# was 2 x 16384 x 1024 x 2 B + the tables 0.52 MB = 67.6 MB a call, 1.62 GB a step: the keys are
# rotated where attention stages them, read unrotated as before); the forward writes the rotated
# queries back (+33.55 MB) and reads the tables once (+0.52 MB): 135.3 -> 169.3 MB; the backward
# reads the tables once: 304.1 -> 304.6 MB
check "--bytes: no rope pass; attention fwd 169.3 MB, bwd 304.6 MB a call" \
  bash -c "! grep -q '^rope ' '$tmp/bytes.txt' &&
           grep -qE '^attention fwd \(tensor cores\) +attn_fwd +24 +169\.3 +4\.06$' '$tmp/bytes.txt' &&
           grep -qE '^attention bwd \(tensor cores\) +attn_bwd +24 +304\.6 +7\.31$' '$tmp/bytes.txt'"

# fast/gemm_wgmma.cu priced (bench/roofline_gemm.py): one 128x256 tile, K = 640 at rate 1 on a one-SM
# GPU at 1 GHz: the fill 600 + the main loop 10 x 1024 + the epilogue 128·256·2 B / 64 B a clock + 260 =
# 12124 clocks, 12.124 us; two tiles on that SM: 600 + 2 x 11524; fast.cu's Kernel 6 fits its rate at
# 8192^3 and its 6144^3 point lands within 15 %
check "our wgmma GEMM: one tile 12.124 us, two 23.648 us on one SM; Kernel 6 fitted, 6144^3 at 1.067" \
  env PYTHONPATH="$ROOT/bench" python3 -c "
import roofline_gemm as g
one = {'sms': 1, 'clock': 1e9, 'hbm': 64e9}
t = g.gemm_time(128, 256, 640, 0, one, 2, 1.0)[0]
assert abs(t - 12.124e-6) < 1e-12, t
t2 = g.gemm_time(256, 256, 640, 0, one, 2, 1.0)[0]
assert abs(t2 - 23.648e-6) < 1e-12, t2
rows = g.calibration()
assert abs(rows[0][3] - 1) < 1e-6 and 1.06 < rows[1][3] < 1.07, rows"
# --gemm wgmma: SwiGLU's passes inside the GEMMs: 8.46 + 14.09 = 22.55 GB of memory-bound bytes less
# (57.2 -> 34.6), while the gate|up GEMM also writes h (+8.46 / 3 = 2.82 GB) and the down projection's
# dX reads gate|up and writes d(gate|up) instead of dh (+3 x 2.82 = 8.46 GB): 123.2 -> 112.0 GB in all
python3 "$ROOFLINE" --bytes --gemm wgmma >"$tmp/bytes_w.txt" 2>&1
check "--bytes --gemm wgmma: no swiglu pass; 112.0 GB in all, 34.6 GB memory-bound" \
  bash -c "! grep -q '^swiglu' '$tmp/bytes_w.txt' && grep -q '112.0 GB in all; 34.6 GB in the memory-bound kernels' '$tmp/bytes_w.txt'"
python3 "$ROOFLINE" --predict --gemm wgmma >"$tmp/pred_w.txt" 2>&1
check "--predict --gemm wgmma: H100 96.0 ms 48.3 %, H200 91.5 ms 50.7 %; five GEMMs on ours" \
  bash -c "grep -q 'H100 SXM5 now: step 96.0 ms, MFU 48.3%' '$tmp/pred_w.txt' &&
           grep -q 'H200 SXM now: step 91.5 ms, MFU 50.7%' '$tmp/pred_w.txt' &&
           [ \$(grep -c '\[wgmma GEMM\]' '$tmp/pred_w.txt') = 5 ]"
expect_error "--gemm wgmma alone" "go with --predict or --bytes" python3 "$ROOFLINE" --gemm wgmma
# --attention wgmma: fast/attention_wgmma_forward.cu priced as FlashAttention-3 on its 128 x 128 tiles
# (4.33 ms against mma's 6.49), its backward as FA3's at 7 products on 128 x 64 tiles (15.69 ms against
# mma's 13.07 + 10.42), with RoPE's forward pass back (q and k read and written, 134.7 MB a
# call, 3.23 GB); with --gemm wgmma that pass is the qkv GEMM's epilogue (gemm_wgmma_forward_rope)
python3 "$ROOFLINE" --predict --attention wgmma >"$tmp/pred_a.txt" 2>&1
python3 "$ROOFLINE" --predict --attention wgmma --gemm wgmma >"$tmp/pred_aw.txt" 2>&1
python3 "$ROOFLINE" --bytes --attention wgmma >"$tmp/bytes_a.txt" 2>&1
check "--attention wgmma: forward 4.33 ms, backward 15.69 ms on the H100, the rope pass 3.23 GB; the step 94.7 ms 49.0 %" \
  bash -c "grep -qE '^attention fwd \(wgmma\) +24 +[0-9.]+ tensor +4\.33 tensor' '$tmp/pred_a.txt' &&
           grep -qE '^attention bwd \(wgmma\) +24 +[0-9.]+ tensor +15\.69 tensor' '$tmp/pred_a.txt' &&
           grep -qE '^rope fwd \(q, k\) +mem +24 +134\.7 +3\.23$' '$tmp/bytes_a.txt' &&
           grep -q 'H100 SXM5 now: step 94.7 ms, MFU 49.0%' '$tmp/pred_a.txt'"
check "--attention wgmma --gemm wgmma (the Hopper path): no rope pass; H100 86.1 ms 53.9 %, H200 81.8 ms 56.7 %, 34.6 GB" \
  bash -c "! grep -q '^rope' '$tmp/pred_aw.txt' && grep -q 'H100 SXM5 now: step 86.1 ms, MFU 53.9%' '$tmp/pred_aw.txt' &&
           grep -q 'H200 SXM now: step 81.8 ms, MFU 56.7%' '$tmp/pred_aw.txt' &&
           grep -q 'memory-bound kernels move 34.6 GB, within' '$tmp/pred_aw.txt'"
# issue 51's byte goal on the Hopper path, the command docs/fast.md prints: its table's memory-bound
# rows (mem kind) add up to the total it prints, 34.6 GB <= 35
python3 "$ROOFLINE" --bytes --gemm wgmma --attention wgmma >"$tmp/bytes_aw.txt" 2>&1
check "--bytes --gemm wgmma --attention wgmma: 111.1 GB in all, 34.6 GB memory-bound (the mem rows' sum), <= 35" py "
import re
t = open('$tmp/bytes_aw.txt').read()
assert '111.1 GB in all; 34.6 GB in the memory-bound kernels' in t, t[-300:]
mem = sum(float(l.split()[-1]) for l in t.splitlines() if re.search(r' mem +[0-9]+ +[0-9.]+ +[0-9.]+$', l))
assert abs(mem - 34.6) < 0.05 and mem <= 35, mem"

# the calibration and the prediction docs/design/roofline.md prints
python3 "$ROOFLINE" --calibrate >"$tmp/cal.txt" 2>&1
check "--calibrate: the four fitted points at ratio 1.000 (mma.sync forward and backward, cuBLAS, our GEMM's structure)" \
  bash -c "[ \$(grep -c 'fitted;' '$tmp/cal.txt') = 4 ] && ! grep 'fitted;' '$tmp/cal.txt' | grep -vq ' 1.000 '"
check "--calibrate: all 36 FlashAttention-2 points (hd 64, 128; causal; backward) and every other within 15%, FA2 hd128 causal 512 at 1.120, 6144^3 at 1.083" \
  bash -c "! grep -q OUTSIDE '$tmp/cal.txt' && [ \$(grep -c '^FA2 ' '$tmp/cal.txt') = 36 ] &&
           [ \$(grep -c '^FA2 bwd hd64 ' '$tmp/cal.txt') = 6 ] && [ \$(grep -c '^FA2 fwd hd64 causal' '$tmp/cal.txt') = 6 ] &&
           grep -q 'hd128 causal seqlen 512 .* 1.120 ' '$tmp/cal.txt' && grep -q '6144^3 .* 1.083 ' '$tmp/cal.txt'"
# the exponential term by hand, at 16k (steady state: tails and prologues nearly cancel in a ratio).
# Forward, a block-tile of FA2: 4 warps x 256 HMMA / r + the MUFU clocks, 544 at hd 128 (128 x 64
# scores) and 1056 at hd 64 (128 x 128): same FLOPs, so hd64 / hd128 = (1024/r + 544) / (1024/r +
# 1056). Backward: 8 x 320 / r_bwd + 512 (hd 128) or 1024 (hd 64). The table's predicted ratios
# must agree within 1%; and at hd 128 the steady state, 4·128·64·128 FLOP over (1024/r + 544)
# clocks x 132 SMs x 1.83 GHz, is at most 5% above the fitted point's 370 (its tails and prologues).
check "--calibrate: the hd 64 / hd 128 ratios follow the exponentials by hand, forward and backward" py "
import re
r, rb = m.fitted()[0], m.fitted_bwd()
pred = {tuple(l.split()[1:4]): float(l.split()[7]) for l in open('$tmp/cal.txt') if l.startswith('FA2 ') and ' 16384 ' in l}
f = pred[('fwd', 'hd64', 'non-causal')] / pred[('fwd', 'hd128', 'non-causal')]
assert abs(f / ((1024 / r + 544) / (1024 / r + 1056)) - 1) < 0.01, (f, r)
b = [float(l.split()[7]) for l in open('$tmp/cal.txt') if l.startswith('FA2 bwd') and ' 16384 ' in l]
assert abs((b[1] / b[0]) / ((2560 / rb + 512) / (2560 / rb + 1024)) - 1) < 0.01, (b, rb)
steady = 4 * 128 * 64 * 128 / (1024 / r + 544) * 132 * 1.83e9 / 1e12
assert 370 < steady < 370 * 1.05, steady"
python3 "$ROOFLINE" --predict >"$tmp/pred.txt" 2>&1
# the step with faab088's kernels (all 'mma' rows) and with today's (the 'rope51' rows: fwd51's and
# bwd51's loops with RoPE inside; the other rows, RoPE's passes among them, are today's in both)
check "--predict: H100 105.9 ms (faab088's attention) and 103.4 ms (now), H200 99.2 and 96.6" \
  bash -c "grep -q 'H100 SXM5 faab088: step 105.9 ms, MFU 43.8%' '$tmp/pred.txt' &&
           grep -q 'H100 SXM5 now: step 103.4 ms, MFU 44.8%' '$tmp/pred.txt' &&
           grep -q 'H200 SXM faab088: step 99.2 ms, MFU 46.8%' '$tmp/pred.txt' &&
           grep -q 'H200 SXM now: step 96.6 ms, MFU 48.0%' '$tmp/pred.txt'"
# the summary from the table: attention = its three rows, step = attention + GEMMs + the rest, MFU =
# 6 x (467,921,920 - 50277·1024) x 16384 + 6 x 24 x 2048 x 1024 x 16384 FLOP over the step and 989.4
check "--predict: H100 now's attention is its three rows, its step their sum with GEMMs and the rest, its MFU by hand" py "
import re
lines = open('$tmp/pred.txt').read().splitlines()
att = sum(float(l[44:].split()[3]) for l in lines if l.startswith('attention '))
step, mfu, a, g, r = map(float, re.search(r'H100 SXM5 now: step ([0-9.]+) ms, MFU ([0-9.]+)% of 989 TFLOP/s; attention '
                                          r'([0-9.]+) ms, GEMMs ([0-9.]+) ms, the rest ([0-9.]+) ms', '\\n'.join(lines)).groups())
f = 6 * (467921920 - 50277 * 1024) * 16384 + 6 * 24 * 2048 * 1024 * 16384
assert abs(att - a) < 0.06 and abs(a + g + r - step) < 0.15 and abs(100 * f / (step / 1e3) / 989.4e12 - mfu) < 0.1, (att, a, g, r, step, mfu)"
check "--predict: the what-if at 35 GB of memory-bound bytes, H100 95.1 ms" \
  grep -q "WHAT-IF, not today's bytes: H100 SXM5 now .* 35 GB .* step 95.1 ms, MFU 48.7%" "$tmp/pred.txt"
# columns: H100 faab088 ms, bound, H100 now ms, bound, H200 faab088, bound, H200 now, bound
check "--predict: the forward 7.68 ms latency-bound before, 6.49 ms tensor-bound now ('rope51' rows)" \
  bash -c "grep -qE '^attention fwd \(mma.sync\) +24 +7\.68 latency +6\.49 tensor +[0-9.]+ latency +[0-9.]+ tensor +\[.rope51. rows\]' '$tmp/pred.txt'"
# today's forward by hand: a block-tile is 4 x 64 HMMA / r + 4 x 34 x 2 MUFU clocks (over the issue's
# 5.422 x 64 = 347 and the shared 640); 128 heads x 32 blocks of 64 queries, block i with i + 1
# tiles (528 a head), 3 blocks an SM sharing it, each block also its prologue: one HBM trip (600)
# and 32768 B at 3.35e12 / 132 / 1.83e9 B a clock, then the queries' RoPE: one L2 trip (260) and
# the SASS's 416 added instructions. All of it over 132 x 3 slots is the floor; the wave tail adds
# at most the longest block (32 tiles): 24 layers.
check "--predict: today's forward between its work over the slots and that plus the longest block, by hand" py "
r = m.fitted()[0]
per = 4 * 64 / r + 4 * 34 * 2
own = 600 + 32768 / (3.35e12 / 132 / 1.83e9) + 260 + 416
lo = (128 * 528 * per * 3 + 128 * 32 * own) / (132 * 3) / 1.83e9 * 24e3
hi = lo + (32 * per * 3 + own) / 1.83e9 * 24e3
got = float([l.split()[6] for l in open('$tmp/pred.txt') if l.startswith('attention fwd')][0])
assert lo <= got <= hi, (lo, got, hi)
note = [l for l in open('$tmp/pred.txt') if l.startswith('attention bwd dK/dV')][0]
rb = m.fitted_bwd()
assert 'tensor %.0f (of which exp2 128)' % (4 * 64 / rb + 128) in note, note"
check "--predict: dK/dV 13.73 -> 13.07 ms and dQ 11.04 -> 10.42 ms, tensor-bound before and now ('rope51' rows)" \
  bash -c "grep -qE '^attention bwd dK/dV \(mma.sync\) +24 +13\.73 tensor +13\.07 tensor .*\[.rope51. rows\]' '$tmp/pred.txt' &&
           grep -qE '^attention bwd dQ \(mma.sync\) +24 +11\.04 tensor +10\.42 tensor .*\[.rope51. rows\]' '$tmp/pred.txt'"
# rope51 at hd 64: one L2 round trip (260 clocks) and its SASS's added instructions (forward 416,
# dK/dV 72, dQ 120) on each block's prologue or epilogue; the hot loops' tilings are fwd51's and bwd51's
check "rope51 tilings hd 64: fwd51's and bwd51's plus one L2 trip and 416 / 72 / 120 instructions" py "
a, b = m.rope51_tilings(64), {**m.fwd51_tilings(64), **m.bwd51_tilings(64)}
assert len(a) == 3, a
for k, n in (('attention_mma_forward_kernel', 416), ('attention_mma_backward_dkdv_kernel', 72),
             ('attention_mma_backward_dq_kernel', 120)):
    assert (a[k]['own_l2_trips'], a[k]['own_issue']) == (1, n), a[k]
    assert {x: y for x, y in a[k].items() if x not in ('own_l2_trips', 'own_issue')} == b[k], k"
# three times the forward's instructions per HMMA in both row sets: faab088's latency term grows
# with its issue; the new forward turns issue-bound (3 x 347 = 1041 clocks over the tensor's 796)
awk '($1 == "mma" || $1 == "rope51") && $2 ~ /forward/ { $3 = 3 * $3 } { print }' "$MIX" >"$tmp/mix2.txt"
python3 "$ROOFLINE" --predict --mix-file "$tmp/mix2.txt" >"$tmp/pred2.txt" 2>&1
fwd_ms() { awk -v c="$2" '/^attention fwd/ { print $c }' "$1"; }
a=$(fwd_ms "$tmp/pred.txt" 5) b=$(fwd_ms "$tmp/pred2.txt" 5) c=$(fwd_ms "$tmp/pred.txt" 7) d=$(fwd_ms "$tmp/pred2.txt" 7)
check "--predict: the forward $a -> $b ms (faab088), $c -> $d ms (now) at three times the iph" \
  awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN { exit !(a > 0 && b / a > 1.3 && d > c) }'
check "--predict: the new forward issue-bound at three times its iph" \
  grep -qE '^attention fwd .* [0-9.]+ issue +\[.rope51' "$tmp/pred2.txt"

# the switch a new backward takes: rows of another state (here synthetic 'syn' lines: the 'mma'
# backward rows at twice their iph, the same HMMA and LDSM) named in AFTER_BACKWARD with their
# tiling and occupancy registered; faab088's columns stay, today's backward turns issue-bound
awk '$1 == "mma" && $2 ~ /backward/ { $1 = "syn"; $3 = 2 * $3 } { print }' "$MIX" >"$tmp/syn.txt"
cat "$MIX" >>"$tmp/syn.txt"
PYTHONPATH="$ROOT/bench" python3 -c "
import sys, roofline, roofline_model as m
m.AFTER_BACKWARD = 'syn'
m.TILINGS['syn'] = m.our_tilings
m.BLOCKS_PER_SM['syn'] = m.BLOCKS_PER_SM['mma']
sys.argv = ['roofline.py', '--predict', '--mix-file', '$tmp/syn.txt']
roofline.main()" >"$tmp/syn_pred.txt" 2>&1
check "--predict with synthetic backward rows: faab088's dK/dV column kept, today's issue-bound and slower" \
  bash -c "old=\$(awk '/^attention bwd dK\/dV/ { print \$6 }' '$tmp/pred.txt')
           set -- \$(awk '/^attention bwd dK\/dV/ { print \$6, \$8, \$9 }' '$tmp/syn_pred.txt')
           [ \"\$1\" = \"\$old\" ] && [ \"\$3\" = issue ] && awk -v a=\"\$1\" -v b=\"\$2\" 'BEGIN { exit !(b > a) }' &&
           grep -q \"now = fwd 'rope51', bwd dK/dV 'syn', bwd dQ 'syn'\" '$tmp/syn_pred.txt'"
# a state whose backward is one kernel under a new name (synthetic 'one' rows: dK/dV's figures):
# it takes the whole backward's bytes, pairs with faab088's first backward kernel, and faab088's
# dQ prints '-' for now
awk '$1 == "mma" && $2 ~ /dkdv/ { $1 = "one"; sub(/backward_dkdv/, "backward_one", $2) } { print }' "$MIX" >"$tmp/one.txt"
cat "$MIX" >>"$tmp/one.txt"
PYTHONPATH="$ROOT/bench" python3 -c "
import sys, roofline, roofline_model as m
m.AFTER_BACKWARD = 'one'
m.TILINGS['one'] = lambda hd: {'attention_mma_backward_one_kernel': m.our_tilings(hd)['attention_mma_backward_dkdv_kernel']}
m.BLOCKS_PER_SM['one'] = {('attention_mma_backward_one_kernel', hd): 4 for hd in (64, 128)}
sys.argv = ['roofline.py', '--predict', '--mix-file', '$tmp/one.txt']
roofline.main()" >"$tmp/one_pred.txt" 2>&1
check "--predict with a renamed, merged backward: paired with faab088's dK/dV, dQ's now '-'" \
  bash -c "grep -qE '^attention bwd dK/dV \(mma.sync\) -> attention_mma_backward_one_kernel +24 +[0-9.]+ tensor +[0-9.]+ tensor' '$tmp/one_pred.txt' &&
           grep -qE '^attention bwd dQ \(mma.sync\) +24 +[0-9.]+ tensor +- +[0-9.]+ tensor +- *$' '$tmp/one_pred.txt' &&
           grep -q \"now = fwd 'rope51', attention_mma_backward_one_kernel 'one'\" '$tmp/one_pred.txt'"
# a state with rows but nothing registered, and rows that disagree with their tiling
expect_error "--predict: a backward state with no tiling registered" "state 'syn' of attention_mma_backward_dkdv_kernel<64>: no tiling" \
  env PYTHONPATH="$ROOT/bench" python3 -c "
import sys, roofline, roofline_model as m
m.AFTER_BACKWARD = 'syn'
sys.argv = ['roofline.py', '--predict', '--mix-file', '$tmp/syn.txt']
roofline.main()"
awk '$1 == "rope51" { $5 = 2 * $5 } { print }' "$MIX" >"$tmp/bad.txt"
expect_error "--predict: a rope51 row whose HMMA count is not its tiling's" \
  "'rope51' attention_mma_forward_kernel<64>: the SASS's 128 HMMA and 32 LDSM a tile differ from its tiling's 64 and 32" \
  python3 "$ROOFLINE" --predict --mix-file "$tmp/bad.txt"

expect_error "roofline: two modes" "modes of their own" python3 "$ROOFLINE" --predict --bytes
expect_error "roofline: --predict with --mma-attention" "modes of their own" python3 "$ROOFLINE" --predict --mma-attention
# --what-if hopper (bench/roofline_hopper.py): a wgmma attention block-tile is its tensor work at the
# dense peak plus its exponentials at MUFU's 16 a clock an SM, over the fitted efficiency. FA3's hd 64
# forward tile, 192 queries x 128 keys = 24576 scores: 24576 x 2 products x 2 x 64 / 4096 = 1536
# clocks of tensor, 24576 / 16 = 1536 of MUFU: 3072 at efficiency 1, 6144 at 0.5. Our 7-product
# backward on a 128 x 128 tile: 16384 x 14 x 64 / 4096 = 3584 tensor, 2 exponentials a score
# (both kernels recompute P): 2048. 132 SMs x 16 x 1.83 GHz = 3.865e12: the FA3 paper's 3.9 TFLOP/s.
check "what-if: wgmma tiles 3072 / 6144 clocks (hd 64 forward), 3584 + 2048 (7-product backward)" py "
import roofline_hopper as h
t, p = h.fa3_tile(2, 64, 192, 128, 1.0)
assert (p['tensor'], p['mufu'], t) == (1536, 1536, 3072), p
assert h.fa3_tile(2, 64, 192, 128, 0.5)[0] == 6144
t, p = h.fa3_tile(7, 64, 128, 128, 1.0)
assert (p['tensor'], p['mufu']) == (3584, 2048), p
assert abs(132 * h.MUFU_PER_CLOCK * 1.83e9 - 3.865e12) < 1e9"
python3 "$ROOFLINE" --what-if hopper >"$tmp/wi.txt" 2>&1
check "what-if: every FlashAttention-3 point within 15%, the two fitted ones at 1.000 (35 points)" \
  bash -c "[ \$(grep -c '^FA3 ' '$tmp/wi.txt') = 35 ] && ! grep '^FA3 ' '$tmp/wi.txt' | grep -q OUTSIDE &&
           [ \$(grep '^FA3 .* fitted' '$tmp/wi.txt' | grep -c ' 1.000 ') = 2 ] &&
           grep -q 'forward efficiency 1.037, backward 0.718' '$tmp/wi.txt'"
# its line on FlashAttention-2 gives, for each pass and head_dim, the range of --calibrate's ratios
check "what-if: the FA2 ranges are --calibrate's ratios' (forward hd 64 0.913-1.013), and today's starting step is --predict's" py "
import re
rat = {}
for l in open('$tmp/cal.txt'):
    if l.startswith('FA2 '):
        rat.setdefault(tuple(l.split()[1:3]), []).append(l.split()[8])
want = ', '.join(f'{k} {h} {min(rat[(k, h)])}-{max(rat[(k, h)])}' for k, h in (('fwd', 'hd64'), ('fwd', 'hd128'),
                                                                               ('bwd', 'hd64'), ('bwd', 'hd128')))
got = re.search(r'predicted / published: forward (hd64 \\S+), (hd128 \\S+); backward (hd64 \\S+), (hd128 \\S+)',
                open('$tmp/wi.txt').read()).groups()
assert want == 'fwd ' + got[0] + ', fwd ' + got[1] + ', bwd ' + got[2] + ', bwd ' + got[3], (want, got)
assert rat[('fwd', 'hd64')] and min(rat[('fwd', 'hd64')]) == '0.913'
today = re.search(r'^0 +today \\(--predict now\\) +([0-9.]+) +([0-9.]+%)', open('$tmp/wi.txt').read(), re.M).groups()
assert today == ('103.4', '44.8%'), today"
# the bytes each fusion removes, by hand (N = 16384 tokens, F = 3584, d = 1024, 24 layers, 49 norms):
# SwiGLU fwd: its kernel's 3NF x 2 B x 24 = 8.46 GB go, the GEMM writes h (NF): all -5.64;
# SwiGLU bwd: 5NF x 2 x 24 = 14.09 GB go, the GEMM stops writing dh, reads and writes gate|up: -5.64;
# RMSNorm fwd: the normed rows' write, N·d·2 x 49 = 1.64; its backward: the bf16 d(norm output)
# written and read back, 2·N·d·2 x 49 = 3.29 of the kernel's 11.62
for t in B1 B2 B3 B4; do awk -v t="$t" '$1 == t' "$tmp/wi.txt" >"$tmp/row_$t.txt"; done
# a row's numbers after its label: d H100, d H200, d mem, d all, H100 ms, MFU, H200 ms, MFU, mem GB
nums() { grep -oE ' [-+]?[0-9]+\.[0-9]+%?' "$tmp/row_$1.txt" | tr -d ' ' | tr '\n' ' '; }
check "what-if: B1 -8.46 / -5.64 GB, B2 -14.09 / -5.64, B3 -1.64 / -1.64, B4 -11.62 / -3.29" \
  bash -c "[ \"\$(echo $(nums B1) | cut -d' ' -f3,4)\" = '-8.46 -5.64' ] && [ \"\$(echo $(nums B2) | cut -d' ' -f3,4)\" = '-14.09 -5.64' ] &&
           [ \"\$(echo $(nums B3) | cut -d' ' -f3,4)\" = '-1.64 -1.64' ] && [ \"\$(echo $(nums B4) | cut -d' ' -f3,4)\" = '-11.62 -3.29' ]"
# ZeRO-2: 467,921,920 fp32 gradients reduce-scattered, x 7/8 / 370 GB/s = 4.43 ms; bf16 weights
# all-gathered: 2.21 ms; AdamW's 15.9 GB a step, 1/8 of it a GPU: -13.9 GB
check "what-if: ZeRO-2 reduce-scatter 4.43 ms, all-gather 2.21 ms, AdamW -13.9 GB" \
  grep -q 'AdamW 5.94 -> 0.74 ms, -13.9 GB; NCCL reduce-scatter of fp32 gradients 4.43 ms + all-gather of bf16 weights 2.21 ms' "$tmp/wi.txt"
check "what-if: after B3 (exact fusions and wgmma attention) H100 86.7 ms 53.5%, 33.0 GB; after B4 82.4 ms" \
  bash -c "[ \"\$(echo $(nums B3) | cut -d' ' -f5-9)\" = '86.7 53.5% 82.1 56.5% 33.0' ] &&
           [ \"\$(echo $(nums B4) | cut -d' ' -f5,6)\" = '82.4 56.3%' ]"
# the exact fusions alone change GEMMs and memory-bound kernels only, so their combination is today's
# step plus the R1, R2, B1, B2, B3 rows' H100 deltas: 103.4 + 0.00 + 0.00 - 3.16 - 4.42 - 0.61 = 95.2 (R1
# and R2 are today's --attention mma already: RoPE's backward and both forward rotations inside it)
check "what-if: the exact fusions without wgmma attention: today's step plus their deltas, 95.2 ms, 48.7 %: short of 50 %" py "
import re
t = open('$tmp/wi.txt').read()
d = sum(float(re.search('^' + k + r' .*?  ([-+][0-9.]+) ', t, re.M).group(1)) for k in ('R1', 'R2', 'B1', 'B2', 'B3'))
today = float(re.search(r'^0 +today \\(--predict now\\) +([0-9.]+)', t, re.M).group(1))
combo = re.search(r'^  exact fusions, no Hopper attention +R1 R2 B1 B2 B3 +([0-9.]+) +([0-9.]+)% .*33\\.0 *$', t, re.M)
assert combo and abs(today + d - float(combo.group(1))) < 0.1 and float(combo.group(2)) < 50, (today, d, combo)
assert combo.group(1) == '95.2' and combo.group(2) == '48.7', combo.groups()"
check "what-if: the same on mma.sync GEMMs 114.3 ms; our fused GEMMs must reach 0.922 of the peak for 50 %, 0.630 to break even" \
  bash -c "grep -qE '^  the same, fused GEMMs on mma.sync .* R1 R2 B1 B2 B3 mma +114\.3 +40\.6% .*33\.0 *$' '$tmp/wi.txt' &&
           grep -q 'must reach 0.922 of the dense peak for 50 % on the H100 (cuBLAS: 0.830); below 0.630' '$tmp/wi.txt'"
expect_error "what-if: with --predict" "modes of their own" python3 "$ROOFLINE" --what-if hopper --predict
expect_error "what-if: a variant it does not price" "prices the baseline at head_dim 64 or 128" \
  python3 "$ROOFLINE" --what-if hopper --variant resformer
finish
