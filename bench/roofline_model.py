"""roofline_model.py: the resource model behind `bench/roofline.py --predict / --calibrate / --bytes`.

roofline.py's default figures are a ceiling: every kernel at an assumed efficiency, issue at one
instruction a clock, the tile loads counted once. This module prices a kernel by the resource
that binds it, from its tiling and its SASS figures:

  tensor   HMMAs over the tensor core's rate (one HMMA.16816 a clock per SM at the dense peak,
           x mma.sync's share of it), plus the tile's exponentials through MUFU (16 a clock per
           SM), summed: a warp's softmax waits for its S = Q·Kᵀ and its P·V for the softmax;
  issue    instructions per HMMA (bench/attention_sass_mix.txt) over one instruction a clock per
           warp scheduler;
  shared   bytes through shared memory (ldmatrix reads, tile stores) over 32 banks x 4 B a clock;
  latency  the tile loads as executed: a rolled loop of plain 16-byte loads is one global round
           trip per trip of the loop, and a block waits for all of them before its tile (faab088's
           kernels); cp.async loads of a whole tile are one round trip issued `prefetch` tiles
           ahead, exposed only where the latency exceeds the issue of the tiles between (issue 51's
           forward); b blocks per SM overlap one block's wait with the others' work (Little's
           law: to hide a latency the SM needs b >= (work + wait) / work);
  hbm      bytes through HBM over its bandwidth.

One block-tile (a block's work on one streamed tile) costs max(issue, tensor + exponentials,
shared, (issue + exposed latency) / b) clocks of an SM; a diagonal tile adds its mask's issue where the
hot loop does not carry it. A block is its tiles plus a prologue and epilogue (its own rows'
round trips and bytes); a kernel is its blocks scheduled in launch order on sms x b slots, so the
uneven causal blocks leave a wave tail. GEMMs are cuBLASLt-like: Hopper wgmma
tiles (128x256, 256x128, 128x128) and split-K, the best of them, in whole waves over the SMs.
Memory-bound kernels: bytes over the bandwidth x the planned 80 % x the share Little's law
allows at their occupancy.

Which rows of bench/attention_sass_mix.txt price which kernel is chosen by name (TILINGS,
BLOCKS_PER_SM, AFTER_FORWARD, AFTER_BACKWARD below): --predict prints faab088's kernels (the
'mma' rows) beside today's.

Nothing here was measured on a GPU. The hardware figures are the datasheets'; the latencies are
assumptions of the order microbenchmarks report; three constants are fitted on published figures
(calibration(): mma.sync's forward and backward rates on FlashAttention-2, wgmma's on cuBLAS) and
the rest of the published points check them. docs/design/roofline.md has the
sources, the calibration table and the prediction.
"""
import heapq
import itertools
import math

# ---- hardware. Sources beside each figure.
# H100 SXM5: 132 SMs (NVIDIA H100 whitepaper, SXM5 configuration); 989.4 TFLOP/s dense bf16
# (NVIDIA H100 datasheet) = 132 SMs x 4096 FLOP a clock x 1.83 GHz (bench/roofline.py); HBM3
# 3.35 TB/s (datasheet, SXM5). H200 SXM: the same GH100 die and tensor rate (989 TFLOP/s dense
# bf16, NVIDIA H200 datasheet), HBM3e 4.8 TB/s (datasheet).
# Shared memory: 32 banks, each 32 bits wide a clock (CUDA C++ Programming Guide, "Shared Memory"
# of compute capability 5.x and later, which 9.0 keeps): 128 B a clock per SM.
# Warp schedulers: 4 per SM, one instruction issued a clock each (Hopper whitepaper, SM diagram).
GPUS = {
    "h100": {"name": "H100 SXM5", "sms": 132, "clock": 1.83e9, "hbm": 3.35e12},
    "h200": {"name": "H200 SXM", "sms": 132, "clock": 1.83e9, "hbm": 4.8e12},
}
SHARED_BYTES_PER_CLOCK = 32 * 4
SCHEDULERS = 4
HMMA_FLOP = 4096.0  # mma.sync.m16n8k16: 16 x 8 x 16 multiply-adds
SM_FLOP_PER_CLOCK = 4096.0  # the dense peak: one HMMA.16816 a clock per SM
# Latencies in SM clocks: ASSUMED, of the order Hopper microbenchmarks report (Luo et al.,
# "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", arXiv 2402.13499, and
# Chips and Cheese, "Nvidia's H100: Funny L2, and Tons of Bandwidth", 2023: L2 hits a few hundred
# clocks, HBM several hundred more). Attention's streamed K/V/Q/dO tiles are re-read by every
# block of their head, whose working set (a few MB) stays in the 50 MB L2: they pay the L2 figure.
L2_LATENCY = 260
HBM_LATENCY = 600
# The causal mask on a diagonal tile, where the hot loop does not have it: ASSUMED 2 instructions a
# score a lane (a compare of the key's index with the row's, a select of -inf), not from SASS
MASK_INSTR_PER_SCORE = 2
# planned share of the HBM bandwidth a streaming kernel reaches (roofline.py's EFFICIENCY["mem"])
MEM_EFFICIENCY = 0.80
# MUFU: 16 results a clock per SM on compute capability 9.0 for exp2 (ex2.approx) and the other
# special functions (CUDA C++ Programming Guide, "Arithmetic Instructions", throughput table);
# 132 SMs x 16 x 1.83 GHz = 3.9 T/s, the figure the FlashAttention-3 paper gives the H100 SXM5. A
# warp's MUFU instruction (32 lanes) holds the SM's MUFU for 2 clocks.
MUFU_PER_CLOCK = 16.0
# The three fitted constants (print_calibration() prints the fits and the checks):
# MMA_SYNC_RATE: the share of the dense peak mma.sync attention's products sustain on an H100,
# the exponentials apart (they are priced at MUFU's rate beside it), fitted on FlashAttention-2's
# forward at head_dim 128, 16k, not causal (370 TFLOP/s, FA3 paper). It folds mma.sync's own
# ceiling on Hopper (only wgmma reaches the dense peak) with what FA2's forward loses to it
# besides its exponentials; roofline.py's default assumes 0.63 for the first alone.
# MMA_SYNC_RATE_BWD: the same for a backward, fitted on FlashAttention-2's backward at head_dim
# 128, 16k (322 TFLOP/s, FA3 paper). It folds what FA2's backward loses besides that: dQ added by
# fp32 atomics, P and dS through shared memory, barriers between its five products. Our backward
# kernels (dK/dV and dQ apart, no atomics) are priced at it: on that count a conservative rate.
# WGMMA_RATE: the share of the dense peak a cuBLAS wgmma main loop sustains (clock under power
# included), fitted on cuBLAS bf16 8192^3 (797.8 TFLOP/s, pranjalssh/fast.cu README, H100 SXM).
MMA_SYNC_RATE = None      # computed by fit_mma_sync_rate() at first use
MMA_SYNC_RATE_BWD = None  # computed by fit_mma_sync_rate_bwd() at first use
WGMMA_RATE = None         # computed by fit_wgmma_rate() at first use

# ---- published H100 SXM5 figures (TFLOP/s) the model is calibrated against
# FlashAttention-3 paper (Shah et al., arXiv 2407.08608 v2), the FlashAttention-2 bars of Figure 5
# ("Attention forward speed, head dim 64 / 128 (H100 80GB SXM5)", without and with causal mask)
# and Figure 6 ("Attention backward speed, head dim 64 / 128", no mask): batch x seqlen = 16k
# tokens, hidden 2048 (32 heads of 64, 16 of 128); causal FLOPs half the non-causal ones, the
# backward's 2.5x the forward's. Read from the bar labels as transcribed at subtext.edge.nugit.net
# (two transcriptions of each figure agree on every value, except Figure 6's head dim 64 at 4k-16k,
# which only one of them reaches).
FA2_FWD = {(128, False): {512: 309, 1024: 350, 2048: 362, 4096: 368, 8192: 370, 16384: 370},
           (128, True): {512: 191, 1024: 260, 2048: 298, 4096: 319, 8192: 333, 16384: 335},
           (64, False): {512: 282, 1024: 306, 2048: 318, 4096: 321, 8192: 322, 16384: 324},
           (64, True): {512: 180, 1024: 229, 2048: 262, 4096: 284, 8192: 295, 16384: 299}}
FA2_BWD = {128: {512: 214, 1024: 260, 2048: 291, 4096: 310, 8192: 318, 16384: 322},
           64: {512: 198, 1024: 238, 2048: 264, 4096: 279, 8192: 287, 16384: 291}}
FA2_FIT = 16384  # both rates are fitted at head_dim 128, 16k, not causal: the steady state
# cuBLAS bf16 in, fp32 accumulate, square M = N = K, H100 SXM (pranjalssh/fast.cu README,
# "Kernel 0: simple cuBLAS call"; an issue there reports 518 at 8192 with CUDA 12.4: cuBLAS
# versions differ)
CUBLAS_SQUARE = {8192: 797.8, 6144: 741.1}


# ---- attention tilings. Per warp per streamed tile: HMMAs, ldmatrix bytes; per block per tile:
# shared-memory store bytes and global round trips of the load loops as executed.
def trips(rows, hd, threads):
    """round trips of a rolled loop of one 16-byte load per thread over a rows x hd bf16 tile"""
    return math.ceil(rows * hd * 2 / 16 / threads)


def forward_tiling(hd, rows_per_warp, warps, keys, plain_loads, mask_every_tile=False):
    """flash forward: S = Q·Kᵀ and O += P·V per key tile; Q's fragments stay in registers, each
    warp reads the whole K and V tile by ldmatrix once. plain_loads: rolled loops of plain loads,
    one serial round trip a trip (faab088); else cp.async, the whole tile one round trip issued a
    tile ahead (prefetch 1). The causal mask: in the hot loop (mask_every_tile, so in its SASS
    count) or only on the diagonal tiles, priced there (MASK_INSTR_PER_SCORE)"""
    threads = 32 * warps
    return {"hmma_warp": rows_per_warp * keys * hd / 1024,
            "smem_read_warp": 2 * keys * hd * 2,
            "smem_write_block": 2 * keys * hd * 2,
            "trips": 2 * trips(keys, hd, threads) if plain_loads else 1,
            "prefetch": 0 if plain_loads else 1,
            "own_trips": trips(warps * rows_per_warp, hd, threads) if plain_loads else 1,
            "mask_warp": 0 if mask_every_tile else MASK_INSTR_PER_SCORE * rows_per_warp * keys / 32,
            # exponentials a lane: one a score, one a row for the running max's correction
            "exp_warp": rows_per_warp * keys / 32 + rows_per_warp / 8,
            "own_bytes": 2 * warps * rows_per_warp * hd * 2 + 2 * keys * hd * 2,  # Q in, O out, tile 0
            "rows_block": warps * rows_per_warp, "stream": keys, "warps": warps, "order": "longest"}


def dkdv_tiling(hd, rows_per_warp, warps, rows):
    """our dK/dV (fast/attention_mma_backward.cu): a warp owns 16 keys; per streamed tile of
    `rows` queries four products (S, dP, dV, dK), Q and dO each read twice by ldmatrix, K and V's
    own A fragments re-read (the SASS's LDSM count agrees: 40 x4 at hd 64, 48 at hd 128)"""
    threads = 32 * warps
    return {"hmma_warp": rows_per_warp * rows * hd / 512,
            "smem_read_warp": 4 * rows * hd * 2 + 2 * rows_per_warp * hd * 2,
            "smem_write_block": 2 * rows * hd * 2 + 2 * rows * 4,
            "trips": 2 * trips(rows, hd, threads) + 1,  # Q, dO, then lse and D (one trip)
            "own_trips": 2 * trips(warps * rows_per_warp, hd, threads), "prefetch": 0, "mask_warp": 0,
            "exp_warp": rows_per_warp * rows / 32,  # P recomputed: one exponential a score
            "own_bytes": 4 * warps * rows_per_warp * hd * 2 + 2 * rows * hd * 2,  # K, V in, dK, dV out, tile 0
            "rows_block": warps * rows_per_warp, "stream": rows, "warps": warps, "order": "longest"}


def dq_tiling(hd, rows_per_warp, warps, rows):
    """our dQ: a warp owns 16 queries; per streamed tile of `rows` keys three products (S, dP,
    dQ), K read twice and V once by ldmatrix, Q and dO's own A fragments re-read (LDSM 32 x4 at
    hd 64, 40 at hd 128)"""
    threads = 32 * warps
    return {"hmma_warp": 3 * rows_per_warp * rows * hd / 2048,
            "smem_read_warp": 3 * rows * hd * 2 + 2 * rows_per_warp * hd * 2,
            "smem_write_block": 2 * rows * hd * 2,
            "trips": 2 * trips(rows, hd, threads),
            "own_trips": 2 * trips(warps * rows_per_warp, hd, threads) + 1, "prefetch": 0, "mask_warp": 0,
            "exp_warp": rows_per_warp * rows / 32,  # P recomputed: one exponential a score
            "own_bytes": 3 * warps * rows_per_warp * hd * 2 + 2 * rows * hd * 2,  # Q, dO in, dQ out, tile 0
            "rows_block": warps * rows_per_warp, "stream": rows, "warps": warps, "order": "shortest"}


def our_tilings(hd):
    """fast/attention_mma_*.cu at faab088: 4 warps of 16 rows; forward key tiles of 64; the
    backward streams 32 rows (16 at head_dim 128); plain rolled loads everywhere, the causal mask
    on every tile (in the hot loops' SASS)"""
    r = 16 if hd >= 128 else 32
    return {"attention_mma_forward_kernel": forward_tiling(hd, 16, 4, 64, True, True),
            "attention_mma_backward_dkdv_kernel": dkdv_tiling(hd, 16, 4, r),
            "attention_mma_backward_dq_kernel": dq_tiling(hd, 16, 4, r)}


def fwd51_tilings(hd):
    """the forward after issue 51's rewrite (fast/attention_mma_forward.cu at bae2b3b): 4 warps of
    16 queries, key tiles of 64 (32 at head_dim 128), cp.async double buffer, the mask only on the
    diagonal tiles (straight-line code after the hot loop)"""
    return {"attention_mma_forward_kernel": forward_tiling(hd, 16, 4, 64 if hd <= 64 else 32, False)}


def bwd51_tilings(hd):
    """the backward after issue 51's rework (fast/attention_mma_backward.cu at f8d6252): the
    streamed tiles (Q, dO in dK/dV; K, V in dQ; dK/dV's lse and D with them) by cp.async one tile
    ahead; a warp's own rows' A fragments held in registers (K and V, Q and dO; at head_dim 128
    only K, Q: the other still read by ldmatrix, as the SASS's LDSM count says: 32 and 40 x4 for
    dK/dV, 24 and 32 for dQ); the causal mask only on the tiles meeting the block's rows"""
    r = 16 if hd >= 128 else 32
    own_smem = 0 if hd <= 64 else 16 * hd * 2  # the own-row tensor that stays in shared memory
    dkdv, dq = dkdv_tiling(hd, 16, 4, r), dq_tiling(hd, 16, 4, r)
    for t in (dkdv, dq):
        t.update({"trips": 1, "prefetch": 1, "own_trips": 2,
                  "mask_warp": MASK_INSTR_PER_SCORE * 16 * r / 32})
    dkdv["smem_read_warp"] = 4 * r * hd * 2 + own_smem
    dq["smem_read_warp"] = 3 * r * hd * 2 + own_smem
    return {"attention_mma_backward_dkdv_kernel": dkdv, "attention_mma_backward_dq_kernel": dq}


def rope51_tilings(hd):
    """fwd51's and bwd51's kernels with RoPE inside them (fast/attention_mma_forward.cu
    mma_rope_staged_rows, attention_mma_backward.cu rope_transpose_fragments): the hot loops as
    fwd51's and bwd51's (the 'rope51' rows). The forward's block, once, rotates its 64 staged
    queries in shared memory (one more barrier) and writes them back; each backward warp, once,
    rotates its dK or dQ accumulator before the store. The tables' reads (LDG.64) are priced as
    the streamed tiles' L2 re-reads are: one more round trip at the L2 latency (the tables,
    2·T·hd/2·4 B = 0.5 MB at hd 64, T 2048, stay in L2 after a call's first blocks; their one HBM
    read is in the step's bytes), their bytes (16 KB a block at hd 64) not bandwidth-bound; the
    added instructions a warp, from the SASS (whole kernel, rope51 - fwd51 / bwd51, nvcc 13.0.88
    -O3 -arch=sm_90), are issued serially in the prologue or epilogue: forward 416 (hd 64) and
    832 (hd 128, the write-back included), dK/dV 72 and 128, dQ 120 and 192. The forward's
    write-back of the rotated queries is in the step's HBM bytes (roofline.py)."""
    t = {**fwd51_tilings(hd), **bwd51_tilings(hd)}
    for name, added in (("attention_mma_forward_kernel", {64: 416, 128: 832}),
                        ("attention_mma_backward_dkdv_kernel", {64: 72, 128: 128}),
                        ("attention_mma_backward_dq_kernel", {64: 120, 128: 192})):
        t[name].update({"own_l2_trips": 1, "own_issue": added[hd]})
    return t


# ---- which rows of bench/attention_sass_mix.txt price which kernel. A state (the mix file's first
# column) names one version of the kernels: TILINGS[state](hd) gives their tilings as executed,
# BLOCKS_PER_SM[state] their occupancy (ptxas' registers and shared memory, 4 warps a block).
TILINGS = {"mma": our_tilings, "fwd51": fwd51_tilings, "bwd51": bwd51_tilings, "rope51": rope51_tilings}
# 'mma': docs/results/gpu-static.md, "The static GPU check" (commit 6f7a923); 'fwd51': ptxas at bae2b3b, 137 and
# 166 registers (36,864 and 34,816 B of shared memory): 3 blocks at both (docs/results/gpu-static.md, "Attention
# on tensor cores")
BLOCKS_PER_SM = {
    "mma": {("attention_mma_forward_kernel", 64): 3, ("attention_mma_forward_kernel", 128): 2,
            ("attention_mma_backward_dkdv_kernel", 64): 4, ("attention_mma_backward_dkdv_kernel", 128): 2,
            ("attention_mma_backward_dq_kernel", 64): 4, ("attention_mma_backward_dq_kernel", 128): 4},
    "fwd51": {("attention_mma_forward_kernel", 64): 3, ("attention_mma_forward_kernel", 128): 3},
    # 'bwd51': ptxas at f8d6252 (docs/results/gpu-static.md): 167/250 and 164/168 registers at head_dim 64/128
    "bwd51": {("attention_mma_backward_dkdv_kernel", 64): 3, ("attention_mma_backward_dkdv_kernel", 128): 2,
              ("attention_mma_backward_dq_kernel", 64): 3, ("attention_mma_backward_dq_kernel", 128): 3},
    # 'rope51': ptxas at the ropefuse branch: forward 133 and 167 registers, dK/dV 167 and 250, dQ 160
    # and 168 (hd 64/128), shared memory as fwd51's and bwd51's: the same blocks
    "rope51": {("attention_mma_forward_kernel", 64): 3, ("attention_mma_forward_kernel", 128): 3,
               ("attention_mma_backward_dkdv_kernel", 64): 3, ("attention_mma_backward_dkdv_kernel", 128): 2,
               ("attention_mma_backward_dq_kernel", 64): 3, ("attention_mma_backward_dq_kernel", 128): 3},
}
# BEFORE: faab088's kernels, the figures of the first prediction. AFTER: the kernels on main now.
# When the backward's new rows land (helper bwd51's 'bwd51' lines), the switch is the one line
# AFTER_BACKWARD = "rope51", with their tiling and occupancy registered above under that name. A
# state's kernels are its tilings' names ('forward' in the name: the forward's), so a state may
# rename, split or merge the backward's kernels; the step's backward bytes are split among them.
BEFORE_FORWARD, BEFORE_BACKWARD = "mma", "mma"
AFTER_FORWARD = "rope51"
AFTER_BACKWARD = "rope51"


def is_forward(kernel):
    return "forward" in kernel


def row_states(when, hd):
    """{kernel: mix-file state} of the 'before' or 'after' kernels at head_dim hd, forward first; a
    state with no tiling registered keeps the 'mma' kernels' names (read_rows then refuses it)"""
    fwd, bwd = (BEFORE_FORWARD, BEFORE_BACKWARD) if when == "before" else (AFTER_FORWARD, AFTER_BACKWARD)
    names = lambda state: list(TILINGS[state](hd) if state in TILINGS else our_tilings(hd))
    return {**{k: fwd for k in names(fwd) if is_forward(k)}, **{k: bwd for k in names(bwd) if not is_forward(k)}}


def read_rows(path, hd, states):
    """{kernel: {'state', 'iph', 'hmma', 'ldsm', 'mufu'}} from the mix file's lines of the states
    asked (states: {kernel: state}) at head_dim hd; each checked against its state's tiling: the
    hot loop's HMMA = the tiling's HMMA a warp a tile, its LDSM (x4, 512 B) = the ldmatrix bytes,
    its MUFU = the tiling's exponentials a lane (the MUFU term prices the tiling's count)"""
    found = {}
    try:
        with open(path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#"):
                    continue
                name, _, rest = parts[1].partition("<") if len(parts) > 1 else ("", "", "")
                if states.get(name) != parts[0] or rest != f"{hd}>":
                    continue
                try:
                    found[name] = {"state": parts[0], "iph": float(parts[2]), "hmma": int(parts[4]),
                                   "ldsm": int(parts[5]), "mufu": int(parts[9])}
                except (IndexError, ValueError):
                    raise SystemExit(f"roofline.py: {path}:{no}: want 'STATE KERNEL<HD> IPH INSTR HMMA LDSM FFMA FMUL "
                                     f"FADD MUFU ...'")
    except OSError as e:
        raise SystemExit(f"roofline.py: {path}: {e.strerror}")
    for name, state in states.items():
        if name not in found:
            raise SystemExit(f"roofline.py: {path}: no '{state}' line for {name} at head_dim {hd}")
        if state not in TILINGS or (name, hd) not in BLOCKS_PER_SM.get(state, {}):
            raise SystemExit(f"roofline.py: state '{state}' of {name}<{hd}>: no tiling or blocks per SM registered "
                             f"for it in bench/roofline_model.py (TILINGS, BLOCKS_PER_SM)")
        t, r = TILINGS[state](hd)[name], found[name]
        if t["hmma_warp"] != r["hmma"] or t["smem_read_warp"] != 512 * r["ldsm"]:
            raise SystemExit(f"roofline.py: {path}: '{state}' {name}<{hd}>: the SASS's {r['hmma']} HMMA and "
                             f"{r['ldsm']} LDSM a tile differ from its tiling's {t['hmma_warp']:g} and "
                             f"{t['smem_read_warp'] / 512:g}")
        if t["exp_warp"] != r["mufu"]:
            raise SystemExit(f"roofline.py: {path}: '{state}' {name}<{hd}>: the SASS's {r['mufu']} MUFU a tile differ "
                             f"from its tiling's {t['exp_warp']:g} exponentials a lane")
    return {name: found[name] for name in states}


def fa2_forward_tiling(hd):
    """FlashAttention-2's forward on an H100 (csrc/flash_attn/src/flash_fwd_launch_template.h,
    not sm8x, no dropout): Flash_fwd_kernel_traits<64, kBlockM 128, kBlockN 128, 4 warps> at
    head_dim 64, <128, 128, 64, 4> at 128. 32 query rows a warp, cp.async loads issued a tile
    ahead, the mask on the diagonal tiles only (its n_masking_steps), query blocks launched
    shortest first (m_block = blockIdx.x)"""
    t = forward_tiling(hd, 32, 4, 128 if hd <= 64 else 64, False)
    t["order"] = "shortest"
    return t


def fa2_backward_tiling(hd):
    """FlashAttention-2's backward on an H100 (flash_bwd_launch_template.h, 144 KB of shared memory
    or more, no dropout): Flash_bwd_kernel_traits<64, kBlockM 128, kBlockN 128, 8 warps, 4, 4, 4>
    at head_dim 64, <128, 64, 128, 8 warps, 2, 4, 2> at 128; one kernel a block of kBlockN keys
    streaming kBlockM queries (Q, dO by cp.async a tile ahead), five products a tile (S, dP, dV,
    dK, dQ), one exponential a score, dQ added to an fp32 accumulator by atomics. ldmatrix bytes a
    tile: each product reads its A operand once per warp column and its B once per warp row of
    its warp layout (AtomLayoutMSdP, NdKV, MdQ); P and dS stored to shared memory and read back"""
    m, n, warps = (128, 128, 8) if hd <= 64 else (64, 128, 8)
    wm_sdp, wm_dkv, wm_dq = (4, 4, 4) if hd <= 64 else (2, 4, 2)
    rd = lambda rows, k, cols, wr: 2 * (rows * k * (warps // wr) + k * cols * wr)  # A x warp cols, B x warp rows
    smem = 2 * rd(m, hd, n, wm_sdp) + 2 * rd(n, m, hd, wm_dkv) + rd(m, n, hd, wm_dq)
    return {"hmma_warp": 5 * m * n * hd / 2048 / warps, "smem_read_warp": smem / warps,
            "smem_write_block": 2 * m * n * 2 + 2 * m * hd * 2 + 2 * m * 4,  # P, dS; Q, dO; lse, D
            "trips": 1, "prefetch": 1, "own_trips": 1, "mask_warp": 0, "exp_warp": m * n / 32 / warps,
            "own_bytes": 4 * n * hd * 2 + 2 * m * hd * 2,  # K, V in, dK, dV out, tile 0
            "rows_block": n, "stream": m, "warps": warps, "order": "shortest"}


# FA2's forward at hd 128 holds 255 registers a thread (FA2's own launch notes) and 64 KB of
# shared memory (Q 32 KB, K and V 16 KB each): 2 blocks of 4 warps per SM; at hd 64 (48 KB) the
# registers allow 2 as well. Its backward's shared memory (the launcher asks for 144 KB or more)
# allows one block of 8 warps.
FA2_BLOCKS_PER_SM = 2
FA2_BWD_BLOCKS_PER_SM = 1
# FA2's instructions per HMMA, ESTIMATED from its structure (no SASS of it here): forward per warp
# per key tile at hd 128, 256 HMMA, 64 ldmatrix.x4, ~5 instructions per score per lane (scale-
# subtract FFMA, EX2, max, sum, half a pack) x 64 scores, ~60 of loop and address: ~2.7; the
# backward ~3 (dS = P·(dP - D), two packs, the dQ atomics besides). Below the tensor bound either
# way (the fitted rates leave 8-11 clocks an HMMA a scheduler): the figures do not move the fit.
FA2_IPH = (256 + 64 + 5 * 64 + 60) / 256
FA2_BWD_IPH = 3.0


def flash_bwd_side_bytes(B, H, T, hd):
    """the memory-bound passes around a FlashAttention backward (FA2's and FA3's alike): D =
    rowsum(dO o O) (bf16 in, fp32 out), dQ's fp32 accumulator zeroed, then read and written as bf16"""
    n = B * H * T
    return n * hd * 2 * 2 + n * 4 + n * hd * 4 + n * hd * (4 + 2)


def block_tile(t, iph, blocks, gpu, rate, latency=L2_LATENCY, diagonal=False):
    """(clocks of an SM per block-tile, {resource: clocks}) of one tiling. A block's own cycle on
    a tile is its issue and its exposed wait: with plain loads (prefetch 0) the whole round trips;
    with loads issued `prefetch` tiles ahead, what the latency exceeds the issue of the tiles in
    between; b blocks per SM share that cycle (Little's law). diagonal: a diagonal tile, its mask
    priced as issue (tilings whose hot loop masks every tile have it in iph). 'tensor' is the
    products at the rate plus the exponentials at MUFU's (their MUFU instructions are also in iph
    as one issue slot each: a different resource, so not counted twice); 'mufu' is the latter
    alone, printed, not a bound of its own"""
    warps = t["warps"]
    # a scheduler issues for warps / 4 of the block's warps
    issue = (iph * t["hmma_warp"] + (t["mask_warp"] if diagonal else 0)) * warps / SCHEDULERS
    mufu = warps * t["exp_warp"] * 32 / MUFU_PER_CLOCK
    tensor = warps * t["hmma_warp"] / rate + mufu
    shared = (warps * t["smem_read_warp"] + t["smem_write_block"]) / SHARED_BYTES_PER_CLOCK
    if t["prefetch"] == 0:
        wait = t["trips"] * latency
    else:
        wait = max(0.0, t["trips"] * latency / t["prefetch"] - issue)
    lat = (issue + wait) / blocks
    parts = {"issue": issue, "tensor": tensor, "shared": shared, "latency": lat}
    return max(parts.values()), {**parts, "mufu": mufu}


def schedule(lengths, slots):
    """clocks until the last of `lengths` (block durations, in launch order) ends when each starts
    on the first of `slots` block slots to free up: the wave tails of uneven causal blocks"""
    if len(lengths) <= slots:
        return max(lengths, default=0.0)
    ends = sorted(lengths[:slots])
    heapq.heapify(ends)
    for d in lengths[slots:]:
        heapq.heappush(ends, heapq.heappop(ends) + d)
    return max(ends)


def attention_time(t, iph, blocks, gpu, rate, B, NH, T, causal, hbm_bytes):
    """(seconds, binding resource, {resource: clocks a block-tile}, block-tiles) of one attention
    kernel: B·NH heads of blocks, each block its tiles (the diagonal ones with their mask) at the
    SM's shared rate, plus one HBM round trip a wait for its own rows, scheduled over sms x blocks
    slots in launch order"""
    per, parts = block_tile(t, iph, blocks, gpu, rate)
    per_d, _ = block_tile(t, iph, blocks, gpu, rate, diagonal=True)
    sms, clock = gpu["sms"], gpu["clock"]
    # a block's prologue and epilogue, not overlapped with its tiles: its own rows' round trips and
    # their bytes (with the first streamed tile) at the SM's share of the HBM bandwidth; then an
    # epilogue's L2 round trips (own_l2_trips: rope51's tables) and added instructions (own_issue)
    own = (t["own_trips"] * HBM_LATENCY + t["own_bytes"] / (gpu["hbm"] / sms / clock)
           + t.get("own_l2_trips", 0) * L2_LATENCY + t.get("own_issue", 0))
    n = -(-T // t["rows_block"])
    n_stream = -(-T // t["stream"])
    lengths = []
    for i in range(n):
        if causal:
            k = min(n_stream, -(-((i + 1) * t["rows_block"]) // t["stream"]))
            d = min(k, -(-t["rows_block"] // t["stream"]))
        else:
            k, d = n_stream, 0
        lengths.append(((k - d) * per + d * per_d) * blocks + own)
    if t["order"] == "longest":
        lengths.sort(reverse=True)
    t_sm = schedule(lengths * (B * NH), sms * blocks) / clock
    t_hbm = hbm_bytes / (gpu["hbm"] * MEM_EFFICIENCY)
    bound = max((k for k in parts if k != "mufu"), key=parts.get)
    if t_hbm > t_sm:
        bound = "hbm"
    tiles = B * NH * (causal_tiles(T, t["rows_block"], t["stream"])[1] if causal else n * n_stream)
    return max(t_sm, t_hbm), bound, parts, tiles


def blocks_to_hide(t, iph, rate, latency=L2_LATENCY):
    """Little's law in blocks: a block's tile is its work plus its exposed wait for the loads; the
    SM stays busy when the other blocks' work covers that wait, b >= (work + wait) / work"""
    _, p = block_tile(t, iph, 1, None, rate, latency)
    work = max(p["issue"], p["tensor"], p["shared"])
    return p["latency"] / work


def little(gpu, blocks, warps, latency=L2_LATENCY):
    """(bytes in flight an SM needs to stream at the HBM's share of an SM, bytes a load trip of
    `blocks` blocks of `warps` warps has in flight: one 16-byte load per thread)"""
    need = gpu["hbm"] / gpu["sms"] * latency / gpu["clock"]
    return need, blocks * warps * 32 * 16


def causal_tiles(T, rows_block, stream):
    """block-tiles of a causal pass whose blocks own rows_block rows and stream `stream`-row tiles
    up to (forward, dQ) or from (dK/dV) the diagonal: tiles of block i = ceil((i+1)·rows/stream)"""
    n = -(-T // rows_block)
    return n, sum(min(-(-T // stream), -(-((i + 1) * rows_block) // stream)) for i in range(n))


# ---- GEMMs, cuBLASLt-like
GEMM_TILES = [(128, 256), (256, 128), (128, 128)]
GEMM_KSTEP = 64
GEMM_FILL = HBM_LATENCY  # a tile's pipeline fill: its first stage's load


def gemm_time(m, n, k, nbytes, gpu, rate=None):
    """seconds of a cuBLASLt-like bf16 GEMM (wgmma tiles, split-K 1-4, whole waves) and its bound"""
    rate = WGMMA_RATE if rate is None else rate
    best = None
    for tm, tn in GEMM_TILES:
        for split in (1, 2, 3, 4):
            tiles = -(-m // tm) * -(-n // tn) * split
            ksteps = -(-k // (GEMM_KSTEP * split))
            clocks = -(-tiles // gpu["sms"]) * (ksteps * tm * tn * GEMM_KSTEP * 2 / SM_FLOP_PER_CLOCK / rate
                                                + GEMM_FILL)
            extra = 2 * m * n * 4 * (split - 1)  # fp32 partials written and read back
            t_hbm = (nbytes + extra) / (gpu["hbm"] * MEM_EFFICIENCY)
            t = max(clocks / gpu["clock"], t_hbm)
            cand = (t, "hbm" if t_hbm * gpu["clock"] > clocks else "tensor", f"{tm}x{tn} split {split}")
            if best is None or cand[0] < best[0]:
                best = cand
    return best


def mem_time(nbytes, gpu, warps_per_sm=32):
    """seconds of a streaming kernel: Little's law at its occupancy (the 50 % floor: 32 warps,
    one 16-byte load a thread in flight) caps its share of the bandwidth"""
    need, have = little(gpu, 1, warps_per_sm, HBM_LATENCY)
    return nbytes / (gpu["hbm"] * MEM_EFFICIENCY * min(1.0, have / need))


# ---- the fits
def fa2_speed(kind, hd, T, causal, rate, gpu=None):
    """(FLOP/s, binding resource) FlashAttention-2's forward ('fwd') or backward ('bwd') reaches in
    the model at the FA3 paper's shapes (16k tokens, hidden 2048: 2048 / hd heads), FLOPs as the
    paper counts them (4·B·H·T²·hd forward, half causal, 2.5x backward); the backward with its
    memory-bound passes (flash_bwd_side_bytes)"""
    gpu = gpu or GPUS["h100"]
    B, H = 16384 // T, 2048 // hd
    flops = 4.0 * B * H * T * T * hd / (2 if causal else 1)
    if kind == "fwd":
        hbm = B * T * H * hd * 2 * 4  # Q, K, V read, O written
        sec, bound, _, _ = attention_time(fa2_forward_tiling(hd), FA2_IPH, FA2_BLOCKS_PER_SM, gpu, rate, B, H, T,
                                          causal, hbm)
        return flops / sec, bound
    hbm = B * T * H * hd * 2 * 8  # Q, K, V, O, dO read, dQ, dK, dV written
    sec, bound, _, _ = attention_time(fa2_backward_tiling(hd), FA2_BWD_IPH, FA2_BWD_BLOCKS_PER_SM, gpu, rate, B, H, T,
                                      causal, hbm)
    return 2.5 * flops / (sec + mem_time(flash_bwd_side_bytes(B, H, T, hd), gpu)), bound


def bisect(f, target, lo, hi):
    """x in [lo, hi] with f(x) = target, f increasing"""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def fit_mma_sync_rate():
    return bisect(lambda r: fa2_speed("fwd", 128, FA2_FIT, False, r)[0], FA2_FWD[(128, False)][FA2_FIT] * 1e12, 0.05, 1.0)


def fit_mma_sync_rate_bwd():
    return bisect(lambda r: fa2_speed("bwd", 128, FA2_FIT, False, r)[0], FA2_BWD[128][FA2_FIT] * 1e12, 0.05, 1.0)


def fit_wgmma_rate():
    gpu = GPUS["h100"]
    s = 8192
    f = lambda r: 2.0 * s ** 3 / gemm_time(s, s, s, 3 * s * s * 2, gpu, r)[0]
    return bisect(f, CUBLAS_SQUARE[s] * 1e12, 0.3, 1.0)


def fitted():
    """(mma.sync forward rate, wgmma GEMM rate); the backward's: fitted_bwd()"""
    global MMA_SYNC_RATE, MMA_SYNC_RATE_BWD, WGMMA_RATE
    if MMA_SYNC_RATE is None:
        MMA_SYNC_RATE = fit_mma_sync_rate()
        MMA_SYNC_RATE_BWD = fit_mma_sync_rate_bwd()
        WGMMA_RATE = fit_wgmma_rate()
    return MMA_SYNC_RATE, WGMMA_RATE


def fitted_bwd():
    fitted()
    return MMA_SYNC_RATE_BWD


def fa2_points():
    """[(kind, hd, causal, seqlen, published TFLOP/s, source)]: every FlashAttention-2 H100 figure held"""
    pts = []
    for (hd, causal), d in FA2_FWD.items():
        pts += [("fwd", hd, causal, T, pub, f"FA3 v2 Fig. 5, hd{hd} {'causal' if causal else 'no mask'}")
                for T, pub in d.items()]
    for hd, d in FA2_BWD.items():
        pts += [("bwd", hd, False, T, pub, f"FA3 v2 Fig. 6, hd{hd}") for T, pub in d.items()]
    return pts


def calibration():
    """[(config, published TFLOP/s or None, predicted TFLOP/s, ratio, note)] on an H100"""
    mma, wg = fitted()
    gpu = GPUS["h100"]
    rows = []
    for kind, hd, causal, T, pub, src in fa2_points():
        pred, bound = fa2_speed(kind, hd, T, causal, mma if kind == "fwd" else fitted_bwd(), gpu)
        fit = hd == 128 and not causal and T == FA2_FIT
        rows.append((f"FA2 {kind} hd{hd} {'causal' if causal else 'non-causal'} seqlen {T}", pub, pred / 1e12,
                     pred / 1e12 / pub, ("fitted; " if fit else "") + f"{bound}; {src}"))
    for s, pub in CUBLAS_SQUARE.items():
        t, bound, cfg = gemm_time(s, s, s, 3 * s * s * 2, gpu)
        pred = 2.0 * s ** 3 / t / 1e12
        rows.append((f"cuBLAS bf16 {s}^3", pub, pred, pred / pub, ("fitted; " if s == 8192 else "") + f"{bound}, {cfg}; "
                     "fast.cu README"))
    # streaming: a device-to-device copy ran at 3.0 TB/s on this workplace's H100 (docs/results/gpu-static.md,
    # "The step on paper"); the model's streaming kernels: 80 % of 3.35 TB/s, Little's law allowing
    g = 1e9 / mem_time(1e9, gpu) / 1e12
    rows.append(("HBM streaming (TB/s, device-to-device copy)", 3.0, g, g / 3.0, "hbm; planned, not fitted"))
    return rows


# fast/attention_wgmma_forward.cu's block: 128 queries (two consumer warpgroups) against 128-key tiles;
# fast/attention_wgmma_backward.cu's: 128 keys (dK/dV) or queries (dQ) against 64-row tiles
WGMMA_ATTENTION_TILE = (128, 128)
WGMMA_ATTENTION_BWD_TILE = (128, 64)

# ---- the 468M step, kernel by kernel
LABELS = {"attention_mma_forward_kernel": "attention fwd (mma.sync)",
          "attention_mma_backward_dkdv_kernel": "attention bwd dK/dV (mma.sync)",
          "attention_mma_backward_dq_kernel": "attention bwd dQ (mma.sync)"}
def predict_step(ks, shapes, rows, B, T, NH, hd, gpu):
    """[(name, calls, seconds, bound, note, kind, index in ks)] of one step on `gpu`: GEMMs cuBLASLt-like,
    attention from the tilings and SASS of `rows` ({kernel: read_rows' figures}), the rest
    streaming; the forward's attention at mma.sync's forward rate, the backward's at its backward rate"""
    mma, _ = fitted()
    mma_bwd = fitted_bwd()
    out = []
    for i, (name, kind, count, fl, nb) in enumerate(ks):
        if kind == "gemm":
            m, n, k = shapes[name]
            t, bound, cfg = gemm_time(m, n, k, nb, gpu)
            out.append((name, count, t * count, bound, cfg, kind, i))
        elif kind == "wgmma_fwd":  # fast/attention_wgmma_forward.cu (--attention wgmma)
            import roofline_hopper as rh
            sec, p = rh.fa3_time("fwd", hd, B, NH, T, True, gpu, rh.fitted()[0], nb, tiles=WGMMA_ATTENTION_TILE)
            note = (f"priced as FlashAttention-3 (its fitted efficiency) on this kernel's {WGMMA_ATTENTION_TILE[0]} x "
                    f"{WGMMA_ATTENTION_TILE[1]} tiles; tensor {p['tensor']:.0f} + exp2 {p['mufu']:.0f} clk a block-tile")
            out.append(("attention fwd (wgmma)", count, sec * count, "tensor", note, "attn_fwd", i))
        elif kind == "wgmma_bwd7":  # fast/attention_wgmma_backward.cu (--attention wgmma): 7 products a pair
            import roofline_hopper as rh
            sec, p = rh.fa3_time("bwd", hd, B, NH, T, True, gpu, rh.fitted()[1], nb, 7, tiles=WGMMA_ATTENTION_BWD_TILE)
            note = (f"priced as FlashAttention-3's backward (its fitted efficiency) at 7 products a pair (P recomputed "
                    f"in both kernels, no atomics) on {WGMMA_ATTENTION_BWD_TILE[0]} x {WGMMA_ATTENTION_BWD_TILE[1]} tiles")
            out.append(("attention bwd (wgmma)", count, sec * count, "tensor", note, "attn_bwd", i))
        elif kind == "gemm_wgmma":  # fast/gemm_wgmma.cu (--gemm wgmma): bench/roofline_gemm.py
            import roofline_gemm as rg
            m, n, k = shapes[name]
            t, bound, cfg = rg.gemm_time(m, n, k, nb, gpu, rg.OURS[name])
            out.append((name + " [wgmma GEMM]", count, t * count, bound, cfg, "gemm", i))
        elif kind == "mem":
            out.append((name, count, mem_time(nb, gpu) * count, "hbm", "", kind, i))
        elif kind in ("attn_fwd", "attn_bwd"):
            mine = [k for k in rows if is_forward(k) == (kind == "attn_fwd")]
            parts = [(k, nb / len(mine)) for k in mine]
            for kernel, kb in parts:
                r = rows[kernel]
                t = TILINGS[r["state"]](hd)[kernel]
                b = BLOCKS_PER_SM[r["state"]][(kernel, hd)]
                rate = mma if is_forward(kernel) else mma_bwd
                sec, bound, p, tiles = attention_time(t, r["iph"], b, gpu, rate, B, NH, T, True, kb)
                fexec = tiles * t["warps"] * t["hmma_warp"] * HMMA_FLOP
                l2 = tiles * t["smem_write_block"] / sec  # the streamed tiles, L2 to the SMs
                loads = (f"{t['trips']} round trips a tile" if t["prefetch"] == 0 else
                         f"cp.async {t['prefetch']} tile ahead, {t['mask_warp']:.0f} mask instr/warp on the diagonal")
                note = (f"['{r['state']}' rows] {fexec / sec / 1e12:.0f} TFLOP/s executed; per block-tile issue "
                        f"{p['issue']:.0f}, tensor {p['tensor']:.0f} (of which exp2 {p['mufu']:.0f}), shared "
                        f"{p['shared']:.0f}, latency {p['latency']:.0f} clk ({loads}; hiding the loads takes "
                        f"{blocks_to_hide(t, r['iph'], rate):.1f} blocks/SM, it has {b}); L2 reads {l2 / 1e12:.1f} TB/s")
                out.append((LABELS.get(kernel, kernel), count, sec * count, bound, note, kind, i))
        else:
            raise SystemExit(f"roofline.py: kernel '{name}' of kind '{kind}': bench/roofline_model.py has no model "
                             f"for that kind")
    return out


def step_sums(res, model_flops, gpu):
    """(step s, MFU of the dense peak, attention s, GEMM s, memory-bound s) of predict_step's rows"""
    t = sum(r[2] for r in res)
    att = sum(r[2] for r in res if r[5].startswith("attn"))
    gem = sum(r[2] for r in res if r[5] == "gemm")
    return t, model_flops / t / (SM_FLOP_PER_CLOCK * gpu["sms"] * gpu["clock"]), att, gem, t - att - gem


WHAT_IF_MEM_BYTES = 35e9  # issue 51's goal for the memory-bound kernels' bytes a step


def print_predict(ks, shapes, before, after, B, T, NH, hd, model_flops, head):
    """the step on an H100 and an H200, each kernel with faab088's figure (before: the 'mma' rows)
    beside today's (after), each with its binding resource"""
    mma, wg = fitted()
    gpus = ("h100", "h200")
    res = {(g, w): predict_step(ks, shapes, rows, B, T, NH, hd, GPUS[g])
           for g in gpus for w, rows in (("before", before), ("after", after))}
    states = lambda rows: ", ".join(f"{LABELS.get(k, k).split(' (')[0].replace('attention ', '')} '{rows[k]['state']}'"
                                    for k in rows)
    print(head)
    print(f"prediction (no GPU measured it): mma.sync attention's products at {mma:.3f} (forward) and "
          f"{fitted_bwd():.3f} (backward) of the dense peak plus its exponentials at MUFU's {MUFU_PER_CLOCK:.0f} a "
          f"clock an SM, wgmma GEMMs at {wg:.3f} (all fitted, --calibrate); L2 {L2_LATENCY} / HBM {HBM_LATENCY} "
          f"clocks assumed")
    print(f"faab088 = the kernels the first prediction priced ({states(before)}); now = {states(after)} "
          f"(bench/attention_sass_mix.txt)")
    print(f"{'kernel':44s} {'calls':>5s} {'H100 faab088':>12s} {'bound':7s} {'H100 now':>8s} {'bound':7s} "
          f"{'H200 faab088':>12s} {'bound':7s} {'H200 now':>8s} {'bound':7s} note (H100, now)")
    # one line a kernel; where before and now have different attention kernels (renamed, split or
    # merged), a step entry's kernels pair in order and the missing side prints '-'
    cell = lambda r, w: f"{r[2] * 1e3:{w}.2f} {r[3]:7s}" if r else f"{'-':>{w}s} {'':7s}"
    for i in range(len(ks)):
        cols = [[r for r in res[(g, w)] if r[6] == i] for g in gpus for w in ("before", "after")]
        for r1, r2, r3, r4 in itertools.zip_longest(*cols):
            name = (r2 or r1)[0] if not (r1 and r2) or r1[0] == r2[0] else f"{r1[0]} -> {r2[0]}"
            print(f"{name:44s} {(r2 or r1)[1]:5d} {cell(r1, 12)} {cell(r2, 8)} {cell(r3, 12)} {cell(r4, 8)} "
                  f"{r2[4] if r2 else ''}")
    mem_bytes = sum(k[2] * k[4] for k in ks if k[1] == "mem")
    for g in gpus:
        for w, tag in (("before", "faab088"), ("after", "now")):
            t, mfu, att, gem, rest = step_sums(res[(g, w)], model_flops, GPUS[g])
            print(f"{GPUS[g]['name']} {tag}: step {t * 1e3:.1f} ms, MFU {100 * mfu:.1f}% of 989 TFLOP/s; attention "
                  f"{att * 1e3:.1f} ms, GEMMs {gem * 1e3:.1f} ms, the rest {rest * 1e3:.1f} ms; {B * T / t:,.0f} tokens/s")
    if mem_bytes <= WHAT_IF_MEM_BYTES:
        print(f"the memory-bound kernels move {mem_bytes / 1e9:.1f} GB, within issue 51's "
              f"{WHAT_IF_MEM_BYTES / 1e9:.0f} GB: no what-if")
        return
    for g in gpus:
        t, _, att, gem, rest = step_sums(res[(g, "after")], model_flops, GPUS[g])
        t2 = att + gem + rest * WHAT_IF_MEM_BYTES / mem_bytes
        print(f"WHAT-IF, not today's bytes: {GPUS[g]['name']} now with the memory-bound kernels' "
              f"{mem_bytes / 1e9:.1f} GB cut to {WHAT_IF_MEM_BYTES / 1e9:.0f} GB (their time in proportion): step "
              f"{t2 * 1e3:.1f} ms, MFU {100 * model_flops / t2 / (SM_FLOP_PER_CLOCK * GPUS[g]['sms'] * GPUS[g]['clock']):.1f}%")


def print_bytes(ks, head):
    """the static HBM byte count per kernel per step (read + written, each tensor once)"""
    print(head)
    print(f"{'kernel':52s} {'kind':8s} {'calls':>5s} {'MB/call':>9s} {'GB/step':>8s}")
    for name, kind, count, _, nb in ks:
        print(f"{name:52s} {kind:8s} {count:5d} {nb / 1e6:9.1f} {nb * count / 1e9:8.2f}")
    tot = sum(k[2] * k[4] for k in ks)
    mem = sum(k[2] * k[4] for k in ks if k[1] == "mem")
    print(f"\nHBM bytes per step: {tot / 1e9:.1f} GB in all; {mem / 1e9:.1f} GB in the memory-bound kernels "
          f"(the issue-51 goal: <= 35 GB); {(tot - mem) / 1e9:.1f} GB in GEMMs and attention")


def print_calibration(ks=None, shapes=None):
    mma, wg = fitted()
    print(f"calibration on an H100 SXM5 (published vs this model; fitted: mma.sync attention's products at "
          f"{mma:.3f} (forward) and {fitted_bwd():.3f} (backward) of the dense peak, its exponentials at MUFU's "
          f"{MUFU_PER_CLOCK:.0f} a clock an SM beside them; wgmma GEMMs at {wg:.3f})")
    print("sources: FA2 = the FlashAttention-2 bars of Shah et al., FlashAttention-3, arXiv 2407.08608 v2, Figs. 5 "
          "(forward) and 6 (backward), H100 80GB SXM5, 16k tokens, hidden 2048; cuBLAS = pranjalssh/fast.cu README, "
          "Kernel 0, H100 SXM; fast.cu Kernel 6 = the same README's Kernel 6 (producer/consumer warpgroups, TMA, "
          "persistent, mbarrier parity: fast/gemm_wgmma.cu's structure; bench/roofline_gemm.py fits its main loop's "
          "rate on it); HBM = this workplace's H100 (docs/results/gpu-static.md)")
    print(f"{'config':44s} {'published':>9s} {'predicted':>9s} {'ratio':>6s}  note")
    import roofline_gemm as rg  # fast/gemm_wgmma.cu's rate, fitted on the kernel of its structure
    for cfg, pub, pred, ratio, note in calibration() + rg.calibration():
        flag = "" if abs(ratio - 1) <= 0.15 else "  OUTSIDE 15%"
        print(f"{cfg:44s} {pub:9.1f} {pred:9.1f} {ratio:6.3f}  {note}{flag}")
    if ks:
        print("\nthe 468M step's GEMM shapes (no published figure for these shapes: predictions only)")
        seen = set()
        for name, kind, _, fl, nb in ks:
            if kind != "gemm" or shapes[name] in seen:
                continue
            seen.add(shapes[name])
            m, n, k = shapes[name]
            t, bound, cfg = gemm_time(m, n, k, nb, GPUS["h100"])
            print(f"  {m:6d} x {n:6d} x {k:6d}  {fl / t / 1e12:6.1f} TFLOP/s  {bound}, {cfg}  ({name})")
