"""roofline_gemm.py: fast/gemm_wgmma.cu (`--gemm wgmma`) on bench/roofline_model.py's resources,
for `bench/roofline.py --predict --gemm wgmma` and `--bytes --gemm wgmma`.

The kernel as written (docs/design/kernels.md, "The wgmma GEMM"): a persistent block an SM, a
producer thread TMA-loading 64-wide k steps into a 4-stage mbarrier ring, two consumer warpgroups
issuing wgmma.m64n256k16 on a 128 x 256 tile, the ring running on into the block's next tile (a
block pays its pipeline fill once), the epilogue from registers not overlapped with products.
A block's time is its fill plus, per tile, the main loop (the tile's products at `rate` of the
dense peak) and the epilogue (the tile's epilogue bytes at EPILOGUE_BYTES_PER_CLOCK an SM, one L2
round trip); the kernel is its slowest block or its HBM bytes, whichever is longer.

`rate` is fitted on the published kernel of the same structure: pranjalssh/fast.cu's Kernel 6
(README, "Kernel details": producer/consumer warpgroups with setmaxnreg, TMA, persistent over 128
SMs, mbarrier parity waits; three consumer warpgroups on a 192 x 192 tile with m64n192k16; H100 SXM,
bf16, square), 777.5 TFLOP/s at 8192^3; its 6144^3 figure (766.3) checks the fit. Its Kernel 7
(128 x 256 on two consumer warpgroups, as ours, plus 2-CTA clusters with TMA multicast, which ours
does not have) reached 799.1: ours is priced as Kernel 6, not 7.

Nothing here was measured on a GPU; the epilogue rate is an assumption.
"""
import roofline_model as rm

# pranjalssh/fast.cu README (commit a1bb7b2), "Benchmarks", Kernel 6, H100 SXM: TFLOP/s at M = N = K
FASTCU_K6 = {8192: 777.5, 6144: 766.3}
FASTCU_K6_TILE = (192, 192)
FASTCU_K6_BLOCKS = 128  # "Use 128 SMs" (Kernel 5, which Kernel 6 extends)
OUR_TILE = (128, 256)   # fast/gemm_wgmma.cu: GW_BM x GW_BN
KSTEP = 64
# ASSUMED: a consumer warpgroup pair moves its epilogue's bytes (stores from registers, the SwiGLU
# backward's gate|up reads) at 64 B a clock an SM into L2, half the shared-memory port's 128
EPILOGUE_BYTES_PER_CLOCK = 64.0
RATE = None


def gemm_time(m, n, k, nbytes, gpu, epi_per_elem, rate=None, tile=OUR_TILE, blocks=None):
    """(seconds, bound, note) of one call: m x n outputs, k deep, nbytes through HBM, epi_per_elem
    epilogue bytes per output element"""
    rate = fitted() if rate is None else rate
    tm, tn = tile
    tiles = -(-m // tm) * -(-n // tn)
    slots = min(tiles, blocks or gpu["sms"])
    per_block = -(-tiles // slots)  # the slowest block's tiles
    main = -(-k // KSTEP) * tm * tn * KSTEP * 2 / rm.SM_FLOP_PER_CLOCK / rate
    epi = tm * tn * epi_per_elem / EPILOGUE_BYTES_PER_CLOCK + rm.L2_LATENCY
    clocks = rm.HBM_LATENCY + per_block * (main + epi)
    t_sm = clocks / gpu["clock"]
    t_hbm = nbytes / (gpu["hbm"] * rm.MEM_EFFICIENCY)
    t = max(t_sm, t_hbm)
    bound = "hbm" if t_hbm > t_sm else "tensor"
    return t, bound, f"{tm}x{tn} persistent, {per_block} tiles a block, epilogue {100 * epi / (main + epi):.0f}%"


def fitted():
    global RATE
    if RATE is None:
        gpu, s = rm.GPUS["h100"], 8192
        f = lambda r: 2.0 * s ** 3 / gemm_time(s, s, s, 3 * s * s * 2, gpu, 2, r, FASTCU_K6_TILE,
                                               FASTCU_K6_BLOCKS)[0]
        RATE = rm.bisect(f, FASTCU_K6[s] * 1e12, 0.3, 1.0)
    return RATE


def calibration():
    """[(config, published, predicted, ratio, note)] on an H100"""
    gpu, rows = rm.GPUS["h100"], []
    for s, pub in FASTCU_K6.items():
        t, bound, note = gemm_time(s, s, s, 3 * s * s * 2, gpu, 2, None, FASTCU_K6_TILE, FASTCU_K6_BLOCKS)
        pred = 2.0 * s ** 3 / t / 1e12
        rows.append((f"fast.cu Kernel 6 bf16 {s}^3", pub, pred, pred / pub,
                     ("fitted; " if s == 8192 else "") + f"{bound}, {note}"))
    return rows


# The step's rows fast/model.cu runs on the wgmma GEMM under --gemm wgmma, with their epilogue bytes
# per output element: bf16 out 2, + a bf16 residual read 2; the gate|up GEMM's gate|up (2 an element
# of its 2F grid) and h (F of the 2F columns: 1); the down projection's dX: gate and up read, d gate
# and d up written (8 an element of its F grid)
OURS = {"qkv GEMM fwd": 2, "qk GEMM fwd": 2, "v GEMM fwd (layer 1)": 2, "o GEMM fwd (+x as beta=1)": 4,
        "gate|up GEMM fwd": 3, "down GEMM fwd (+h as beta=1)": 4, "down GEMM bwd dX": 8}


def apply(ks, shapes, c):
    """today's rows under --gemm wgmma: SwiGLU's passes folded into the two GEMMs (roofline_hopper's
    items B1 and B2: the byte counts as the kernels move them), RoPE's forward pass (where one is left)
    into the qkv GEMM, and the rows OURS names priced as the kind 'gemm_wgmma'"""
    import roofline_hopper as rh
    ks = list(ks)
    rh.item_swiglu_fwd(ks, shapes, c)
    rh.item_swiglu_bwd(ks, shapes, c)
    if "rope fwd (q, k)" in rh._rows(ks) and "qkv GEMM fwd" in rh._rows(ks):
        # RoPE's forward pass, where the attention does not rotate (--attention wgmma), in the qkv GEMM's
        # epilogue (gemm_wgmma_forward_rope): the tables read there instead, q and k never re-read
        rh._drop(ks, "rope fwd (q, k)")
        rh._set(ks, "qkv GEMM fwd", nbytes=ks[rh._rows(ks)["qkv GEMM fwd"]][4] + c["T"] * c["hd"] * 4)
    for name, _, _, _, _ in list(ks):
        if name in OURS:
            rh._set(ks, name, kind="gemm_wgmma")
    return ks
