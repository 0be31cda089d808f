/* attention_wgmma.cuh: `--attention wgmma`'s forward (fast/attention_wgmma_forward.cu): causal flash
 * attention on Hopper's warpgroup instructions (TMA, mbarrier stages, wgmma), FlashAttention-3's
 * layout without its intra-warpgroup overlap (docs/design/kernels.md, "Attention on wgmma
 * (`--attention wgmma`)"), and its backward (fast/attention_wgmma_backward.cu), which reads this
 * lse. */
#ifndef VRL_FAST_ATTENTION_WGMMA_CUH
#define VRL_FAST_ATTENTION_WGMMA_CUH

#include "fast/attention.cuh"

FAST_NS_BEGIN

/* attention_mma_forward's contract without RoPE (q, k already rotated; q is not written): out
 * [B,T,NH*hd] bf16, lse [B,NH,T] fp32 (natural log-sum-exp of the scaled score rows), q [B,T,ld.q],
 * k [B,T,ld.k], v [B,T,ld.v]; GQA (query head h reads kv head h / (NH/NKV)). hd 64 and 128 run the
 * wgmma kernel when q, k, v are 16-byte aligned (TMA); other head dims (8, 16, 32) and unaligned
 * views fall back to attention_mma_forward, which gives other bits. On a GPU the kernel exists
 * for compute capability 9.0 only (sm_90a): the caller checks gemm_wgmma_device(). Refused (-1)
 * in the fp32-storage CPU build (VRL_CUDA_CPU_FP32). */
int attention_wgmma_forward(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B,
                            int T, int NH, int NKV, int hd);
/* 1 when attention_wgmma_forward runs its wgmma kernel on these arguments (else the fallback). */
int attention_wgmma_runs(const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int hd);

/* attention_mma_backward's contract (fast/attention.cuh: dq, dk, dv destinations, Dscratch, strides,
 * rope->dq and rope->dk applied in fp32 before the bf16 store; deterministic, no atomics) on wgmma:
 * the dK/dV and dQ kernels of attention_wgmma_backward.cu after the D pass. Runs them where
 * attention_wgmma_backward_runs says (hd 64 or 128, q, k, v, dout 16-byte aligned, no rope->k:
 * the keys must arrive rotated); elsewhere attention_mma_backward, other bits. On a GPU for compute
 * capability 9.0 only, as the forward; refused in the fp32-storage CPU build. */
int attention_wgmma_backward(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                             const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T,
                             int NH, int NKV, int hd, const AttnRope *rope /* NULL: none; rope->dq, dk */);
/* 1 when attention_wgmma_backward runs its wgmma kernels on these arguments (else the fallback). */
int attention_wgmma_backward_runs(const bf16 *dout, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int hd,
                                  const AttnRope *rope);

FAST_NS_END

#endif
