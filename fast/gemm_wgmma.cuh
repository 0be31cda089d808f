/* gemm_wgmma.cuh: fast/'s own Hopper GEMM (sm_90a): TMA loads, wgmma from shared memory, one
 * producer warp and two consumer warpgroups per block, with epilogues cuBLASLt cannot fuse
 * (docs/design/kernels.md, "The wgmma GEMM").
 *
 * out = inp · weightᵀ, nn.Linear's product, the forward GEMM of matmul_forward (fast/ops.cuh):
 * inp [N,C] and weight [OC,C] bf16, both rows contiguous (K-major for wgmma), fp32
 * accumulation, one rounding to bf16 at the end.
 *
 * Requirements (gemm_wgmma_fits): C a multiple of 8 (TMA's 16-byte row stride), every
 * pointer 16-byte aligned. The model's shapes meet them; a caller checks and otherwise
 * takes cuBLASLt. On a GPU the kernels exist for compute capability 9.0 only (sm_90a SASS:
 * wgmma and TMA are arch-specific), so the caller also checks the device (gemm_wgmma_device).
 * In the CPU build (VRL_CUDA_CPU) they run on the CUDA-on-CPU layer's wgmma, mbarrier and
 * TMA emulation, checked like every other kernel. */
#ifndef VRL_FAST_GEMM_WGMMA_CUH
#define VRL_FAST_GEMM_WGMMA_CUH

#include "fast/common.cuh"

FAST_NS_BEGIN

/* 1 when this process may launch the wgmma GEMMs: the CPU layer, or a GPU of compute
 * capability 9.0 (H100, H200). */
int gemm_wgmma_device(void);
/* 1 when the shapes and pointers meet the requirements above. */
int gemm_wgmma_fits(int C, std::initializer_list<const void *> ptrs);

/* out = inp · weightᵀ (+ residual), rounded once.  out [N,OC] bf16, inp [N,C], weight [OC,C],
 * residual [N,OC] or NULL: matmul_forward's contract. */
int gemm_wgmma_forward(bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *residual, int N, int C, int OC);

/* gemm_wgmma_forward with RoPE in its epilogue: columns [0, rope_cols) are heads of hd (the
 * fused q|k of a qkv projection), each rounded to bf16 and then rotated exactly as rope_forward
 * rotates them (rope_rotate on the bf16 values, fp32, one more rounding), row r at position
 * r % T; columns past rope_cols (v) stored as they are. Replaces matmul_forward + the rope
 * passes over q and k, with their bits. hd >= 16 and dividing 256; rope_cols a multiple of hd.
 * out [N,OC], inp [N,C], weight [OC,C], cos_t, sin_t [T, hd/2] */
int gemm_wgmma_forward_rope(bf16 *out, const bf16 *inp, const bf16 *weight, int N, int C, int OC, int rope_cols,
                            const float *cos_t, const float *sin_t, int T, int hd);

/* The gate|up GEMM with SwiGLU in its epilogue: gu = inp · [W_gate; W_up]ᵀ as matmul_forward
 * writes it (gate in columns [0, F), up in [F, 2F)), and out = swiglu_value(gate, up) from the
 * same accumulators once rounded, so the swiglu_forward pass (a read of gu) is not needed.
 * Bits equal matmul_forward + swiglu_forward's wherever the GEMMs' sums agree.
 * gu [N,2F], out [N,F], inp [N,C], weight [2F,C] (W_gate's F rows, then W_up's) */
int gemm_wgmma_gate_up_swiglu(bf16 *gu, bf16 *out, const bf16 *inp, const bf16 *weight, int N, int C, int F);

/* SwiGLU's backward in the epilogue of the down projection's input gradient: dh = dout · W_down
 * (x' = h + W_down·swi, so d swi = dout · W_down), rounded to bf16 as matmul_backward writes it,
 * then (d gate | d up) = swiglu_grad(dh, gate, up) into dgu as swiglu_backward writes it; dh
 * never goes to memory. The same bits as matmul_backward's dX + swiglu_backward wherever the
 * GEMMs' sums agree. W_down is read as stored, [C,F] (the B operand N-major).
 * dgu [N,2F], dout [N,C], weight [C,F], gu [N,2F]; C and F multiples of 8 */
int gemm_wgmma_down_dx_swiglu(bf16 *dgu, const bf16 *dout, const bf16 *weight, const bf16 *gu, int N, int C, int F);

/* Tests: launch at most n blocks (0: one an SM), so that blocks take several tiles each. */
void gemm_wgmma_max_blocks(int n);

FAST_NS_END

#endif
