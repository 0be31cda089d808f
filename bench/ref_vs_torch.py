#!/usr/bin/env python3
"""ref_vs_torch.py: the PyTorch side of bench/ref_vs_torch.sh.

One fp32 training step as vrl's reference takes it (forward, cross-entropy, backward,
global-norm clip 1.0, AdamW), on Hugging Face LlamaForCausalLM in eager mode on the CPU,
random tokens, with the shape given on the command line. Prints one line:
"torch <threads> thread(s): <tokens/s> tokens/s (<steps> steps, <s/step> s/step, CPU
seconds per step and tokens per CPU-second: on a shared machine the steadier figure for a
1-thread run)".

    python3 bench/ref_vs_torch.py --threads 1 --batch 16 --seq 128 \
        --layers 4 --heads 4 --d 128 --ffn 448 --vocab 512
"""
import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
for name in ("threads", "batch", "seq", "layers", "heads", "d", "ffn", "vocab"):
    p.add_argument("--" + name, type=int, required=True)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--attn", choices=("eager", "sdpa"), default="eager",
               help="Hugging Face attention: eager (matmul + softmax, as the reference computes it) or sdpa "
                    "(torch's fused scaled_dot_product_attention, transformers' default)")
a = p.parse_args()

torch.set_num_threads(a.threads)
torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=a.d, intermediate_size=a.ffn, num_hidden_layers=a.layers,
                  num_attention_heads=a.heads, num_key_value_heads=a.heads, vocab_size=a.vocab,
                  max_position_embeddings=max(a.seq, 2048), rms_norm_eps=1e-5, rope_theta=10000.0,
                  tie_word_embeddings=False, attn_implementation=a.attn)
model = LlamaForCausalLM(cfg).float().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
tokens = torch.randint(0, a.vocab, (a.batch, a.seq))


def step():
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=tokens, labels=tokens).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


step()  # warm-up: allocation, AdamW state
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(a.steps):
    step()
secs, cpu = time.perf_counter() - t0, time.process_time() - c0
tokens = a.batch * a.seq * a.steps
print(f"torch {a.threads} thread(s) {a.attn}: {tokens / secs:9.0f} tokens/s ({a.steps} steps, {secs / a.steps:.2f} s/step, "
      f"{cpu / a.steps:.2f} CPU-s/step: {tokens / cpu:.0f} tokens per CPU-second)", flush=True)
