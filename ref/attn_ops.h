/* attn_ops.h: the reference's one causal attention, split into its two products, so the value
 * path (formulas.md §4) can mix attention matrices (A residual), attend over two key sets at once
 * (Eq. 2) and add kv-space corrections, and GPT-2 (gpt2.c) can drop out probabilities between
 * them, all with one forward and one backward each (conventions of ops.h: backward functions
 * ADD into their outputs, NULL outputs are skipped).
 *
 * fast/attention.cu's attention_forward / attention_backward (flash attention, no [T,T] matrix) compute
 * attn_apply_forward(attn_probs_forward(q, k), v) with W = T and its backward, fused.
 *
 * W is the row width of att: T for plain causal attention, 2T for Eq. 2, where row t holds the
 * scores of keys 0..t of k at columns 0..t and of keys 0..t of k2 at columns T..T+t; one softmax
 * spans both halves. Query head h reads kv head h / (NH/NKV) (GQA). Scale 1/sqrt(hd). */
#ifndef VRL_REF_ATTN_OPS_H
#define VRL_REF_ATTN_OPS_H

#include "ref/ops.h" /* GradWrite */
#include "ref/real.h"

#define attn_probs_forward REF(attn_probs_forward)
#define attn_probs_backward REF(attn_probs_backward)
#define attn_apply_forward REF(attn_apply_forward)
#define attn_apply_backward REF(attn_apply_backward)
#define repeat_kv_add_forward REF(repeat_kv_add_forward)
#define repeat_kv_add_backward REF(repeat_kv_add_backward)

/* att = causal softmax(q·[k; k2]ᵀ/√hd), zero at masked entries.
 * att [B,NH,T,W], q [B,T,NH*hd], k [B,T,NKV*hd], k2 [B,T,NKV*hd] or NULL (W = T) */
void attn_probs_forward(real *att, const real *q, const real *k, const real *k2, int B, int T, int NH, int NKV,
                        int hd);
/* Softmax then score backward. dq [B,T,NH*hd], dk, dk2 [B,T,NKV*hd] (each may be NULL),
 * datt [B,NH,T,W], att, q, k, k2 as in the forward */
void attn_probs_backward(real *dq, real *dk, real *dk2, const real *datt, const real *att, const real *q,
                         const real *k, const real *k2, int B, int T, int NH, int NKV, int hd);

/* out_t = Σ_{t2≤t} att[t,t2]·v_t2 (+ Σ_{t2≤t} att[t,T+t2]·v2_t2). att must be zero at the
 * masked entries t2 > t (attn_probs_forward's are, and so are mixtures and dropouts of them):
 * the products run over whole blocks. attn_apply_backward writes datt only at t2 ≤ t.
 * out [B,T,NH*hd], att [B,NH,T,W], v, v2 [B,T,NKV*hd] (v2 NULL: W = T) */
void attn_apply_forward(real *out, const real *att, const real *v, const real *v2, int B, int T, int NH, int NKV,
                        int hd);
/* datt [B,NH,T,W] (visible entries written as datt_how says; masked ones left as they are),
 * dv, dv2 [B,T,NKV*hd] (each may be NULL; added into), dout [B,T,NH*hd] */
void attn_apply_backward(real *datt, real *dv, real *dv2, const real *dout, const real *att, const real *v,
                         const real *v2, int B, int T, int NH, int NKV, int hd, GradWrite datt_how);

/* out[n, h] += src[n, h / (NH/NKV)] for each query head h (a kv-space tensor repeated to the
 * query heads, like V).  out [N,NH*hd], src [N,NKV*hd] */
void repeat_kv_add_forward(real *out, const real *src, int N, int NH, int NKV, int hd);
/* dsrc[n, g] += Σ_{h in group g} dout[n, h].  dsrc [N,NKV*hd], dout [N,NH*hd] */
void repeat_kv_add_backward(real *dsrc, const real *dout, int N, int NH, int NKV, int hd);

#endif
