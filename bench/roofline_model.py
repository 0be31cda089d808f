"""roofline_model.py: the resource model behind `bench/roofline.py --predict / --calibrate / --bytes`.

roofline.py's default figures are a ceiling: every kernel at an assumed efficiency, issue at one
instruction a clock, the tile loads counted once. This module prices a kernel by the resource
that binds it, from its tiling and its SASS figures:

  tensor   HMMAs over the tensor core's rate (one HMMA.16816 a clock per SM at the dense peak,
           x mma.sync's share of it);
  issue    instructions per HMMA (bench/attention_sass_mix.txt) over one instruction a clock per
           warp scheduler;
  shared   bytes through shared memory (ldmatrix reads, tile stores) over 32 banks x 4 B a clock;
  latency  the tile loads as executed: a rolled loop of plain 16-byte loads is one global round
           trip per trip of the loop, and a block waits for all of them before its tile (no
           cp.async, no double buffer); b blocks per SM overlap one block's wait with the
           others' work (Little's law: to hide a latency the SM needs b >= (work + wait) / work);
  hbm      bytes through HBM over its bandwidth.

One block-tile (a block's work on one streamed tile) costs max(issue, tensor, shared,
(issue + exposed latency) / b) clocks of an SM; a kernel is its block-tiles spread over the SMs,
plus one exposed round trip per block for its own rows. GEMMs are cuBLASLt-like: Hopper wgmma
tiles (128x256, 256x128, 128x128) and split-K, the best of them, in whole waves over the SMs.
Memory-bound kernels: bytes over the bandwidth x the planned 80 % x the share Little's law
allows at their occupancy.

Nothing here was measured on a GPU. The hardware figures are the datasheets'; the latencies are
assumptions of the order microbenchmarks report; two constants are fitted on published figures
(calibrate()) and the rest of the published points check them. docs/design/roofline.md has the
sources, the calibration table and the prediction.
"""
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
# planned share of the HBM bandwidth a streaming kernel reaches (roofline.py's EFFICIENCY["mem"])
MEM_EFFICIENCY = 0.80
# The two fitted constants (calibrate() prints the fit and the checks):
# MMA_SYNC_RATE: the share of the dense peak mma.sync-based attention sustains on an H100,
# fitted on FlashAttention-2's forward at head_dim 128, 16k, not causal (370 TFLOP/s, FA3 paper).
# It folds mma.sync's own ceiling on Hopper (only wgmma reaches the dense peak) with what
# FA2's schedule loses to it; roofline.py's default assumes 0.63 for the first alone.
# WGMMA_RATE: the share of the dense peak a cuBLAS wgmma main loop sustains (clock under power
# included), fitted on cuBLAS bf16 8192^3 (797.8 TFLOP/s, pranjalssh/fast.cu README, H100 SXM).
MMA_SYNC_RATE = None  # computed by fit_mma_sync_rate() at first use
WGMMA_RATE = None     # computed by fit_wgmma_rate() at first use

# ---- published H100 SXM5 figures (TFLOP/s) the model is calibrated against
# FlashAttention-3 paper (Shah et al. 2024, arXiv 2407.08608), figure "Attention forward speed,
# head dim 128 (H100 80GB SXM5)", FlashAttention-2 bars; batch x seqlen = 16k, 16 heads of 128;
# causal FLOPs are half the non-causal ones.
FA2_FWD_HD128 = {False: {512: 309, 1024: 350, 2048: 362, 4096: 368, 8192: 370, 16384: 370},
                 True: {512: 191, 1024: 260, 2048: 298, 4096: 319, 8192: 333, 16384: 335}}
# cuBLAS bf16 in, fp32 accumulate, square M = N = K, H100 SXM (pranjalssh/fast.cu README,
# "Kernel 0: simple cuBLAS call"; an issue there reports 518 at 8192 with CUDA 12.4: cuBLAS
# versions differ)
CUBLAS_SQUARE = {8192: 797.8, 6144: 741.1}


# ---- attention tilings. Per warp per streamed tile: HMMAs, ldmatrix bytes; per block per tile:
# shared-memory store bytes and global round trips of the load loops as executed.
def trips(rows, hd, threads):
    """round trips of a rolled loop of one 16-byte load per thread over a rows x hd bf16 tile"""
    return math.ceil(rows * hd * 2 / 16 / threads)


def forward_tiling(hd, rows_per_warp, warps, keys, plain_loads):
    """flash forward: S = Q·Kᵀ and O += P·V per key tile; Q's fragments stay in registers, each
    warp reads the whole K and V tile by ldmatrix once"""
    threads = 32 * warps
    return {"hmma_warp": rows_per_warp * keys * hd / 1024,
            "smem_read_warp": 2 * keys * hd * 2,
            "smem_write_block": 2 * keys * hd * 2,
            "trips": 2 * trips(keys, hd, threads) if plain_loads else 0,
            "own_trips": trips(warps * rows_per_warp, hd, threads),
            "rows_block": warps * rows_per_warp, "stream": keys, "warps": warps}


def dkdv_tiling(hd, rows_per_warp, warps, rows):
    """our dK/dV (fast/attention_mma_backward.cu): a warp owns 16 keys; per streamed tile of
    `rows` queries four products (S, dP, dV, dK), Q and dO each read twice by ldmatrix, K and V's
    own A fragments re-read (the SASS's LDSM count agrees: 40 x4 at hd 64, 48 at hd 128)"""
    threads = 32 * warps
    return {"hmma_warp": rows_per_warp * rows * hd / 512,
            "smem_read_warp": 4 * rows * hd * 2 + 2 * rows_per_warp * hd * 2,
            "smem_write_block": 2 * rows * hd * 2 + 2 * rows * 4,
            "trips": 2 * trips(rows, hd, threads) + 1,  # Q, dO, then lse and D (one trip)
            "own_trips": 2 * trips(warps * rows_per_warp, hd, threads),
            "rows_block": warps * rows_per_warp, "stream": rows, "warps": warps}


def dq_tiling(hd, rows_per_warp, warps, rows):
    """our dQ: a warp owns 16 queries; per streamed tile of `rows` keys three products (S, dP,
    dQ), K read twice and V once by ldmatrix, Q and dO's own A fragments re-read (LDSM 32 x4 at
    hd 64, 40 at hd 128)"""
    threads = 32 * warps
    return {"hmma_warp": 3 * rows_per_warp * rows * hd / 2048,
            "smem_read_warp": 3 * rows * hd * 2 + 2 * rows_per_warp * hd * 2,
            "smem_write_block": 2 * rows * hd * 2,
            "trips": 2 * trips(rows, hd, threads),
            "own_trips": 2 * trips(warps * rows_per_warp, hd, threads) + 1,
            "rows_block": warps * rows_per_warp, "stream": rows, "warps": warps}


def our_tilings(hd):
    """fast/attention_mma_*.cu at faab088: 4 warps of 16 rows; forward key tiles of 64; the
    backward streams 32 rows (16 at head_dim 128); plain rolled loads everywhere"""
    r = 16 if hd >= 128 else 32
    return {"attention_mma_forward_kernel": forward_tiling(hd, 16, 4, 64, True),
            "attention_mma_backward_dkdv_kernel": dkdv_tiling(hd, 16, 4, r),
            "attention_mma_backward_dq_kernel": dq_tiling(hd, 16, 4, r)}


def fa2_forward_tiling(hd):
    """FlashAttention-2's forward on an H100 at head_dim 128 (flash_fwd_launch_template.h,
    run_mha_fwd_hdim128, not sm8x: Flash_fwd_kernel_traits<128, kBlockM 128, kBlockN 64, 4 warps>):
    32 query rows a warp, cp.async loads issued a tile ahead (no exposed round trip)"""
    return forward_tiling(hd, 32, 4, 64, False)


# FA2's forward at hd 128 holds 255 registers a thread (FA2's own launch notes) and 64 KB of
# shared memory (Q 32 KB, K and V 16 KB each): 2 blocks of 4 warps per SM.
FA2_BLOCKS_PER_SM = 2
# FA2's instructions per HMMA, ESTIMATED from its structure (no SASS of it here): per warp per key
# tile 256 HMMA, 64 ldmatrix.x4, ~5 instructions per score per lane (scale-subtract FFMA, EX2,
# max, sum, half a pack) x 64 scores, ~60 of loop and address: ~2.7. Below the tensor bound
# either way (4 / 0.63 = 6.3 clocks per HMMA per scheduler): the figure does not move the fit.
FA2_IPH = (256 + 64 + 5 * 64 + 60) / 256


def block_tile(t, iph, blocks, gpu, rate, latency=L2_LATENCY):
    """(clocks of an SM per block-tile, {resource: clocks}) of one tiling"""
    warps = t["warps"]
    issue = iph * t["hmma_warp"]
    tensor = warps * t["hmma_warp"] / rate
    shared = (warps * t["smem_read_warp"] + t["smem_write_block"]) / SHARED_BYTES_PER_CLOCK
    wait = t["trips"] * latency
    lat = (issue + wait) / blocks
    parts = {"issue": issue, "tensor": tensor, "shared": shared, "latency": lat}
    return max(parts.values()), parts


def attention_time(t, iph, blocks, gpu, rate, n_blocks, tiles, flops_exec, hbm_bytes):
    """seconds of one attention kernel: `tiles` block-tiles and `n_blocks` blocks over the GPU,
    and the binding resource"""
    per, parts = block_tile(t, iph, blocks, gpu, rate)
    sms, clock = gpu["sms"], gpu["clock"]
    own = n_blocks * t["own_trips"] * HBM_LATENCY / blocks  # each block's own rows, one wait each
    t_sm = (tiles * per + own) / sms / clock
    t_hbm = hbm_bytes / (gpu["hbm"] * MEM_EFFICIENCY)
    bound = max(parts, key=parts.get)
    if t_hbm > t_sm:
        bound = "hbm"
    return max(t_sm, t_hbm), bound, parts


def blocks_to_hide(t, iph, rate, latency=L2_LATENCY):
    """Little's law in blocks: a block's tile is its work plus its wait for the loads; the SM
    stays busy when the other blocks' work covers that wait, b >= (work + wait) / work"""
    _, p = block_tile(t, iph, 1, None, rate, latency)
    work = max(p["issue"], p["tensor"], p["shared"])
    return (p["issue"] + t["trips"] * latency) / work


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
def fa2_forward(gpu, T, causal, rate, hd=128, heads=16):
    """FLOP/s FlashAttention-2's forward reaches in the model, at the FA3 paper's shapes
    (batch x seqlen 16k, 16 heads of 128)"""
    B = 16384 // T
    t = fa2_forward_tiling(hd)
    if causal:
        n, tiles = causal_tiles(T, t["rows_block"], t["stream"])
    else:
        n = -(-T // t["rows_block"])
        tiles = n * -(-T // t["stream"])
    n_blocks, tiles = n * B * heads, tiles * B * heads
    flops = 4.0 * B * heads * T * T * hd / (2 if causal else 1)
    hbm = B * T * heads * hd * 2 * 4  # Q, K, V read, O written
    sec, bound, _ = attention_time(t, FA2_IPH, FA2_BLOCKS_PER_SM, gpu, rate, n_blocks, tiles,
                                   flops, hbm)
    return flops / sec, bound


def bisect(f, target, lo, hi):
    """x in [lo, hi] with f(x) = target, f increasing"""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def fit_mma_sync_rate():
    gpu = GPUS["h100"]
    return bisect(lambda r: fa2_forward(gpu, 16384, False, r)[0], FA2_FWD_HD128[False][16384] * 1e12, 0.05, 1.0)


def fit_wgmma_rate():
    gpu = GPUS["h100"]
    s = 8192
    f = lambda r: 2.0 * s ** 3 / gemm_time(s, s, s, 3 * s * s * 2, gpu, r)[0]
    return bisect(f, CUBLAS_SQUARE[s] * 1e12, 0.3, 1.0)


def fitted():
    global MMA_SYNC_RATE, WGMMA_RATE
    if MMA_SYNC_RATE is None:
        MMA_SYNC_RATE = fit_mma_sync_rate()
        WGMMA_RATE = fit_wgmma_rate()
    return MMA_SYNC_RATE, WGMMA_RATE


def calibration():
    """[(config, published TFLOP/s or None, predicted TFLOP/s, ratio, note)] on an H100"""
    mma, wg = fitted()
    gpu = GPUS["h100"]
    rows = []
    for causal in (False, True):
        for T, pub in FA2_FWD_HD128[causal].items():
            pred, bound = fa2_forward(gpu, T, causal, mma)
            fit = not causal and T == 16384
            rows.append((f"FA2 fwd hd128 {'causal' if causal else 'non-causal'} seqlen {T}", pub, pred / 1e12,
                         pred / 1e12 / pub, ("fitted; " if fit else "") + bound))
    for s, pub in CUBLAS_SQUARE.items():
        t, bound, cfg = gemm_time(s, s, s, 3 * s * s * 2, gpu)
        pred = 2.0 * s ** 3 / t / 1e12
        rows.append((f"cuBLAS bf16 {s}^3", pub, pred, pred / pub, ("fitted; " if s == 8192 else "") + f"{bound}, {cfg}"))
    # streaming: a device-to-device copy ran at 3.0 TB/s on this workplace's H100 (docs/fast.md,
    # "The step on paper"); the model's streaming kernels: 80 % of 3.35 TB/s, Little's law allowing
    g = 1e9 / mem_time(1e9, gpu) / 1e12
    rows.append(("HBM streaming (TB/s, device-to-device copy)", 3.0, g, g / 3.0, "hbm; planned, not fitted"))
    return rows


# ---- the 468M step, kernel by kernel
LABELS = {"attention_mma_forward_kernel": "attention fwd (mma.sync)",
          "attention_mma_backward_dkdv_kernel": "attention bwd dK/dV (mma.sync)",
          "attention_mma_backward_dq_kernel": "attention bwd dQ (mma.sync)"}
def predict_step(ks, shapes, iph, blocks_per_sm, B, T, NH, hd, gpu):
    """[(name, calls, seconds, bound, note)] of one step on `gpu` with today's kernels: GEMMs
    cuBLASLt-like, attention from its tiling and SASS (iph), the rest streaming"""
    mma, _ = fitted()
    rows = []
    tilings = our_tilings(hd)
    for name, kind, count, fl, nb in ks:
        if kind == "gemm":
            m, n, k = shapes[name]
            t, bound, cfg = gemm_time(m, n, k, nb, gpu)
            rows.append((name, count, t * count, bound, cfg, kind))
        elif kind == "mem":
            rows.append((name, count, mem_time(nb, gpu) * count, "hbm", "", kind))
        else:
            parts = ([("attention_mma_forward_kernel", nb)] if kind == "attn_fwd"
                     else [("attention_mma_backward_dkdv_kernel", nb / 2), ("attention_mma_backward_dq_kernel", nb / 2)])
            for kernel, kb in parts:
                t = tilings[kernel]
                n, tiles = causal_tiles(T, t["rows_block"], t["stream"])
                nblk, tiles = n * B * NH, tiles * B * NH
                fexec = tiles * t["warps"] * t["hmma_warp"] * HMMA_FLOP
                b = blocks_per_sm[(kernel, hd)]
                sec, bound, p = attention_time(t, iph[kernel], b, gpu, mma, nblk, tiles, fexec, kb)
                note = (f"{fexec / sec / 1e12:.0f} TFLOP/s executed; per block-tile issue {p['issue']:.0f}, tensor "
                        f"{p['tensor']:.0f}, shared {p['shared']:.0f}, latency {p['latency']:.0f} clk "
                        f"({t['trips']} round trips; hiding them takes {blocks_to_hide(t, iph[kernel], mma):.1f} "
                        f"blocks/SM, it has {b})")
                rows.append((LABELS[kernel], count,
                             sec * count, bound, note, kind))
    return rows


def print_predict(ks, shapes, iph, blocks_per_sm, B, T, NH, hd, model_flops, head):
    mma, wg = fitted()
    res = {g: predict_step(ks, shapes, iph, blocks_per_sm, B, T, NH, hd, GPUS[g]) for g in ("h100", "h200")}
    print(head)
    print(f"prediction (no GPU measured it): mma.sync attention at {mma:.3f} of the dense peak, wgmma GEMMs at "
          f"{wg:.3f} (both fitted, --calibrate); L2 {L2_LATENCY} / HBM {HBM_LATENCY} clocks assumed")
    print(f"{'kernel':44s} {'calls':>5s} {'H100 ms':>8s} {'bound':7s} {'H200 ms':>8s} {'bound':7s} note (H100)")
    for r1, r2 in zip(res["h100"], res["h200"]):
        print(f"{r1[0]:44s} {r1[1]:5d} {r1[2] * 1e3:8.2f} {r1[3]:7s} {r2[2] * 1e3:8.2f} {r2[3]:7s} {r1[4]}")
    for g in ("h100", "h200"):
        t = sum(r[2] for r in res[g])
        att = sum(r[2] for r in res[g] if r[5].startswith("attn"))
        gem = sum(r[2] for r in res[g] if r[5] == "gemm")
        print(f"{GPUS[g]['name']}: step {t * 1e3:.1f} ms, MFU {100 * model_flops / t / (SM_FLOP_PER_CLOCK * GPUS[g]['sms'] * GPUS[g]['clock']):.1f}% "
              f"of 989 TFLOP/s; attention {att * 1e3:.1f} ms, GEMMs {gem * 1e3:.1f} ms, the rest {(t - att - gem) * 1e3:.1f} ms; "
              f"{B * T / t:,.0f} tokens/s")


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
    print(f"calibration on an H100 SXM5 (published vs this model; fitted: mma.sync attention rate {mma:.3f}, "
          f"wgmma rate {wg:.3f} of the dense peak)")
    print(f"{'config':44s} {'published':>9s} {'predicted':>9s} {'ratio':>6s}  note")
    for cfg, pub, pred, ratio, note in calibration():
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
