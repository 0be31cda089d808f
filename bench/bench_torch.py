#!/usr/bin/env python3
"""bench_torch.py: the PyTorch yardstick for bench_fast.

Trains Hugging Face LlamaForCausalLM (the authors' stack: transformers LLaMA, bf16,
SDPA attention, torch AdamW) with vrl's preset shapes on random tokens, and prints the
same figures as bench/bench_fast.c: tokens/s, MFU against a measured bf16 matmul peak,
and peak memory. Same FLOP count: 6 * (parameters except the embedding table) + attention
6 * L * T * d per token (causal). Baseline only: the ResFormer/SVFormer rows of bench_fast
have no unpatched HF counterpart.

    python3 bench/bench_torch.py --presets 82M,468M --batch 8 --seq 2048 --steps 10
"""
import argparse
import time

import torch

PRESETS = {  # L, heads, d, ffn (formulas.md §1), vocab 50277
    "82M": (8, 8, 512, 1792),
    "180M": (12, 12, 768, 2688),
    "468M": (24, 16, 1024, 3584),
}


def peak_bf16(n=8192, reps=20):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize()
    return 2 * n**3 / ((time.perf_counter() - t0) / reps) / 1e12


def bench(preset, batch, seq, steps, peak, compile_model):
    from transformers import LlamaConfig, LlamaForCausalLM

    L, H, d, F = PRESETS[preset]
    cfg = LlamaConfig(vocab_size=50277, hidden_size=d, intermediate_size=F, num_hidden_layers=L,
                      num_attention_heads=H, num_key_value_heads=H, max_position_embeddings=seq,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      attention_bias=False, initializer_range=0.02)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16)
    if compile_model:
        model = torch.compile(model)
    decay = [p for n, p in model.named_parameters() if "norm" not in n]
    no_decay = [p for n, p in model.named_parameters() if "norm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    n_params = sum(p.numel() for p in model.parameters())
    n_mm = n_params - 50277 * d
    flops_tok = 6 * n_mm + 6 * L * seq * d
    torch.cuda.reset_peak_memory_stats()
    t0 = None
    for s in range(steps + 2):
        if s == 2:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        x = torch.randint(0, 50277, (batch, seq), device="cuda")
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / steps
    tps = batch * seq / dt
    print(f"{preset:5s} torch-hf   B={batch:<3d} T={seq:<5d} {tps:10.0f} tok/s  {dt * 1e3:7.1f} ms/step  "
          f"MFU {100 * tps * flops_tok / (peak * 1e12):5.1f}% (of {peak:.0f} TFLOP/s)  "
          f"memory {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB  loss {loss.item():.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="82M,468M")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_torch: no CUDA device")
    peak = peak_bf16()
    print(f"measured bf16 matmul peak (torch, 8192^3): {peak:.1f} TFLOP/s")
    for p in a.presets.split(","):
        bench(p, a.batch, a.seq, a.steps, peak, a.compile)


if __name__ == "__main__":
    main()
