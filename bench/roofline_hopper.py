"""roofline_hopper.py: `bench/roofline.py --what-if hopper`, a WHAT-IF, never today's prediction.

It prices kernels fast/ does not have, on the resource model of bench/roofline_model.py, so the
lead can decide whether a Hopper path is worth building (issue 51):

  A  attention on wgmma (FlashAttention-3-like: TMA loads, warp specialisation, ping-pong), its
     efficiency fitted on FlashAttention-3's published H100 figures the way --calibrate fits
     mma.sync on FlashAttention-2's;
  B  a wgmma GEMM with fused prologues and epilogues (SwiGLU both ways, RMSNorm's row scale, the
     norm backward with the residual-gradient add, cross-entropy over lm_head tiles) at the
     calibrated cuBLASLt rate, with what each removes from the byte count;
  R  RoPE where Q and K are produced and consumed (--attention mma has it all inside its kernels
     now: the backward's, the queries' forward and the keys' at the K loads; R1 and R2 are done);
  C  AdamW sharded as ZeRO-2 does on 8 GPUs with NCCL's reduce-scatter and all-gather on NVLink:
     a separate row, not the single-GPU step.

Nothing here exists in fast/ or was measured; the published figures and their sources are below.
"""
import roofline_model as rm

# ---- FlashAttention-3's published H100 figures (TFLOP/s): Shah et al., "FlashAttention-3: Fast and
# Accurate Attention with Asynchrony and Low-precision", arXiv 2407.08608 v2 (the version whose
# abstract says "up to 740 TFLOPs/s"; the NeurIPS camera-ready has later, faster kernels), Figure 5
# (forward, FP16/BF16, H100 80GB SXM5, batch x seqlen = 16k tokens, hidden 2048: 32 heads of 64 or
# 16 of 128) and Figure 6 (backward, not causal), the FlashAttention-3 bars. Read from the figures'
# bar labels as transcribed at subtext.edge.nugit.net (two transcriptions of each figure agree on
# every value kept; at head_dim 128, not causal, seqlen 512 they swap cuDNN's and FA3's 467 / 497,
# so that point is left out). Backward FLOPs: 2.5 x the forward's (the paper's convention).
FA3_FWD = {(64, False): {512: 333, 1024: 392, 2048: 460, 4096: 476, 8192: 496, 16384: 497},
           (64, True): {512: 197, 1024: 265, 2048: 371, 4096: 420, 8192: 460, 16384: 473},
           (128, False): {1024: 565, 2048: 625, 4096: 638, 8192: 646, 16384: 648},
           (128, True): {512: 292, 1024: 423, 2048: 521, 4096: 579, 8192: 602, 16384: 616}}
FA3_BWD = {64: {512: 272, 1024: 363, 2048: 422, 4096: 453, 8192: 472, 16384: 474},
           128: {512: 316, 1024: 424, 2048: 501, 4096: 542, 8192: 559, 16384: 561}}
# FlashAttention-2's bars of the same figures calibrate --calibrate's mma.sync model
# (roofline_model.FA2_FWD, FA2_BWD)
FA3_FIT_FWD = (128, False, 16384)  # fitted as FA2's rate is: the steady state at head_dim 128
FA3_FIT_BWD = (128, 16384)

# MUFU.EX2: 16 a clock per SM on compute capability 9.0 (roofline_model.MUFU_PER_CLOCK, its source)
MUFU_PER_CLOCK = rm.MUFU_PER_CLOCK

# FA3's tiles (hopper/flash_fwd_launch_template.h and flash_bwd_launch_template.h at the paper's
# release, July 2024): forward hd 64 192 queries x 128 keys, 3 consumer warpgroups; hd 128 128 x 128
# (causal) or 176 keys, 2 consumer warpgroups; backward 128 keys a block streaming 128 (hd 64) or
# 64 (hd 128) queries. One block per SM (persistent), TMA loads two stages ahead.
FA3_TILES = {("fwd", 64, False): (192, 128), ("fwd", 64, True): (192, 128),
             ("fwd", 128, False): (128, 176), ("fwd", 128, True): (128, 128),
             ("bwd", 64): (128, 128), ("bwd", 128): (128, 64)}

# NCCL on 8 x H100 SXM (NVLink 4 through NVSwitch): bus bandwidth 370 GB/s for reduce-scatter and
# all-gather (NVIDIA's NCCL maintainer, NVIDIA/nccl-tests issue 212, 2024-05-06: "450GB/s is the line
# rate. With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s ...
# as BusBw when running non-allreduce operations"; a user's reduce_scatter_perf on one H100 server,
# NVIDIA/nccl issue 1047, measured 331-362 GB/s busbw at 256 MB-8 GB). time = bytes x (n-1)/n / busbw.
NCCL_BUSBW = 370e9
ZERO_GPUS = 8

# FA3's own smaller kernels around the backward (D = rowsum(dO o O), dQ fp32 -> bf16) are not priced.


def fa3_tile(products, hd, rows, stream, eff, diagonal=False):
    """(SM clocks a block-tile, {resource: clocks}) of a wgmma attention block (one per SM) on one
    streamed tile: the tensor core at the dense peak plus the exponentials at the MUFU rate (the
    published figures match these two summed, not overlapped: see calibration()), and on a diagonal
    tile its mask (roofline_model's 2 instructions a score over 128 lanes a clock), over the fitted
    efficiency. products a score: forward 2, backward 5 (FA3's) or 7 (ours: P recomputed in both
    kernels, so two exponentials a score)"""
    scores = rows * stream
    tensor = scores * 2 * products * hd / rm.SM_FLOP_PER_CLOCK
    exps = scores * (1 if products <= 5 else 2) / MUFU_PER_CLOCK  # 7 products: P in both kernels
    mask = rm.MASK_INSTR_PER_SCORE * scores / (rm.SCHEDULERS * 32) if diagonal else 0.0
    parts = {"tensor": tensor / eff, "mufu": exps / eff, "mask": mask / eff}
    return sum(parts.values()), parts


def fa3_time(kind, hd, B, H, T, causal, gpu, eff, hbm_bytes, products=5, side_bytes=0, tiles=None):
    """(seconds, {resource: clocks a block-tile}) of a wgmma attention pass: blocks of `rows` own
    rows stream `stream`-row tiles (the causal ones up to or from the diagonal), longest first, one
    block an SM at a time, each with its pipeline's fill and drain. FA3 is persistent: a producer
    warp loads the next block's own rows while the consumers finish, so each SM pays one prologue (an
    HBM round trip and its own rows' bytes), not one a block. side_bytes: memory-bound passes around it (FA3's backward: D = rowsum(dO o O)
    before, dQ's fp32 accumulator zeroed and converted after), streamed at the model's HBM rate.
    HBM is the other bound. tiles: (rows, stream) of a kernel other than FA3's (fast/'s own)"""
    fwd = kind == "fwd"
    rows, stream = tiles or (FA3_TILES[("fwd", hd, causal)] if fwd else FA3_TILES[("bwd", hd)])
    k = 2 if fwd else products
    per, parts = fa3_tile(k, hd, rows, stream, eff)
    per_d, _ = fa3_tile(k, hd, rows, stream, eff, diagonal=True)
    own_bytes = (2 * rows * hd * 2 + 2 * stream * hd * 2) * (1 if fwd else 2)  # own rows in and out, tile 0
    own = rm.HBM_LATENCY + own_bytes / (gpu["hbm"] / gpu["sms"] / gpu["clock"])
    # each block also fills and drains its pipeline: its first tile's softmax and its last tile's
    # P·V (forward; the backward's likewise) have nothing to overlap, and O (dK, dV) goes out through
    # shared memory before the next block's first product: priced as one tile's work and one round trip
    fill = per + rm.HBM_LATENCY
    n, n_stream = -(-T // rows), -(-T // stream)
    lengths = []
    for i in range(n):
        if causal:  # forward: keys up to the block's last query; backward: queries from its first key
            reach = (i + 1) * rows if fwd else T - i * rows
            kt = min(n_stream, -(-reach // stream))
            d = min(kt, -(-rows // stream) + (1 if rows % stream else 0))  # tiles meeting the diagonal
        else:
            kt, d = n_stream, 0
        lengths.append((kt - d) * per + d * per_d + fill)
    lengths.sort(reverse=True)
    t_sm = (rm.schedule(lengths * (B * H), gpu["sms"]) + own) / gpu["clock"]
    t_hbm = hbm_bytes / (gpu["hbm"] * rm.MEM_EFFICIENCY)
    return max(t_sm, t_hbm) + rm.mem_time(side_bytes, gpu), parts


def fa3_side_bytes(B, H, T, hd):
    """FA3's backward's memory-bound passes: FA2's (roofline_model.flash_bwd_side_bytes)"""
    return rm.flash_bwd_side_bytes(B, H, T, hd)


def fa3_flops(kind, B, H, T, hd, causal):
    """FLOPs as the FA3 paper counts them: 4·B·H·T²·hd forward (half causal), 2.5x that backward"""
    f = 4.0 * B * H * T * T * hd / (2 if causal else 1)
    return f if kind == "fwd" else 2.5 * f


def fa3_speed(kind, hd, T, causal, eff, gpu=None):
    """TFLOP/s the model gives FA3 at the paper's shapes (16k tokens, hidden 2048)"""
    gpu = gpu or rm.GPUS["h100"]
    B, H = 16384 // T, 2048 // hd
    hbm = B * T * H * hd * 2 * (4 if kind == "fwd" else 8)  # fwd Q K V O; bwd Q K V O dO dQ dK dV
    side = 0 if kind == "fwd" else fa3_side_bytes(B, H, T, hd)
    sec, _ = fa3_time(kind, hd, B, H, T, causal, gpu, eff, hbm, side_bytes=side)
    return fa3_flops(kind, B, H, T, hd, causal) / sec / 1e12


_FITTED = {}


def fitted():
    """(forward, backward) efficiency of a wgmma attention, each fitted on one FA3 point"""
    if not _FITTED:
        hd, causal, T = FA3_FIT_FWD
        _FITTED["fwd"] = rm.bisect(lambda e: fa3_speed("fwd", hd, T, causal, e), FA3_FWD[(hd, causal)][T], 0.05, 1.5)
        hd, T = FA3_FIT_BWD
        _FITTED["bwd"] = rm.bisect(lambda e: fa3_speed("bwd", hd, T, False, e), FA3_BWD[hd][T], 0.05, 1.5)
    return _FITTED["fwd"], _FITTED["bwd"]


def calibration():
    """[(config, published, predicted, ratio, note)]: every FA3 point beside the model"""
    ef, eb = fitted()
    rows = []
    for (hd, causal), pts in FA3_FWD.items():
        for T, pub in pts.items():
            pred = fa3_speed("fwd", hd, T, causal, ef)
            fit = (hd, causal, T) == FA3_FIT_FWD
            rows.append((f"FA3 fwd hd{hd} {'causal' if causal else 'non-causal'} seqlen {T}", pub, pred, pred / pub,
                         "fitted" if fit else ""))
    for hd, pts in FA3_BWD.items():
        for T, pub in pts.items():
            pred = fa3_speed("bwd", hd, T, False, eb)
            rows.append((f"FA3 bwd hd{hd} non-causal seqlen {T}", pub, pred, pred / pub,
                         "fitted" if (hd, T) == FA3_FIT_BWD else ""))
    return rows


# ---- the what-if items: each a function (ks, shapes, ctx) -> (ks, shapes), on copies
def _rows(ks):
    return {k[0]: i for i, k in enumerate(ks)}


def _set(ks, name, **kw):
    i = _rows(ks)[name]
    n, kind, count, fl, nb = ks[i]
    ks[i] = (n, kw.get("kind", kind), count, kw.get("flops", fl), kw.get("nbytes", nb))


def _drop(ks, name):
    del ks[_rows(ks)[name]]


def item_rope_bwd(ks, shapes, c):
    # into attention's backward (dQ, dK rotated there): today's mma step has no such pass already
    if "rope bwd (dq, dk)" in _rows(ks):
        _drop(ks, "rope bwd (dq, dk)")


def item_rope_fwd(ks, shapes, c):
    # Q and K rotated where attention loads them (forward, and again in the backward) or in the qkv
    # GEMM's epilogue (bf16-rounded, then the rope kernel's fp32 ops): the cos and sin table is read
    # there instead (priced on the qkv GEMM; the same bytes either way). Today's mma step does it
    # already (the queries in the attention forward, the keys at its K loads: no pass left); only
    # the CUDA cores' attention still has the pass
    if "rope fwd (q, k)" in _rows(ks):
        _drop(ks, "rope fwd (q, k)")
        name = "qkv GEMM fwd"
        _set(ks, name, nbytes=ks[_rows(ks)[name]][4] + c["T"] * c["hd"] * 4)


def item_attn_fwd(ks, shapes, c):
    _set(ks, "attention fwd (tensor cores)", kind="wgmma_fwd")


def item_attn_bwd(ks, shapes, c):
    _set(ks, "attention bwd (tensor cores)", kind="wgmma_bwd7")


def item_swiglu_fwd(ks, shapes, c):
    # the gate|up GEMM's epilogue writes h = silu(g)·u beside gate|up (kept for the backward)
    N, F = c["N"], c["F"]
    _drop(ks, "swiglu fwd")
    name = "gate|up GEMM fwd"
    _set(ks, name, nbytes=ks[_rows(ks)[name]][4] + N * F * 2)


def item_swiglu_bwd(ks, shapes, c):
    # the down GEMM's dX epilogue reads gate|up and writes d(gate|up); dh never leaves registers
    N, F = c["N"], c["F"]
    _drop(ks, "swiglu bwd")
    name = "down GEMM bwd dX"
    _set(ks, name, nbytes=ks[_rows(ks)[name]][4] - N * F * 2 + 2 * N * F * 2 + 2 * N * F * 2)


def item_norm_fwd(ks, shapes, c):
    # RMSNorm's output is not written: a pass computes rstd (reads x, writes N floats) and the GEMMs
    # that read the normed rows (qkv, gate|up, lm_head forward and their dW) scale x by rstd·g as they
    # load it, the norm kernel's own fp32 ops and bf16 rounding: the same operand bits
    N, d = c["N"], c["d"]
    for name in ("rmsnorm fwd (ln1, ln2)", "rmsnorm fwd (final)"):
        _set(ks, name, nbytes=N * d * 2 + N * 4)


def item_norm_bwd(ks, shapes, c):
    # the norm backward and the residual-gradient add in the epilogue of the dX GEMM that makes
    # d(norm output): a 4-CTA cluster covers a 1024-wide row and sums each row's partials over
    # distributed shared memory; d(norm output) (bf16) is then never written and read back
    N, d = c["N"], c["d"]
    name = "rmsnorm bwd + gain partials (final, ln2, ln1)"
    rms = ks[_rows(ks)[name]][4]
    _drop(ks, name)
    for g in ("qkv GEMM bwd dX", "gate|up GEMM bwd dX", "lm_head GEMM bwd dX"):
        _set(ks, g, nbytes=ks[_rows(ks)[g]][4] + rms - 2 * N * d * 2)


def item_ce(ks, shapes, c):
    # cross-entropy inside the lm_head GEMMs (Cut Cross-Entropy-like): the forward's epilogue keeps a
    # running logsumexp per row, the logits are never written; the backward recomputes each logits
    # tile (one more lm_head product), forms dlogits in registers and adds its dX and dW shares with
    # fp32 atomics (not deterministic); the atomics' L2 traffic is not priced
    N, Vp, d = c["N"], c["Vp"], c["d"]
    _drop(ks, "cross-entropy fwd+bwd")
    f = "lm_head GEMM fwd (bf16 logits, V padded)"
    _set(ks, f, nbytes=ks[_rows(ks)[f]][4] - N * Vp * 2 + 2 * N * 4)
    x, w = "lm_head GEMM bwd dX", "lm_head GEMM bwd dW"
    _set(ks, x, flops=2 * ks[_rows(ks)[x]][3], nbytes=ks[_rows(ks)[x]][4] - N * Vp * 2 + N * d * 2 + 2 * N * 4)
    _set(ks, w, nbytes=ks[_rows(ks)[w]][4] - N * Vp * 2)
    m, n, k = shapes[x]
    shapes[x] = (m, n, 2 * k)  # the recompute: a second product of the same tiles


ITEMS = [
    ("R1", "RoPE bwd inside attention bwd (done: --attention mma)", "rounding: fp32 dq, dk rotated", item_rope_bwd),
    ("R2", "RoPE fwd at attention's K loads (done: --attention mma)", "exact: same fp32 ops on the bf16 k",
     item_rope_fwd),
    ("A1", "attention fwd on wgmma (FA3-fitted)", "rounding: 128-key softmax tiles, wgmma's k-order", item_attn_fwd),
    ("A2", "attention bwd on wgmma, 7 products, deterministic", "rounding: tile sizes; deterministic",
     item_attn_bwd),
    ("B1", "SwiGLU fwd in the gate|up GEMM's epilogue", "exact: g, u rounded to bf16 first", item_swiglu_fwd),
    ("B2", "SwiGLU bwd in the down GEMM's dX epilogue", "exact: dh rounded to bf16 first", item_swiglu_bwd),
    ("B3", "RMSNorm fwd: row scale in the GEMMs' prologue", "exact: the norm's ops at load", item_norm_fwd),
    ("B4", "RMSNorm bwd + residual-grad add in dX epilogue", "rounding: row sums from 4 partials", item_norm_bwd),
    ("B5", "cross-entropy inside the lm_head GEMMs (CCE-like)", "rounding, NOT deterministic (atomics)", item_ce),
]


# the GEMMs a fusion gives an epilogue or a prologue (cuBLASLt has neither for these): built on
# mma.sync instead of wgmma they run at --calibrate's mma.sync rate (the 'gemm_mma' kind)
FUSED_GEMMS = {"B1": ["gate|up GEMM fwd"], "B2": ["down GEMM bwd dX"],
               "B3": ["qkv GEMM fwd", "gate|up GEMM fwd", "lm_head GEMM fwd (bf16 logits, V padded)",
                      "qkv GEMM bwd dW", "gate|up GEMM bwd dW", "lm_head GEMM bwd dW"],
               "B4": ["qkv GEMM bwd dX", "gate|up GEMM bwd dX", "lm_head GEMM bwd dX"]}

# named combinations the lead can choose among (each priced from today's step)
COMBOS = [("exact fusions, no Hopper attention", ["R1", "R2", "B1", "B2", "B3"]),
          ("the same, fused GEMMs on mma.sync (no wgmma at all)", ["R1", "R2", "B1", "B2", "B3", "mma"]),
          ("exact fusions + wgmma attention", ["R1", "R2", "A1", "A2", "B1", "B2", "B3"]),
          ("+ the norm backward in the dX epilogue (rounding)", ["R1", "R2", "A1", "A2", "B1", "B2", "B3", "B4"]),
          ("wgmma attention alone", ["A1", "A2"])]


def apply(ks, shapes, tags, c):
    """today's rows with the items of `tags` applied in ITEMS' order ('mma': the fused GEMMs on
    mma.sync)"""
    ks, shapes = list(ks), dict(shapes)
    for tag, _, _, fn in ITEMS:
        if tag in tags:
            fn(ks, shapes, c)
    if "mma" in tags:
        for tag in tags:
            for name in FUSED_GEMMS.get(tag, []):
                _set(ks, name, kind="gemm_mma")
    return ks, shapes


def price(ks, shapes, after, B, T, NH, hd, gpu, eff, fused_rate=None):
    """[(name, kind, seconds)] of a step whose rows may carry the what-if kinds; fused_rate: the
    'gemm_mma' GEMMs' share of the dense peak (default: --calibrate's mma.sync rate)"""
    out = []
    ef, eb = eff
    for i, row in enumerate(ks):
        name, kind, count, fl, nb = row
        if kind == "wgmma_fwd":
            sec, _ = fa3_time("fwd", hd, B, NH, T, True, gpu, ef, nb)
            out.append(("attention fwd (wgmma, FA3-fitted)", "attn_fwd", sec * count))
        elif kind in ("wgmma_bwd7", "wgmma_bwd5"):
            sec, _ = fa3_time("bwd", hd, B, NH, T, True, gpu, eb, nb, 7 if kind == "wgmma_bwd7" else 5)
            out.append(("attention bwd (wgmma, FA3-fitted)", "attn_bwd", sec * count))
        elif kind == "gemm_mma":
            m, n, k = shapes[name]
            out.append((name, "gemm", rm.gemm_time(m, n, k, nb, gpu, fused_rate or rm.fitted()[0])[0] * count))
        else:
            for r in rm.predict_step([row], shapes, after, B, T, NH, hd, gpu):
                out.append((r[0], r[5], r[2]))
    return out


def mem_bytes(ks):
    return sum(k[2] * k[4] for k in ks if k[1] == "mem")


def all_bytes(ks):
    return sum(k[2] * k[4] for k in ks)


def zero2(ks, P, gpu):
    """(AdamW seconds on one GPU, on its 1/8 shard, reduce-scatter s, all-gather s, bytes saved):
    ZeRO-2 keeps 1/8 of the moments and master weights a GPU; the fp32 gradients are reduce-scattered
    and the refreshed bf16 weights all-gathered over NVLink"""
    opt = [k for k in ks if k[0].startswith("AdamW")]
    nb = sum(k[2] * k[4] for k in opt)
    t1 = sum(rm.mem_time(k[4], gpu) * k[2] for k in opt)
    frac = (ZERO_GPUS - 1) / ZERO_GPUS
    rs = P * 4 * frac / NCCL_BUSBW
    ag = P * 2 * frac / NCCL_BUSBW
    return t1, t1 / ZERO_GPUS, rs, ag, nb - nb / ZERO_GPUS


def print_what_if(ks, shapes, after, B, T, NH, hd, d, F, V, P, model_flops, head):
    """the Hopper what-if: calibration, each item's ms and bytes, the cumulative step on both GPUs,
    named combinations, the attention alone, ZeRO-2"""
    ef, eb = fitted()
    mma, _ = rm.fitted()
    print("WHAT-IF, not today's kernels and not a prediction of fast/ as it is: a Hopper path priced on "
          "bench/roofline_model.py")
    print(head)
    print(f"\nwgmma attention fitted on FlashAttention-3's published H100 figures (arXiv 2407.08608 v2, Figs. 5-6): "
          f"forward efficiency {ef:.3f}, backward {eb:.3f} (of the tensor core's dense peak plus MUFU's "
          f"{MUFU_PER_CLOCK:.0f} exp2 a clock an SM, summed)")
    print(f"{'config':44s} {'published':>9s} {'predicted':>9s} {'ratio':>6s}  note")
    for cfg, pub, pred, ratio, note in calibration():
        flag = "" if abs(ratio - 1) <= 0.15 else "  OUTSIDE 15%"
        print(f"{cfg:44s} {pub:9.1f} {pred:9.1f} {ratio:6.3f}  {note}{flag}")
    # --calibrate's mma.sync model on FlashAttention-2's bars of the same figures (its table has each)
    fa2_err = {}
    for kind, hd2, causal, T2, pub, _ in rm.fa2_points():
        rate = mma if kind == "fwd" else rm.fitted_bwd()
        fa2_err[(kind, hd2, causal, T2)] = rm.fa2_speed(kind, hd2, T2, causal, rate)[0] / 1e12 / pub
    at = lambda kind, hd2: [v for k, v in fa2_err.items() if k[:2] == (kind, hd2)]
    print(f"\n--calibrate's mma.sync model (products at {mma:.3f} forward, {rm.fitted_bwd():.3f} backward, exponentials "
          f"at MUFU's rate) on FlashAttention-2's bars of the same figures, predicted / published: forward hd64 "
          f"{min(at('fwd', 64)):.3f}-{max(at('fwd', 64)):.3f}, hd128 {min(at('fwd', 128)):.3f}-"
          f"{max(at('fwd', 128)):.3f}; backward hd64 {min(at('bwd', 64)):.3f}-{max(at('bwd', 64)):.3f}, hd128 "
          f"{min(at('bwd', 128)):.3f}-{max(at('bwd', 128)):.3f}")
    c = {"N": B * T, "T": T, "hd": hd, "d": d, "F": F, "Vp": rm_pad(V)}
    gpus = ("h100", "h200")
    peak = {g: rm.SM_FLOP_PER_CLOCK * rm.GPUS[g]["sms"] * rm.GPUS[g]["clock"] for g in gpus}
    step_of = lambda k, sh: {g: sum(r[2] for r in price(k, sh, after, B, T, NH, hd, rm.GPUS[g], (ef, eb)))
                             for g in gpus}
    mfu = lambda t, g: f"{100 * model_flops / t / peak[g]:5.1f}%"
    base = {g: price(ks, shapes, after, B, T, NH, hd, rm.GPUS[g], (ef, eb)) for g in gpus}
    step = {g: sum(r[2] for r in base[g]) for g in gpus}
    print(f"\nitems, cumulative in this order (ms and GB per step; 'mem GB': the memory-bound kernels' bytes, issue "
          f"51's <= 35 GB; 'all GB': every kernel's HBM bytes)")
    print(f"{'':3s} {'item':50s} {'d H100':>7s} {'d H200':>7s} {'d mem':>6s} {'d all':>6s} {'H100 ms':>8s} "
          f"{'MFU':>6s} {'H200 ms':>8s} {'MFU':>6s} {'mem GB':>6s}  exact?")
    print(f"{'0':3s} {'today (--predict now)':50s} {'':7s} {'':7s} {'':6s} {'':6s} {step['h100'] * 1e3:8.1f} "
          f"{mfu(step['h100'], 'h100')} {step['h200'] * 1e3:8.1f} {mfu(step['h200'], 'h200')} "
          f"{mem_bytes(ks) / 1e9:6.1f}")
    done = []
    for tag, label, exact, _ in ITEMS:
        prev, _ = apply(ks, shapes, done, c)
        done.append(tag)
        nxt, nsh = apply(ks, shapes, done, c)
        t = step_of(nxt, nsh)
        dm, da = mem_bytes(nxt) - mem_bytes(prev), all_bytes(nxt) - all_bytes(prev)
        print(f"{tag:3s} {label:50s} {(t['h100'] - step['h100']) * 1e3:+7.2f} {(t['h200'] - step['h200']) * 1e3:+7.2f} "
              f"{dm / 1e9:+6.2f} {da / 1e9:+6.2f} {t['h100'] * 1e3:8.1f} {mfu(t['h100'], 'h100')} "
              f"{t['h200'] * 1e3:8.1f} {mfu(t['h200'], 'h200')} {mem_bytes(nxt) / 1e9:6.1f}  {exact}")
        step = t
    print("\ncombinations, each from today's step (H100 ms, MFU; H200 ms, MFU; memory-bound GB):")
    for label, tags in COMBOS:
        k2, s2 = apply(ks, shapes, tags, c)
        t = step_of(k2, s2)
        ok = "meets both goals on the H100" if model_flops / t["h100"] / peak["h100"] >= 0.5 and \
            mem_bytes(k2) <= 35e9 else ""
        print(f"  {label:52s} {' '.join(tags):30s} {t['h100'] * 1e3:6.1f} {mfu(t['h100'], 'h100')} "
              f"{t['h200'] * 1e3:6.1f} {mfu(t['h200'], 'h200')} {mem_bytes(k2) / 1e9:5.1f}  {ok}")
    # what our own fused GEMMs must reach: the exact fusions' GEMMs at a rate r, the rest as cuBLASLt
    k2, s2 = apply(ks, shapes, COMBOS[1][1], c)
    h100 = rm.GPUS["h100"]
    at = lambda r: sum(x[2] for x in price(k2, s2, after, B, T, NH, hd, h100, (ef, eb), r))
    need = rm.bisect(lambda r: -at(r), -model_flops / (0.5 * peak["h100"]), 0.2, 1.0)
    even = rm.bisect(lambda r: -at(r), -sum(r[2] for r in base["h100"]), 0.2, 1.0)
    print(f"  the fused GEMMs ({', '.join(sorted(set(n for t in ('B1', 'B2', 'B3') for n in FUSED_GEMMS[t]))).replace(' GEMM', '')}) "
          f"built by us must reach {need:.3f} of the dense peak for 50 % on the H100 (cuBLAS: {rm.fitted()[1]:.3f}); "
          f"below {even:.3f} the exact fusions lose to today's step")
    # the attention kernels on their own, and FA3's 5-product backward as the alternative to A2
    k2, s2 = apply(ks, shapes, ["A1", "A2"], c)
    err = fa2_err.get(("fwd", hd, True, T))
    print("\nattention alone (every layer's kernels, ms):")
    for g in gpus:
        new = price(k2, s2, after, B, T, NH, hd, rm.GPUS[g], (ef, eb))
        now_f = sum(r[2] for r in base[g] if r[1] == "attn_fwd")
        now_b = sum(r[2] for r in base[g] if r[1] == "attn_bwd")
        fw = sum(r[2] for r in new if r[1] == "attn_fwd")
        bw = sum(r[2] for r in new if r[1] == "attn_bwd")
        b5 = [k for k in ks if k[1] == "attn_bwd"][0]
        f5 = [k for k in ks if k[1] == "attn_fwd"][0]
        alt = fa3_time("bwd", hd, B, NH, T, True, rm.GPUS[g], eb, b5[4], 5)[0] * b5[2]
        print(f"  {rm.GPUS[g]['name']}: today's mma.sync forward {now_f * 1e3:.2f}, backward {now_b * 1e3:.2f}; wgmma "
              f"forward {fw * 1e3:.2f} ({f5[2] * f5[3] / fw / 1e12:.0f} TFLOP/s causal), backward 7 products "
              f"{bw * 1e3:.2f} ({b5[2] * b5[3] / bw / 1e12:.0f} TFLOP/s at 5 products' FLOPs): "
              f"{(now_f + now_b - fw - bw) * 1e3:.2f} ms saved; FA3's 5 products with dQ by fp32 atomics "
              f"{alt * 1e3:.2f} (not deterministic)")
        if err:
            print(f"    if today's kernels miss the model as FA2 at head_dim 64 causal {T} does (x{err:.3f}): today's "
                  f"attention {(now_f + now_b) * err * 1e3:.2f} ms, the wgmma path saves "
                  f"{((now_f + now_b) * err - fw - bw) * 1e3:.2f}")
    # ZeRO-2: a different configuration, per GPU of 8
    print(f"\nC: ZeRO-2 on {ZERO_GPUS} GPUs (reproduce/table5.sh's configuration, NOT the single-GPU step), per GPU:")
    for label, tags in (("today's kernels", []), ("after", COMBOS[3][1])):
        k2, s2 = apply(ks, shapes, tags, c)
        t = step_of(k2, s2)
        for g in gpus:
            t1, t8, rs, ag, saved = zero2(k2, P, rm.GPUS[g])
            s_over = t[g] - t1 + t8
            s_ser = s_over + rs + ag
            print(f"  {label} ({' '.join(tags) or 'no item'}), {rm.GPUS[g]['name']}: AdamW {t1 * 1e3:.2f} -> {t8 * 1e3:.2f} ms, "
                  f"-{saved / 1e9:.1f} GB; NCCL reduce-scatter of fp32 gradients {rs * 1e3:.2f} ms + all-gather of "
                  f"bf16 weights {ag * 1e3:.2f} ms at {NCCL_BUSBW / 1e9:.0f} GB/s busbw; step {s_over * 1e3:.1f} ms "
                  f"({mfu(s_over, g).strip()}) with the collectives hidden under the backward and forward, "
                  f"{s_ser * 1e3:.1f} ms ({mfu(s_ser, g).strip()}) with them serial; memory-bound "
                  f"{(mem_bytes(k2) - saved) / 1e9:.1f} GB")


def rm_pad(n, m=128):
    return (n + m - 1) // m * m
