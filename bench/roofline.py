#!/usr/bin/env python3
"""roofline.py: what one fast/ training step should cost on an H100, kernel by kernel, on paper.

For a preset at [batch, seq] it lists every kernel of one training step of the redesigned
fast/ step (issue "fast/ complete": padded vocabulary, bf16 logits read once by the
cross-entropy, fused QKV (QK where V is mixed: ResFormer, SVFormer) and gate/up GEMMs, the
ResFormer value mix folded into the W_v GEMM's alpha and beta, SVFormer's v_in aliasing V_1
with its gradient added inside attention, tensor-core flash attention) with its FLOPs and the bytes it must move
through HBM, and the time each implies at a bf16 GEMM rate and an HBM bandwidth:

    ideal   = max(FLOPs / peak, bytes / bandwidth)
    planned = max(FLOPs / (peak * e_flop), bytes / (bandwidth * e_mem))

with the efficiencies e of the kind of kernel written in EFFICIENCY below (assumptions,
not measurements: a GPU session replaces them with bench_fast --kernels figures). MFU is
model FLOPs (6 per matmul weight per token plus causal attention 6·L·T·qC per token, the
count bench/bench_fast.c uses) over the step time and the peak.

    python3 bench/roofline.py --preset 468M --batch 8 --seq 2048
    python3 bench/roofline.py --preset 468M --variant resformer --markdown

--cuda-core-attention prices fast/'s CUDA-core attention (fp32, --attention flash; the default is
now mma, below) from the compiled kernels' instruction mix instead of assumed efficiencies: their hot
loops' instructions per FFMA (ipf, bench/attention_sass_mix.txt, read from the SASS by
bench/sass_mix.py) cap each at 67 TFLOP/s / ipf (one instruction issued per clock per warp
scheduler: an upper bound on speed, latency and occupancy not modelled), over the products each
kernel executes (forward 2 per query-key pair, dK/dV 4, dQ 3: 7 backward where the tensor-core
count is 5). It prints the step beside the old prediction (the assumed efficiencies) and the
mix of the kernels before issue 38's head-dimension split (--sass-mix before).

    python3 bench/roofline.py --preset 468M --batch 8 --seq 2048 --cuda-core-attention

--mma-attention prices our tensor-core attention (--attention mma: mma.sync.m16n8k16 bf16, fp32
accumulation) from its SASS the same way, in place of the assumed 55 % / 45 %: its hot loops'
instructions per HMMA (iph, the 'mma' lines of bench/attention_sass_mix.txt) against the tensor
core. An HMMA m16n8k16 is 4096 FLOP; NVIDIA's 989.4 TFLOP/s dense bf16 for the H100 SXM5 is
132 SMs x 4096 FLOP a clock x 1.83 GHz, i.e. one HMMA a clock per SM, one per 4 clocks per warp
scheduler. A scheduler issues one instruction a clock, so a loop of iph instructions per HMMA
issues at most one HMMA per iph clocks: the kernel's time is the larger of that issue bound and
the tensor bound (4 clocks per HMMA, divided by --mma-sync-fraction: the share of the dense peak
mma.sync can reach on Hopper, where only wgmma reaches the peak; 0.63 is an assumption, see
MMA_SYNC_FRACTION), over the HMMAs the kernels execute (7 products per causal pair in the
backward, like the CUDA cores', and the diagonal 64 x 64 tiles computed whole). Latency,
occupancy (printed, not modelled) and the unprefetched tile loads are not modelled: an upper
bound on speed.

    python3 bench/roofline.py --preset 468M --batch 8 --seq 2048 --mma-attention

--what-if hopper is a WHAT-IF, never mixed with --predict: kernels fast/ does not have (attention on
wgmma fitted on FlashAttention-3's published figures, GEMMs with fused epilogues, ZeRO-2's sharded
AdamW on 8 GPUs), each item's milliseconds and bytes and the step after them on an H100 and an H200
(bench/roofline_hopper.py).

    python3 bench/roofline.py --what-if hopper

Shapes are the presets of common/model/config.c, copied below (a second copy, as in
bench/bench_torch.py; the parameter count printed must equal `vrl info --model PRESET`'s,
which it does for 82M, 180M and 468M at this commit).
"""
import argparse
import os
import sys

# L, heads, kv heads, d, ffn, vocab (common/model/config.c)
PRESETS = {
    "82M": (8, 8, 8, 512, 1792, 50277),
    "180M": (12, 12, 12, 768, 2688, 50277),
    "468M": (24, 16, 16, 1024, 3584, 50277),
}

# Fraction of the peak each kind of kernel is planned to reach (assumed, see docstring).
# gemm: large bf16 cuBLASLt GEMMs; attn_fwd / attn_bwd: fused tensor-core attention at
# head_dim 64 (published FlashAttention-2/3 and cuDNN figures for H100 sit at 45-75 % of
# dense peak forward, less backward); mem: bandwidth-bound elementwise and row kernels.
EFFICIENCY = {"gemm": 0.80, "attn_fwd": 0.55, "attn_bwd": 0.45, "mem": 0.80}

# executed products per causal (query, key) pair of the CUDA-core kernels (fast/attention.cu):
# forward S and PV; dK/dV S, dP, dV, dK; dQ S, dP, dQ (the tensor-core count is 2 and 5)
CUDA_CORE_PRODUCTS = {"attention_forward_kernel": 2, "attention_backward_dkdv_kernel": 4,
                      "attention_backward_dq_kernel": 3}
# the tensor-core kernels (fast/attention_mma_*.cu) execute the same products; blocks per SM from
# ptxas' report (docs/results/gpu-static.md, "The static GPU check", commit 6f7a923), 4 warps a block
MMA_PRODUCTS = {"attention_mma_forward_kernel": 2, "attention_mma_backward_dkdv_kernel": 4,
                "attention_mma_backward_dq_kernel": 3}
MMA_BLOCKS_PER_SM = {("attention_mma_forward_kernel", 64): 3, ("attention_mma_forward_kernel", 128): 2,
                     ("attention_mma_backward_dkdv_kernel", 64): 4, ("attention_mma_backward_dkdv_kernel", 128): 2,
                     ("attention_mma_backward_dq_kernel", 64): 4, ("attention_mma_backward_dq_kernel", 128): 4}
MMA_TILE = 64  # queries and keys per block tile: the diagonal tiles are computed whole
MIX_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_sass_mix.txt")

BF16, FP32 = 2, 4
CUDA_CORE_FP32 = 67e12  # H100 SXM non-tensor fp32 FLOP/s (NVIDIA's datasheet)
# H100 SXM5 tensor cores: 989.4 TFLOP/s dense bf16 (NVIDIA's datasheet) = 132 SMs x 4096 FLOP per
# clock x 1.83 GHz (the clock that figure implies); one HMMA.16816 (4096 FLOP per warp) a clock per SM
H100_SMS, H100_CLOCK, SCHEDULERS_PER_SM, HMMA_FLOP = 132, 1.83e9, 4, 4096.0
TENSOR_DENSE = H100_SMS * HMMA_FLOP * H100_CLOCK
# Share of that dense peak mma.sync can reach on Hopper (only wgmma reaches it): an ASSUMPTION,
# not a measurement; for scale, FlashAttention-3's paper (Shah et al. 2024) reports its
# mma.sync-based predecessor FlashAttention-2 at ~35 % of the H100's peak. At 0.59 or more the
# SASS issue bound of our kernels (iph >= 6.8 > 4 / 0.59) binds, not this.
MMA_SYNC_FRACTION = 0.63


def pad(n, m=128):
    return (n + m - 1) // m * m


def kernels(preset, B, T, variant, shapes=None, rope_fused=True, wgmma_fwd=False, wgmma_bwd=False):
    """[(name, kind, count per step, FLOPs per call, bytes per call)] of one step; shapes, when
    given, receives each GEMM's (m, n, k) by name. rope_fused: --attention mma's RoPE (fast/model.cu
    rope_q_in_forward, rope_k_at_loads, rope_fused): the queries' inside the attention forward (each
    block rotates its rows where it loads them and writes them back rotated), the keys' where the
    forward and the backward stage each K tile (k stays unrotated in memory: no bytes of its own)
    and RoPE's backward inside the attention backward's epilogues, not in passes of their own
    (flash and cuDNN keep the passes). wgmma_fwd: --attention wgmma, whose forward
    (fast/attention_wgmma_forward.cu) reads queries and keys rotated by the forward pass, before the
    mma backward (RoPE's backward fused as with mma); wgmma_bwd: its backward on wgmma
    (fast/attention_wgmma_backward.cu, the same bytes as mma's)."""
    L, NH, NKV, d, F, V = PRESETS[preset]
    hd = d // NH
    qC, kvC, N, Vp = NH * hd, NKV * hd, B * T, pad(V)
    ks = []

    def add(name, kind, count, flops, nbytes):
        ks.append((name, kind, count, float(flops), float(nbytes)))

    def gemm(name, count, m, n, k, a_bytes, b_bytes, c_bytes, d_bytes):
        if shapes is not None:
            shapes[name] = (m, n, k)
        add(name, "gemm", count, 2.0 * m * n * k, a_bytes + b_bytes + c_bytes + d_bytes)

    res = variant == "resformer"
    sv = variant == "svformer"
    # layers that compute their own V (SVFormer: layer 1 only)
    Lv = 1 if sv else L

    # ---- forward
    add("embedding fwd", "mem", 1, 0, N * 4 + N * d * BF16 * 2)
    add("rmsnorm fwd (ln1, ln2)", "mem", 2 * L, 4 * N * d, 2 * N * d * BF16 + N * FP32 + d * BF16)
    if sv or res:
        # fast/model.cu: Q and K fused (adjacent weights, only their own attention reads them); V_1
        # a GEMM of its own, since later layers read it (a V is fused only where attention's dV is
        # its whole gradient: the baseline)
        gemm("qk GEMM fwd", L, N, qC + kvC, d, (qC + kvC) * d * BF16, N * d * BF16, 0, N * (qC + kvC) * BF16)
        gemm("v GEMM fwd (layer 1)", 1, N, kvC, d, kvC * d * BF16, N * d * BF16, 0, N * kvC * BF16)
        if res:
            # V'_n = λ2·W_v·x + λ1·V_1: the mix rides on the GEMM as alpha = λ2, beta = λ1, C = V_1
            gemm("v GEMM fwd, layers > 1 (alpha λ2, +λ1·V_1 as beta)", L - 1, N, kvC, d, kvC * d * BF16,
                 N * d * BF16, N * kvC * BF16, N * kvC * BF16)
    else:
        gemm("qkv GEMM fwd", L, N, qC + 2 * kvC, d, (qC + 2 * kvC) * d * BF16, N * d * BF16, 0,
             N * (qC + 2 * kvC) * BF16)
    if not rope_fused or wgmma_fwd:
        add("rope fwd (q, k)", "mem", L, 6 * N * (qC + kvC) / 2, 2 * N * (qC + kvC) * BF16 + T * hd * FP32)
    att = 2.0 * N * T * qC  # QKᵀ and PV, causal half of 4·B·NH·T²·hd
    # with RoPE fused: the rotated queries written back (the backward reads them), the keys read
    # unrotated as before (rotated in shared memory, not written) and the tables read once from
    # HBM (every block's re-read from L2; the rotations' 6 FLOP a pair not counted, as the backward's)
    add("attention fwd (tensor cores)", "wgmma_fwd" if wgmma_fwd else "attn_fwd", L, att,
        N * (2 * qC + 2 * kvC) * BF16 + B * NH * T * FP32
        + ((N * qC * BF16 + T * hd * FP32) if rope_fused and not wgmma_fwd else 0))
    gemm("o GEMM fwd (+x as beta=1)", L, N, d, qC, d * qC * BF16, N * qC * BF16, N * d * BF16, N * d * BF16)
    gemm("gate|up GEMM fwd", L, N, 2 * F, d, 2 * F * d * BF16, N * d * BF16, 0, N * 2 * F * BF16)
    add("swiglu fwd", "mem", L, 5 * N * F, 3 * N * F * BF16)
    gemm("down GEMM fwd (+h as beta=1)", L, N, d, F, d * F * BF16, N * F * BF16, N * d * BF16, N * d * BF16)
    add("rmsnorm fwd (final)", "mem", 1, 4 * N * d, 2 * N * d * BF16 + N * FP32)
    gemm("lm_head GEMM fwd (bf16 logits, V padded)", 1, N, Vp, d, Vp * d * BF16, N * d * BF16, 0, N * Vp * BF16)
    # one read of the bf16 logits, dlogits written in place; pad columns masked
    add("cross-entropy fwd+bwd", "mem", 1, 5 * N * Vp, 2 * N * Vp * BF16 + N * 8)

    # ---- backward
    # d(ln) for the norms' backward: bf16, as every activation gradient between two kernels (the
    # first GEMM that writes it overwrites it; a later one adds, reading it as C)
    gemm("lm_head GEMM bwd dX", 1, N, d, Vp, Vp * d * BF16, N * Vp * BF16, 0, N * d * BF16)
    # the weight-gradient GEMMs: one micro-batch a step, so each is its tensor's first writer after
    # zero_grad and overwrites it (beta = 0, C not read: fast/model.cu grad_dw_beta); a later
    # micro-batch of an accumulation would read it too
    gemm("lm_head GEMM bwd dW", 1, Vp, d, N, N * Vp * BF16, N * d * BF16, 0, Vp * d * FP32)
    # dx = f(dy, x, g, rstd) added into the fp32 residual gradient (read, written) and its bf16
    # copy; the gain's partial sums per 32-row chunk from the same reads of dy and x; dy bf16
    # (until issue 51's last change, fp32: 1.6 GB more a 468M step)
    # (fast/ops.cu rmsnorm_backward_gain_kernel; until it, a pass of its own read dy and x again:
    # 4.9 GB a 468M step this count left out)
    gain_chunks = -(-N // 32)
    rms_bwd_bytes = N * d * BF16 + N * d * BF16 + N * d * FP32 * 2 + N * d * BF16 + N * FP32 + gain_chunks * d * FP32
    add("rmsnorm bwd + gain partials (final, ln2, ln1)", "mem", 2 * L + 1, 10 * N * d, rms_bwd_bytes)
    gemm("down GEMM bwd dX", L, N, F, d, d * F * BF16, N * d * BF16, 0, N * F * BF16)
    gemm("down GEMM bwd dW", L, d, F, N, N * d * BF16, N * F * BF16, 0, d * F * FP32)
    add("swiglu bwd", "mem", L, 10 * N * F, 5 * N * F * BF16)
    gemm("gate|up GEMM bwd dX", L, N, d, 2 * F, 2 * F * d * BF16, N * 2 * F * BF16, 0, N * d * BF16)
    gemm("gate|up GEMM bwd dW", L, 2 * F, d, N, N * 2 * F * BF16, N * d * BF16, 0, 2 * F * d * FP32)
    gemm("o GEMM bwd dX", L, N, qC, d, d * qC * BF16, N * d * BF16, 0, N * qC * BF16)
    gemm("o GEMM bwd dW", L, d, qC, N, N * d * BF16, N * qC * BF16, 0, d * qC * FP32)
    # 5 products: S again, dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q (2.5x the forward)
    # with RoPE's backward fused, dq and dk leave rotated and the epilogues read the cos/sin tables
    # [T, hd/2] fp32: once from HBM, every block's re-read from L2 (the rotation's 6 FLOP a pair,
    # 0.01% of the row, not counted: the FLOPs stay 2.5 x the forward's, which the pricing reads)
    add("attention bwd (tensor cores)", "wgmma_bwd7" if wgmma_bwd else "attn_bwd", L, 2.5 * att,
        N * (4 * qC + 2 * kvC) * BF16 + N * (qC + 2 * kvC) * BF16 + 2 * B * NH * T * FP32
        + (T * hd * FP32 if rope_fused else 0))
    if not rope_fused:
        add("rope bwd (dq, dk)", "mem", L, 6 * N * (qC + kvC) / 2, 2 * N * (qC + kvC) * BF16)
    if sv or res:
        # attention adds every layer's share of V_1's gradient onto its fp32 accumulator in its
        # epilogue (SVFormer: dV_n, v_in is V_1 itself; ResFormer: λ1·dV'_n, and layers > 1 also
        # write bf16 dV'_n for their W_v GEMMs, whose alpha is λ2): an fp32 read and write in
        # place of the baseline's bf16 dV write (ResFormer n > 1: beside it), no mix pass
        add("dV_1 += c·dV_n inside attention bwd (fp32 read+write)", "mem", 1, N * kvC, N * kvC * (2 * FP32 - BF16))
        add("dV_1 += c·dV_n inside attention bwd, layers > 1", "mem", L - 1, 2 * N * kvC,
            N * kvC * (2 * FP32 - (BF16 if sv else 0)))
        add("dV_1 to bf16 for its W_v GEMMs", "mem", 1, 0, N * kvC * (FP32 + BF16))
        gemm("qk GEMM bwd dX", L, N, d, qC + kvC, (qC + kvC) * d * BF16, N * (qC + kvC) * BF16, 0, N * d * BF16)
        gemm("qk GEMM bwd dW", L, qC + kvC, d, N, N * (qC + kvC) * BF16, N * d * BF16, 0,
             (qC + kvC) * d * FP32)
        gemm("v GEMM bwd dX (+= d(ln1); ResFormer n > 1: alpha λ2)", Lv, N, d, kvC, kvC * d * BF16, N * kvC * BF16,
             N * d * BF16, N * d * BF16)
        gemm("v GEMM bwd dW (ResFormer n > 1: alpha λ2)", Lv, kvC, d, N, N * kvC * BF16, N * d * BF16, 0,
             kvC * d * FP32)
    else:
        gemm("qkv GEMM bwd dX", L, N, d, qC + 2 * kvC, (qC + 2 * kvC) * d * BF16, N * (qC + 2 * kvC) * BF16, 0,
             N * d * BF16)
        gemm("qkv GEMM bwd dW", L, qC + 2 * kvC, d, N, N * (qC + 2 * kvC) * BF16, N * d * BF16, 0,
             (qC + 2 * kvC) * d * FP32)
    add("rmsnorm gain-gradient reduce (partials in order)", "mem", 2 * L + 1, 0, gain_chunks * d * FP32 + 2 * d * FP32)
    add("embedding bwd (sorted, no atomics)", "mem", 1, N * d, N * d * FP32 + 2 * N * 4 + N * d * FP32)

    # ---- optimizer: the parameter count of the variant's table (SVFormer drops W_v of layers > 1)
    P = V * d * 2 + d + L * (2 * d + (qC + kvC) * d + qC * d + 3 * F * d) + Lv * kvC * d
    # zero_grad writes only the gradients no GEMM overwrites: the first weight-gradient GEMM of a
    # tensor after it runs with beta = 0 (fast/model.cu grad_dw_beta); the embedding's rows and
    # the norms' gains are added into, so they are zeroed (the variants' few coefficients too,
    # not counted)
    add("zero grads (embedding, norm gains; GEMMs overwrite the rest)", "mem", 1, 0, (V * d + (2 * L + 1) * d) * FP32)
    add("AdamW norm pass", "mem", 1, 2 * P, P * FP32)
    add("AdamW update (+bf16 refresh)", "mem", 1, 12 * P, P * (4 * FP32 + 3 * FP32 + BF16))
    model_flops = 6.0 * (P - V * d) * N + 6.0 * L * T * qC * N
    return ks, model_flops, P


def read_mix(path, state, hd, names=CUDA_CORE_PRODUCTS):
    """{kernel name: instructions per FFMA ('before', 'after') or per HMMA ('mma')} of the
    attention kernels at head_dim hd"""
    ipf = {}
    try:
        with open(path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                if not line.strip() or line.startswith("#"):
                    continue
                parts = line.split()
                if len(parts) < 3:
                    sys.exit(f"roofline.py: {path}:{no}: want 'STATE KERNEL<HD> IPF ...'")
                name, _, rest = parts[1].partition("<")
                if parts[0] == state and rest == f"{hd}>":
                    ipf[name] = float(parts[2])
    except OSError as e:
        sys.exit(f"roofline.py: {path}: {e.strerror}")
    missing = [k for k in names if k not in ipf]
    if missing:
        sys.exit(f"roofline.py: {path}: no '{state}' line for {', '.join(missing)} at head_dim {hd}")
    return ipf


def mma_rows(kind, count, att, nb, bw, T, hd, iph, frac):
    """the tensor-core attention's rows, priced from its SASS: [(label, count, FLOPs, bytes, ideal s,
    planned s, bound, note)]. att: the forward's causal FLOPs of one call."""
    n = -(-T // MMA_TILE)
    waste = MMA_TILE ** 2 * n * (n + 1) / T ** 2  # pairs executed (diagonal tiles whole) over T²/2
    parts = ([("attention_mma_forward_kernel", "attention fwd (mma.sync, SASS mix)", nb)] if kind == "attn_fwd"
             else [("attention_mma_backward_dkdv_kernel", "attention bwd dK/dV (mma.sync, SASS mix)", nb / 2),
                   ("attention_mma_backward_dq_kernel", "attention bwd dQ (mma.sync, SASS mix)", nb / 2)])
    rows = []
    for kernel, label, kb in parts:
        fk = att * MMA_PRODUCTS[kernel] / 2 * waste  # executed FLOPs
        hmma = fk / HMMA_FLOP
        t_issue = hmma * iph[kernel] / (H100_SMS * SCHEDULERS_PER_SM * H100_CLOCK)
        t_tensor = fk / (TENSOR_DENSE * frac)
        ideal = max(fk / TENSOR_DENSE, kb / bw) * count
        plan = max(t_issue, t_tensor, kb / (bw * EFFICIENCY["mem"])) * count
        bound = "issue" if t_issue >= max(t_tensor, kb / (bw * EFFICIENCY["mem"])) else "compute"
        warps = MMA_BLOCKS_PER_SM[(kernel, hd)] * 4 // SCHEDULERS_PER_SM
        note = f"{iph[kernel]:.2f} instr/HMMA, {warps} warps/scheduler"
        rows.append((label, count, fk * count, kb * count, ideal, plan, bound, note))
    return rows


def price(ks, peak, bw, attention, ipf=None, T=None, hd=None, frac=MMA_SYNC_FRACTION):
    """[(name, count, FLOPs, bytes, ideal s, planned s, bound)] and the step's (ideal, planned).
    attention: 'tensor' (the assumed efficiencies), 'assumed' (CUDA cores at 67 TFLOP/s with the
    same assumed efficiencies: the old prediction), 'sass' (CUDA cores, ipf from the SASS) or
    'mma' (tensor cores, mma.sync, instructions per HMMA from the SASS: ipf holds those)."""
    rows = []
    for name, kind, count, fl, nb in ks:
        if attention == "mma" and kind.startswith("attn"):
            att = fl if kind == "attn_fwd" else fl / 2.5  # the forward's causal FLOPs
            rows += [r[:7] for r in mma_rows(kind, count, att, nb, bw, T, hd, ipf, frac)]
            continue
        if attention == "sass" and kind.startswith("attn"):
            att = fl if kind == "attn_fwd" else fl / 2.5  # the forward's causal FLOPs
            parts = ([("attention_forward_kernel", "attention fwd (CUDA cores, SASS mix)", nb)] if kind == "attn_fwd"
                     else [("attention_backward_dkdv_kernel", "attention bwd dK/dV (CUDA cores, SASS mix)", nb / 2),
                           ("attention_backward_dq_kernel", "attention bwd dQ (CUDA cores, SASS mix)", nb / 2)])
            for kernel, label, kb in parts:
                fk = att * CUDA_CORE_PRODUCTS[kernel] / 2
                ideal = max(fk / CUDA_CORE_FP32, kb / bw) * count
                plan = max(fk * ipf[kernel] / CUDA_CORE_FP32, kb / (bw * EFFICIENCY["mem"])) * count
                rows.append((label, count, fk * count, kb * count, ideal, plan, "compute"))
            continue
        rate = peak
        if attention == "assumed" and kind.startswith("attn"):
            name = name.replace("tensor cores", "fp32 CUDA cores, assumed efficiency")
            rate = CUDA_CORE_FP32
        ideal = max(fl / rate if kind != "mem" else 0.0, nb / bw) * count
        plan = max(fl / (rate * EFFICIENCY[kind]) if kind != "mem" else 0.0, nb / (bw * EFFICIENCY["mem"])) * count
        bound = "memory" if kind == "mem" or nb / bw > fl / rate else "compute"
        rows.append((name, count, fl * count, nb * count, ideal, plan, bound))
    return rows, sum(r[4] for r in rows), sum(r[5] for r in rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="468M", choices=sorted(PRESETS))
    ap.add_argument("--variant", default="baseline", choices=["baseline", "resformer", "svformer"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--peak-tflops", type=float, default=800.0, help="dense bf16 GEMM rate (measured-class H100 SXM)")
    ap.add_argument("--hbm-tbs", type=float, default=3.0, help="HBM bandwidth, TB/s")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table (docs/fast.md)")
    ap.add_argument("--cuda-core-attention", action="store_true",
                    help="the flash attention kernels: fp32 on CUDA cores (67 TFLOP/s on an H100 SXM), priced from "
                         "their SASS instruction mix, instead of tensor cores")
    ap.add_argument("--sass-mix", default="after", choices=["after", "before"],
                    help="which kernels' mix (bench/attention_sass_mix.txt): after or before issue 38's split")
    ap.add_argument("--mma-attention", action="store_true",
                    help="our tensor-core attention (--attention mma) priced from its SASS instruction mix "
                         "(instructions per HMMA) instead of the assumed 55 %% / 45 %%")
    ap.add_argument("--mma-sync-fraction", type=float, default=MMA_SYNC_FRACTION,
                    help="share of the 989.4 TFLOP/s dense bf16 peak mma.sync can reach on Hopper (assumed)")
    ap.add_argument("--predict", action="store_true",
                    help="the step on an H100 and an H200 with today's kernels beside faab088's, each kernel with the "
                         "resource that binds it (shared memory, load latency at its occupancy, loads as executed; "
                         "bench/roofline_model.py, docs/design/roofline.md)")
    ap.add_argument("--calibrate", action="store_true",
                    help="the model against published H100 figures (FlashAttention-2, cuBLAS)")
    ap.add_argument("--bytes", action="store_true", help="the static HBM byte count per kernel per step")
    ap.add_argument("--what-if", choices=["hopper"],
                    help="hopper: a WHAT-IF, not today's prediction: wgmma attention fitted on FlashAttention-3's "
                         "published figures, fused GEMM epilogues, ZeRO-2's sharded AdamW (bench/roofline_hopper.py)")
    ap.add_argument("--gemm", choices=["cublaslt", "wgmma"], default="cublaslt",
                    help="with --predict or --bytes: the step as `vrl train --gemm` runs it; wgmma prices "
                         "fast/gemm_wgmma.cu with SwiGLU in its epilogues (bench/roofline_gemm.py)")
    ap.add_argument("--attention", choices=["mma", "wgmma"], default="mma",
                    help="with --predict or --bytes: the step as `vrl train --attention` runs it; wgmma prices "
                         "fast/attention_wgmma_forward.cu and _backward.cu as FlashAttention-3 on their tiles (the "
                         "backward at 7 products), with RoPE's forward pass")
    ap.add_argument("--mix-file", default=MIX_FILE, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.batch < 1 or a.seq < 2:
        sys.exit("roofline.py: --batch must be >= 1 and --seq >= 2")
    if a.cuda_core_attention and a.mma_attention:
        sys.exit("roofline.py: --cuda-core-attention and --mma-attention price different kernels: give one")
    if not 0.0 < a.mma_sync_fraction <= 1.0:
        sys.exit("roofline.py: --mma-sync-fraction must be in (0, 1]")
    if (a.gemm == "wgmma" or a.attention == "wgmma") and not (a.predict or a.bytes):
        sys.exit("roofline.py: --gemm wgmma and --attention wgmma go with --predict or --bytes")
    shapes = {}
    # the CUDA-core (flash) attention keeps RoPE's passes of its own
    ks, model_flops, P = kernels(a.preset, a.batch, a.seq, a.variant, shapes, rope_fused=not a.cuda_core_attention,
                                 wgmma_fwd=a.attention == "wgmma", wgmma_bwd=a.attention == "wgmma")
    if a.predict or a.calibrate or a.bytes or a.what_if:
        model_modes(a, ks, shapes, model_flops, P)
        return
    peak, bw = a.peak_tflops * 1e12, a.hbm_tbs * 1e12
    L, NH, _, d, _, _ = PRESETS[a.preset]
    hd = d // NH
    if a.cuda_core_attention:
        rows, t_ideal, t_plan = price(ks, peak, bw, "sass", read_mix(a.mix_file, a.sass_mix, hd))
    elif a.mma_attention:
        iph = read_mix(a.mix_file, "mma", hd, MMA_PRODUCTS)
        rows, t_ideal, t_plan = price(ks, peak, bw, "mma", iph, a.seq, hd, a.mma_sync_fraction)
    else:
        rows, t_ideal, t_plan = price(ks, peak, bw, "tensor")
    N = a.batch * a.seq
    head = (f"{a.preset} {a.variant}, B={a.batch} T={a.seq} ({N} tokens/step), {P:,} parameters; "
            f"{a.peak_tflops:.0f} TFLOP/s bf16, {a.hbm_tbs:.1f} TB/s HBM")
    if a.cuda_core_attention:
        head += f"; attention on CUDA cores, SASS mix '{a.sass_mix}' at head_dim {hd}"
    if a.mma_attention:
        head += (f"; attention on tensor cores (mma.sync), SASS mix at head_dim {hd}, {TENSOR_DENSE / 1e12:.1f} "
                 f"TFLOP/s dense x {a.mma_sync_fraction:g} for mma.sync")
    if a.markdown:
        print(head + "\n")
        print("| kernel | calls | GFLOP | GB moved | ideal ms | planned ms | bound |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for name, count, fl, nb, ideal, plan, bound in rows:
            print(f"| {name} | {count} | {fl / 1e9:,.1f} | {nb / 1e9:,.2f} | {ideal * 1e3:.2f} | {plan * 1e3:.2f} | {bound} |")
        tot_fl = sum(r[2] for r in rows)
        tot_b = sum(r[3] for r in rows)
        print(f"| **step** | | {tot_fl / 1e9:,.0f} | {tot_b / 1e9:,.1f} | {t_ideal * 1e3:.1f} | {t_plan * 1e3:.1f} | |")
    else:
        print(head)
        print(f"{'kernel':44s} {'calls':>5s} {'GFLOP':>10s} {'GB':>8s} {'ideal ms':>9s} {'plan ms':>8s}  bound")
        for name, count, fl, nb, ideal, plan, bound in rows:
            print(f"{name:44s} {count:5d} {fl / 1e9:10.1f} {nb / 1e9:8.2f} {ideal * 1e3:9.2f} {plan * 1e3:8.2f}  {bound}")
    mfu_ideal = model_flops / t_ideal / peak
    mfu_plan = model_flops / t_plan / peak
    print(f"\nmodel FLOPs/step {model_flops / 1e12:.2f} TFLOP; step {t_ideal * 1e3:.1f} ms ideal, {t_plan * 1e3:.1f} ms "
          f"planned; MFU {100 * mfu_ideal:.1f}% ideal, {100 * mfu_plan:.1f}% planned (of {a.peak_tflops:.0f} TFLOP/s); "
          f"{N / t_plan:,.0f} tokens/s planned")
    if a.cuda_core_attention:
        # the same step priced three ways, so the correction is visible (nothing here was measured)
        ways = [("old prediction: CUDA cores at the assumed 55 % / 45 % of 67 TFLOP/s, 5 backward products",
                 price(ks, peak, bw, "assumed")),
                ("SASS mix before issue 38's split (LDS.U16 + unpack per FFMA)",
                 price(ks, peak, bw, "sass", read_mix(a.mix_file, "before", hd))),
                ("SASS mix after it (fp32 tiles, LDS.128 per 4 FFMA, no spills)",
                 price(ks, peak, bw, "sass", read_mix(a.mix_file, "after", hd)))]
        print("\nthe step with CUDA-core attention, three ways (planned ms, MFU of "
              f"{a.peak_tflops:.0f} TFLOP/s, attention's share):")
        for label, (rs, _, tp) in ways:
            att = sum(r[5] for r in rs if r[0].startswith("attention"))
            print(f"  {tp * 1e3:7.1f} ms  {100 * model_flops / tp / peak:5.1f}%  attention {att * 1e3:6.1f} ms  {label}")
    if a.mma_attention:
        print_mma(ks, peak, bw, a, hd, iph, model_flops, t_plan)


def model_modes(a, ks, shapes, model_flops, P):
    """--predict, --calibrate, --bytes: bench/roofline_model.py's resource model"""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import roofline_model as rm
    if (sum((a.predict, a.calibrate, a.bytes, a.what_if is not None)) > 1 or a.cuda_core_attention or a.mma_attention
            or a.markdown):
        sys.exit("roofline.py: --predict, --calibrate, --bytes and --what-if are modes of their own: give one, alone")
    L, NH, _, d, _, _ = PRESETS[a.preset]
    hd = d // NH
    head = f"{a.preset} {a.variant}, B={a.batch} T={a.seq} ({a.batch * a.seq} tokens/step), {P:,} parameters"
    if a.gemm == "wgmma":
        import roofline_gemm as rg
        _, _, _, _, F, V = PRESETS[a.preset]
        ks = rg.apply(ks, shapes, {"N": a.batch * a.seq, "T": a.seq, "hd": hd, "d": d, "F": F, "Vp": pad(V)})
        head += (f"; --gemm wgmma: fast/gemm_wgmma.cu for {', '.join(n for n in rg.OURS if n in shapes)} at "
                 f"{rg.fitted():.3f} of the dense peak (fitted on fast.cu's Kernel 6), SwiGLU in its epilogues")
    if a.what_if:
        if a.variant != "baseline" or hd not in (64, 128):
            sys.exit(f"roofline.py: --what-if hopper prices the baseline at head_dim 64 or 128 (FlashAttention-3's "
                     f"figures), not {a.variant} at head_dim {hd}")
        import roofline_hopper as rh
        after = rm.read_rows(a.mix_file, hd, rm.row_states("after", hd))
        _, _, _, _, F, V = PRESETS[a.preset]
        rh.print_what_if(ks, shapes, after, a.batch, a.seq, NH, hd, d, F, V, P, model_flops, head)
    elif a.bytes:
        rm.print_bytes(ks, head)
    elif a.calibrate:
        rm.print_calibration(ks, shapes)
    else:
        if (hd not in (64, 128)):
            sys.exit(f"roofline.py: --predict: no SASS figures of the mma kernels at head_dim {hd} (64 and 128 only)")
        before = rm.read_rows(a.mix_file, hd, rm.row_states("before", hd))
        after = rm.read_rows(a.mix_file, hd, rm.row_states("after", hd))
        rm.print_predict(ks, shapes, before, after, a.batch, a.seq, NH, hd, model_flops, head)


def print_mma(ks, peak, bw, a, hd, iph, model_flops, t_plan):
    """the tensor-core attention's kernels, their rates against issue 38's targets, and the step
    beside the other ways of pricing it (nothing here was measured)"""
    print(f"\nthe tensor-core attention, per kernel (issue bound: iph clocks per HMMA per scheduler; the "
          f"tensor core {4 / a.mma_sync_fraction:.2f}):")
    causal = {"attn_fwd": 0.0, "attn_bwd": 0.0}
    times = {"attn_fwd": 0.0, "attn_bwd": 0.0}
    for name, kind, count, fl, nb in ks:
        if not kind.startswith("attn"):
            continue
        att = fl if kind == "attn_fwd" else fl / 2.5
        causal[kind] += fl * count
        for label, _, fk, _, _, plan, bound, note in mma_rows(kind, count, att, nb, bw, a.seq, hd, iph,
                                                               a.mma_sync_fraction):
            times[kind] += plan
            print(f"  {label:44s} {plan * 1e3:7.2f} ms  {fk / plan / 1e12:6.1f} TFLOP/s executed  {bound:7s} {note}")
    fwd = causal["attn_fwd"] / times["attn_fwd"] / peak
    bwd = causal["attn_bwd"] / times["attn_bwd"] / peak
    print(f"  at the causal FLOPs (forward 2, backward 5 products per pair): forward {100 * fwd:.1f}% of "
          f"{a.peak_tflops:.0f} TFLOP/s (target >= 40%), backward {100 * bwd:.1f}% (target >= 30%); step MFU "
          f"{100 * model_flops / t_plan / peak:.1f}% (target >= 50%)")
    ways = [("tensor-core attention at the assumed 55 % / 45 % of 800 TFLOP/s (the redesigned step)",
             price(ks, peak, bw, "tensor")),
            ("old prediction: CUDA cores at the assumed 55 % / 45 % of 67 TFLOP/s",
             price(ks, peak, bw, "assumed")),
            ("CUDA cores from their SASS (after issue 38's split)",
             price(ks, peak, bw, "sass", read_mix(a.mix_file, "after", hd))),
            (f"tensor cores (mma.sync) from their SASS, mma.sync at {a.mma_sync_fraction:g} of the dense peak",
             price(ks, peak, bw, "mma", iph, a.seq, hd, a.mma_sync_fraction))]
    print(f"\nthe step, four ways (planned ms, MFU of {a.peak_tflops:.0f} TFLOP/s, attention's share):")
    for label, (rs, _, tp) in ways:
        att = sum(r[5] for r in rs if r[0].startswith("attention"))
        print(f"  {tp * 1e3:7.1f} ms  {100 * model_flops / tp / peak:5.1f}%  attention {att * 1e3:6.1f} ms  {label}")


if __name__ == "__main__":
    main()
