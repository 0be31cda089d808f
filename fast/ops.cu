/* ops.cu: the fast ops (shapes and contracts in ops.cuh), each the twin of the
 * function with the same name in ref/ops.c.
 *
 * Kernels are kept plain so that a reader can check them against the ref line by line:
 * one thread per element for elementwise ops, one warp per row for row reductions,
 * one block per row for the cross-entropy (attention has its own file, attention.cu).
 * Every reduction has a fixed order (warp shuffles with a
 * fixed pattern, partial sums reduced in index order), so a run repeats bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast/ops.cuh"
#include "fast/vec.cuh"

FAST_NS_BEGIN

cudaStream_t ops_stream = 0;
unsigned long vec_scalar_launches = 0;

/* ================================================================== matmul (cuBLASLt) */

#define BLAS_WORKSPACE (32u << 20) /* cuBLASLt's recommendation for Hopper */

int blas_create(Blas *b) {
    b->plans = (BlasPlan *)calloc(BLAS_MAX_PLANS, sizeof *b->plans);
    b->n_plans = 0;
    if (!b->plans) return vrl_error("fast: out of host memory for the cuBLASLt plans");
    CUBLAS_CHECK(cublasLtCreate(&b->lt));
    b->workspace_bytes = BLAS_WORKSPACE;
    CUDA_CHECK(cudaMalloc(&b->workspace, b->workspace_bytes));
    return 0;
}

static void plan_release(BlasPlan *p) {
    if (p->ld) cublasLtMatrixLayoutDestroy(p->ld);
    if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

void blas_destroy(Blas *b) {
    for (int i = 0; i < b->n_plans; i++) plan_release(&b->plans[i]);
    free(b->plans);
    b->plans = NULL;
    b->n_plans = 0;
    if (b->workspace) cudaFree(b->workspace);
    if (b->lt) cublasLtDestroy(b->lt);
    b->workspace = NULL;
    b->lt = NULL;
}

/* Largest power of two (<= 256) dividing a pointer's address: cuBLASLt's heuristic assumes
 * 256-byte aligned operands unless told otherwise, and weights inside the flat parameter
 * buffer are only as aligned as their table offsets. */
static uint32_t ptr_align(const void *p) {
    uint32_t a = 256;
    while (a > 1 && ((uintptr_t)p % a)) a >>= 1;
    return a;
}

/* Make p's descriptors for key and ask the heuristic for one algorithm. key: dt, transA,
 * transB, m, n, k, lda, ldb, ldd, the four alignments, and a spare 0. */
static int plan_make(Blas *b, BlasPlan *p, const long long *key) {
    const cudaDataType_t dt = (cudaDataType_t)key[0];
    const int transA = (int)key[1], transB = (int)key[2], m = (int)key[3], n = (int)key[4], k = (int)key[5];
    const cublasOperation_t ta = transA ? CUBLAS_OP_T : CUBLAS_OP_N, tb = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t align[4] = {(uint32_t)key[9], (uint32_t)key[10], (uint32_t)key[11], (uint32_t)key[12]};
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0, rc = -1;
    cublasStatus_t st;
    memset(p, 0, sizeof *p);
    memcpy(p->key, key, sizeof p->key);
#define LT(call)                                                                                             \
    if ((st = (call)) != CUBLAS_STATUS_SUCCESS) {                                                            \
        vrl_error("fast: cuBLASLt status %d in %s (m=%d n=%d k=%d)", (int)st, #call, m, n, k);            \
        goto done;                                                                                           \
    }
    LT(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    /* stored shapes: op(A) is m x k, so A is k x m when transposed */
    LT(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, transA ? k : m, transA ? m : k, key[6]));
    LT(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, transB ? n : k, transB ? k : n, key[7]));
    LT(cublasLtMatrixLayoutCreate(&p->lc, dt, m, n, key[8]));
    LT(cublasLtMatrixLayoutCreate(&p->ld, dt, m, n, key[8]));
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &b->workspace_bytes,
                                            sizeof b->workspace_bytes));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0], sizeof align[0]));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1], sizeof align[1]));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2], sizeof align[2]));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[3], sizeof align[3]));
    LT(cublasLtMatmulAlgoGetHeuristic(b->lt, p->op, p->la, p->lb, p->lc, p->ld, pref, 1, &heur, &found));
    if (found == 0) {
        vrl_error("fast: cuBLASLt has no algorithm for m=%d n=%d k=%d", m, n, k);
        goto done;
    }
    p->algo = heur.algo;
    rc = 0;
done:
#undef LT
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (rc < 0) plan_release(p);
    return rc;
}

/* Column-major D [m,n] = alpha·op(A) [m,k] · op(B) [k,n] + beta·C, A and B bf16, fp32
 * accumulation, C and D of type dt (bf16 or fp32), both with leading dimension ldd >= m (the
 * padded logits use ldd > m). C may differ from D (the residual, a value mix's other sources).
 * alpha and beta are call arguments, not part of the plan's key.
 * Row-major callers pass their matrices transposed (see the uses below). */
static int lt_matmul_ab(Blas *b, void *D, cudaDataType_t dt, const void *C, const bf16 *A, int transA, int lda,
                        const bf16 *B, int transB, int ldb, int m, int n, int k, float alpha, float beta, int ldd) {
    const long long key[BLAS_KEY_LEN] = {(long long)dt, transA, transB, m, n, k, lda, ldb, ldd, ptr_align(A),
                                         ptr_align(B), ptr_align(C ? C : D), ptr_align(D), 0};
    BlasPlan *p = NULL, once;
    for (int i = 0; i < b->n_plans && !p; i++)
        if (!memcmp(b->plans[i].key, key, sizeof key)) p = &b->plans[i];
    if (!p) { /* first call of this shape: make its plan, and keep it while there is room */
        p = b->n_plans < BLAS_MAX_PLANS ? &b->plans[b->n_plans] : &once;
        if (plan_make(b, p, key) < 0) return -1;
        if (p != &once) b->n_plans++;
    }
    const cublasStatus_t st = cublasLtMatmul(b->lt, p->op, &alpha, A, p->la, B, p->lb, &beta, C ? C : D, p->lc, D,
                                             p->ld, &p->algo, b->workspace, b->workspace_bytes, ops_stream);
    if (p == &once) plan_release(&once);
    if (st != CUBLAS_STATUS_SUCCESS)
        return vrl_error("fast: cuBLASLt status %d in cublasLtMatmul (m=%d n=%d k=%d)", (int)st, m, n, k);
    return 0;
}

/* The same with alpha = 1. */
static int lt_matmul(Blas *b, void *D, cudaDataType_t dt, const void *C, const bf16 *A, int transA, int lda,
                     const bf16 *B, int transB, int ldb, int m, int n, int k, float beta, int ldd) {
    return lt_matmul_ab(b, D, dt, C, A, transA, lda, B, transB, ldb, m, n, k, 1.0f, beta, ldd);
}

/* Row-major out [N,OC] is column-major OC x N; weight [OC,C] row-major is C x OC
 * column-major, so out = opT(weight) · inp with inp as C x N. */
int matmul_forward(Blas *b, bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *residual, int N, int C,
                   int OC) {
    return lt_matmul(b, out, CUDA_R_16BF, residual, weight, 1, C, inp, 0, C, OC, N, C, residual ? 1.0f : 0.0f, OC);
}

int matmul_forward_ld(Blas *b, bf16 *out, int ld_out, const bf16 *inp, const bf16 *weight, int N, int C, int OC) {
    return lt_matmul(b, out, CUDA_R_16BF, NULL, weight, 1, C, inp, 0, C, OC, N, C, 0.0f, ld_out);
}

int matmul_forward_scaled(Blas *b, bf16 *out, const bf16 *inp, const bf16 *weight, float alpha, const bf16 *c,
                          float beta, int N, int C, int OC) {
    return lt_matmul_ab(b, out, CUDA_R_16BF, c, weight, 1, C, inp, 0, C, OC, N, C, alpha, c ? beta : 0.0f, OC);
}

int matmul_backward_ld(Blas *b, float *dinp32, int accumulate, bf16 *dinp16, float *dweight, float dw_beta,
                       const bf16 *dout, int ld_dout, const bf16 *inp, const bf16 *weight, int N, int C, int OC) {
    /* dinp [N,C] = dout [N,OC] · weight [OC,C]: column-major C x N = (C x OC) · (OC x N) */
    if (dinp32 && lt_matmul(b, dinp32, CUDA_R_32F, NULL, weight, 0, C, dout, 0, ld_dout, C, N, OC,
                            accumulate ? 1.0f : 0.0f, C))
        return -1;
    if (!dinp32 && dinp16 &&
        lt_matmul(b, dinp16, CUDA_R_16BF, NULL, weight, 0, C, dout, 0, ld_dout, C, N, OC, accumulate ? 1.0f : 0.0f, C))
        return -1;
    /* dweight [OC,C] = doutᵀ · inp (+ dweight): column-major C x OC = (C x N) · (N x OC) */
    if (dweight && lt_matmul(b, dweight, CUDA_R_32F, NULL, inp, 0, C, dout, 1, ld_dout, C, OC, N, dw_beta, C))
        return -1;
    return 0;
}

int matmul_backward(Blas *b, float *dinp32, int accumulate, bf16 *dinp16, float *dweight, float dw_beta,
                    const bf16 *dout, const bf16 *inp, const bf16 *weight, int N, int C, int OC) {
    return matmul_backward_ld(b, dinp32, accumulate, dinp16, dweight, dw_beta, dout, OC, inp, weight, N, C, OC);
}

int matmul_backward_scaled(Blas *b, bf16 *dinp16, int accumulate, float *dweight, float dw_beta, const bf16 *dout,
                           const bf16 *inp, const bf16 *weight, float alpha, int N, int C, int OC) {
    /* the same two products as matmul_backward_ld, each scaled by alpha on the GEMM */
    if (dinp16 && lt_matmul_ab(b, dinp16, CUDA_R_16BF, NULL, weight, 0, C, dout, 0, OC, C, N, OC, alpha,
                               accumulate ? 1.0f : 0.0f, C))
        return -1;
    if (dweight && lt_matmul_ab(b, dweight, CUDA_R_32F, NULL, inp, 0, C, dout, 1, OC, C, OC, N, alpha, dw_beta, C))
        return -1;
    return 0;
}

/* GPT-2's Conv1D, weight [C,OC] row-major = column-major OC x C (lda OC), not transposed:
 * out (OC x N) = weight · inp (C x N). */
int conv1d_forward(Blas *b, float *out32, const bf16 *inp, const bf16 *weight, int N, int C, int OC) {
    return lt_matmul(b, out32, CUDA_R_32F, NULL, weight, 0, OC, inp, 0, C, OC, N, C, 0.0f, OC);
}

int conv1d_backward(Blas *b, float *dinp32, int accumulate, bf16 *dinp16, float *dweight, const bf16 *dout,
                    const bf16 *inp, const bf16 *weight, int N, int C, int OC) {
    /* dinp [N,C] = dout · weightᵀ: column-major C x N = (OC x C)ᵀ · (OC x N) */
    if (dinp32 && lt_matmul(b, dinp32, CUDA_R_32F, NULL, weight, 1, OC, dout, 0, OC, C, N, OC,
                            accumulate ? 1.0f : 0.0f, C))
        return -1;
    if (!dinp32 && dinp16 && lt_matmul(b, dinp16, CUDA_R_16BF, NULL, weight, 1, OC, dout, 0, OC, C, N, OC, 0.0f, C))
        return -1;
    /* dweight [C,OC] += inpᵀ · dout: column-major OC x C = (OC x N) · (C x N)ᵀ */
    if (dweight && lt_matmul(b, dweight, CUDA_R_32F, NULL, dout, 0, OC, inp, 1, C, OC, C, N, 1.0f, OC)) return -1;
    return 0;
}

int matmul_raw(Blas *b, float *D, const bf16 *A, const bf16 *B_, int m, int n, int k) {
    return lt_matmul(b, D, CUDA_R_32F, NULL, A, 0, m, B_, 0, k, m, n, k, 0.0f, m);
}

/* ================================================================== helpers */

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float bf(bf16 x) { return __bfloat162float(x); }
/* x rounded to bf16 and back: a value that ref keeps as a tensor of its own */
__device__ __forceinline__ float bf16r(float x) { return __bfloat162float(__float2bfloat16(x)); }


/* ================================================================== embedding */

/* W consecutive channels of one row per thread (C a multiple of W) */
template <int W> __global__ void embedding_forward_kernel(bf16 *out, const int32_t *tokens, const bf16 *wte, int N, int C) {
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W;
    if (i >= (size_t)N * C) return;
    size_t n = i / C, c = i % C;
    store_vec<W>(out + i, load_vec<W>(wte + (size_t)tokens[n] * C + c));
}

int embedding_forward(bf16 *out, const int32_t *tokens, const bf16 *wte, int N, int C) {
    LAUNCH_VEC(embedding_forward_kernel, (size_t)N * C, vec_fits(C, {out, wte}), out, tokens, wte, N, C);
    LAUNCH_CHECK();
    return 0;
}

/* grid: one block per possible distinct token (the batch's count is read on the device, so
 * the launch is the same for every batch and can be replayed by a graph); threads stride
 * over channels */
__global__ void embedding_backward_kernel(float *dwte, const float *dout, const int32_t *uniq,
                                          const int32_t *offsets, const int32_t *pos, const int32_t *n_uniq, int C) {
    const int u = blockIdx.x;
    if (u >= *n_uniq) return;
    const int tok = uniq[u], p0 = offsets[u], p1 = offsets[u + 1];
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0;
        for (int p = p0; p < p1; p++) s += dout[(size_t)pos[p] * C + c]; /* positions in order */
        dwte[(size_t)tok * C + c] += s;
    }
}

int embedding_backward(float *dwte, const float *dout, const int32_t *uniq, const int32_t *offsets,
                       const int32_t *pos, const int32_t *n_uniq, int max_U, int C) {
    if (max_U == 0) return 0;
    LAUNCH(embedding_backward_kernel, max_U, 256, 0, ops_stream)(dwte, dout, uniq, offsets, pos, n_uniq, C);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== rmsnorm */

/* one warp per row; 8 rows per 256-thread block */
template <int W>
__global__ void rmsnorm_forward_kernel(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, int N, int C,
                                       float eps) {
    const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= N) return;
    const bf16 *x = inp + (size_t)row * C;
    bf16 *y = out + (size_t)row * C;
    float ss = 0;
    for (int i = lane; i < C; i += 32) {
        float v = bf(x[i]);
        ss += v * v;
    }
    ss = warp_sum(ss);
    const float r = rsqrtf(ss / C + eps);
    /* the elementwise pass: W consecutive columns per lane (the sum above keeps its scalar
     * order, so its bits do not depend on W) */
    for (int i = lane * W; i < C; i += 32 * W) {
        const Vec<W, bf16> xv = load_vec<W>(x + i), wv = load_vec<W>(weight + i);
        Vec<W, bf16> yv;
#pragma unroll
        for (int k = 0; k < W; k++) {
            /* HF order: weight * (x * rstd).to(bf16) */
            bf16 xn = __float2bfloat16(bf(xv.e[k]) * r);
            yv.e[k] = __float2bfloat16(bf(wv.e[k]) * bf(xn));
        }
        store_vec<W>(y + i, yv);
    }
    if (lane == 0) rstd[row] = r;
}

int rmsnorm_forward(bf16 *out, float *rstd, const bf16 *inp, const bf16 *weight, int N, int C, float eps) {
    if (vec_path(vec_fits(C, {out, inp, weight})))
        LAUNCH(rmsnorm_forward_kernel<VEC_W>, cdiv(N, 8), 256, 0, ops_stream)(out, rstd, inp, weight, N, C, eps);
    else LAUNCH(rmsnorm_forward_kernel<1>, cdiv(N, 8), 256, 0, ops_stream)(out, rstd, inp, weight, N, C, eps);
    LAUNCH_CHECK();
    return 0;
}

/* dx_j = r g_j dy_j − (r³/C) x_j Σ_i dy_i g_i x_i  (ref/ops.c); one warp per row, warp w of
 * the 8 of a block taking rows r0 + w, r0 + w + 8, ... below r1. With gain (a block's
 * [8][RMSNORM_GAIN_MAX_C] in shared memory), warp w also sums dy_j·(x_j·r) over its rows into
 * gain[w]: the sums of rmsnorm_weight_partial_kernel, term for term. */
template <int W, int GAIN>
__device__ __forceinline__ void rmsnorm_backward_rows(float (*gain)[RMSNORM_GAIN_MAX_C], float *dinp32, bf16 *dinp16,
                                                      const bf16 *dout, const bf16 *inp, const bf16 *weight,
                                                      const float *rstd, int r0, int r1, int C) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (GAIN) { /* each lane owns the columns its elementwise pass touches */
        for (int i = lane * W; i < C; i += 32 * W) {
#pragma unroll
            for (int k = 0; k < W; k++) gain[warp][i + k] = 0;
        }
    }
    for (int row = r0 + warp; row < r1; row += 8) {
        const size_t o = (size_t)row * C;
        const float r = rstd[row];
        float dot = 0;
        for (int i = lane; i < C; i += 32) dot += bf(dout[o + i]) * bf(weight[i]) * bf(inp[o + i]);
        dot = warp_sum(dot);
        const float c = r * r * r * dot / C;
        /* the elementwise pass, W consecutive columns per lane */
        for (int i = lane * W; i < C; i += 32 * W) {
            const Vec<W, bf16> dyv = load_vec<W>(dout + o + i), wv = load_vec<W>(weight + i),
                               xv = load_vec<W>(inp + o + i);
            Vec<W, float> d = load_vec<W>(dinp32 + o + i);
            Vec<W, bf16> d16;
#pragma unroll
            for (int k = 0; k < W; k++) {
                const float dy = bf(dyv.e[k]);
                d.e[k] = d.e[k] + (r * bf(wv.e[k]) * dy - c * bf(xv.e[k]));
                d16.e[k] = __float2bfloat16(d.e[k]);
                if (GAIN) gain[warp][i + k] += dy * (bf(xv.e[k]) * r);
            }
            store_vec<W>(dinp32 + o + i, d);
            if (dinp16) store_vec<W>(dinp16 + o + i, d16);
        }
    }
}

/* 8 rows a block, no gain */
template <int W>
__global__ void rmsnorm_backward_kernel(float *dinp32, bf16 *dinp16, const bf16 *dout, const bf16 *inp,
                                        const bf16 *weight, const float *rstd, int N, int C) {
    const int r0 = blockIdx.x * 8;
    rmsnorm_backward_rows<W, 0>(NULL, dinp32, dinp16, dout, inp, weight, rstd, r0, min(r0 + 8, N), C);
}

/* Block b: gain chunk b (RMSNORM_WEIGHT_ROWS rows), then its partial, the warps' sums added in
 * warp order: the bits of rmsnorm_weight_partial_kernel without its second read of dout and
 * inp.  partial [gridDim.x, C], C <= RMSNORM_GAIN_MAX_C */
template <int W>
__global__ void rmsnorm_backward_gain_kernel(float *dinp32, bf16 *dinp16, float *partial, const bf16 *dout,
                                             const bf16 *inp, const bf16 *weight, const float *rstd, int N, int C) {
    __shared__ float gain[8][RMSNORM_GAIN_MAX_C]; /* [warp][column] */
    const int r0 = blockIdx.x * RMSNORM_WEIGHT_ROWS;
    rmsnorm_backward_rows<W, 1>(gain, dinp32, dinp16, dout, inp, weight, rstd, r0, min(r0 + RMSNORM_WEIGHT_ROWS, N), C);
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float t = 0;
        for (int y = 0; y < 8; y++) t += gain[y][c];
        partial[(size_t)blockIdx.x * C + c] = t;
    }
}

/* pass 2 of either form: dweight[c] += Σ_chunk partial[chunk, c], chunks in order */
__global__ void rmsnorm_weight_reduce_kernel(float *dweight, const float *partial, int chunks, int C);

int rmsnorm_backward(float *dinp32, bf16 *dinp16, float *dweight, float *partial, const bf16 *dout, const bf16 *inp,
                     const bf16 *weight, const float *rstd, int N, int C) {
    const int vec = vec_path(vec_fits(C, {dinp32, dinp16, dout, inp, weight}));
    if (dweight && C <= RMSNORM_GAIN_MAX_C) { /* the gain from the same reads */
        const int chunks = (int)cdiv(N, RMSNORM_WEIGHT_ROWS);
        if (vec)
            LAUNCH(rmsnorm_backward_gain_kernel<VEC_W>, chunks, 256, 0, ops_stream)(dinp32, dinp16, partial, dout, inp,
                                                                                  weight, rstd, N, C);
        else
            LAUNCH(rmsnorm_backward_gain_kernel<1>, chunks, 256, 0, ops_stream)(dinp32, dinp16, partial, dout, inp,
                                                                              weight, rstd, N, C);
        LAUNCH_CHECK();
        LAUNCH(rmsnorm_weight_reduce_kernel, cdiv(C, 256), 256, 0, ops_stream)(dweight, partial, chunks, C);
        LAUNCH_CHECK();
        return 0;
    }
    if (vec)
        LAUNCH(rmsnorm_backward_kernel<VEC_W>, cdiv(N, 8), 256, 0, ops_stream)(dinp32, dinp16, dout, inp, weight, rstd,
                                                                             N, C);
    else LAUNCH(rmsnorm_backward_kernel<1>, cdiv(N, 8), 256, 0, ops_stream)(dinp32, dinp16, dout, inp, weight, rstd, N, C);
    LAUNCH_CHECK();
    return dweight ? rmsnorm_backward_weight(dweight, partial, dout, inp, rstd, N, C) : 0; /* rows too wide */
}

/* pass 1: block (32 columns x 8 row lanes) sums a chunk of RMSNORM_WEIGHT_ROWS rows;
 * grid (column tiles, row chunks); partial [chunk, C] */
__global__ void rmsnorm_weight_partial_kernel(float *partial, const bf16 *dout, const bf16 *inp,
                                              const float *rstd, int N, int C) {
    __shared__ float sh[8][33];
    const int c = blockIdx.x * 32 + threadIdx.x, chunk = blockIdx.y;
    const int r0 = chunk * RMSNORM_WEIGHT_ROWS, r1 = min(r0 + RMSNORM_WEIGHT_ROWS, N);
    float s = 0;
    if (c < C)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) s += bf(dout[(size_t)r * C + c]) * (bf(inp[(size_t)r * C + c]) * rstd[r]);
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float t = 0;
        for (int y = 0; y < 8; y++) t += sh[y][threadIdx.x];
        partial[(size_t)chunk * C + c] = t;
    }
}

__global__ void rmsnorm_weight_reduce_kernel(float *dweight, const float *partial, int chunks, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float t = 0;
    for (int k = 0; k < chunks; k++) t += partial[(size_t)k * C + c];
    dweight[c] += t;
}

int rmsnorm_backward_weight(float *dweight, float *partial, const bf16 *dout, const bf16 *inp, const float *rstd,
                            int N, int C) {
    const int chunks = (int)cdiv(N, RMSNORM_WEIGHT_ROWS);
    LAUNCH(rmsnorm_weight_partial_kernel, dim3(cdiv(C, 32), chunks), dim3(32, 8), 0, ops_stream)(partial, dout, inp, rstd, N, C);
    LAUNCH_CHECK();
    LAUNCH(rmsnorm_weight_reduce_kernel, cdiv(C, 256), 256, 0, ops_stream)(dweight, partial, chunks, C);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== gradient ranges */

/* block (x, r) zeroes a grid-strided share of range r; ranges [n][2] (offset, floats) */
__global__ void zero_ranges_kernel(float *base, const size_t *ranges, size_t step) {
    const size_t off = ranges[2 * blockIdx.y], len = ranges[2 * blockIdx.y + 1];
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < len; i += step) base[off + i] = 0.0f;
}

int zero_ranges(float *base, const size_t *ranges, int n, size_t max_len) {
    if (n == 0 || max_len == 0) return 0;
    /* enough blocks for the longest range (the embedding's gradient at most), no more: the
     * others' surplus blocks find nothing to do */
    const size_t per = (size_t)256 * 8, bx = cdiv(max_len, per) < 512 ? cdiv(max_len, per) : 512;
    LAUNCH(zero_ranges_kernel, dim3((unsigned)bx, (unsigned)n), 256, 0, ops_stream)(base, ranges, bx * 256);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== rope */

/* one thread per (row, head, W consecutive i < hd/2); rows ld elements apart; dir = +1
 * forward, −1 backward (Rᵀ) */
template <int W>
__global__ void rope_kernel(bf16 *x, int ld, const float *cos_t, const float *sin_t, int N, int T, int NHX, int hd,
                            float dir) {
    const int h2 = hd / 2;
    size_t idx = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W;
    if (idx >= (size_t)N * NHX * h2) return;
    const int i = (int)(idx % h2);
    const size_t rh = idx / h2; /* row * NHX + head */
    const int t = (int)((rh / NHX) % T);
    bf16 *p = x + (rh / NHX) * ld + (rh % NHX) * hd;
    const Vec<W, float> cv = load_vec<W>(cos_t + t * h2 + i), sv = load_vec<W>(sin_t + t * h2 + i);
    Vec<W, bf16> a = load_vec<W>(p + i), b = load_vec<W>(p + i + h2);
#pragma unroll
    for (int k = 0; k < W; k++) {
        float y1, y2; /* backward: −s, the transpose */
        rope_rotate(bf(a.e[k]), bf(b.e[k]), cv.e[k], dir * sv.e[k], y1, y2);
        a.e[k] = __float2bfloat16(y1);
        b.e[k] = __float2bfloat16(y2);
    }
    store_vec<W>(p + i, a);
    store_vec<W>(p + i + h2, b);
}

/* the vector path needs whole packs in each half of a head and aligned rows */
static int rope(bf16 *x, int ld, const float *cos_t, const float *sin_t, int B, int T, int NHX, int hd, float dir) {
    const size_t n = (size_t)B * T * NHX * (hd / 2);
    LAUNCH_VEC(rope_kernel, n, vec_fits(hd / 2, {x, cos_t, sin_t}) && ld % VEC_W == 0, x, ld, cos_t, sin_t, B * T, T,
               NHX, hd, dir);
    LAUNCH_CHECK();
    return 0;
}

int rope_forward(bf16 *x, int ld, const float *cos_t, const float *sin_t, int B, int T, int NHX, int hd) {
    return rope(x, ld, cos_t, sin_t, B, T, NHX, hd, 1.0f);
}

int rope_backward(bf16 *x, int ld, const float *cos_t, const float *sin_t, int B, int T, int NHX, int hd) {
    return rope(x, ld, cos_t, sin_t, B, T, NHX, hd, -1.0f);
}

/* ================================================================== swiglu */

/* Grid: x over column blocks of a row, y over rows (at most 65535 blocks; a block strides
 * over the rows past them): no per-element division, and gate and up are each read
 * coalesced. Row n's gate is gu[n·2F + f], its up gu[n·2F + F + f]. */
#define SWIGLU_THREADS 256
/* W consecutive columns per thread (F a multiple of W, so every row's gate and up halves
 * start on a pack) */
static dim3 swiglu_grid(int N, int F, int W) { return dim3(cdiv(F / W, SWIGLU_THREADS), N < 65535 ? N : 65535); }

template <int W> __global__ void swiglu_forward_kernel(bf16 *out, const bf16 *gu, int N, int F) {
    const int f = (blockIdx.x * SWIGLU_THREADS + threadIdx.x) * W;
    if (f >= F) return;
    for (size_t n = blockIdx.y; n < (size_t)N; n += gridDim.y) {
        const bf16 *row = gu + n * 2 * F;
        const Vec<W, bf16> gv = load_vec<W>(row + f), uv = load_vec<W>(row + F + f);
        Vec<W, bf16> y;
#pragma unroll
        for (int k = 0; k < W; k++) y.e[k] = swiglu_value(bf(gv.e[k]), bf(uv.e[k]));
        store_vec<W>(out + n * F + f, y);
    }
}

int swiglu_forward(bf16 *out, const bf16 *gu, int N, int F) {
    if (vec_path(vec_fits(F, {out, gu})))
        LAUNCH(swiglu_forward_kernel<VEC_W>, swiglu_grid(N, F, VEC_W), SWIGLU_THREADS, 0, ops_stream)(out, gu, N, F);
    else LAUNCH(swiglu_forward_kernel<1>, swiglu_grid(N, F, 1), SWIGLU_THREADS, 0, ops_stream)(out, gu, N, F);
    LAUNCH_CHECK();
    return 0;
}

template <int W> __global__ void swiglu_backward_kernel(bf16 *dgu, const bf16 *dout, const bf16 *gu, int N, int F) {
    const int f = (blockIdx.x * SWIGLU_THREADS + threadIdx.x) * W;
    if (f >= F) return;
    for (size_t n = blockIdx.y; n < (size_t)N; n += gridDim.y) {
        const bf16 *row = gu + n * 2 * F;
        bf16 *drow = dgu + n * 2 * F;
        const Vec<W, bf16> gv = load_vec<W>(row + f), uv = load_vec<W>(row + F + f), dv = load_vec<W>(dout + n * F + f);
        Vec<W, bf16> dg, du;
#pragma unroll
        for (int k = 0; k < W; k++) swiglu_grad(bf(dv.e[k]), bf(gv.e[k]), bf(uv.e[k]), dg.e[k], du.e[k]);
        store_vec<W>(drow + f, dg);
        store_vec<W>(drow + F + f, du);
    }
}

int swiglu_backward(bf16 *dgu, const bf16 *dout, const bf16 *gu, int N, int F) {
    if (vec_path(vec_fits(F, {dgu, dout, gu})))
        LAUNCH(swiglu_backward_kernel<VEC_W>, swiglu_grid(N, F, VEC_W), SWIGLU_THREADS, 0, ops_stream)(dgu, dout, gu, N, F);
    else LAUNCH(swiglu_backward_kernel<1>, swiglu_grid(N, F, 1), SWIGLU_THREADS, 0, ops_stream)(dgu, dout, gu, N, F);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== value mixing */

/* Source k's weight: its constant, or the current value of its trainable parameter. */
__device__ __forceinline__ float mix_weight(const MixArgs &a, int k) {
    return a.param[k] ? bf(*a.param[k]) : a.coef[k];
}

/* The vector path fits a mix: n whole vectors, out and every source and destination aligned. */
static int mix_fits(const MixArgs *a, size_t n, const void *out, const void *dout) {
    if (!vec_fits(n, {out, dout})) return 0;
    for (int k = 0; k < a->n; k++)
        if (!vec_fits(n, {a->src[k], a->dsrc[k]})) return 0;
    return 1;
}

template <int W> __global__ void mix_forward_kernel(bf16 *out, MixArgs a, size_t n) {
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W;
    if (i >= n) return;
    float s[W] = {};
    for (int k = 0; k < a.n; k++) { /* sources in order, as the scalar sum */
        const float wk = mix_weight(a, k);
        const Vec<W, bf16> x = load_vec<W>(a.src[k] + i);
#pragma unroll
        for (int e = 0; e < W; e++) s[e] += wk * bf(x.e[e]);
    }
    Vec<W, bf16> y;
#pragma unroll
    for (int e = 0; e < W; e++) y.e[e] = __float2bfloat16(s[e]);
    store_vec<W>(out + i, y);
}

int mix_forward(bf16 *out, const MixArgs *a, size_t n) {
    LAUNCH_VEC(mix_forward_kernel, n, mix_fits(a, n, out, NULL), out, *a, n);
    LAUNCH_CHECK();
    return 0;
}

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }

template <int W, typename G> __device__ __forceinline__ void mix_backward_body(MixArgs a, const G *dout, size_t n) {
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W;
    if (i >= n) return;
    const Vec<W, G> d = load_vec<W>(dout + i);
    for (int k = 0; k < a.n; k++) {
        const float wk = mix_weight(a, k);
        Vec<W, float> ds = load_vec<W>(a.dsrc[k] + i);
#pragma unroll
        for (int e = 0; e < W; e++) ds.e[e] += wk * to_f32(d.e[e]);
        store_vec<W>(a.dsrc[k] + i, ds);
    }
}
template <int W> __global__ void mix_backward_f32_kernel(MixArgs a, const float *dout, size_t n) {
    mix_backward_body<W, float>(a, dout, n);
}
template <int W> __global__ void mix_backward_bf16_kernel(MixArgs a, const bf16 *dout, size_t n) {
    mix_backward_body<W, bf16>(a, dout, n);
}

int mix_backward(const MixArgs *a, const float *dout, size_t n) {
    LAUNCH_VEC(mix_backward_f32_kernel, n, mix_fits(a, n, NULL, dout), *a, dout, n);
    LAUNCH_CHECK();
    return 0;
}

int mix_backward_bf16(const MixArgs *a, const bf16 *dout, size_t n) {
    LAUNCH_VEC(mix_backward_bf16_kernel, n, mix_fits(a, n, NULL, dout), *a, dout, n);
    LAUNCH_CHECK();
    return 0;
}

/* One thread per W consecutive elements of out [N, NH*hd] (hd a multiple of W: one head):
 * its kv head's correction, summed in fp32. */
template <int W>
__global__ void correction_forward_kernel(bf16 *out, const bf16 *atty, MixArgs a, int N, int NH, int NKV, int hd) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W, qC = (size_t)NH * hd;
    if (i >= (size_t)N * qC) return;
    const size_t n = i / qC, h = (i % qC) / hd, e = i % hd;
    const size_t kv = n * NKV * hd + (h / (NH / NKV)) * hd + e;
    float s[W] = {};
    for (int k = 0; k < a.n; k++) {
        const float wk = mix_weight(a, k);
        const Vec<W, bf16> x = load_vec<W>(a.src[k] + kv);
#pragma unroll
        for (int j = 0; j < W; j++) s[j] += wk * bf(x.e[j]);
    }
    const Vec<W, bf16> y = load_vec<W>(atty + i);
    Vec<W, bf16> o;
#pragma unroll
    for (int j = 0; j < W; j++) o.e[j] = __float2bfloat16(bf(y.e[j]) + bf16r(s[j]));
    store_vec<W>(out + i, o);
}

int correction_forward(bf16 *out, const bf16 *atty, const MixArgs *a, int N, int NH, int NKV, int hd) {
    const size_t n = (size_t)N * NH * hd;
    LAUNCH_VEC(correction_forward_kernel, n, mix_fits(a, hd, out, atty), out, atty, *a, N, NH, NKV, hd);
    LAUNCH_CHECK();
    return 0;
}

/* One thread per W consecutive elements of the kv-space gradient [N, NKV*hd]: its group's
 * heads in order. */
template <int W> __global__ void correction_backward_kernel(MixArgs a, const bf16 *dout, int N, int NH, int NKV, int hd) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W, kvC = (size_t)NKV * hd;
    if (i >= (size_t)N * kvC) return;
    const int group = NH / NKV;
    const size_t n = i / kvC, g = (i % kvC) / hd, e = i % hd;
    float s[W] = {};
    for (int h = 0; h < group; h++) {
        const Vec<W, bf16> d = load_vec<W>(dout + n * NH * hd + (g * group + h) * hd + e);
#pragma unroll
        for (int j = 0; j < W; j++) s[j] += bf(d.e[j]);
    }
    for (int k = 0; k < a.n; k++) {
        const float wk = mix_weight(a, k);
        Vec<W, float> ds = load_vec<W>(a.dsrc[k] + i);
#pragma unroll
        for (int j = 0; j < W; j++) ds.e[j] += wk * s[j];
        store_vec<W>(a.dsrc[k] + i, ds);
    }
}

int correction_backward(const MixArgs *a, const bf16 *dout, int N, int NH, int NKV, int hd) {
    const size_t n = (size_t)N * NKV * hd;
    LAUNCH_VEC(correction_backward_kernel, n, mix_fits(a, hd, dout, NULL), *a, dout, N, NH, NKV, hd);
    LAUNCH_CHECK();
    return 0;
}

#define LAMBDA_THREADS 256

/* grid (LAMBDA_BLOCKS, n): block b of weight j sums elements b*256 + tid, stepping by the
 * grid's width, then reduces its threads in a fixed tree. */
__global__ void __launch_bounds__(LAMBDA_THREADS) lambda_partial_kernel(float *partial, LambdaGradArgs a,
                                                                        const float *dout, size_t n_el) {
    __shared__ float sh[LAMBDA_THREADS];
    const int j = blockIdx.y, tid = threadIdx.x;
    const bf16 *src = a.src[j];
    float s = 0;
    for (size_t i = (size_t)blockIdx.x * LAMBDA_THREADS + tid; i < n_el; i += (size_t)LAMBDA_BLOCKS * LAMBDA_THREADS)
        s += dout[i] * bf(src[i]);
    sh[tid] = s;
    __syncthreads();
    for (int w = LAMBDA_THREADS / 2; w > 0; w >>= 1) {
        if (tid < w) sh[tid] += sh[tid + w];
        __syncthreads();
    }
    if (tid == 0) partial[(size_t)j * LAMBDA_BLOCKS + blockIdx.x] = sh[0];
}

/* One thread per weight: its partial sums in block order. */
__global__ void lambda_reduce_kernel(LambdaGradArgs a, const float *partial) {
    const int j = threadIdx.x;
    if (j >= a.n) return;
    float s = 0;
    for (int b = 0; b < LAMBDA_BLOCKS; b++) s += partial[(size_t)j * LAMBDA_BLOCKS + b];
    *a.grad[j] += s;
}

int lambda_backward(const LambdaGradArgs *a, const float *dout, size_t n_el, float *partial) {
    if (a->n == 0) return 0;
    LAUNCH(lambda_partial_kernel, dim3(LAMBDA_BLOCKS, a->n), LAMBDA_THREADS, 0, ops_stream)(partial, *a, dout, n_el);
    LAUNCH_CHECK();
    LAUNCH(lambda_reduce_kernel, 1, FAST_MAX_LAYERS, 0, ops_stream)(*a, partial);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== cross-entropy */

#define CE_ROW_THREADS 512 /* the single-read kernel: a row of up to 2·512·56 columns in registers */

/* A word of two bf16 columns: column 2j in the low half (little-endian, as the row lies in memory). */
#if VRL_CUDA_CPU_FP32 /* fp32 storage (docs/design/precision.md, "Checks in bits"): a word is two fp32 columns */
typedef uint64_t ce_word;
__device__ __forceinline__ float word_lo(uint64_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
__device__ __forceinline__ float word_hi(uint64_t u) { return word_lo(u >> 32); }
__device__ __forceinline__ uint64_t word_of(float lo, float hi) {
    uint32_t a, b;
    memcpy(&a, &lo, sizeof a), memcpy(&b, &hi, sizeof b);
    return (uint64_t)a | (uint64_t)b << 32;
}
#else
typedef uint32_t ce_word;
__device__ __forceinline__ float word_lo(uint32_t u) { return bf(__ushort_as_bfloat16((unsigned short)(u & 0xffffu))); }
__device__ __forceinline__ float word_hi(uint32_t u) { return bf(__ushort_as_bfloat16((unsigned short)(u >> 16))); }
__device__ __forceinline__ uint32_t word_of(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}
#endif

/* The block's max (op 0) or sum (op 1) of one value per thread: warp butterflies (every lane
 * ends with the same value), then the warps' results in warp order. Every thread gets it. */
__device__ __forceinline__ float ce_block_reduce(float v, float *sh, int op) {
    for (int o = 16; o > 0; o >>= 1) {
        const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
        v = op ? v + v2 : fmaxf(v, v2);
    }
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = sh[0];
    for (int k = 1; k < CE_ROW_THREADS / 32; k++) v = op ? v + sh[k] : fmaxf(v, sh[k]);
    return v;
}

/* WORDS: words of the row each thread holds (a template constant, so the array stays in
 * registers; the launcher picks the smallest that covers the row). PW: the words of one
 * access, 1 or a 16-byte pack (vec.cuh); a thread's k-th word is word CE_WORD(k) of the row:
 * PW consecutive words, the packs CE_ROW_THREADS·PW words apart, so a warp's accesses stay
 * coalesced. (The words a thread sums, and so the order of the fp32 sum, depend on PW.) */
#define CE_WORD(k) ((tid + ((k) / PW) * CE_ROW_THREADS) * PW + (k) % PW)
template <int WORDS, int PW>
__device__ __forceinline__ void crossentropy_row(float *losses, bf16 *logits, const int32_t *targets, int V, int ld,
                                                 float w, int backward) {
    __shared__ float sh_max[CE_ROW_THREADS / 32], sh_sum[CE_ROW_THREADS / 32];
    const int row = blockIdx.x, tgt = targets[row], tid = threadIdx.x;
    ce_word *xw = (ce_word *)(logits + (size_t)row * ld); /* the row as ld/2 words */
    const int used = (V + 1) / 2; /* words holding a real column (the last may hold pad column V too) */
    if (tgt < 0) { /* a sequence's last position: no next token */
        if (tid == 0) losses[row] = 0.0f;
        if (backward)
            for (int j = tid; j < ld / 2; j += CE_ROW_THREADS) xw[j] = 0u;
        return;
    }
    /* the one read: this thread's words, and their max over real columns */
    ce_word u[WORDS];
    float mx = -INFINITY;
    if constexpr (PW > 1) { /* whole packs inside the row (ld/2 is a multiple of PW) */
#pragma unroll
        for (int k = 0; k < WORDS; k += PW) {
            Pack<ce_word> q = {};
            if (CE_WORD(k) < ld / 2) q = load_pack(xw + CE_WORD(k));
#pragma unroll
            for (int e = 0; e < PW; e++) u[k + e] = q.e[e];
        }
    }
#pragma unroll
    for (int k = 0; k < WORDS; k++) {
        const int j = CE_WORD(k);
        if (PW == 1) u[k] = j < used ? xw[j] : 0u;
        else if (j >= used) u[k] = 0u; /* pad words: as the scalar path leaves them */
        if (j < used) mx = fmaxf(mx, 2 * j + 1 < V ? fmaxf(word_lo(u[k]), word_hi(u[k])) : word_lo(u[k]));
    }
    mx = ce_block_reduce(mx, sh_max, 0);
    /* Σ exp(x − max) from the registers; the target's logit from the thread that holds it */
    float s = 0.0f, xt = 0.0f;
    int holds_target = 0;
#pragma unroll
    for (int k = 0; k < WORDS; k++) {
        const int j = CE_WORD(k);
        if (j < used) {
            s += expf(word_lo(u[k]) - mx);
            if (2 * j + 1 < V) s += expf(word_hi(u[k]) - mx);
        }
        if (j == tgt / 2) {
            xt = tgt % 2 ? word_hi(u[k]) : word_lo(u[k]);
            holds_target = 1;
        }
    }
    s = ce_block_reduce(s, sh_sum, 1);
    const float lse = mx + logf(s);
    if (holds_target) losses[row] = lse - xt;
    if (!backward) return;
    /* the one write: the gradient of the weighted loss over the logits, 0 in the pad columns;
     * each access stored as soon as its words are computed (holding all WORDS gradients until
     * a second loop pushed the widest row over the 128 registers of 512 threads and spilled) */
#pragma unroll
    for (int k = 0; k < WORDS; k += PW) {
        ce_word g[PW];
#pragma unroll
        for (int e = 0; e < PW; e++) {
            const int c = 2 * CE_WORD(k + e);
            float g0 = 0.0f, g1 = 0.0f;
            if (c < V) g0 = w * (expf(word_lo(u[k + e]) - lse) - (c == tgt ? 1.0f : 0.0f));
            if (c + 1 < V) g1 = w * (expf(word_hi(u[k + e]) - lse) - (c + 1 == tgt ? 1.0f : 0.0f));
            g[e] = word_of(g0, g1); /* the gradient, over the logit it came from */
        }
        if (CE_WORD(k) >= ld / 2) continue;
        if constexpr (PW > 1) {
            Pack<ce_word> q;
#pragma unroll
            for (int e = 0; e < PW; e++) q.e[e] = g[e];
            store_pack(xw + CE_WORD(k), q);
        } else {
            xw[CE_WORD(k)] = g[0];
        }
    }
}
#undef CE_WORD

template <int WORDS>
__global__ void __launch_bounds__(CE_ROW_THREADS) crossentropy_kernel(float *losses, bf16 *logits,
                                                                      const int32_t *targets, int V, int ld, float w,
                                                                      int backward) {
    crossentropy_row<WORDS, 1>(losses, logits, targets, V, ld, w, backward);
}
/* the same with 16-byte packs of words */
template <int WORDS>
__global__ void __launch_bounds__(CE_ROW_THREADS) crossentropy_vec_kernel(float *losses, bf16 *logits,
                                                                          const int32_t *targets, int V, int ld,
                                                                          float w, int backward) {
    crossentropy_row<WORDS, Pack<ce_word>::N>(losses, logits, targets, V, ld, w, backward);
}

int crossentropy_forward_backward(float *losses, bf16 *logits, const int32_t *targets, int R, int V, int ld, float w,
                                  int backward) {
    if (V < 1 || ld < V || ld % 2 || ld > CE_MAX_COLUMNS)
        return vrl_error("fast: cross-entropy needs 1 <= V <= ld <= %d with ld even (got V=%d ld=%d)", CE_MAX_COLUMNS,
                         V, ld);
    const int words = ld / 2;
    constexpr int PW = Pack<ce_word>::N; /* words per 16-byte pack */
    /* rows of several words per thread: 16-byte packs when every row starts on one */
    const bool packs = words > CE_ROW_THREADS && vec_path(words % PW == 0 && vec_aligned(logits));
#define CE_ARGS losses, logits, targets, V, ld, w, backward
#define CE_LAUNCH(W)                                                                                        \
    do {                                                                                                    \
        if (packs) LAUNCH(crossentropy_vec_kernel<W>, R, CE_ROW_THREADS, 0, ops_stream)(CE_ARGS);           \
        else LAUNCH(crossentropy_kernel<W>, R, CE_ROW_THREADS, 0, ops_stream)(CE_ARGS);                     \
    } while (0)
    if (words <= CE_ROW_THREADS) LAUNCH(crossentropy_kernel<1>, R, CE_ROW_THREADS, 0, ops_stream)(CE_ARGS);
    else if (words <= 4 * CE_ROW_THREADS) CE_LAUNCH(4);
    else if (words <= 16 * CE_ROW_THREADS) CE_LAUNCH(16);
    else CE_LAUNCH(56);
#undef CE_LAUNCH
#undef CE_ARGS
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== scoring (vrl eval) */

#define CE_THREADS 256

/* combine two (max, sum of exp(x − max)) pairs */
__device__ __forceinline__ void lse_combine(float &m, float &s, float m2, float s2) {
    const float M = fmaxf(m, m2);
    if (M == -INFINITY) return; /* both empty */
    s = s * expf(m - M) + s2 * expf(m2 - M);
    m = M;
}


/* keep the larger of two (value, index) pairs, the lower index on equal values: the result is
 * the row's first maximum whatever order the pairs meet in */
__device__ __forceinline__ void argmax_combine(float &v, int &i, float v2, int i2) {
    if (v2 > v || (v2 == v && i2 < i)) v = v2, i = i2;
}

__global__ void __launch_bounds__(CE_THREADS) token_logprobs_kernel(float *logprob, uint8_t *greedy, const bf16 *logits,
                                                                    const int32_t *targets, int V, int ld) {
    __shared__ float shm[CE_THREADS / 32], shs[CE_THREADS / 32], shv[CE_THREADS / 32];
    __shared__ int shi[CE_THREADS / 32];
    const int row = blockIdx.x, tgt = targets[row], tid = threadIdx.x;
    if (tgt < 0) return; /* not scored: left as it is (the whole block leaves) */
    const bf16 *x = logits + (size_t)row * ld;
    /* one pass over the V real columns (the pad columns [V, ld) are never read): online
     * max/sum, and each thread's first maximum (its indices grow) */
    float m = -INFINITY, s = 0.0f, bv = -INFINITY;
    int bi = V; /* V: no maximum yet (a row of NaN has none, so nothing is greedy) */
    for (int i = tid; i < V; i += CE_THREADS) {
        const float xi = bf(x[i]);
        lse_combine(m, s, xi, 1.0f);
        if (xi > bv) bv = xi, bi = i;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        const float v2 = __shfl_xor_sync(0xffffffffu, bv, o);
        const int i2 = __shfl_xor_sync(0xffffffffu, bi, o);
        lse_combine(m, s, m2, s2);
        argmax_combine(bv, bi, v2, i2);
    }
    if (tid % 32 == 0) {
        shm[tid / 32] = m, shs[tid / 32] = s, shv[tid / 32] = bv, shi[tid / 32] = bi;
    }
    __syncthreads();
    if (tid != 0) return;
    m = shm[0], s = shs[0], bv = shv[0], bi = shi[0];
    for (int k = 1; k < CE_THREADS / 32; k++) {
        lse_combine(m, s, shm[k], shs[k]);
        argmax_combine(bv, bi, shv[k], shi[k]);
    }
    logprob[row] = bf(x[tgt]) - (m + logf(s)); /* −(the cross-entropy's loss up to the order of its fp32 sums) */
    greedy[row] = bi == tgt;
}

int token_logprobs_forward(float *logprob, uint8_t *greedy, const bf16 *logits, const int32_t *targets, int R, int V,
                           int ld) {
    LAUNCH(token_logprobs_kernel, R, CE_THREADS, 0, ops_stream)(logprob, greedy, logits, targets, V, ld);
    LAUNCH_CHECK();
    return 0;
}

#define LOSS_THREADS 256

__global__ void __launch_bounds__(LOSS_THREADS) loss_sum_kernel(double *out, const float *losses, int n) {
    __shared__ double sh[LOSS_THREADS];
    const int tid = threadIdx.x;
    double s = 0;
    for (int i = tid; i < n; i += LOSS_THREADS) s += (double)losses[i];
    sh[tid] = s;
    __syncthreads();
    for (int w = LOSS_THREADS / 2; w > 0; w >>= 1) {
        if (tid < w) sh[tid] += sh[tid + w];
        __syncthreads();
    }
    if (tid == 0) *out = sh[0];
}

int loss_sum(double *out, const float *losses, int n) {
    LAUNCH(loss_sum_kernel, 1, LOSS_THREADS, 0, ops_stream)(out, losses, n);
    LAUNCH_CHECK();
    return 0;
}

/* one thread: the mean into the next slot (the host's former division, in double) */
__global__ void loss_record_kernel(double *slots, int32_t *count, int capacity, const double *sum, double denom) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const int k = *count;
    if (k < capacity) slots[k] = *sum / denom;
    *count = k + 1;
}

int loss_record(double *slots, int32_t *count, int capacity, const double *sum, double denom) {
    LAUNCH(loss_record_kernel, 1, 1, 0, ops_stream)(slots, count, capacity, sum, denom);
    LAUNCH_CHECK();
    return 0;
}

/* ================================================================== elementwise */

template <int W> __global__ void cast_to_bf16_kernel(bf16 *out, const float *inp, size_t n) {
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W;
    if (i >= n) return;
    const Vec<W, float> x = load_vec<W>(inp + i);
    Vec<W, bf16> y;
#pragma unroll
    for (int k = 0; k < W; k++) y.e[k] = __float2bfloat16(x.e[k]);
    store_vec<W>(out + i, y);
}

int cast_to_bf16(bf16 *out, const float *inp, size_t n) {
    LAUNCH_VEC(cast_to_bf16_kernel, n, vec_fits(n, {out, inp}), out, inp, n);
    LAUNCH_CHECK();
    return 0;
}

FAST_NS_END
