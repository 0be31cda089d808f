/* adamw.cu: global-norm clipping and AdamW on the fp32 master weights, the twin of
 * ref/adamw.c (same torch operation order, same scalars rounded to fp32).
 *
 * Two passes. (1) The squared norm: a fixed grid of ADAMW_NORM_BLOCKS blocks, each
 * thread summing a grid-strided slice in double, blocks reduced in a fixed order, the
 * partial sums added on the host in index order: deterministic. (2) The update, one
 * launch per run of consecutive tensors with the same decay flag (norm gains are not
 * decayed), which also refreshes the bf16 copy the next forward reads. Operations use
 * the _rn intrinsics so the compiler cannot fuse them into FMAs: the order is torch's. */
#include <math.h>

#include "fast/model.cuh"
#include "fast/zero.cuh"
#if VRL_HAVE_NCCL
extern "C" {
#include "common/base/procgroup.h"
}
#else
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

/* p ← p·decay (if dec); m ← m + w1·(g − m); v ← v·β2 + w2·g·g;
 * p ← p + step_size·m / (sqrt(v)/bc2_sqrt + eps); g is clipped in place first. */
__global__ void adamw_update_kernel(float *p, bf16 *p16, float *g, float *ma, float *va, size_t n, int clip,
                                    float clip_coef, int dec, float decay, float w1, float b2, float w2,
                                    float bc2_sqrt, float eps, float step_size) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i];
    if (clip) {
        gi = __fmul_rn(gi, clip_coef);
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

double fast_adamw_step(FastModel *m, const AdamWConfig *opt, double lr, long step) {
    const ParamTable *t = m->t;
    size_t P = t->total;
    const float *gn = m->grads; /* [P] the gradient whose norm clips */
#if VRL_HAVE_NCCL
    /* sharded (zero.cuh): this rank's reduced blocks; the ranks' squares summed below */
    if (m->zero && zero_wait_reduced(m) < 0) return NAN;
    if (m->zero) gn = zero_shard_grads(m, &P);
#endif
    double partial[ADAMW_NORM_BLOCKS];
    adamw_norm_kernel<<<ADAMW_NORM_BLOCKS, ADAMW_THREADS>>>(m->norm_partial, gn, P);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(partial, m->norm_partial, sizeof partial, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        vrl_error("fast: AdamW norm: %s", cudaGetErrorString(e));
        return NAN;
    }
    double ss = 0;
    for (int k = 0; k < ADAMW_NORM_BLOCKS; k++) ss += partial[k];
#if VRL_HAVE_NCCL
    if (m->zero) ss = dist_sum_f64(ss);
#endif
    const double norm = sqrt(ss);
    int clip = 0;
    float clip_coef = 1.0f;
    if (opt->clip > 0) {
        const double coef = opt->clip / (norm + 1e-6);
        if (coef < 1) clip = 1, clip_coef = (float)coef; /* torch: 1.0 changes nothing */
    }
    const double st = (double)step;
    const double bc1 = 1 - pow(opt->beta1, st), bc2 = 1 - pow(opt->beta2, st);
    const float step_size = (float)(-(lr / bc1)), bc2_sqrt = (float)sqrt(bc2);
    const float w1 = (float)(1 - opt->beta1), b2 = (float)opt->beta2, w2 = (float)(1 - opt->beta2);
    const float eps = (float)opt->eps, decay = (float)(1 - lr * opt->weight_decay);
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
                size_t s = 0, n = 0;
                float *gs = NULL;
                zero_range(m, r, &s, &n, &gs);
                x0 = s > o0 ? s : o0;
                x1 = s + n < o1 ? s + n : o1;
                if (x1 <= x0) continue;
                g = gs + (x0 - s);
            }
            const size_t n = x1 - x0;
            adamw_update_kernel<<<cdiv(n, 256), 256>>>(m->params32 + x0, m->params16 + x0, g, m->exp_avg + x0,
                                                        m->exp_avg_sq + x0, n, clip, clip_coef, dec, decay, w1, b2,
                                                        w2, bc2_sqrt, eps, step_size);
            if ((e = cudaGetLastError()) != cudaSuccess) {
                vrl_error("fast: AdamW update: %s", cudaGetErrorString(e));
                return NAN;
            }
        }
        k = k1;
    }
#if VRL_HAVE_NCCL
    /* the other ranks' blocks arrive on the communication stream; the next forward waits
     * for them layer by layer, so only the default stream is waited for here */
    if (m->zero) {
        if (zero_gather_params(m) < 0) return NAN;
        if ((e = cudaStreamSynchronize(0)) != cudaSuccess) {
            vrl_error("fast: AdamW update: %s", cudaGetErrorString(e));
            return NAN;
        }
        return norm;
    }
#endif
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) {
        vrl_error("fast: AdamW update: %s", cudaGetErrorString(e));
        return NAN;
    }
    return norm;
}
