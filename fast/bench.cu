/* bench.cu: measurement hooks for bench/bench_fast.c: the bf16 GEMM ceiling and a
 * per-kernel timing of one training step (fast.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fast/attention_wgmma.cuh"
#include "fast/gemm_wgmma.cuh"
#include "fast/model.cuh"

extern "C" {
#include "fast/fast.h"
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
#include "fast/attention_cudnn.h"
#endif
}

FAST_NS_BEGIN

/* Elapsed milliseconds of `reps` runs of a statement, CUDA events around them on the stream
 * the ops issue on (ops_stream: the model's, or the legacy default stream without one). */
#define TIME_MS(ms, reps, stmt)                                                    \
    do {                                                                           \
        cudaEvent_t e0_, e1_;                                                      \
        CUDA_CHECK(cudaEventCreate(&e0_));                                         \
        CUDA_CHECK(cudaEventCreate(&e1_));                                         \
        CUDA_CHECK(cudaEventRecord(e0_, ops_stream));                                          \
        for (int r_ = 0; r_ < (reps); r_++)                                        \
            if ((stmt) < 0) return -1;                                             \
        CUDA_CHECK(cudaEventRecord(e1_, ops_stream));                                          \
        CUDA_CHECK(cudaEventSynchronize(e1_));                                     \
        float t_ = 0;                                                              \
        CUDA_CHECK(cudaEventElapsedTime(&t_, e0_, e1_));                           \
        cudaEventDestroy(e0_);                                                     \
        cudaEventDestroy(e1_);                                                     \
        (ms) = t_ / (reps);                                                        \
    } while (0)

__global__ void fill_kernel(bf16 *x, size_t n, unsigned seed) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13, h *= 0x5bd1e995u, h ^= h >> 15;
    x[i] = __float2bfloat16(((h & 0xffff) / 65536.0f - 0.5f)); /* random data: a fair matrix rate */
}

static int time_gemm(Blas *b, float *D, const bf16 *A, const bf16 *B, int n, float *ms) {
    TIME_MS(*ms, 20, matmul_raw(b, D, A, B, n, n, n));
    return 0;
}

static int peak_bf16(int n, double *tflops) {
    Blas b;
    memset(&b, 0, sizeof b);
    bf16 *A = NULL, *B = NULL;
    float *D = NULL;
    float ms = 0;
    int rc = -1;
    const size_t nn = (size_t)n * n;
    if (blas_create(&b) < 0) return -1;
    if (cudaMalloc(&A, nn * sizeof(bf16)) != cudaSuccess || cudaMalloc(&B, nn * sizeof(bf16)) != cudaSuccess ||
        cudaMalloc(&D, nn * sizeof(float)) != cudaSuccess) {
        vrl_error("fast bench: cannot allocate %d x %d matrices", n, n);
        goto done;
    }
    LAUNCH(fill_kernel, cdiv(nn, 256), 256, 0, ops_stream)(A, nn, 1u);
    LAUNCH(fill_kernel, cdiv(nn, 256), 256, 0, ops_stream)(B, nn, 2u);
    if (matmul_raw(&b, D, A, B, n, n, n) < 0) goto done; /* warm-up, algorithm choice */
    if (time_gemm(&b, D, A, B, n, &ms) < 0) goto done;
    *tflops = 2.0 * n * (double)n * n / (ms * 1e-3) / 1e12;
    rc = 0;
done:
    cudaFree(A), cudaFree(B), cudaFree(D);
    blas_destroy(&b);
    return rc;
}

extern "C" double fast_bench_peak_bf16(int n) {
    double t = -1;
    if (fast_device_check() < 0 || peak_bf16(n, &t) < 0) return -1;
    return t;
}

/* One line per op at this model's shapes (layer 0's buffers; the forward must have run). */
static void row(FILE *out, const char *name, float ms, double bytes, double flops) {
    fprintf(out, "%-28s %10.1f us %12.1f MB %12.2f GFLOP %9.1f GB/s %8.1f TFLOP/s\n", name, ms * 1e3, bytes / 1e6,
            flops / 1e9, bytes / (ms * 1e-3) / 1e9, flops / (ms * 1e-3) / 1e12);
}

extern "C" int fast_bench_kernels(void *vm, FILE *out) {
    FastModel *m = (FastModel *)vm;
    if (!m->have_forward) return vrl_error("fast bench: run a forward first");
    const int B = m->B, T = m->T, N = m->N, d = m->d, qC = m->qC, kvC = m->kvC, F = m->F, V = m->V;
    const FastActs *a = &m->acts[0];
    const LayerOffsets *o = &m->lo[0];
    const int reps = 10;
    const double e2 = 2; /* bytes per bf16 */
    const double att_pairs = (double)B * m->NH * T * (T + 1) / 2; /* causal (query, key) pairs */
    float ms;
    fprintf(out, "# per-kernel timing, layer 0, B=%d T=%d d=%d F=%d heads=%d/%d hd=%d V=%d\n", B, T, d, F, m->NH,
            m->NKV, m->hd, V);
    TIME_MS(ms, reps, rmsnorm_forward(a->ln1, a->ln1_rstd, a->x_in, m->params16 + o->ln1, N, d, 1e-5f));
    row(out, "rmsnorm_forward", ms, 2.0 * N * d * e2, 3.0 * N * d);
    TIME_MS(ms, reps, matmul_forward(&m->blas, a->q, a->ln1, m->params16 + o->wq, NULL, N, d, qC));
    row(out, "matmul_forward q", ms, ((double)N * d + (double)qC * d + (double)N * qC) * e2, 2.0 * N * d * qC);
    TIME_MS(ms, reps, matmul_forward(&m->blas, a->gu, a->ln2, m->params16 + o->wgate, NULL, N, d, 2 * F));
    row(out, "matmul_forward gate|up", ms, ((double)N * d + 2.0 * F * d + 2.0 * N * F) * e2, 4.0 * N * d * F);
    TIME_MS(ms, reps, rope_forward(m->dq, qC, m->cos_t, m->sin_t, B, T, m->NH, m->hd));
    row(out, "rope_forward q", ms, 2.0 * N * qC * e2, 6.0 * N * qC / 2);
    const AttnLd ld = fast_attn_ld(m, 0);
    TIME_MS(ms, reps, attention_forward(m->datty, m->attD, a->q, a->k, a->vin, ld, B, T, m->NH, m->NKV, m->hd));
    row(out, "attention_forward", ms, ((double)N * qC * 2 + (double)N * kvC * 2) * e2, 4.0 * m->hd * att_pairs);
    const AttnDv dv16_only = {NULL, 1.0f, 0, m->dv16};
    TIME_MS(ms, reps, attention_backward(m->dq, m->dk, dv16_only, m->attD, a->atty, a->atty, a->q, a->k,
                                         a->vin, ld, a->lse, B, T, m->NH, m->NKV, m->hd));
    row(out, "attention_backward", ms, ((double)N * qC * 4 + (double)N * kvC * 4) * e2, 10.0 * m->hd * att_pairs);
    if (m->attention == FAST_ATTENTION_MMA) { /* --attention mma: the tensor-core forward and backward beside flash's */
        /* as the model runs them: RoPE on the queries in the forward (each rep rotates a->q once more:
         * a rotation, the values stay finite) and on the keys at their loads (k is not written),
         * RoPE's transpose in the backward's epilogues and the keys' RoPE at its loads */
        const AttnRope rope_fwd = {m->cos_t, m->sin_t, 1, 0, 0, 1};
        TIME_MS(ms, reps, attention_mma_forward(m->datty, m->attD, a->q, a->k, a->vin, ld, B, T, m->NH, m->NKV, m->hd,
                                                &rope_fwd));
        row(out, "attention_forward mma", ms, ((double)N * qC * 2 + (double)N * kvC * 2) * e2, 4.0 * m->hd * att_pairs);
        const AttnRope rope = {m->cos_t, m->sin_t, 0, 1, 1, 1};
        TIME_MS(ms, reps, attention_mma_backward(m->dq, m->dk, dv16_only, m->attD, a->atty, a->atty, a->q, a->k,
                                                 a->vin, ld, a->lse, B, T, m->NH, m->NKV, m->hd, &rope));
        row(out, "attention_backward mma", ms, ((double)N * qC * 4 + (double)N * kvC * 4) * e2,
            10.0 * m->hd * att_pairs);
    }
    if (m->attention == FAST_ATTENTION_WGMMA) { /* --attention wgmma: its forward and backward (q, k rotated:
                                                 * the model's passes ran; Rᵀ in the backward's epilogues) */
        TIME_MS(ms, reps, attention_wgmma_forward(m->datty, m->attD, a->q, a->k, a->vin, ld, B, T, m->NH, m->NKV,
                                                  m->hd));
        row(out, "attention_forward wgmma", ms, ((double)N * qC * 2 + (double)N * kvC * 2) * e2,
            4.0 * m->hd * att_pairs);
        const AttnRope rope = {m->cos_t, m->sin_t, 0, 1, 1, 0};
        TIME_MS(ms, reps, attention_wgmma_backward(m->dq, m->dk, dv16_only, m->attD, a->atty, a->atty, a->q, a->k,
                                                   a->vin, ld, a->lse, B, T, m->NH, m->NKV, m->hd, &rope));
        row(out, "attention_backward wgmma", ms, ((double)N * qC * 4 + (double)N * kvC * 4) * e2,
            10.0 * m->hd * att_pairs);
    }
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
    if (m->cudnn) { /* --attention cudnn: the same two rows for cuDNN's fused attention (its graphs are built;
                     * dV into dgu, the model's scratch for it, without attention_dv_scatter) */
        CudnnAttention *ca = (CudnnAttention *)m->cudnn;
        TIME_MS(ms, reps, cudnn_attention_forward(ca, m->stream, m->datty, m->attD, a->q, ld.q, a->k, ld.k,
                                                  a->vin, ld.v, B, T, m->NH, m->NKV, m->hd));
        row(out, "attention_forward cudnn", ms, ((double)N * qC * 2 + (double)N * kvC * 2) * e2, 4.0 * m->hd * att_pairs);
        TIME_MS(ms, reps, cudnn_attention_backward(ca, m->stream, m->dq, ld.q, m->dk, ld.k, m->dgu, a->atty,
                                                   a->atty, a->q, a->k, a->vin, ld.v, a->lse, B, T, m->NH, m->NKV,
                                                   m->hd));
        row(out, "attention_backward cudnn", ms, ((double)N * qC * 4 + (double)N * kvC * 4) * e2,
            10.0 * m->hd * att_pairs);
    }
#endif
    TIME_MS(ms, reps, swiglu_forward(m->dswi, a->gu, N, F));
    row(out, "swiglu_forward", ms, 3.0 * N * F * e2, 5.0 * N * F);
    if (m->gemm == FAST_GEMM_WGMMA) { /* --gemm wgmma: fast/gemm_wgmma.cu beside the cuBLASLt rows above */
        TIME_MS(ms, reps, gemm_wgmma_forward(a->q, a->ln1, m->params16 + o->wq, NULL, N, d, qC));
        row(out, "gemm_wgmma q", ms, ((double)N * d + (double)qC * d + (double)N * qC) * e2, 2.0 * N * d * qC);
        TIME_MS(ms, reps, gemm_wgmma_gate_up_swiglu(a->gu, a->swi, a->ln2, m->params16 + o->wgate, N, d, F));
        row(out, "gemm_wgmma gate|up + swiglu", ms, ((double)N * d + 2.0 * F * d + 3.0 * N * F) * e2, 4.0 * N * d * F);
        TIME_MS(ms, reps, gemm_wgmma_down_dx_swiglu(m->dgu, m->dres16, m->params16 + o->wdown, a->gu, N, d, F));
        row(out, "gemm_wgmma down dX + swiglu bwd", ms, ((double)N * d + (double)d * F + 4.0 * N * F) * e2,
            2.0 * N * d * F);
    }
    TIME_MS(ms, reps, swiglu_backward(m->dgu, m->dswi, a->gu, N, F));
    row(out, "swiglu_backward", ms, 5.0 * N * F * e2, 10.0 * N * F);
    /* the step's form: the gain's gradient from the same pass, its partials written and summed */
    TIME_MS(ms, reps, rmsnorm_backward(m->dres32, m->dres16, m->grads + o->ln2, m->norm_scratch, m->dln16, a->h,
                                       m->params16 + o->ln2, a->ln2_rstd, N, d));
    row(out, "rmsnorm_backward", ms, (double)N * d * (2 + 4 + 4 + 2 + 2) + 2.0 * cdiv(N, RMSNORM_WEIGHT_ROWS) * d * 4,
        10.0 * N * d);
    const int R = m->ce_rows;
    TIME_MS(ms, reps, matmul_forward_ld(&m->blas, m->logits, m->Vp, m->lnf, m->params16 + m->o_lm_head, R, d, V));
    row(out, "matmul_forward logits chunk", ms, (double)R * d * e2 + (double)V * d * e2 + (double)R * V * e2,
        2.0 * R * d * V);
    /* the training form: one read, the gradient written over the logits (each repetition
     * reads the previous one's gradient: finite values, the same traffic) */
    TIME_MS(ms, reps, crossentropy_forward_backward(m->losses, m->logits, m->targets, R, V, m->Vp, 1.0f, 1));
    row(out, "crossentropy chunk", ms, (double)R * m->Vp * e2 * 2, 5.0 * R * V);
    return 0;
}

FAST_NS_END
