#!/usr/bin/env python3
"""check_hf.py: vrl run folders and golden fixtures in Hugging Face transformers (test_hf.sh).

  fixtures DIR            every llama fixture of conformance/golden/fixtures: VrlForCausalLM
                          (python/vrl_hf) built from the fixture's config, loaded with its param.*
                          (strict: every name matches), fp64 mode; logits == out.logits within 1e-10,
                          and the same logits through the KV cache (cached_logits) within 1e-12.
  golden_run FIXTURE OUT  a run folder of a fixture's model (its config and param.* tensors).
  runs IDS N RUN...       for each run folder, AutoModelForCausalLM.from_pretrained(RUN,
                          trust_remote_code=True) in float64 / fp64 mode: greedy generate() of N
                          tokens after the prompt IDS (comma-separated), with the KV cache (and
                          the same without it), and the class; for
                          non-baseline folders what plain LlamaForCausalLM.from_pretrained logs and
                          AutoTokenizer's ids (files RUN.hf, RUN.cls, RUN.warn, RUN.tok).
  padded N RUN...         for each run folder in float32 and float64 (transformers as shipped, as
                          lm-evaluation-harness runs it) and in fp64 mode: three prompts of different lengths
                          left-padded into one batch (attention_mask 0 on the pads) give the logits
                          of each prompt alone at every real position, and batched greedy
                          generate() of N tokens gives each prompt's own generate().
  outputs BASELINE RUN... transformers' forward() options on the custom classes, float64: on the
                          baseline folder VrlForCausalLM = LlamaForCausalLM (eager) in logits,
                          hidden_states, attentions, inputs_embeds and return_dict=False tuples;
                          on every RUN (AutoModelForCausalLM, trust_remote_code) hidden_states are
                          L+1 [B,T,d] from the embeddings to the head's input, attentions L causal
                          probability rows, inputs_embeds = input_ids, return_dict=False = (loss,
                          logits, ...), and neither is returned unless asked for.
  dtype RUN DTYPE ...     config.json's torch_dtype is DTYPE and from_pretrained(RUN) by default
                          and with dtype="auto" loads the model in it.
  resave RUN OUT ...      from_pretrained(RUN, trust_remote_code=True) in its stored dtype, then
                          save_pretrained(OUT) (transformers' own config.json and model.safetensors).
"""
import glob
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from vrl_hf import VrlConfig, VrlForCausalLM, set_precision  # noqa: E402
from vrl_hf.modeling_vrl import rope_fp64_forward  # noqa: E402

torch.use_deterministic_algorithms(True)


def fixtures(folder):
    from safetensors.torch import load_file
    set_precision("fp64")
    worst, worst_c, n = 0.0, 0.0, 0
    for path in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        with open(path, "rb") as f:
            hlen = int.from_bytes(f.read(8), "little")
            meta = json.loads(f.read(hlen))["__metadata__"]
        if "config" not in meta:
            continue
        cfg = json.loads(meta["config"])
        if cfg["model_type"] != "llama":
            continue  # GPT-2: transformers' own GPT2LMHeadModel, not a vrl class
        t = load_file(path)
        if "out.logits" not in t:
            continue  # metrics_baseline: analysis metrics only
        cfg.pop("model_type")
        model = VrlForCausalLM(VrlConfig(**cfg)).to(torch.float64).eval()
        params = {k[len("param."):]: v.to(torch.float64) for k, v in t.items() if k.startswith("param.")}
        model.load_state_dict(params, strict=True)
        with torch.no_grad():
            logits = model(input_ids=t["batch.tokens"]).logits
        d = (logits - t["out.logits"]).abs().max().item()
        dc = (cached_logits(model, t["batch.tokens"]) - logits).abs().max().item()
        print(f"{os.path.basename(path):44s} {cfg['vrl_variant']:48s} max |logit diff| {d:.2e}"
              f"  cached vs uncached {dc:.2e}")
        worst, worst_c, n = max(worst, d), max(worst_c, dc), n + 1
        assert d <= 1e-10, f"{path}: logits differ by {d:.3e}"
        assert dc <= 1e-12, f"{path}: logits with the KV cache differ from the full forward by {dc:.3e}"
    assert n >= 42, f"only {n} llama fixtures found in {folder}"
    print(f"fixtures: {n} variants reproduced, worst {worst:.2e} (<= 1e-10); "
          f"KV cache vs full forward worst {worst_c:.2e} (<= 1e-12)")


def cached_logits(model, tokens):
    """Logits [B,T,V] of tokens [B,T] fed through transformers' DynamicCache the way generate() feeds
    them: a prefix of 5 tokens, then a chunk of 3, then one token per call."""
    from transformers import DynamicCache
    cache, out, T = DynamicCache(config=model.config), [], tokens.shape[1]
    cuts = [0, 5, 8] + list(range(9, T + 1))
    with torch.no_grad():
        for a, b in zip(cuts, cuts[1:]):
            o = model(input_ids=tokens[:, a:b], past_key_values=cache, use_cache=True)
            assert o.past_key_values is cache and cache.get_seq_length() == b
            out.append(o.logits)
    # the rows kept per token are common/model/kv_layout.c's: K of layers with W^K, V of layers with W^V
    ctx = model.vrl_bctx
    L = model.config.num_hidden_layers
    want = (sum(ctx.has_proj("k", n) for n in range(1, L + 1)), sum(ctx.has_proj("v", n) for n in range(1, L + 1)))
    got = (sum(ly.keys.shape[-1] > 0 for ly in cache.layers), sum(ly.values.shape[-1] > 0 for ly in cache.layers))
    assert got == want, f"{ctx.variant}: the cache holds K/V rows of {got} layers, kv_layout {want}"
    return torch.cat(out, dim=1)


def golden_run(fixture, out):
    """A run folder (config.json + model.safetensors) holding a golden fixture's model, so vrl
    generate and transformers can both load the golden baseline."""
    from safetensors.torch import load_file, save_file
    with open(fixture, "rb") as f:
        hlen = int.from_bytes(f.read(8), "little")
        meta = json.loads(f.read(hlen))["__metadata__"]
    t = load_file(fixture)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        f.write(meta["config"])
    save_file({k[len("param."):]: v.contiguous() for k, v in t.items() if k.startswith("param.")},
              os.path.join(out, "model.safetensors"), metadata={"format": "pt"})


def fp64(model):
    """fp64 mode for a loaded model: transformers' RMSNorm / eager softmax (global), its RoPE, and the
    remote-code module's own softmax switch (a dynamic module is a separate copy of modeling_vrl)."""
    set_precision("fp64")
    mod = sys.modules.get(type(model).__module__)
    if mod is not None and hasattr(mod, "set_precision"):
        mod.set_precision("fp64")
    re = getattr(getattr(model, "model", None), "rotary_emb", None)  # GPT-2 has no RoPE
    if re is not None:
        re.forward = rope_fp64_forward.__get__(re)
    return model


def runs(ids, n, *folders):
    """For each run folder: AutoModelForCausalLM in float64 / fp64 mode, greedy generate() of n tokens
    after the prompt ids; writes RUN.hf (the new ids, EOS dropped as vrl generate drops it) and
    RUN.cls (the class). For each non-baseline folder also RUN.warn: what plain
    LlamaForCausalLM.from_pretrained logs; and RUN.tok: AutoTokenizer's ids of "the cat"."""
    import io
    import logging
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM
    from transformers.utils import logging as hf_logging
    prompt = torch.tensor([[int(x) for x in ids.split(",")]])
    for run in folders:
        model = AutoModelForCausalLM.from_pretrained(run, trust_remote_code=True, dtype=torch.float64)
        model = fp64(model).eval()
        with torch.no_grad():
            res = model.generate(prompt, max_new_tokens=int(n), do_sample=False, eos_token_id=0, pad_token_id=0)
            # generate() keeps the KV cache by default; without it the same tokens
            plain = model.generate(prompt, max_new_tokens=int(n), do_sample=False, eos_token_id=0, pad_token_id=0,
                                   use_cache=False)
        assert torch.equal(res, plain), f"{run}: generate() with and without the KV cache differ"
        new = res[0, prompt.shape[1]:].tolist()
        if 0 in new:
            new = new[:new.index(0)]
        with open(run + ".hf", "w") as f:
            f.write(" ".join(str(x) for x in new) + "\n")
        with open(run + ".cls", "w") as f:
            f.write(type(model).__name__ + "\n")
        if type(model).__name__ in ("LlamaForCausalLM", "GPT2LMHeadModel"):
            continue
        buf = io.StringIO()
        handler = logging.StreamHandler(buf)
        hf_logging.get_logger().addHandler(handler)
        LlamaForCausalLM.from_pretrained(run)
        hf_logging.get_logger().removeHandler(handler)
        with open(run + ".warn", "w") as f:
            f.write(buf.getvalue())
        tok = AutoTokenizer.from_pretrained(run, trust_remote_code=True)
        with open(run + ".tok", "w") as f:
            f.write(" ".join(str(x) for x in tok("the cat").input_ids) + "\n")


# prompts of 7, 3 and 11 byte ids ("the cat", "dog", "the mat and"): 4, 8 and 0 pads on the left
PADDED_PROMPTS = ["the cat", "dog", "the mat and"]
# (precision mode, dtype, bound on |logits of a padded row - the prompt alone|). Same operations on
# the same real tokens, but a softmax over more keys (the masked pads add exact zeros) may sum in
# another order: transformers as shipped keeps softmax, RMSNorm and RoPE in float32 even in a
# float64 model, so its bound is float32's (up to 1.9e-6 seen, bound 1e-5), fp64 mode's is float64's
# (1e-12). Without the mask the stream variants differ by ~1 and float64 value-path rows are NaN.
PADDED_CASES = [("hf", torch.float32, 1e-5), ("hf", torch.float64, 1e-5), ("fp64", torch.float64, 1e-12)]


def padded(n, *folders):
    """Left-padded batch = one prompt at a time, for every run folder, float32 and float64."""
    from transformers import AutoModelForCausalLM
    n = int(n)
    prompts = [list(p.encode()) for p in PADDED_PROMPTS]
    T = max(len(p) for p in prompts)
    for mode, dtype, bound in PADDED_CASES:      # fp64 mode last: it patches transformers process-wide
        for run in folders:
            model = AutoModelForCausalLM.from_pretrained(run, trust_remote_code=True, dtype=dtype).eval()
            if mode == "fp64":
                model = fp64(model)
            pad = model.generation_config.eos_token_id
            ids = torch.tensor([[pad] * (T - len(p)) + p for p in prompts])                  # [3,T]
            mask = torch.tensor([[0] * (T - len(p)) + [1] * len(p) for p in prompts])       # [3,T]
            worst = 0.0
            with torch.no_grad():
                batch_logits = model(input_ids=ids, attention_mask=mask).logits              # [3,T,V]
                batch_out = model.generate(ids, attention_mask=mask, max_new_tokens=n, do_sample=False,
                                           pad_token_id=pad)                                 # [3,T+<=n]
                for i, p in enumerate(prompts):
                    one = torch.tensor([p])                                                  # [1,len]
                    d = (batch_logits[i, T - len(p):] - model(input_ids=one).logits[0]).abs().max().item()
                    worst = d if d != d or worst != worst else max(worst, d)                 # NaN sticks
                    out = model.generate(one, max_new_tokens=n, do_sample=False, pad_token_id=pad)[0].tolist()
                    row = batch_out[i, T - len(p):].tolist()
                    # a row that ended at EOS before the others is filled with the pad id after it
                    assert row[:len(out)] == out and all(x == pad for x in row[len(out):]), (
                        f"{run} {mode} {dtype}: prompt {PADDED_PROMPTS[i]!r}: batched, left-padded generate() "
                        f"gave {row[len(p):]}, the prompt alone {out[len(p):]}")
            print(f"{os.path.basename(run):12s} {mode:4s} {str(dtype):14s} padded vs alone: max |logit diff| "
                  f"{worst:.2e} (<= {bound:g}), generate() of {n} tokens equal for {len(prompts)} prompts")
            assert worst <= bound, f"{run} {mode} {dtype}: left-padded logits differ from the prompt alone by {worst:.3e}"


def max_diff(a, b):
    assert a.shape == b.shape, f"shapes {tuple(a.shape)} != {tuple(b.shape)}"
    return (a - b).abs().max().item()


# the prompts of `outputs`: "the cat sat" and "a dog ran !" as bytes, a batch of two
OUTPUT_IDS = torch.tensor([[116, 104, 101, 32, 99, 97, 116, 32, 115, 97, 116],
                           [97, 32, 100, 111, 103, 32, 114, 97, 110, 32, 33]])


def outputs(baseline, *folders):
    """forward()'s options as transformers' LlamaForCausalLM has them, on every variant family."""
    from transformers import AutoModelForCausalLM, LlamaForCausalLM
    ids = OUTPUT_IDS
    B, T = ids.shape
    with torch.no_grad():
        # 1. the baseline folder in both classes: the same tensors (the same operations, float64)
        hf = LlamaForCausalLM.from_pretrained(baseline, dtype=torch.float64, attn_implementation="eager").eval()
        ours = VrlForCausalLM.from_pretrained(baseline, dtype=torch.float64).eval()
        a = hf(ids, output_hidden_states=True, output_attentions=True)
        b = ours(ids, output_hidden_states=True, output_attentions=True)
        assert len(a.hidden_states) == len(b.hidden_states) and len(a.attentions) == len(b.attentions)
        worst = max([max_diff(a.logits, b.logits)] + [max_diff(x, y) for x, y in zip(a.hidden_states, b.hidden_states)]
                    + [max_diff(x, y) for x, y in zip(a.attentions, b.attentions)])
        emb = hf.model.embed_tokens(ids)
        ea, eb = hf(inputs_embeds=emb), ours(inputs_embeds=emb)
        worst = max(worst, max_diff(ea.logits, a.logits), max_diff(eb.logits, b.logits))
        ta = hf(ids, labels=ids, output_hidden_states=True, return_dict=False)
        tb = ours(ids, labels=ids, output_hidden_states=True, return_dict=False)
        assert type(ta) is tuple and type(tb) is tuple and len(ta) == len(tb), (type(ta), type(tb), len(ta), len(tb))
        worst = max(worst, abs(ta[0].item() - tb[0].item()), max_diff(ta[1], tb[1]))
        print(f"baseline     VrlForCausalLM vs LlamaForCausalLM: {len(b.hidden_states)} hidden states, "
              f"{len(b.attentions)} attentions, inputs_embeds, return_dict=False: max |diff| {worst:.1e}")
        assert worst <= 1e-12, f"{baseline}: VrlForCausalLM differs from LlamaForCausalLM by {worst:.3e}"
        # 2. every folder: the same contract, checked on the outputs themselves
        for run in folders:
            # eager: LlamaForCausalLM's sdpa returns no attention probabilities (VrlForCausalLM is eager)
            model = AutoModelForCausalLM.from_pretrained(run, trust_remote_code=True, dtype=torch.float64,
                                                         attn_implementation="eager").eval()
            cfg = model.config
            L, d = cfg.num_hidden_layers, cfg.hidden_size
            plain = model(ids)
            assert plain.hidden_states is None and plain.attentions is None, f"{run}: outputs nobody asked for"
            out = model(ids, labels=ids, output_hidden_states=True, output_attentions=True)
            hs, at = out.hidden_states, out.attentions
            assert hs is not None and len(hs) == L + 1, f"{run}: {None if hs is None else len(hs)} hidden states"
            assert all(h.shape == (B, T, d) for h in hs), f"{run}: hidden state shapes {[tuple(h.shape) for h in hs]}"
            emb = model.model.embed_tokens(ids)
            worst = max(max_diff(hs[0], emb), max_diff(model.lm_head(hs[-1]), out.logits),
                        max_diff(out.logits, plain.logits))
            assert at is not None and len(at) == L, f"{run}: {None if at is None else len(at)} attentions"
            rows = 0.0  # transformers as shipped takes the softmax in float32 even in a float64 model
            for p in at:
                assert p.shape[:3] == (B, cfg.num_attention_heads, T) and p.shape[3] == T, f"{run}: {tuple(p.shape)}"
                worst = max(worst, p.triu(1).abs().max().item())
                rows = max(rows, (p.sum(-1) - 1).abs().max().item())
            assert rows <= 1e-6, f"{run}: attention rows sum to 1 +- {rows:.3e} (float32's softmax: <= 1e-6)"
            worst = max(worst, max_diff(model(inputs_embeds=emb).logits, out.logits))
            tup = model(ids, labels=ids, return_dict=False)
            assert type(tup) is tuple, f"{run}: return_dict=False gave {type(tup).__name__}"
            worst = max(worst, abs(tup[0].item() - out.loss.item()), max_diff(tup[1], out.logits))
            print(f"{os.path.basename(run):12s} {type(model).__name__}: {len(hs)} hidden states, {len(at)} "
                  f"attentions (causal, rows sum to 1 +- {rows:.0e}), inputs_embeds, return_dict=False: "
                  f"max |diff| {worst:.1e}")
            assert worst <= 1e-12, f"{run}: forward() options disagree by {worst:.3e}"


def dtype(*pairs):
    """For each RUN DTYPE pair: config.json's torch_dtype is DTYPE, and from_pretrained loads in it."""
    from transformers import AutoModelForCausalLM
    for run, want in zip(pairs[::2], pairs[1::2]):
        with open(os.path.join(run, "config.json")) as f:
            stored = json.load(f)["torch_dtype"]
        assert stored == want, f"{run}: config.json torch_dtype {stored!r}, the weights are {want}"
        for kw in ({}, {"dtype": "auto"}):
            model = AutoModelForCausalLM.from_pretrained(run, trust_remote_code=True, **kw)
            got = next(model.parameters()).dtype
            assert got == getattr(torch, want), f"{run}: from_pretrained({kw}) gave {got}, the weights are {want}"
        print(f"{os.path.basename(run)}: torch_dtype {stored}; from_pretrained default and dtype='auto': {got}")


def resave(*pairs):
    """For each RUN OUT pair: transformers loads RUN in its stored dtype and save_pretrained's it to OUT."""
    import transformers
    from transformers import AutoModelForCausalLM
    for run, out in zip(pairs[::2], pairs[1::2]):
        model = AutoModelForCausalLM.from_pretrained(run, trust_remote_code=True, dtype="auto")
        model.save_pretrained(out)
        with open(os.path.join(out, "config.json")) as f:
            keys = sorted(json.load(f))
        print(f"{os.path.basename(run)}: transformers {transformers.__version__} save_pretrained -> {out}: "
              f"{' '.join(keys)}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"fixtures": fixtures, "golden_run": golden_run, "runs": runs, "padded": padded, "outputs": outputs,
     "dtype": dtype, "resave": resave}[cmd](*args)
