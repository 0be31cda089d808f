/* adamw.cu: global-norm clipping and AdamW on the fp32 master weights, the twin of
 * ref/adamw.c (same torch operation order, same scalars rounded to fp32).
 *
 * Two passes. (1) The squared norm: a fixed grid of ADAMW_NORM_BLOCKS blocks, each
 * thread summing a grid-strided slice in double, blocks reduced in a fixed order, the
 * partial sums added in index order by one device thread, which also computes the clip
 * coefficient: deterministic, and the host never waits in the middle of the step (with
 * data parallelism the ranks' sums meet on the host, dist_sum_f64). (2) The update, one
 * launch per run of consecutive tensors with the same decay flag (norm gains are not
 * decayed), which also refreshes the bf16 copy the next forward reads; it reads the clip
 * coefficient and the step's scalars (learning rate, bias corrections) from the device, so
 * the whole update is one replayable graph (model.cu). The norm comes back with the
 * update's one wait (model.cu's fast_model_step).
 * Operations use the _rn intrinsics so the compiler cannot fuse them into FMAs: the order
 * is torch's. */
#include <math.h>

#include "fast/model.cuh"
#include "fast/zero.cuh"
extern "C" {
#include "common/base/procgroup.h"
}

FAST_NS_BEGIN

#if !VRL_HAVE_NCCL
/* Without NCCL m->zero is always NULL and these are never reached. */
int zero_n_ranges(const FastModel *) { return 1; }
void zero_range(const FastModel *, int, size_t *, size_t *, float **) {}
#endif

#define ADAMW_THREADS 256

__global__ void __launch_bounds__(ADAMW_THREADS) adamw_norm_kernel(double *partial, const float *g, size_t n) {
    __shared__ double sh[ADAMW_THREADS];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (double)g[i] * g[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = ADAMW_THREADS / 2; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

/* One thread: ss = Σ partial[k] in index order (the host's former order, bit for bit), then
 * state[0] = ss and state[1] = max_norm / (sqrt(ss) + 1e-6) where that is < 1, else 0 (torch:
 * a coefficient of 1 changes nothing). max_norm <= 0: no clipping.  partial [blocks], state [2] */
__global__ void adamw_clip_kernel(double *state, const double *partial, int blocks, const AdamWScalars *sc) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const double max_norm = sc->max_norm;
    double ss = 0;
    for (int k = 0; k < blocks; k++) ss += partial[k];
    state[0] = ss;
    state[1] = 0;
    if (max_norm > 0) {
        const double coef = max_norm / (sqrt(ss) + 1e-6);
        if (coef < 1) state[1] = coef;
    }
}

/* p ← p·decay (if dec); m ← m + w1·(g − m); v ← v·β2 + w2·g·g;
 * p ← p + step_size·m / (sqrt(v)/bc2_sqrt + eps); g is clipped in place first when
 * *clip_coef (device, adamw_clip_kernel's) is not 0. The scalars are read from the device
 * (this step's, written before the launch), so a replayed graph uses the current step's. */
__global__ void adamw_update_kernel(float *p, bf16 *p16, float *g, float *ma, float *va, size_t n,
                                    const double *clip_coef, int dec, const AdamWScalars *sc) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float decay = sc->decay, w1 = sc->w1, b2 = sc->b2, w2 = sc->w2, bc2_sqrt = sc->bc2_sqrt, eps = sc->eps,
                step_size = sc->step_size;
    float gi = g[i];
    const double cc = *clip_coef;
    if (cc != 0) {
        gi = __fmul_rn(gi, (float)cc);
        g[i] = gi;
    }
    float pi = p[i];
    if (dec) pi = __fmul_rn(pi, decay);
    float mi = __fadd_rn(ma[i], __fmul_rn(w1, __fsub_rn(gi, ma[i])));
    float vi = __fadd_rn(__fmul_rn(va[i], b2), __fmul_rn(__fmul_rn(w2, gi), gi));
    float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), eps);
    pi = __fadd_rn(pi, __fdiv_rn(__fmul_rn(step_size, mi), denom));
    ma[i] = mi;
    va[i] = vi;
    p[i] = pi;
    p16[i] = __float2bfloat16(pi);
}

void fast_adamw_scalars(FastModel *m, const AdamWConfig *opt, double lr, long step) {
    AdamWScalars *sc = m->h_adamw;
    const double st = (double)step;
    const double bc1 = 1 - pow(opt->beta1, st), bc2 = 1 - pow(opt->beta2, st);
    sc->step_size = (float)(-(lr / bc1)), sc->bc2_sqrt = (float)sqrt(bc2);
    sc->w1 = (float)(1 - opt->beta1), sc->b2 = (float)opt->beta2, sc->w2 = (float)(1 - opt->beta2);
    sc->eps = (float)opt->eps, sc->decay = (float)(1 - lr * opt->weight_decay);
    sc->max_norm = opt->clip;
}

#define ADAMW_CHECK(what)                                                                                    \
    do {                                                                                                     \
        cudaError_t e_ = cudaGetLastError();                                                                 \
        if (e_ != cudaSuccess) return vrl_error("fast: AdamW %s: %s", what, cudaGetErrorString(e_));         \
    } while (0)

int fast_adamw_queue(FastModel *m, const AdamWConfig *opt) {
    const ParamTable *t = m->t;
    size_t P = t->total;
    const float *gn = m->grads; /* [P] the gradient whose norm clips */
    cudaStream_t s = m->stream;
#if VRL_HAVE_NCCL
    /* sharded (zero.cuh): this rank's reduced blocks; the ranks' squares summed below */
    if (m->zero && zero_wait_reduced(m) < 0) return -1;
    if (m->zero) gn = zero_shard_grads(m, &P);
#endif
    double *state = fast_adamw_norm_sq(m); /* [2] squared norm, clip coefficient */
    LAUNCH(adamw_norm_kernel, ADAMW_NORM_BLOCKS, ADAMW_THREADS, 0, s)(m->norm_partial, gn, P);
    LAUNCH(adamw_clip_kernel, 1, 1, 0, s)(state, m->norm_partial, ADAMW_NORM_BLOCKS, m->adamw_scalars);
    ADAMW_CHECK("norm");
#if VRL_HAVE_NCCL
    if (m->zero) { /* the ranks' squared sums meet on the host: the coefficient needs all of them */
        double ss = 0;
        CUDA_CHECK(cudaMemcpyAsync(&ss, state, sizeof ss, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        ss = dist_sum_f64(ss);
        const double norm = sqrt(ss);
        const double coef = opt->clip > 0 ? opt->clip / (norm + 1e-6) : 1, st[2] = {ss, coef < 1 ? coef : 0};
        CUDA_CHECK(cudaMemcpyAsync(state, st, sizeof st, cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaStreamSynchronize(s)); /* st is on this stack frame */
    }
#endif
    for (int k = 0; k < t->n;) {
        /* a run of tensors that are consecutive in the buffer and share the decay flag */
        const int dec = t->p[k].decay && opt->weight_decay != 0;
        const size_t o0 = t->p[k].offset;
        size_t o1 = o0 + t->p[k].numel;
        int k1 = k + 1;
        while (k1 < t->n && t->p[k1].offset == o1 && (t->p[k1].decay && opt->weight_decay != 0) == dec)
            o1 += t->p[k1++].numel;
        /* [x0, x1) of the table, gradients at g: the whole run, or each of this rank's
         * shard ranges inside it (zero.cuh) */
        const int pieces = m->zero ? zero_n_ranges(m) : 1;
        for (int r = 0; r < pieces; r++) {
            size_t x0 = o0, x1 = o1;
            float *g = m->grads + o0;
            if (m->zero) {
                size_t s0 = 0, n = 0;
                float *gs = NULL;
                zero_range(m, r, &s0, &n, &gs);
                x0 = s0 > o0 ? s0 : o0;
                x1 = s0 + n < o1 ? s0 + n : o1;
                if (x1 <= x0) continue;
                g = gs + (x0 - s0);
            }
            const size_t n = x1 - x0;
            LAUNCH(adamw_update_kernel, cdiv(n, 256), 256, 0, s)(m->params32 + x0, m->params16 + x0, g,
                                                                  m->exp_avg + x0, m->exp_avg_sq + x0, n, state + 1,
                                                                  dec, m->adamw_scalars);
            ADAMW_CHECK("update");
        }
        k = k1;
    }
#if VRL_HAVE_NCCL
    /* the other ranks' blocks arrive on the communication stream; the next forward waits
     * for them layer by layer */
    if (m->zero && zero_gather_params(m) < 0) return -1;
#endif
    return 0;
}

FAST_NS_END
