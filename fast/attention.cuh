/* attention.cuh: fast/'s causal attention launchers (attention.cu), the fused twins of
 * ref/attn_ops.h's attn_probs_* and attn_apply_*. Conventions as in ops.cuh: every launcher
 * issues on ops_stream and returns 0, or -1 with vrl_error. */
#ifndef VRL_FAST_ATTENTION_CUH
#define VRL_FAST_ATTENTION_CUH

#include "fast/common.cuh"

FAST_NS_BEGIN

/* Row strides in elements of q, k and v (and of the backward's dq, dk and bf16 dv, which take
 * their inputs' strides): NH*hd, NKV*hd, NKV*hd for tensors of their own, the fused
 * projection's width where they are views into one [N, qC+kvC(+kvC)] buffer. Multiples of 8. */
typedef struct {
    int q, k, v;
} AttnLd;
/* RoPE fused into the tensor-core kernels in place of rope_forward's and rope_backward's passes:
 * cos_t, sin_t [T][hd/2] fp32 (the tables those read, 8-byte aligned);
 *   q       attention_mma_forward: q holds the queries before RoPE; each block rotates its rows
 *           once in shared memory, attends with them and writes them back rotated, in place (the
 *           bits rope_forward writes), so q afterwards is what rope_forward would have left;
 *   dq, dk  attention_mma_backward: those outputs leave with RoPE's transpose applied, in fp32
 *           before the bf16 store;
 *   k       both: k holds the keys before RoPE; every K tile is rotated where it is staged in
 *           shared memory (rope_forward's bits), k itself is never written (other blocks read
 *           the same rows), so it stays unrotated for the backward, which rotates likewise. */
typedef struct {
    const float *cos_t, *sin_t;
    int q, dq, dk, k;
} AttnRope;
/* Two entries of a RoPE table, columns i, i+1 of one position (i even: 8-byte aligned): one
 * 64-bit load in the kernels' rotations */
struct alignas(8) RopePair {
    float e[2];
};
/* RoPE on one pair (x1, x2) = (x_i, x_{i+hd/2}) (docs/formulas.md §1): (x1 c − x2 s, x2 c + x1 s);
 * Rᵀ is the same with −s. The one definition rope_kernel and the tensor-core attention's fused
 * rotations share, so that they compute (and on a GPU contract) alike. */
static __device__ __forceinline__ void rope_rotate(float x1, float x2, float c, float s, float &y1, float &y2) {
    y1 = x1 * c - x2 * s;
    y2 = x2 * c + x1 * s;
}
/* Causal flash attention: online softmax in fp32 over key tiles, no [T,T] matrix; query
 * head h reads kv head h / (NH/NKV). hd must be 8, 16, 32, 64 or 128.
 * out [B,T,NH*hd], lse [B,NH,T] fp32 (log-sum-exp of each scaled score row, kept for
 * the backward), q [B,T,ld.q] (after RoPE; NH*hd used), k [B,T,ld.k], v [B,T,ld.v] (NKV*hd used) */
int attention_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B, int T,
                      int NH, int NKV, int hd);
/* The same on tensor cores (attention_mma_forward.cu, `--attention mma`): bf16 mma.sync with fp32
 * accumulation, FlashAttention-2's tiling; P is rounded to bf16 before P·V (the CUDA-core kernel
 * keeps it fp32). Same arguments, outputs and lse; hd 8, 16, 32, 64 or 128 (8 zero-padded to
 * 16). Refused (-1) in the fp32-storage CPU build (VRL_CUDA_CPU_FP32), which has no packed bf16
 * fragments. */
int attention_mma_forward(bf16 *out, float *lse, bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B, int T,
                          int NH, int NKV, int hd,
                          const AttnRope *rope /* NULL: none; rope->q, k; q written only with rope->q */);
/* Where attention_backward puts dV [B,T,NKV*hd] (either or both):
 *  f32  [N, NKV*hd] fp32: = scale·dV, or += scale·dV with add (a value shared across layers takes
 *       this layer's share in the epilogue, no mix pass: SVFormer's V_1 with scale 1, ResFormer's
 *       V_1 with scale λ1), or NULL;
 *  b16  [B,T,ld.v] bf16(dV): the W_v GEMMs' input when attention's dV is V_l's whole gradient or
 *       its own term (the coefficient then rides on the GEMMs' alpha), or NULL. */
typedef struct {
    float *f32;
    float scale;
    int add;
    bf16 *b16;
} AttnDv;
/* Recomputes the probabilities from q, k and lse. Three deterministic kernels: D = Σ dout⊙out
 * per row, then dk/dv (each key's thread loops over every query and every head of its
 * group), then dq (each query's thread loops over its keys). No atomics.
 * dq [B,T,ld.q] bf16, dk [B,T,ld.k] bf16, dv as above, Dscratch [B,NH,T] fp32, dout and out
 * [B,T,NH*hd], q, k, v as in the forward */
int attention_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                       const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T, int NH,
                       int NKV, int hd);
/* dV computed elsewhere (cuDNN's backward: bf16 [N,kvC], contiguous) into dv's destinations as
 * attention_backward's epilogue puts them: f32 = or += scale·dV, b16 a copy with row stride
 * ld_v. src must not be one of dv's buffers. */
int attention_dv_scatter(AttnDv dv, const bf16 *src, int ld_v, int N, int kvC);

/* --attention mma's backward (attention_mma_backward.cu): attention_backward's contract (the
 * same arguments, strides, lse and dV destinations, deterministic, no atomics) on bf16 tensor
 * cores, P and dS rounded to bf16 as factors of the second products. hd 8 (zero-padded to
 * 16), 16, 32, 64 or 128; refused in the fp32-storage CPU build (VRL_CUDA_CPU_FP32), which
 * has no bf16 pairs to feed mma. */
int attention_mma_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                           const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T,
                           int NH, int NKV, int hd, const AttnRope *rope /* NULL: none; rope->dq, dk, k */);

FAST_NS_END

#endif
