#!/usr/bin/env python3
"""make_golden.py: golden fixtures for vrl, built from PyTorch and Hugging Face transformers.

This file is the INDEPENDENT oracle: nothing here reads vrl's C code. Every formula is written
from the formula reference docs/formulas.md (sections quoted in comments) and from transformers' own LLaMA/GPT-2.

  * baseline: transformers' LlamaForCausalLM (eager attention), float64.
  * value-path variants (formulas.md §4): LlamaAttention.forward replaced per instance by
    `vrl_attention_forward` below, the way the authors' code patches it: V_1 (the flat
    [B,T,n_kv*hd] v_proj output of layer 1, before the head split) is stored and layers
    n >= 2 mix it in. V_1 is NOT detached.
  * residual-stream variants (formulas.md §5): small modules in this file around transformers'
    decoder sublayers (`resstream_forward`).
  * GPT-2 baseline: transformers' GPT2LMHeadModel, float64, dropout off, untied head.

Precision. transformers' LLaMA rounds to float32 in three places even in a float64 model
(RMSNorm upcast, RoPE cos/sin, eager softmax with dtype=float32). The fixtures are meant to
check a float64 C reference to ~1e-12, so the generator runs in "fp64 mode": those three
functions are replaced by the same formulas without the float32 round trip (see
`set_precision`). An assert checks that in transformers' own mixed mode our patched attention
reproduces the unpatched model bit for bit, and that in fp64 mode it does too, and that the
two modes differ only by float32 rounding.

Layers are numbered n = 1..L as in the paper; HF module/parameter indices i = n - 1.
"""
import json
import math
import os
import sys
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F
import transformers
import safetensors
from safetensors.torch import load_file
from transformers import LlamaConfig, LlamaForCausalLM, GPT2Config, GPT2LMHeadModel
import transformers.models.llama.modeling_llama as hf_llama

# The variant definitions (value path, residual streams, precision mode) are the repository's one
# Python implementation, python/vrl_hf/modeling_vrl.py, which also loads vrl run folders in
# transformers; this script adds the fixtures' shapes, initialisation, training and checks.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from vrl_hf.modeling_vrl import (PREC, RESSTREAM, VCtx, add_resstream_params, apply_value_path,  # noqa: E402
                                 causal_mask, parse_layers, parse_variant, resstream_forward, rms_plain,
                                 rope_fp64_forward, set_precision, sinkhorn, softmax_dtype, split_variant,
                                 vrl_attention_forward)

torch.set_default_dtype(torch.float64)
torch.use_deterministic_algorithms(True)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures")

# ----------------------------------------------------------------------------------------
# Fixture configuration (small on purpose)
# ----------------------------------------------------------------------------------------
D, N_HEADS, L, FFN, VOCAB, T, B = 16, 4, 4, 32, 64, 16, 2
HD = D // N_HEADS
MAX_POS = 64
INIT_STD = 0.25          # fixtures use a larger std than formulas.md's 0.02 so gradients discriminate
BASE_SEED = 1234
TOKEN_SEED = 42

TRAIN = dict(
    steps=5, optimizer="torch.optim.AdamW", betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1,
    clip_max_norm=1.0, clip_formula="g <- g * min(1, max_norm / (||g||_2 + 1e-6)) (torch clip_grad_norm_)",
    schedule="cosine", lr_start=1e-7, lr_peak=1e-2, lr_end=1e-3, warmup_steps=2, decay_end_step=5,
    lr_rule="update u (1-based) uses lr(u-1); loss at step u is the loss before update u",
    batch="the same batch.tokens at every step",
)


def lr_at(s, sch="cosine", b=TRAIN["lr_peak"], lr_end=TRAIN["lr_end"], W=TRAIN["warmup_steps"],
          S=TRAIN["decay_end_step"], lr_start=TRAIN["lr_start"]):
    """formulas.md §2 learning rate at scheduler step s."""
    if s < W:
        return lr_start + (b - lr_start) * s / W
    if s >= S:
        return lr_end
    if sch == "cosine":
        return lr_end + (b - lr_end) * (1 + math.cos(math.pi * (s - W) / (S - W))) / 2
    if sch == "linear":
        return lr_end + (b - lr_end) * (S - s) / (S - W)
    if sch == "exponential":
        g = math.exp(math.log(1e-10 / (b - lr_end)) / (S - W))
        return lr_end + (b - lr_end) * g ** (s - W)
    raise ValueError(sch)


# formulas.md §2 worked example
assert abs(lr_at(0, b=6e-4, lr_end=6e-5, W=120, S=10000) - 1e-7) < 1e-18
assert abs(lr_at(120, b=6e-4, lr_end=6e-5, W=120, S=10000) - 6e-4) < 1e-15
assert abs(lr_at(5060, b=6e-4, lr_end=6e-5, W=120, S=10000) - 3.3e-4) < 1e-12


# ----------------------------------------------------------------------------------------
# Model construction
# ----------------------------------------------------------------------------------------
def llama_config(n_kv, variant, eps=1e-5):
    cfg = LlamaConfig(
        vocab_size=VOCAB, hidden_size=D, intermediate_size=FFN, num_hidden_layers=L,
        num_attention_heads=N_HEADS, num_key_value_heads=n_kv, max_position_embeddings=MAX_POS,
        rms_norm_eps=eps, rope_theta=10000.0, initializer_range=INIT_STD, hidden_act="silu",
        tie_word_embeddings=False, attention_bias=False, mlp_bias=False, attention_dropout=0.0,
        bos_token_id=0, eos_token_id=0, pad_token_id=None, use_cache=False,
    )
    cfg._attn_implementation = "eager"
    return cfg


def config_json_text(n_kv, variant, eps=1e-5):
    return json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": D,
        "intermediate_size": FFN, "num_hidden_layers": L, "num_attention_heads": N_HEADS,
        "num_key_value_heads": n_kv, "vocab_size": VOCAB, "max_position_embeddings": MAX_POS,
        "rms_norm_eps": eps, "rope_theta": 10000.0, "initializer_range": INIT_STD,
        "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
        "mlp_bias": False, "bos_token_id": 0, "eos_token_id": 0, "vrl_variant": variant,
    }, indent=1)


def seeded_normal(name, shape, std):
    """Initial value of one tensor: N(0, std) from a generator seeded by (BASE_SEED, name), so the
    same tensor name gets the same values in every case; rounded to float32."""
    g = torch.Generator().manual_seed(BASE_SEED * 1000003 + zlib.crc32(name.encode()))
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * std
    return x.to(torch.float32).to(torch.float64)


def is_no_decay(name, p):
    # formulas.md §2: decay on every weight except norm gains and biases; mixing coefficients,
    # AttnRes queries and HC/mHC/DenseFormer parameters are not decayed [A].
    return p.ndim < 2 or "norm" in name or name.endswith(".bias") or any(
        t in name for t in ("v_residual_lambda", "res_query", ".hc_", ".mhc_", "model.dwa."))


def init_params(model, special=None):
    """Linears/embeddings N(0, INIT_STD); norm gains 1; `special(name, p)` may return a value."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            val = special(name, p) if special else None
            if val is not None:
                p.copy_(torch.as_tensor(val, dtype=torch.float64).reshape(p.shape))
            elif "norm" in name or name.startswith("transformer.ln_") or ".ln_" in name:
                p.fill_(1.0) if name.endswith("weight") else p.zero_()
            else:
                p.copy_(seeded_normal(name, p.shape, INIT_STD))


def build_llama(variant="baseline", n_kv=N_HEADS, patched=True, eps=1e-5):
    cfg = llama_config(n_kv, variant, eps)
    model = LlamaForCausalLM(cfg).to(torch.float64)
    assert model.config._attn_implementation == "eager"
    model.eval()   # no dropout anywhere (attention_dropout is 0 anyway); grads unaffected
    if patched:
        ctx = apply_value_path(model, variant)
    else:
        assert variant == "baseline"
        if PREC["mode"] == "fp64":
            model.model.rotary_emb.forward = rope_fp64_forward.__get__(model.model.rotary_emb)
        ctx = VCtx(variant)
        model.vrl_ctx = ctx

    def special(name, p):
        if name.endswith("v_residual_lambda"):
            nl = p.numel()
            if nl == 2 and ctx.opt("mode") == "learnable-plus":
                return learnable_plus_init(ctx, int(name.split(".")[2]) + 1)
            if nl == 2:
                return [0.5, 0.5]           # learnable: init 0.5 / 0.5
            v = [0.0] * nl                  # dense: init as identity ResFormer
            v[0] += 0.5
            v[-1] += 0.5
            return v
        return None
    init_params(model, special)
    return model


def learnable_plus_init(ctx, n):
    """docs/variants.md, resformer:mode=learnable-plus [A]: lambda_{n,1} linear in depth from
    lambda1_first at n = 2 to lambda1_last at n = L (= first when L = 2), lambda_{n,2} = lambda2;
    defaults first 0.5, last 2, lambda2 0.5 (L = 4: (0.5, 0.5), (1.25, 0.5), (2, 0.5))."""
    first = float(ctx.opt("lambda1_first", "0.5"))
    last = float(ctx.opt("lambda1_last", "2"))
    l2 = float(ctx.opt("lambda2", "0.5"))
    l1 = first if L == 2 else first + (last - first) * (n - 2) / (L - 2)
    return [l1, l2]


def ce_loss(logits, tokens):
    """Mean CE over B*(T-1) next-token predictions, float64 (EOS id 0 is a normal target)."""
    Vv = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1, :].reshape(-1, Vv), tokens[:, 1:].reshape(-1))


def forward(model, tokens, fwd=None):
    if hasattr(model, "vrl_ctx"):
        model.vrl_ctx.reset()
    if fwd is not None:
        logits = fwd(model, tokens)
    else:
        logits = model(input_ids=tokens, use_cache=False).logits
    return logits, ce_loss(logits, tokens)


def make_tokens():
    g = torch.Generator().manual_seed(TOKEN_SEED)
    tok = torch.randint(0, VOCAB, (B, T), generator=g, dtype=torch.int64)
    tok[0, 5] = 0     # EOS in the middle of a sequence (a normal target)
    tok[1, 0] = 0
    return tok


def build_resstream(variant, eps=1e-5):
    """A residual-stream model (formulas.md §5). With a value-path part ("attnres:...+resformer") the
    attention inside each sublayer is the patched value-path attention of build_llama (its own
    context: V_1 from layer 1's attention, every layer reads it); the stream part only changes
    what each sublayer receives as input."""
    stream, value = split_variant(variant)
    model = build_llama(value, N_HEADS, eps=eps)
    # the attention layers keep build_llama's value-path context (baseline for a stream alone)
    assert all(layer.self_attn.vrl_ctx is model.vrl_ctx for layer in model.model.layers)
    model.vrl_bctx = model.vrl_ctx
    ctx = VCtx(stream)
    model.vrl_ctx = ctx
    add_resstream_params(model, ctx)    # depth-mixer params keep their constructed init
    return model


def rs_fwd(model, tokens):
    model.vrl_bctx.reset()
    return resstream_forward(model, tokens)[0]  # (logits, hidden_states, attentions)


# ----------------------------------------------------------------------------------------
# GPT-2 baseline
# ----------------------------------------------------------------------------------------
def build_gpt2():
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=MAX_POS, n_embd=D, n_layer=L, n_head=N_HEADS,
                     n_inner=4 * D, activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, layer_norm_epsilon=1e-5, initializer_range=INIT_STD,
                     tie_word_embeddings=False, use_cache=False, bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    model = GPT2LMHeadModel(cfg).to(torch.float64)
    model.eval()
    assert model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr()

    def special(name, p):
        if ".ln_" in name or name.startswith("transformer.ln_f"):
            return torch.ones(p.shape) if name.endswith("weight") else torch.zeros(p.shape)
        if name.endswith(".bias"):
            return seeded_normal(name, p.shape, 0.1)   # random biases so they matter in forward
        if name.endswith("c_proj.weight"):
            return seeded_normal(name, p.shape, INIT_STD / math.sqrt(2 * L))
        return None
    init_params(model, special)
    return model, cfg


def gpt2_config_json():
    return json.dumps({
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": D, "n_head": N_HEADS,
        "n_layer": L, "n_positions": MAX_POS, "n_inner": 4 * D, "vocab_size": VOCAB,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.0,
        "embd_pdrop": 0.0, "attn_pdrop": 0.0, "initializer_range": INIT_STD,
        "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 0, "vrl_variant": "baseline",
    }, indent=1)


# ----------------------------------------------------------------------------------------
# Gradients and 5 training steps
# ----------------------------------------------------------------------------------------
def grads_at_init(model, tokens, fwd=None):
    model.zero_grad(set_to_none=True)
    logits, loss = forward(model, tokens, fwd)
    loss.backward()
    g = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        assert p.grad is not None, n
    return logits.detach(), loss.detach(), g


def train5(model, tokens, fwd=None):
    decay = [p for n, p in model.named_parameters() if not is_no_decay(n, p)]
    nodecay = [p for n, p in model.named_parameters() if is_no_decay(n, p)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": TRAIN["weight_decay"]},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=TRAIN["lr_peak"], betas=tuple(TRAIN["betas"]), eps=TRAIN["eps"],
                            foreach=False, fused=False)
    losses, norms, lrs = [], [], []
    for u in range(1, TRAIN["steps"] + 1):
        lr = lr_at(u - 1)
        for gr in opt.param_groups:
            gr["lr"] = lr
        opt.zero_grad(set_to_none=True)
        _, loss = forward(model, tokens, fwd)
        loss.backward()
        params = [p for p in model.parameters()]
        gn = torch.nn.utils.clip_grad_norm_(params, TRAIN["clip_max_norm"], foreach=False)
        # our own formula must agree with torch's pre-clip norm
        opt.step()
        losses.append(loss.item()); norms.append(gn.item()); lrs.append(lr)
    return losses, norms, lrs


def check_clip_formula():
    """torch's clip_grad_norm_ is g * min(1, max_norm / (||g|| + 1e-6)) (formulas.md §2)."""
    p1 = nn.Parameter(torch.zeros(3)); p2 = nn.Parameter(torch.zeros(2))
    p1.grad = torch.tensor([3.0, 0.0, 4.0]); p2.grad = torch.tensor([12.0, 0.0])
    n = torch.nn.utils.clip_grad_norm_([p1, p2], 1.0, foreach=False)
    assert n.item() == 13.0
    c = 1.0 / (13.0 + 1e-6)
    assert torch.allclose(p1.grad, torch.tensor([3.0, 0.0, 4.0]) * c, rtol=0, atol=1e-15)
    p1.grad = torch.tensor([0.3, 0.0, 0.4]); p2.grad = torch.tensor([0.0, 0.0])
    torch.nn.utils.clip_grad_norm_([p1, p2], 1.0, foreach=False)
    assert torch.equal(p1.grad, torch.tensor([0.3, 0.0, 0.4]))   # min(1, 1/(0.5+1e-6)) = 1


# ----------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------
# (case, variant string, n_kv)
VALUE_CASES = [
    ("baseline", "baseline", 4),
    ("resformer", "resformer", 4),
    ("resformer_general", "resformer:mode=general,lambda1=0.3,0.7,1.5,lambda2=1.2,0.8,0.6", 4),
    ("resformer_constant", "resformer:mode=constant,lambda=2", 4),
    ("resformer_sparse", "resformer:mode=sparse,layers=3-4,lambda=5", 4),
    ("resformer_learnable", "resformer:mode=learnable", 4),
    ("resformer_dense", "resformer:mode=dense", 4),
    ("resformer_learnable_plus", "resformer:mode=learnable-plus", 4),
    ("svformer", "svformer", 4),
    ("svformer_anchors", "svformer:anchors=1,3", 4),
    ("neutreno", "neutreno:lambda=0.4", 4),
    ("neutreno_resformer", "neutreno_resformer:lambda=0.2", 4),
    ("gqa", "baseline", 2),
    ("mqa", "baseline", 1),
    ("cla", "cla", 4),
    ("svformer_gqa", "svformer", 2),
    ("resformer_gqa", "resformer", 2),
    ("neutreno_mqa", "neutreno:lambda=0.4", 1),
    ("ablation_query_residual", "query_residual", 4),
    ("ablation_key_residual", "key_residual", 4),
    ("ablation_attn_residual", "attn_residual", 4),
    ("ablation_v_prev", "resformer:source=prev", 4),
    ("ablation_v_mean", "resformer:source=mean", 4),
    ("ablation_v_layer2", "resformer:source=2", 4),
    ("ablation_hidden_residual", "hidden_residual", 4),
    ("ablation_shared_q", "shared_q", 4),
    ("ablation_shared_k", "shared_k", 4),
    ("ablation_cross_layer_m1", "cross_layer:m=1", 4),
    ("ablation_cross_layer_prev", "cross_layer:m=prev", 4),
    ("ablation_identity_mapping", "identity_mapping", 4),
]
RESSTREAM_CASES = [
    ("denseformer", "denseformer", 4),
    ("denseformer_k2_p2", "denseformer:dilation=2,period=2", 4),
    ("attnres_full", "attnres:mode=full", 4),
    ("attnres_block", "attnres:mode=block,size=3", 4),
    ("hc", "hc:n=4", 4),
    ("mhc", "mhc:n=4,iters=20", 4),
    # compositions (formulas.md §4: value-path variants compose with the stream variants)
    ("attnres_block_resformer", "attnres:mode=block,size=3+resformer", 4),
    ("denseformer_svformer", "denseformer+svformer", 4),
    ("mhc_resformer_learnable", "mhc:n=4,iters=20+resformer:mode=learnable", 4),
    # rms_norm_eps 1e-2 instead of 1e-5: the depth mixers' parameter-free RMSNorms (AttnRes keys,
    # HC/mHC inputs) must take the config's eps like every other norm (a fixed 1e-5 passed before)
    ("attnres_full_eps", "attnres:mode=full", 4),
    ("hc_eps", "hc:n=4", 4),
    ("mhc_eps", "mhc:n=4,iters=20", 4),
]
CASE_EPS = {"attnres_full_eps": 1e-2, "hc_eps": 1e-2, "mhc_eps": 1e-2}   # rms_norm_eps; else 1e-5
SAVE_FINAL = {"baseline"}                                 # all final.* tensors
SAVE_FINAL_COEFF = {"resformer_learnable", "resformer_dense",   # final.* of the coefficients only
                    "resformer_learnable_plus", "mhc_resformer_learnable"}


_DT = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def write_safetensors(path, tensors, metadata):
    """Deterministic safetensors writer (safetensors' own save_file orders the header through a
    hash map, so bytes change run to run). Header: sorted JSON, "__metadata__" first, tensors in
    name order, padded with spaces to a multiple of 8; data little-endian, in header order."""
    import struct
    names = sorted(tensors)
    header = {"__metadata__": {k: metadata[k] for k in sorted(metadata)}}
    off, blobs = 0, []
    for n in names:
        t = tensors[n].contiguous()
        raw = t.numpy().tobytes()
        header[n] = {"dtype": _DT[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)
    back = load_file(path)       # read back through the official reader
    assert sorted(back) == names and all(torch.equal(back[n], tensors[n]) for n in names)


def generator_meta():
    return json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                       "safetensors": safetensors.__version__, "python": sys.version.split()[0],
                       "script": "conformance/golden/make_golden.py", "precision": "fp64 mode",
                       "init_std": INIT_STD, "base_seed": BASE_SEED, "token_seed": TOKEN_SEED})


def write_case(case, cfg_text, model, tokens, fwd=None):
    with torch.no_grad():   # every initial value is a float32 value (e.g. 0.01 -> fp32(0.01))
        for p in model.parameters():
            p.copy_(p.to(torch.float32).to(torch.float64))
    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    logits, loss, grads = grads_at_init(model, tokens, fwd)
    losses, norms, lrs = train5(model, tokens, fwd)
    assert abs(losses[0] - loss.item()) < 1e-12
    t = {}
    for n, p in init.items():
        t["param." + n] = p.to(torch.float32).contiguous()
        assert torch.equal(t["param." + n].to(torch.float64), p), n   # exactly representable
    t["batch.tokens"] = tokens.to(torch.int64).contiguous()
    t["out.logits"] = logits.contiguous()
    t["out.loss"] = loss.reshape(1).contiguous()
    for n, g in grads.items():
        t["grad." + n] = g.contiguous()
    t["train.losses"] = torch.tensor(losses)
    t["train.grad_norms"] = torch.tensor(norms)
    t["train.lrs"] = torch.tensor(lrs)
    if case in SAVE_FINAL:
        for n, p in model.named_parameters():
            t["final." + n] = p.detach().clone().contiguous()
    if case in SAVE_FINAL_COEFF:
        for n, p in model.named_parameters():
            if "v_residual_lambda" in n:
                t["final." + n] = p.detach().clone().contiguous()
    train = dict(TRAIN)
    train["no_decay_params"] = [n for n, p in model.named_parameters() if is_no_decay(n, p)]
    meta = {"case": case, "config": cfg_text, "train": json.dumps(train), "generator": generator_meta()}
    os.makedirs(OUT_DIR, exist_ok=True)
    write_safetensors(os.path.join(OUT_DIR, case + ".safetensors"), t, meta)
    print(f"{case:28s} loss {loss.item():.6f}  losses {' '.join(f'{x:.5f}' for x in losses)}  "
          f"gnorm0 {norms[0]:.3f}", flush=True)
    return logits, loss, grads


# ----------------------------------------------------------------------------------------
# Self-checks (asserts)
# ----------------------------------------------------------------------------------------
def maxdiff(a, b):
    return (a - b).abs().max().item()


def spec_forward(model, tokens, variant):
    """formulas.md §1/§4 written out literally with plain tensor ops (no transformers module called), for a
    few value-path variants; the self-checks compare it with the patched transformers path."""
    P = dict(model.named_parameters())
    nm, o = parse_variant(variant)
    nkv = model.config.num_key_value_heads
    Bsz, Tlen = tokens.shape

    def rms(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g

    inv = torch.tensor([10000.0 ** (-2 * i / HD) for i in range(HD // 2)])
    ang = torch.arange(Tlen, dtype=torch.float64)[:, None] * inv[None]        # [T, hd/2]
    cos, sin = torch.cos(ang), torch.sin(ang)

    def rope(x):                                   # x [B,h,T,hd], NeoX half split
        x1, x2 = x[..., :HD // 2], x[..., HD // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def heads(x, h):
        return x.view(Bsz, Tlen, h, HD).transpose(1, 2)

    x = P["model.embed_tokens.weight"][tokens]
    causal = torch.ones(Tlen, Tlen, dtype=torch.bool).tril()
    V1 = None
    for i in range(L):
        n, pre = i + 1, f"model.layers.{i}."
        hN = rms(x, P[pre + "input_layernorm.weight"])
        q = hN @ P[pre + "self_attn.q_proj.weight"].T
        k = hN @ P[pre + "self_attn.k_proj.weight"].T
        v = hN @ P[pre + "self_attn.v_proj.weight"].T                       # V_n, flat [B,T,nkv*hd]
        if n == 1:
            V1 = v
        vmix, corr = v, None
        if n >= 2 and nm == "resformer":
            vmix = 0.5 * V1 + 0.5 * v
        if n >= 2 and nm == "neutreno":
            corr = float(o["lambda"][0]) * (V1 - v)
        qh, kh = rope(heads(q, N_HEADS)), rope(heads(k, nkv))
        rep = N_HEADS // nkv
        kh = kh.repeat_interleave(rep, dim=1)
        vh = heads(vmix, nkv).repeat_interleave(rep, dim=1)
        s = (qh @ kh.transpose(-1, -2)) / math.sqrt(HD)
        s = s.masked_fill(~causal, float("-inf"))
        U = torch.softmax(s, -1) @ vh
        if corr is not None:
            U = U + heads(corr, nkv).repeat_interleave(rep, dim=1)
        x = x + U.transpose(1, 2).reshape(Bsz, Tlen, D) @ P[pre + "self_attn.o_proj.weight"].T
        hN = rms(x, P[pre + "post_attention_layernorm.weight"])
        g = hN @ P[pre + "mlp.gate_proj.weight"].T
        u = hN @ P[pre + "mlp.up_proj.weight"].T
        x = x + (F.silu(g) * u) @ P[pre + "mlp.down_proj.weight"].T
    return rms(x, P["model.norm.weight"]) @ P["lm_head.weight"].T


def self_checks(tokens):
    check_clip_formula()
    # 1. patched baseline == unpatched transformers, bit for bit, in both precision modes
    for mode in ("hf", "fp64"):
        set_precision(mode)
        ref = build_llama("baseline", patched=False)
        pat = build_llama("baseline", patched=True)
        lr_, ll = forward(ref, tokens)
        lp, lpl = forward(pat, tokens)
        assert maxdiff(lr_, lp) == 0.0, (mode, maxdiff(lr_, lp))
        _, _, gr = grads_at_init(ref, tokens)
        _, _, gp = grads_at_init(pat, tokens)
        for n in gr:
            assert maxdiff(gr[n], gp[n]) == 0.0, (mode, n)
        # transformers' own loss agrees with ours
        hf_loss = ref(input_ids=tokens, labels=tokens).loss
        assert abs(hf_loss.item() - ll.item()) < 1e-6, (hf_loss, ll)   # HF loss runs in float32
        if mode == "hf":
            hf_logits = lr_
    # fp64 vs transformers' mixed precision: differ only by float32 rounding
    d = maxdiff(hf_logits, lp)
    assert 0 < d < 1e-5, d
    print(f"check: patched == unpatched transformers (0 diff, both modes); fp64 vs hf-mixed logits {d:.2e}")
    set_precision("fp64")

    def run(variant, n_kv=N_HEADS):
        m = build_llama(variant, n_kv)
        lg, ls, g = grads_at_init(m, tokens)
        return lg, g

    base, gbase = run("baseline")
    # 2. identity resformer == general form at 0.5/0.5
    a, _ = run("resformer")
    b, _ = run("resformer:mode=general,lambda1=0.5,0.5,0.5,lambda2=0.5,0.5,0.5")
    assert maxdiff(a, b) < 1e-14
    # 3. general form at (0, 1) == baseline
    c, gc = run("resformer:mode=general,lambda1=0,0,0,lambda2=1,1,1")
    assert maxdiff(c, base) < 1e-14
    # 4. svformer with an anchor at every layer == baseline (same weights by name)
    e, ge = run("svformer:anchors=1,2,3,4")
    assert maxdiff(e, base) == 0.0
    for n in gbase:
        assert maxdiff(gbase[n], ge[n]) < 1e-15, n
    # 5. learnable / dense at init == identity resformer
    f, _ = run("resformer:mode=learnable")
    g_, _ = run("resformer:mode=dense")
    assert maxdiff(f, a) < 1e-14 and maxdiff(g_, a) < 1e-14
    # 5b. learnable-plus at init == general form with the documented default rule (L = 4:
    #     lambda_1 = 0.5, 1.25, 2; lambda_2 = 0.5), and == identity when first = last = 0.5
    lp, _ = run("resformer:mode=learnable-plus")
    lg_, _ = run("resformer:mode=general,lambda1=0.5,1.25,2,lambda2=0.5,0.5,0.5")
    assert maxdiff(lp, lg_) < 1e-14, maxdiff(lp, lg_)
    lp1, _ = run("resformer:mode=learnable-plus,lambda1_first=0.5,lambda1_last=0.5,lambda2=0.5")
    assert maxdiff(lp1, a) < 1e-14
    # 6. source=1 == identity; source=prev at L=2 only differs from n >= 3
    h, _ = run("resformer:source=1")
    assert maxdiff(h, a) == 0.0
    # 7. sparse on all layers == constant
    i1, _ = run("resformer:mode=sparse,layers=2-4,lambda=2")
    i2, _ = run("resformer:mode=constant,lambda=2")
    assert maxdiff(i1, i2) == 0.0
    # 8. neutreno at lambda 0 == baseline
    j, _ = run("neutreno:lambda=0")
    assert maxdiff(j, base) < 1e-14
    # 9. GQA path with n_kv = heads is the baseline; and GQA == MHA with duplicated k/v heads
    m2 = build_llama("baseline", 2)
    m4 = build_llama("baseline", 4)
    with torch.no_grad():
        for l2, l4 in zip(m2.model.layers, m4.model.layers):
            for pn in ("k_proj", "v_proj"):
                w = getattr(l2.self_attn, pn).weight.view(2, HD, D)
                getattr(l4.self_attn, pn).weight.copy_(w.repeat_interleave(2, dim=0).reshape(4 * HD, D))
    x2, _ = forward(m2, tokens)
    x4, _ = forward(m4, tokens)
    assert maxdiff(x2, x4) < 1e-13
    # 10. residual-stream variants at init reproduce the baseline (up to eps effects of scale)
    for v, tol in (("denseformer", 0.0), ("denseformer:dilation=2,period=2", 0.0)):
        mr = build_resstream(v)
        lg, _ = forward(mr, tokens, rs_fwd)
        assert maxdiff(lg, base) <= tol, (v, maxdiff(lg, base))
    for v in ("attnres:mode=full", "attnres:mode=block,size=3", "hc:n=4", "mhc:n=4,iters=20"):
        mr = build_resstream(v)
        lg, _ = forward(mr, tokens, rs_fwd)
        dd = maxdiff(lg, base)
        print(f"check: {v} at init vs baseline logits: max diff {dd:.2e}")
    # 10b. compositions: stream + "baseline" value part == the stream alone; DenseFormer (== the
    #      baseline stream at init) + a value part == that value-path model, logits and grads
    for v in ("attnres:mode=block,size=3", "mhc:n=4,iters=20"):
        l1, _, g1 = grads_at_init(build_resstream(v), tokens, rs_fwd)
        l2, _, g2 = grads_at_init(build_resstream(v + "+baseline"), tokens, rs_fwd)
        assert maxdiff(l1, l2) == 0.0 and all(maxdiff(g1[n], g2[n]) == 0.0 for n in g1), v
    for vp in ("svformer", "resformer", "resformer:mode=learnable"):
        lv, _, gv = grads_at_init(build_llama(vp), tokens)
        ld, _, gd = grads_at_init(build_resstream("denseformer+" + vp), tokens, rs_fwd)
        assert maxdiff(lv, ld) < 1e-14, (vp, maxdiff(lv, ld))
        assert all(maxdiff(gv[n], gd[n]) < 1e-13 for n in gv), vp
    print("check: stream+baseline == stream; denseformer+value-path at init == value-path model")
    # 11. with every AttnRes block of size 1, block == full
    fa = build_resstream("attnres:mode=full"); fb = build_resstream("attnres:mode=block,size=1")
    with torch.no_grad():
        for mdl in (fa, fb):
            for nme, p in mdl.named_parameters():
                if "res_query" in nme:
                    p.copy_(seeded_normal(nme, p.shape, 1.0))
    la, _ = forward(fa, tokens, rs_fwd); lb, _ = forward(fb, tokens, rs_fwd)
    assert maxdiff(la, lb) < 1e-13
    # 12. Sinkhorn output is doubly stochastic
    S = sinkhorn(torch.exp(torch.randn(4, 4, generator=torch.Generator().manual_seed(0))), 20)
    assert torch.allclose(S.sum(0), torch.ones(4), atol=1e-12) and torch.allclose(S.sum(1), torch.ones(4), atol=1e-6)
    # 13. the literal formulas.md formulas (spec_forward) agree with the patched transformers path
    for v, nkv in (("baseline", 4), ("resformer", 4), ("resformer", 2), ("neutreno:lambda=0.4", 4),
                   ("neutreno:lambda=0.4", 1), ("baseline", 1)):
        mdl = build_llama(v, nkv)
        lg, _ = forward(mdl, tokens)
        with torch.no_grad():
            ls = spec_forward(mdl, tokens, v)
        assert maxdiff(lg, ls) < 1e-12, (v, nkv, maxdiff(lg, ls))
    print("check: literal SPEC forward == patched transformers (baseline, resformer, neutreno; MHA/GQA/MQA)")
    print("check: all self-checks passed")


# ----------------------------------------------------------------------------------------
# Analysis metrics (formulas.md §6) on the baseline
# ----------------------------------------------------------------------------------------
def metrics_baseline(tokens):
    model = build_llama("baseline")
    ctx = model.vrl_ctx
    out = {}
    with torch.no_grad():
        ctx.reset()
        # formulas.md §6: the L+1 hidden states = embedding output, outputs of layers 1..L-1, and the
        # final post-norm output (transformers' own output_hidden_states convention)
        hs = []
        hooks = [model.model.embed_tokens.register_forward_hook(lambda m, i, o: hs.append(o))]
        for layer in model.model.layers[:-1]:
            hooks.append(layer.register_forward_hook(lambda m, i, o: hs.append(o[0] if isinstance(o, tuple) else o)))
        hooks.append(model.model.norm.register_forward_hook(lambda m, i, o: hs.append(o)))
        model(input_ids=tokens, use_cache=False)
        for hk in hooks:
            hk.remove()
        assert len(hs) == L + 1
        ent = torch.zeros(L)
        sim = torch.zeros(L + 1)
        spec = torch.zeros(L, N_HEADS * HD)
        for bidx in range(B):
            for n in range(1, L + 1):
                A = ctx.A[n][bidx].mean(0)                 # [T,T] mean over heads
                p = A.sum(0) / A.sum()                     # column sums: importance of key j
                ent[n - 1] += -(p * torch.log(p)).sum() / B
                v = ctx.V[n][bidx]                         # [T, n_kv*hd]
                C = v.T @ v / v.shape[0]
                ev = torch.linalg.eigvalsh(C).flip(0)
                spec[n - 1] += ev / B
            for s in range(L + 1):
                x = F.normalize(hs[s][bidx], p=2, dim=-1, eps=1e-12)
                S = x @ x.T
                mask = ~torch.eye(T, dtype=torch.bool)
                sim[s] += S[mask].mean() / B
        # cross-layer approximation (Fig. 3): layer n >= 2, m = n - 1
        cos_eq3 = torch.zeros(L - 1)
        cos_eq6 = torch.zeros(L - 1)
        for n in range(2, L + 1):
            m = n - 1
            at = model.model.layers[n - 1].self_attn
            q = ctx.Q[n].view(B, T, N_HEADS, HD).transpose(1, 2)
            k = ctx.K[n].view(B, T, N_HEADS, HD).transpose(1, 2)
            cos_, sin_ = model.model.rotary_emb(hs[0], torch.arange(T)[None])
            q, k = hf_llama.apply_rotary_pos_emb(q, k, cos_, sin_)
            km = ctx.Krot[m]
            vn = ctx.V[n].view(B, T, N_HEADS, HD).transpose(1, 2)
            vm = ctx.V[m].view(B, T, N_HEADS, HD).transpose(1, 2)
            mask = causal_mask(T, torch.float64)
            s1 = q @ k.transpose(2, 3) * at.scaling + mask
            s2 = q @ km.transpose(2, 3) * at.scaling + mask
            P = torch.softmax(torch.cat([s1, s2], -1), -1)
            u2 = P[..., :T] @ vn + P[..., T:] @ vm
            An = torch.softmax(s1, -1)
            u3 = 0.5 * An @ (vn + vm)
            u6 = 0.5 * (An @ vn + vm)
            flat = lambda u: u.transpose(1, 2).reshape(B, T, N_HEADS * HD)
            cos_eq3[n - 2] = F.cosine_similarity(flat(u2), flat(u3), dim=-1).mean()
            cos_eq6[n - 2] = F.cosine_similarity(flat(u2), flat(u6), dim=-1).mean()
    out["metric.attention_entropy"] = ent
    out["metric.token_similarity_hidden"] = sim
    out["metric.value_spectrum"] = spec
    out["metric.value_spectrum_max"] = spec[:, 0].clone()
    out["metric.cross_layer_cos_eq3"] = cos_eq3
    out["metric.cross_layer_cos_eq6"] = cos_eq6
    out["batch.tokens"] = tokens
    meta = {"case": "metrics_baseline", "config": config_json_text(N_HEADS, "baseline"),
            "generator": generator_meta(),
            "notes": "weights = param.* of baseline.safetensors; batch = batch.tokens; fp64"}
    write_safetensors(os.path.join(OUT_DIR, "metrics_baseline.safetensors"),
                      {k: v.contiguous() for k, v in out.items()}, meta)
    print("metrics:", {k: [round(x, 5) for x in v.flatten().tolist()[:6]] for k, v in out.items() if k.startswith("metric")})


def main():
    only = set(sys.argv[1:])
    tokens = make_tokens()
    self_checks(tokens)
    set_precision("fp64")
    for case, variant, n_kv in VALUE_CASES:
        if only and case not in only:
            continue
        model = build_llama(variant, n_kv)
        write_case(case, config_json_text(n_kv, variant), model, tokens)
    for case, variant, n_kv in RESSTREAM_CASES:
        if only and case not in only:
            continue
        eps = CASE_EPS.get(case, 1e-5)
        model = build_resstream(variant, eps)
        if case in CASE_EPS:
            # the depth mixers' weights on their normalised inputs start at zero, which would hide
            # the norm (and its eps) from the logits: give them seeded nonzero values
            with torch.no_grad():
                for nme, p in model.named_parameters():
                    if any(t in nme for t in ("res_query", ".dyn_", ".phi_")):
                        p.copy_(seeded_normal(nme, p.shape, 0.5))
        write_case(case, config_json_text(n_kv, variant, eps), model, tokens, rs_fwd)
    if not only or "gpt2" in only:
        model, _ = build_gpt2()
        write_case("gpt2", gpt2_config_json(), model, tokens)
    if not only or "metrics_baseline" in only:
        metrics_baseline(tokens)


if __name__ == "__main__":
    main()
