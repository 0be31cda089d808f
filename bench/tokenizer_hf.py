#!/usr/bin/env python3
"""tokenizer_hf.py: PyPI `tokenizers` throughput on the same ~4 KB documents as
bench_tokenizer.c, one thread (encode per document) and all threads (encode_batch).
Usage: tokenizer_hf.py TOKENIZER.json TEXT_FILE"""
import os, sys, time
from tokenizers import Tokenizer

tok = Tokenizer.from_file(sys.argv[1])
raw = open(sys.argv[2], "rb").read()
docs, p = [], 0
while p < len(raw):
    e = min(p + 4096, len(raw))
    while e < len(raw) and raw[e - 1] != 0x0A:
        e += 1
    docs.append(raw[p:e].decode("utf-8", "replace"))
    p = e
mb = len(raw) / 1e6
for d in docs[:50]:
    tok.encode(d)
t = time.perf_counter()
n = sum(len(tok.encode(d).ids) for d in docs)
t1 = time.perf_counter() - t
t = time.perf_counter()
n2 = sum(len(e.ids) for e in tok.encode_batch(docs))
tn = time.perf_counter() - t
print(f"HF tokenizers {__import__('tokenizers').__version__:<14} 1 thread : {mb / t1:8.2f} MB/s {n / t1:12.0f} tokens/s")
print(f"HF tokenizers encode_batch ({os.cpu_count()} cpus): {mb / tn:8.2f} MB/s {n2 / tn:12.0f} tokens/s")
