"""modeling_vrl.py: vrl's variants as a transformers causal LM (the one Python definition).

Every value-path variant of formulas.md §4 is transformers' LlamaForCausalLM whose attention forward is
replaced per layer by `vrl_attention_forward` (the way the authors' code patches it): V_1 (the
flat [B,T,n_kv*hd] v_proj output of layer 1, before the head split) is stored and layers n >= 2
mix it in. Every residual-stream variant of formulas.md §5 (DenseFormer, AttnRes, HC, mHC) is a small
depth mixer around the same decoder sublayers (`resstream_forward`). Compositions STREAM+VALUE
use both. Parameter names are vrl's checkpoint names, so a run folder's model.safetensors loads
as is.

conformance/golden/make_golden.py builds the golden fixtures from these definitions (with its own
initialisation and fixture shapes); a vrl run folder loads through VrlForCausalLM below
(`AutoModelForCausalLM.from_pretrained(run, trust_remote_code=True)`).

Precision. transformers' LLaMA rounds to float32 in three places even in a float64 model
(RMSNorm upcast, RoPE cos/sin, eager softmax with dtype=float32). set_precision("fp64") replaces
those with the same formulas without the float32 round trip (process-wide); the default "hf"
leaves transformers as shipped.

Layers are numbered n = 1..L as in the paper; HF module/parameter indices i = n - 1.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import transformers.models.llama.modeling_llama as hf_llama
from transformers import DynamicCache, LlamaForCausalLM
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_vrl import VrlConfig


# ----------------------------------------------------------------------------------------
# Variant strings: NAME[:key=value,...]; a comma-separated piece without '=' continues the
# previous key's list (so "svformer:anchors=1,3" has anchors = ["1", "3"]).
# ----------------------------------------------------------------------------------------
def parse_variant(s):
    name, _, rest = s.partition(":")
    opts, last = {}, None
    if rest:
        for piece in rest.split(","):
            if "=" in piece:
                k, v = piece.split("=", 1)
                opts[k] = [v]
                last = k
            else:
                assert last is not None, s
                opts[last].append(piece)
    return name, opts


def parse_layers(vals):
    """["3-4"] or ["1","3"] -> set of 1-based layers."""
    out = set()
    for v in vals:
        if "-" in v:
            a, b = v.split("-")
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(v))
    return out


# ----------------------------------------------------------------------------------------
# Precision mode
# ----------------------------------------------------------------------------------------
_ORIG = dict(rms=hf_llama.LlamaRMSNorm.forward, eager=hf_llama.eager_attention_forward)
PREC = {"mode": "hf"}


def _rms_fp64(self, x):
    # transformers' LlamaRMSNorm without the float32 round trip: x * rsqrt(mean(x^2) + eps) * g
    variance = x.pow(2).mean(-1, keepdim=True)
    return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


def _eager_fp64(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    # transformers' eager_attention_forward with the softmax in the tensors' own dtype
    key_states = hf_llama.repeat_kv(key, module.num_key_value_groups)
    value_states = hf_llama.repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=query.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def set_precision(mode):
    """'hf': transformers as shipped (fp32 RMSNorm / RoPE / softmax); 'fp64': everything fp64."""
    PREC["mode"] = mode
    if mode == "hf":
        hf_llama.LlamaRMSNorm.forward = _ORIG["rms"]
        hf_llama.eager_attention_forward = _ORIG["eager"]
    else:
        hf_llama.LlamaRMSNorm.forward = _rms_fp64
        hf_llama.eager_attention_forward = _eager_fp64


def softmax_dtype(x):
    return torch.float32 if PREC["mode"] == "hf" else x.dtype


def attention_softmax(scores):
    """Softmax over the keys (last dim) of masked scores [B,h,T,S], in softmax_dtype, back in the scores'
    dtype. The additive mask is finfo(model dtype).min: in a float64 model's float32 softmax that is
    -inf, and a query whose keys are all masked (a left pad's row) would give a NaN row, whose NaN
    values then reach every real row of the next layer as 0 * NaN. Clamping at finfo(softmax
    dtype).min leaves such a row finite (uniform) and every other weight as it was."""
    dt = softmax_dtype(scores)
    probs = nn.functional.softmax(scores.to(dt).clamp(min=torch.finfo(dt).min), dim=-1)
    return probs.to(scores.dtype)


def rope_fp64_forward(self, x, position_ids):
    # formulas.md §1: inv_freq_i = theta^(-2i/hd), NeoX half split, cos/sin computed in float64
    hd = self.config.hidden_size // self.config.num_attention_heads
    theta = self.config.rope_parameters["rope_theta"]
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    freqs = position_ids[..., None].to(torch.float64) * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


# ----------------------------------------------------------------------------------------
# The value-path attention (formulas.md §4)
# ----------------------------------------------------------------------------------------
class VCtx:
    """Per-model variant description plus the per-forward store of earlier layers' tensors."""

    def __init__(self, variant):
        self.variant = variant
        self.name, self.opts = parse_variant(variant)
        self.reset()

    def reset(self):
        # per layer n: raw flat projections of this forward's tokens [B,T,width]; Krot/Vall the
        # rotated K and the V' the attention used, over every key position [B,n_kv,S,hd]; A the
        # attention probabilities [B,n_heads,T,S]
        self.Q, self.K, self.V, self.Krot, self.Vall, self.A = {}, {}, {}, {}, {}, {}
        self.H0 = None

    def opt(self, k, default=None):
        return self.opts[k][0] if k in self.opts else default

    # which projections exist at layer n (1-based)
    def has_proj(self, which, n):
        nm = self.name
        if n == 1:
            return True
        if which == "v":
            if nm == "svformer":
                anchors = parse_layers(self.opts.get("anchors", ["1"]))
                return n in anchors
            if nm == "cla":
                return n % 2 == 1
        if which == "k":
            if nm == "shared_k":
                return False
            if nm == "cla":
                return n % 2 == 1
        if which == "q" and nm == "shared_q":
            return False
        return True

    def n_lambda(self, n):
        """Trainable coefficients at layer n (shape of v_residual_lambda), or 0."""
        if self.name != "resformer" or n == 1:
            return 0
        mode = self.opt("mode", "identity")
        if mode in ("learnable", "learnable-plus"):
            return 2
        if mode == "dense":
            return n
        return 0


def mix_value(ctx, attn, n, v):
    """V'_n (flat [B,T,n_kv*hd]) and the output correction (flat, kv space, or None).

    v is layer n's own raw value projection (None where the layer has no W^V)."""
    nm, V = ctx.name, ctx.V
    if n == 1 or nm in ("baseline", "query_residual", "key_residual", "attn_residual",
                        "hidden_residual", "shared_q", "shared_k", "cross_layer", "cla"):
        return v, None
    if nm == "resformer":
        mode = ctx.opt("mode", "identity")
        src = ctx.opt("source", "1")
        if mode == "identity":
            # authors' code: value = 0.5 * V_1 + 0.5 * V_n  (source ablations: V_{n-1}, mean, V_k)
            if src == "1":
                vs = V[1]
            elif src == "prev":
                vs = V[n - 1]
            elif src == "mean":
                vs = sum(V[i] for i in range(1, n)) / (n - 1)
            else:
                k = int(src)
                if n <= k:
                    return v, None
                vs = V[k]
            return 0.5 * vs + 0.5 * v, None
        if mode == "general":
            l1 = float(ctx.opts["lambda1"][n - 2])
            l2 = float(ctx.opts["lambda2"][n - 2])
            return l1 * V[1] + l2 * v, None
        if mode == "constant":
            lam = float(ctx.opt("lambda"))
            return lam * V[1] + 1.0 * v, None
        if mode == "sparse":
            lam = float(ctx.opt("lambda"))
            if n in parse_layers(ctx.opts["layers"]):
                return lam * V[1] + 1.0 * v, None
            return v, None
        if mode in ("learnable", "learnable-plus"):
            # trainable (lambda_{n,1}, lambda_{n,2}); the two modes differ only in the init
            lam = attn.v_residual_lambda
            return lam[0] * V[1] + lam[1] * v, None
        if mode == "dense":
            lam = attn.v_residual_lambda  # [n]: lambda_{n,1..n}
            out = lam[n - 1] * v
            for i in range(1, n):
                out = out + lam[i - 1] * V[i]
            return out, None
        raise ValueError(ctx.variant)
    if nm == "svformer":
        if v is not None:          # an anchor layer: its own V (and later layers use it)
            return v, None
        a = max(i for i in V if i <= n)   # nearest anchor <= n
        return V[a], None
    if nm == "neutreno":
        lam = float(ctx.opt("lambda", "0.4"))
        return v, lam * (V[1] - v)
    if nm == "neutreno_resformer":
        lam = float(ctx.opt("lambda", "0.2"))
        vp = 0.5 * V[1] + 0.5 * v
        return vp, lam * (V[1] - vp)
    if nm == "identity_mapping":
        return v, sum(V[i] for i in range(1, n)) / (n - 1)
    raise ValueError(ctx.variant)


def kv_sources(ctx, n):
    """The layers (1-based) whose cached K and V rows layer n attends with: its own where it has
    the projection, else the layer it shares with (common/model/kv_layout.c keeps rows only for
    layers with their own W^K / W^V: SVFormer one V per anchor, CLA one K/V per layer pair)."""
    ks = vs = n
    if n >= 2 and ctx.name in ("shared_k", "cla") and not ctx.has_proj("k", n):
        ks = 1 if ctx.name == "shared_k" else n - 1
    if n >= 2 and not ctx.has_proj("v", n):
        vs = n - 1 if ctx.name == "cla" else max(i for i in range(1, n) if ctx.has_proj("v", i))
    return ks, vs


def cache_update(cache, ctx, n, key_states, value_states):
    """Append layer n's new K (rotated) and V' rows [B,n_kv,T,hd] to the transformers cache and
    return the whole K and V [B,n_kv,S,hd] it attends with (S = cached + new tokens). A layer
    without its own K or V stores a zero-width tensor [B,n_kv,T,0] in that slot (nothing) and reads
    the shared layer's rows, which that earlier layer already appended in this forward."""
    ks, vs = kv_sources(ctx, n)
    k_own = key_states if ks == n else key_states[..., :0]
    v_own = value_states if vs == n else value_states[..., :0]
    k_all, v_all = cache.update(k_own, v_own, n - 1)
    if ks != n:
        k_all = cache.layers[ks - 1].keys
    if vs != n:
        v_all = cache.layers[vs - 1].values
    return k_all, v_all


def vrl_attention_forward(self, hidden_states, position_embeddings=None, attention_mask=None,
                          past_key_values=None, **kwargs):
    """LlamaAttention.forward with the value path of formulas.md §4. For the baseline it performs the
    same operations in the same order as transformers' LlamaAttention + eager_attention_forward.
    With past_key_values (a transformers Cache) hidden_states holds only the new tokens: every mix
    of earlier layers' Q/K/V is per token, so only the attention itself reads the cached rows."""
    ctx = self.vrl_ctx
    n = self.layer_idx + 1
    nm = ctx.name
    input_shape = hidden_states.shape[:-1]
    Bsz, Tlen = input_shape
    hd = self.head_dim
    nh = self.config.num_attention_heads
    nkv = self.config.num_key_value_heads

    # flat projections, stored raw (before head split, before RoPE)
    q = self.q_proj(hidden_states) if self.q_proj is not None else None
    k = self.k_proj(hidden_states) if self.k_proj is not None else None
    v = self.v_proj(hidden_states) if self.v_proj is not None else None
    if q is not None:
        ctx.Q[n] = q
    if k is not None:
        ctx.K[n] = k
    if v is not None:
        ctx.V[n] = v

    if n >= 2:
        if nm == "shared_q":
            q = ctx.Q[1]
        if nm == "shared_k":
            k = ctx.K[1]
        if nm == "query_residual":
            q = 0.5 * ctx.Q[1] + 0.5 * q
        if nm == "key_residual":
            k = 0.5 * ctx.K[1] + 0.5 * k
        if nm == "cla" and n % 2 == 0:      # layer 2k reuses layer 2k-1's K and V
            k = ctx.K[n - 1]
            v = ctx.V[n - 1]
    vmix, corr = mix_value(ctx, self, n, v)

    query_states = q.view(*input_shape, -1, hd).transpose(1, 2)
    key_states = k.view(*input_shape, -1, hd).transpose(1, 2)
    value_states = vmix.view(*input_shape, -1, hd).transpose(1, 2)
    cos, sin = position_embeddings
    query_states, key_states = hf_llama.apply_rotary_pos_emb(query_states, key_states, cos, sin)
    if past_key_values is not None:
        key_states, value_states = cache_update(past_key_values, ctx, n, key_states, value_states)
    ctx.Krot[n] = key_states          # [B,n_kv,S,hd]: every key position (S = Tlen without a cache)
    ctx.Vall[n] = value_states        # [B,n_kv,S,hd]

    groups = self.num_key_value_groups
    key_r = hf_llama.repeat_kv(key_states, groups)
    value_r = hf_llama.repeat_kv(value_states, groups)
    attn_weights = torch.matmul(query_states, key_r.transpose(2, 3)) * self.scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    if nm == "cross_layer" and n >= 2:
        # Eq. 2: U_n = softmax(Q_n [K_n; K_m]^T / sqrt(hd)) [V_n; V_m], causal in each half
        m = 1 if ctx.opt("m") == "1" else n - 1
        km = hf_llama.repeat_kv(ctx.Krot[m], groups)
        vm = hf_llama.repeat_kv(ctx.Vall[m], groups)     # layer m's raw V (cross_layer mixes none)
        w2 = torch.matmul(query_states, km.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            w2 = w2 + attention_mask
        probs = attention_softmax(torch.cat([attn_weights, w2], dim=-1))
        ctx.A[n] = probs
        S = key_r.shape[-2]
        attn_output = torch.matmul(probs[..., :S], value_r) + torch.matmul(probs[..., S:], vm)
        attn_weights = probs
    else:
        attn_weights = attention_softmax(attn_weights)
        ctx.A[n] = attn_weights
        if nm == "attn_residual" and n >= 2:
            attn_weights = 0.5 * ctx.A[1] + 0.5 * attn_weights
        attn_output = torch.matmul(attn_weights, value_r)
    if corr is not None:
        attn_output = attn_output + hf_llama.repeat_kv(corr.view(*input_shape, -1, hd).transpose(1, 2), groups)
    attn_output = attn_output.transpose(1, 2).contiguous()
    attn_output = attn_output.reshape(*input_shape, -1).contiguous()
    attn_output = self.o_proj(attn_output)
    return attn_output, attn_weights


# ----------------------------------------------------------------------------------------
# Residual-stream variants (formulas.md §5), around transformers' sublayers
# ----------------------------------------------------------------------------------------
def rms_plain(x, eps):
    """Parameter-free RMSNorm used inside depth mixers (AttnRes keys, HC/mHC dynamic inputs); eps is
    the config's rms_norm_eps, as ref/stream.c takes it."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def causal_mask(Tlen, dtype, past=0):
    """[1,1,Tlen,past+Tlen] additive mask: new token t (position past+t) sees keys 0..past+t."""
    m = torch.full((Tlen, past + Tlen), torch.finfo(dtype).min, dtype=dtype).triu(1 + past)
    return m[None, None]


def padded_mask_positions(attention_mask, position_ids, Tlen, past, dtype, variant):
    """The additive mask [B or 1,1,Tlen,past+Tlen] and positions [B or 1,Tlen] of Tlen new tokens after
    `past` cached ones. attention_mask [B,past+Tlen] (1 = token, 0 = padding; None = no padding) masks
    the padded keys, as transformers' LlamaModel does for the value-path variants; positions count
    only real tokens (generate()'s rule, cumsum - 1, pads at 0) unless position_ids are given, so a
    left-padded row computes what the same prompt alone does. Any other mask is refused."""
    mask = causal_mask(Tlen, dtype, past)
    if attention_mask is None:
        pos = torch.arange(past, past + Tlen)[None] if position_ids is None else position_ids
        return mask, pos
    if attention_mask.dim() != 2 or attention_mask.shape[-1] != past + Tlen:
        raise ValueError(f"vrl_variant {variant!r}: attention_mask must be a 2-D padding mask [batch, {past + Tlen}] "
                         f"(cached + new tokens), got shape {tuple(attention_mask.shape)}")
    if ((attention_mask != 0) & (attention_mask != 1)).any():
        raise ValueError(f"vrl_variant {variant!r}: attention_mask must hold only 0 (padding) and 1 (token)")
    keep = attention_mask.to(torch.bool)
    mask = mask.masked_fill(~keep[:, None, None, :], torch.finfo(dtype).min)
    if position_ids is None:
        position_ids = (keep.long().cumsum(-1) - 1).masked_fill(~keep, 0)[:, past:]
    return mask, position_ids


class Holder(nn.Module):
    pass


def add_resstream_params(model, ctx):
    nm, o = ctx.name, ctx.opts
    mm = model.model
    D, L = model.config.hidden_size, model.config.num_hidden_layers
    if nm == "denseformer":
        k = int(ctx.opt("dilation", "1")); p = int(ctx.opt("period", "1"))
        mm.dwa = nn.ModuleList()
        for i in range(1, L + 1):        # DWA after block i (1-based); i=L always has one
            h = Holder()
            if i % p == 0 or i == L:
                srcs = [j for j in range(0, i + 1) if (i - j) % k == 0]
                h.alpha = nn.Parameter(torch.tensor([1.0 if j == i else 0.0 for j in srcs]))
                h.srcs = srcs
            else:
                h.srcs = None
            mm.dwa.append(h)
    elif nm == "attnres":
        for layer in mm.layers:
            layer.attn_res_query = nn.Parameter(torch.zeros(D))
            layer.mlp_res_query = nn.Parameter(torch.zeros(D))
        mm.final_res_query = nn.Parameter(torch.zeros(D))
    elif nm == "hc":
        nst = int(ctx.opt("n", "4"))
        for i, layer in enumerate(mm.layers):
            for j, sub in enumerate(("hc_attn", "hc_mlp")):
                s = 2 * i + j       # 0-based sublayer index
                h = Holder()
                am = torch.zeros(nst); am[s % nst] = 1.0
                h.alpha_m = nn.Parameter(am)                     # static input weights A_m [n]
                h.alpha_r = nn.Parameter(torch.eye(nst))         # static width map A_r [n,n]
                h.beta = nn.Parameter(torch.ones(nst))           # static output weights B [n]
                h.dyn_alpha_m = nn.Parameter(torch.zeros(D))     # W_m [d]   (d x 1)
                h.dyn_alpha_r = nn.Parameter(torch.zeros(D, nst))  # W_r [d,n]
                h.dyn_beta = nn.Parameter(torch.zeros(D))        # W_beta [d] (d x 1)
                h.scale_alpha = nn.Parameter(torch.full((1,), 0.01))
                h.scale_beta = nn.Parameter(torch.full((1,), 0.01))
                setattr(layer, sub, h)
    elif nm == "mhc":
        nst = int(ctx.opt("n", "4"))
        for i, layer in enumerate(mm.layers):
            for sub in ("mhc_attn", "mhc_mlp"):
                h = Holder()
                h.phi_pre = nn.Parameter(torch.zeros(nst * D, nst))
                h.phi_post = nn.Parameter(torch.zeros(nst * D, nst))
                h.phi_res = nn.Parameter(torch.zeros(nst * D, nst * nst))
                h.b_pre = nn.Parameter(torch.full((nst,), -math.log(nst - 1)))  # sigma = 1/n
                h.b_post = nn.Parameter(torch.zeros(nst))                        # 2 sigma = 1
                h.b_res = nn.Parameter(4.0 * torch.eye(nst))                     # near identity
                h.alpha_pre = nn.Parameter(torch.full((1,), 0.01))
                h.alpha_post = nn.Parameter(torch.full((1,), 0.01))
                h.alpha_res = nn.Parameter(torch.full((1,), 0.01))
                setattr(layer, sub, h)


def sinkhorn(M, iters):
    # formulas.md §5: iters alternating normalisations, each iteration = rows then columns
    for _ in range(iters):
        M = M / M.sum(-1, keepdim=True)
        M = M / M.sum(-2, keepdim=True)
    return M


def resstream_forward(model, tokens, cache=None, attention_mask=None, position_ids=None, inputs_embeds=None):
    """(logits [B,T,V], hidden_states, attentions) of tokens [B,T] (or of inputs_embeds [B,T,d] in
    place of their embeddings). With cache (a transformers Cache holding the first P positions)
    tokens are positions P..P+T-1: the depth mixing is per token, so only the attention layers read
    the cache (and append to it). attention_mask [B,P+T] / position_ids [B,T]: padding
    (padded_mask_positions), as generate() passes them for a left-padded batch.
    hidden_states, as LlamaModel's: L+1 tensors [B,T,d]: the embeddings, then what layer l+1's
    attention sublayer takes in (before its RMSNorm) for l = 1..L-1 (in LLaMA: layer l's output),
    then the final RMSNorm's output (the head's input). attentions: L tensors [B,heads,T,keys],
    each layer's attention probabilities."""
    ctx = model.vrl_ctx
    nm = ctx.name
    mm = model.model
    eps = model.config.rms_norm_eps
    x0 = mm.embed_tokens(tokens) if inputs_embeds is None else inputs_embeds
    Tlen = x0.shape[1]
    past = cache.get_seq_length() if cache is not None else 0
    mask, pos = padded_mask_positions(attention_mask, position_ids, Tlen, past, x0.dtype, model.config.vrl_variant)
    pe = mm.rotary_emb(x0, pos)
    layer_inputs, attentions = [], []

    def attn_sub(layer, h):
        if layer.self_attn.layer_idx > 0:
            layer_inputs.append(h)
        out, probs = layer.self_attn(hidden_states=layer.input_layernorm(h), position_embeddings=pe,
                                     attention_mask=mask, past_key_values=cache)
        attentions.append(probs)
        return out

    def mlp_sub(layer, h):
        return layer.mlp(layer.post_attention_layernorm(h))

    if nm == "denseformer":
        X = [x0]
        h = x0
        for i, layer in enumerate(mm.layers, start=1):
            a = h + attn_sub(layer, h)
            xi = a + mlp_sub(layer, a)        # block i's output X_i (block includes its residuals)
            X.append(xi)
            dwa = mm.dwa[i - 1]
            if dwa.srcs is not None:
                h = sum(dwa.alpha[c] * X[j] for c, j in enumerate(dwa.srcs))
            else:
                h = xi
        hfin = h
    elif nm == "attnres":
        mode = ctx.opt("mode", "full")
        m = int(ctx.opt("size", "2"))
        ys = [x0]                              # y_0 = embedding, y_s = raw sublayer outputs

        def sources(l):
            # inputs available to sublayer l (1-based; l = 2L+1 is the head)
            if mode == "full":
                return ys[:l]
            out = [ys[0]]
            done = (l - 1) // m                # completed blocks among sublayers 1..l-1
            for bidx in range(done):
                out.append(sum(ys[1 + bidx * m: 1 + (bidx + 1) * m]))
            part = ys[1 + done * m: l]
            if part:
                out.append(sum(part))
            return out

        def aggregate(w, l):
            S = torch.stack(sources(l), dim=0)                    # [S,B,T,d]
            logits = (rms_plain(S, eps) * w).sum(-1)                  # [S,B,T]
            alpha = torch.softmax(logits, dim=0)
            return (alpha[..., None] * S).sum(0)

        l = 1
        for layer in mm.layers:
            ys.append(attn_sub(layer, aggregate(layer.attn_res_query, l))); l += 1
            ys.append(mlp_sub(layer, aggregate(layer.mlp_res_query, l))); l += 1
        hfin = aggregate(mm.final_res_query, l)
    elif nm == "hc":
        nst = int(ctx.opt("n", "4"))
        H = x0[:, :, None, :].expand(-1, -1, nst, -1)           # [B,T,n,d]: n copies of x0
        for layer in mm.layers:
            for hc, f in ((layer.hc_attn, attn_sub), (layer.hc_mlp, mlp_sub)):
                Hn = rms_plain(H, eps)                              # norm per stream
                Am = hc.alpha_m + hc.scale_alpha * torch.tanh(Hn @ hc.dyn_alpha_m)        # [B,T,n]
                Ar = hc.alpha_r + hc.scale_alpha * torch.tanh(Hn @ hc.dyn_alpha_r)        # [B,T,n,n]
                Bt = hc.beta + hc.scale_beta * torch.tanh(Hn @ hc.dyn_beta)               # [B,T,n]
                hin = (Am[..., None] * H).sum(-2)                                         # A_m^T H
                y = f(layer, hin)
                H = Bt[..., None] * y[:, :, None, :] + torch.einsum("btij,btid->btjd", Ar, H)
        hfin = H.sum(-2)
    elif nm == "mhc":
        nst = int(ctx.opt("n", "4"))
        iters = int(ctx.opt("iters", "20"))
        Bsz = x0.shape[0]
        H = x0[:, :, None, :].expand(-1, -1, nst, -1)
        for layer in mm.layers:
            for hc, f in ((layer.mhc_attn, attn_sub), (layer.mhc_mlp, mlp_sub)):
                xt = rms_plain(H.reshape(Bsz, Tlen, nst * x0.shape[-1]), eps)                      # [B,T,nd]
                Hpre = torch.sigmoid(hc.alpha_pre * (xt @ hc.phi_pre) + hc.b_pre)   # [B,T,n]
                Hpost = 2 * torch.sigmoid(hc.alpha_post * (xt @ hc.phi_post) + hc.b_post)
                Hres = sinkhorn(torch.exp(hc.alpha_res * (xt @ hc.phi_res).reshape(Bsz, Tlen, nst, nst)
                                          + hc.b_res), iters)                        # [B,T,n,n]
                hin = (Hpre[..., None] * H).sum(-2)
                y = f(layer, hin)
                H = torch.einsum("btij,btjd->btid", Hres, H) + Hpost[..., None] * y[:, :, None, :]
        hfin = H.sum(-2)
    else:
        raise ValueError(ctx.variant)
    hfin = mm.norm(hfin)
    return model.lm_head(hfin), (x0, *layer_inputs, hfin), tuple(attentions)


RESSTREAM = {"denseformer", "attnres", "hc", "mhc"}


def split_variant(variant):
    """"STREAM[:opts]+VALUE[:opts]" (either order, docs/variants.md) -> (stream part, value part);
    a stream part alone has the value part "baseline"."""
    stream, value = variant_parts(variant)
    assert stream is not None, variant
    return stream, value




def variant_parts(variant):
    """"STREAM[:opts]+VALUE[:opts]" -> (stream part or None, value part or "baseline")."""
    parts = variant.split("+")
    stream = [p for p in parts if parse_variant(p)[0] in RESSTREAM]
    value = [p for p in parts if parse_variant(p)[0] not in RESSTREAM]
    if len(stream) > 1 or len(value) > 1:
        raise ValueError(f"vrl_variant {variant!r}: at most one residual-stream and one value-path part")
    return (stream[0] if stream else None), (value[0] if value else "baseline")


def apply_value_path(model, variant):
    """Turn a LlamaForCausalLM into the value-path variant (formulas.md §4): remove the projections the
    variant does not have, add the trainable coefficients (zeros; a checkpoint or the caller fills
    them), patch every attention forward. Returns the variant context (also model.vrl_ctx)."""
    if PREC["mode"] == "fp64":
        model.model.rotary_emb.forward = rope_fp64_forward.__get__(model.model.rotary_emb)
    ctx = VCtx(variant)
    model.vrl_ctx = ctx
    for layer in model.model.layers:
        at = layer.self_attn
        n = at.layer_idx + 1
        for which in "qkv":
            if not ctx.has_proj(which, n):
                delattr(at, which + "_proj")
                setattr(at, which + "_proj", None)
        nl = ctx.n_lambda(n)
        if nl:
            at.v_residual_lambda = nn.Parameter(torch.zeros(nl))
        at.vrl_ctx = ctx
        at.forward = vrl_attention_forward.__get__(at)
    if ctx.name == "hidden_residual":
        # formulas.md §4: attention input of layer n >= 2 is RMSNorm(0.5 x_{n-1} + 0.5 H_0); stream unchanged
        def emb_hook(mod, inp, out):
            ctx.H0 = out
        model.model.embed_tokens.register_forward_hook(emb_hook)
        for layer in model.model.layers[1:]:
            ln = layer.input_layernorm
            cls_fwd = type(ln).forward
            ln.forward = (lambda ln_, f: (lambda x: f(ln_, 0.5 * x + 0.5 * ctx.H0)))(ln, cls_fwd)
    return ctx


def apply_resstream(model, variant):
    """A residual-stream model (formulas.md §5) on top of apply_value_path's value part: the attention
    layers keep the value-path context (model.vrl_bctx), model.vrl_ctx becomes the stream's, and the
    depth-mixer parameters are added with their constructed init. Forward: resstream_forward."""
    stream, value = split_variant(variant)
    bctx = apply_value_path(model, value)
    model.vrl_bctx = bctx
    ctx = VCtx(stream)
    model.vrl_ctx = ctx
    add_resstream_params(model, ctx)
    return ctx


class VrlForCausalLM(LlamaForCausalLM):
    """A vrl run folder of any llama variant. Eager attention only (the patched attention adds the
    causal mask itself). Keeps transformers' KV cache (past_key_values, a DynamicCache by default):
    generate() feeds only the new tokens after the first step; layers without their own W^K / W^V
    (SVFormer, CLA, shared K) store nothing and read the layer they share with (cache_update)."""
    config_class = VrlConfig
    _supports_sdpa = False
    _supports_flash_attn = False
    _supports_flex_attn = False

    def __init__(self, config):
        config._attn_implementation = "eager"
        super().__init__(config)
        stream, value = variant_parts(getattr(config, "vrl_variant", "baseline"))
        if stream is None:
            apply_value_path(self, value)
            self.vrl_bctx, self.vrl_stream = self.vrl_ctx, False
        else:
            apply_resstream(self, getattr(config, "vrl_variant"))
            self.vrl_stream = True

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, use_cache=None,
                labels=None, inputs_embeds=None, output_hidden_states=None, output_attentions=None, return_dict=None,
                **kwargs):
        """input_ids [B,T] (with a cache: the tokens after its P positions) -> logits [B,T,V], or
        inputs_embeds [B,T,d] in their place. attention_mask [B,P+T] (0 = padding) and position_ids
        [B,T] as transformers' LLaMA takes them (generate() makes both for a left-padded batch: naming
        position_ids here is what makes it). output_hidden_states, output_attentions and return_dict
        as LlamaForCausalLM: the value-path variants are LlamaForCausalLM's own forward; the
        residual-stream ones return resstream_forward's hidden states and attention probabilities."""
        self.vrl_bctx.reset()
        if use_cache is None:
            use_cache = self.config.use_cache
        if not self.vrl_stream:
            return LlamaForCausalLM.forward(self, input_ids=input_ids, attention_mask=attention_mask,
                                            position_ids=position_ids, past_key_values=past_key_values,
                                            use_cache=use_cache, labels=labels, inputs_embeds=inputs_embeds,
                                            output_hidden_states=output_hidden_states,
                                            output_attentions=output_attentions, return_dict=return_dict, **kwargs)
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")
        # per-token depth mixing around attention layers that take the padding mask
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache(config=self.config)
        logits, hidden_states, attentions = resstream_forward(
            self, input_ids, past_key_values if use_cache else None, attention_mask, position_ids, inputs_embeds)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size)
        out = CausalLMOutputWithPast(
            loss=loss, logits=logits, past_key_values=past_key_values if use_cache else None,
            hidden_states=hidden_states if (output_hidden_states or self.config.output_hidden_states) else None,
            attentions=attentions if (output_attentions or self.config.output_attentions) else None)
        return out if (self.config.return_dict if return_dict is None else return_dict) else out.to_tuple()
