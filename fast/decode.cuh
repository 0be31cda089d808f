/* decode.cuh: the kernels of fast/'s KV-cache decoder (fast/decode.cu), the twin of ref/decode.c:
 * a new position's keys and values appended to the cache, and one query row per (sequence, head)
 * attending over every cached position. bf16 in and out, fp32 scores, softmax and sums, as
 * fast/attention.cu. */
#ifndef VRL_FAST_DECODE_CUH
#define VRL_FAST_DECODE_CUH

#include "fast/model.cuh"

FAST_NS_BEGIN

/* Threads of an attention block: a chunk of this many cached positions at a time, and one
 * output element per thread (head_dim <= 128, fast_capabilities). */
#define DECODE_THREADS 128

/* cache[b, p + t, :] = src[b·n + t, :] for every sequence b and t < n: n new positions from p.
 * cache [B,Tmax,C], src [B·n, ld_src] (its first C columns: a view into a packed projection) */
int decode_cache_append(bf16 *cache, const bf16 *src, int ld_src, int B, int n, int Tmax, int C, int p);

/* out[b, h] = Σ_{t<n} softmax_t(q[b,h]·k[b,t,g]/√hd)·v[b,t,g], g = h / (NH/NKV): one query per
 * sequence over its n cached positions, online softmax over chunks of DECODE_THREADS positions.
 * out [B, NH*hd], q [B, ld_q] (post-RoPE), kc, vc [B,Tmax, ld_kv] (the kv head g's columns at g*hd) */
int decode_attention(bf16 *out, const bf16 *q, int ld_q, const bf16 *kc, const bf16 *vc, int ld_kv, int B, int Tmax,
                     int n, int NH, int NKV, int hd);

/* GPT-2's one position (fast/gpt2.cu): the embeddings of m->tokens [B] at position p, every layer
 * appending its keys and values to kc[l], vc[l] [B,Tmax,d] and attending over them, then LN_f into
 * m->lnf [B,d]. m is a decoder model (fast_model_create_decoder). 0 or -1. */
int gpt2_decode_forward(FastModel *m, bf16 *const *kc, bf16 *const *vc, int Tmax, int p);
/* After fast_model_trunk on a prefill model m ([B,n]): every layer's keys and values into kc[l],
 * vc[l] at positions 0..n-1 (fast/gpt2.cu). 0 or -1. */
int gpt2_decode_prefill(FastModel *m, bf16 *const *kc, bf16 *const *vc, int Tmax);

FAST_NS_END

#endif
