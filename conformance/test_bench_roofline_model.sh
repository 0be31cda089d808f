#!/usr/bin/env bash
# test_bench_roofline_model.sh: bench/roofline_model.py, the resource model behind roofline.py's
# --predict, --calibrate and --bytes, on inputs whose answers are worked by hand: a tiling's
# shared-memory bound, its load loops' trips, Little's law in blocks, a GEMM's and a streaming
# kernel's time, one kernel's bytes; the tilings against the ldmatrix counts of the committed SASS
# mix; the figures docs/design/roofline.md prints. No GPU, no nvcc.
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
# 16-byte words over 128 threads = 4 trips each for K and V: 8.
check "forward tiling hd 64: 64 HMMA/warp, 640 shared clocks, 8 round trips" py "
t = m.forward_tiling(64, 16, 4, 64, True)
_, p = m.block_tile(t, 11.234, 3, None, 0.5)
assert t['hmma_warp'] == 64 and t['trips'] == 8 and p['shared'] == 640, (t, p)
assert abs(p['issue'] - 11.234 * 64) < 1e-9 and p['tensor'] == 4 * 64 / 0.5
# Little's law: (issue 718.98 + 8 x 260) / 718.98 = 3.893 blocks hide the wait; at 3 the latency
# term (718.98 + 2080) / 3 = 933.0 binds
assert abs(m.blocks_to_hide(t, 11.234, 0.5) - (11.234 * 64 + 2080) / (11.234 * 64)) < 1e-9
assert abs(p['latency'] - (11.234 * 64 + 2080) / 3) < 1e-9"
# FlashAttention-2's hd 128 tiling: 32 rows a warp, 64 keys: 256 HMMA/warp; (4 x 32768 + 32768) / 128
# = 1280 shared clocks; cp.async: no exposed trip
check "FA2 tiling hd 128: 256 HMMA/warp, 1280 shared clocks, no exposed trip" py "
t = m.fa2_forward_tiling(128)
_, p = m.block_tile(t, 2.7, 2, None, 0.5)
assert t['hmma_warp'] == 256 and p['shared'] == 1280 and t['trips'] == 0, (t, p)"
# the backward: dK/dV at hd 64 streams 32 queries: 64 HMMA, 4·32·64·2 + 2·16·64·2 = 20480 B of
# ldmatrix per warp, 2 x 2 trips (Q, dO) + 1 (lse, D); dQ 48 HMMA, 3·32·64·2 + 4096 = 16384 B, 4 trips
check "backward tilings hd 64: dK/dV 64 HMMA 20480 B 5 trips, dQ 48 HMMA 16384 B 4 trips" py "
a, b = m.dkdv_tiling(64, 16, 4, 32), m.dq_tiling(64, 16, 4, 32)
assert (a['hmma_warp'], a['smem_read_warp'], a['trips']) == (64, 20480, 5), a
assert (b['hmma_warp'], b['smem_read_warp'], b['trips']) == (48, 16384, 4), b"

# the tilings against the SASS: hot-loop HMMA count = HMMA per warp per tile, LDSM (x4, 512 B)
# x 512 = ldmatrix bytes per warp per tile, for each mma kernel at hd 64 and 128
check "tilings match the committed SASS's HMMA and LDSM counts" py "
rows = [l.split() for l in open('$MIX') if l.startswith('mma ')]
n = 0
for r in rows:
    name, hd = r[1].split('<')[0], int(r[1].split('<')[1].rstrip('>'))
    t = m.our_tilings(hd)[name]
    assert t['hmma_warp'] == int(r[4]) and t['smem_read_warp'] == 512 * int(r[5]), (r, t)
    n += 1
assert n == 6, n"

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
check "--bytes: 133.8 GB in all, 65.3 GB in the memory-bound kernels" \
  grep -q '133.8 GB in all; 65.3 GB in the memory-bound kernels' "$tmp/bytes.txt"

# the calibration and the prediction docs/design/roofline.md prints
python3 "$ROOFLINE" --calibrate >"$tmp/cal.txt" 2>&1
check "--calibrate: the fitted points at ratio 1.000" \
  bash -c "[ \$(grep -c 'fitted;' '$tmp/cal.txt') = 2 ] && ! grep 'fitted;' '$tmp/cal.txt' | grep -vq ' 1.000 '"
check "--calibrate: FA2 causal 512 flagged outside 15%, 6144^3 at 1.083" \
  bash -c "grep -q 'causal seqlen 512 .*OUTSIDE 15%' '$tmp/cal.txt' && grep -q '6144^3 .* 1.083 ' '$tmp/cal.txt'"
python3 "$ROOFLINE" --predict >"$tmp/pred.txt" 2>&1
check "--predict: H100 step 101.3 ms, H200 93.9 ms" \
  bash -c "grep -q 'H100 SXM5: step 101.3 ms' '$tmp/pred.txt' && grep -q 'H200 SXM: step 93.9 ms' '$tmp/pred.txt'"
check "--predict: the forward latency-bound, dK/dV and dQ shared-memory-bound" \
  bash -c "grep -qE '^attention fwd \(mma.sync\) .* latency ' '$tmp/pred.txt' &&
           grep -qE '^attention bwd dK/dV \(mma.sync\) .* shared ' '$tmp/pred.txt' &&
           grep -qE '^attention bwd dQ \(mma.sync\) .* shared ' '$tmp/pred.txt'"
# twice the instructions per HMMA: the forward's latency term grows with its issue, so it slows
awk '$1 == "mma" { $3 = 2 * $3 } { print }' "$MIX" >"$tmp/mix2.txt"
fwd_ms() { python3 "$ROOFLINE" --predict --mix-file "$1" | awk '/^attention fwd/ { print $5 }'; }
a=$(fwd_ms "$MIX") b=$(fwd_ms "$tmp/mix2.txt")
check "--predict: the forward $a ms, $b ms at twice the iph" \
  awk -v a="$a" -v b="$b" 'BEGIN { exit !(a > 0 && b / a > 1.3) }'

expect_error "roofline: two modes" "modes of their own" python3 "$ROOFLINE" --predict --bytes
expect_error "roofline: --predict with --mma-attention" "modes of their own" python3 "$ROOFLINE" --predict --mma-attention
finish
