/* adamw.cu: global-norm clipping and AdamW on the fp32 master weights, the twin of
 * ref/adamw.c (same torch operation order, same scalars rounded to fp32).
 *
 * Two passes. (1) The squared norm, summed EXACTLY (fast/exact_sumsq.h: every square of a
 * float is an integer multiple of 2^-298, added into a fixed-point integer) and rounded once
 * to double, so its bits depend on nothing but the gradient: not on the grid, nor, with
 * ZeRO-2, on how the ranks' shards cut the buckets (issue 40: a double sum logged a norm 1
 * ulp apart between -np 2 and one process). A grid of up to ADAMW_NORM_BLOCKS blocks, each
 * thread accumulating a grid-strided slice, the block's threads merged in shared memory; one
 * warp adds the block partials and its first thread rounds the total and computes the clip
 * coefficient: no atomics, and the host never waits in the middle of the step (with data
 * parallelism the ranks' integers meet on the host, dist_allgather). (2) The update, one
 * launch per run of consecutive tensors with the same decay flag (norm gains are not
 * decayed), which also refreshes the bf16 copy the next forward reads; it reads the clip
 * coefficient and the step's scalars (learning rate, bias corrections) from the device, so
 * the whole update is one replayable graph (model.cu). The norm comes back with the
 * update's one wait (model.cu's fast_model_step).
 * Operations use the _rn intrinsics so the compiler cannot fuse them into FMAs: the order
 * is torch's. */
#include <math.h>
#include <stdlib.h>

#include "fast/exact_sumsq.h"
#include "fast/model.cuh"
#include "fast/vec.cuh"
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

/* Σ g[i]² over g [n], exactly: each thread adds its grid-strided elements into its own
 * accumulator (exact_sumsq.h; n/(grid·256) terms per thread, within its 2^32 - 1 for n below
 * 2^50), normalizes it and leaves its 32-bit limbs in shared memory; then thread k adds word
 * k over the block's threads (each < 2^32, so the block's word < 2^40).
 * partial [gridDim.x][EXACT_SUMSQ_WORDS] */
template <int W>
__global__ void __launch_bounds__(ADAMW_THREADS) adamw_norm_kernel(uint64_t *partial, const float *g, size_t n) {
    __shared__ uint32_t sh[ADAMW_THREADS][EXACT_SUMSQ_WORDS]; /* the threads' normalized words */
    uint64_t acc[EXACT_SUMSQ_WORDS];
    exact_sumsq_clear(acc);
    /* W consecutive elements per thread and turn (the sum is exact: its order does not matter) */
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W; i < n; i += (size_t)gridDim.x * blockDim.x * W) {
        const Vec<W, float> x = load_vec<W>(g + i);
#pragma unroll
        for (int k = 0; k < W; k++) exact_sumsq_add(acc, x.e[k]);
    }
    exact_sumsq_normalize(acc);
    for (int k = 0; k < EXACT_SUMSQ_WORDS; k++) /* the counts of inf and NaN only need to stay nonzero */
        sh[threadIdx.x][k] = (uint32_t)(k < EXACT_SUMSQ_LIMBS ? acc[k] : acc[k] != 0);
    __syncthreads();
    if (threadIdx.x < EXACT_SUMSQ_WORDS) {
        uint64_t s = 0;
        for (int t = 0; t < ADAMW_THREADS; t++) s += sh[t][threadIdx.x];
        partial[(size_t)blockIdx.x * EXACT_SUMSQ_WORDS + threadIdx.x] = s;
    }
}

#define ADAMW_CLIP_THREADS 32 /* one warp; thread k sums word k */
static_assert(EXACT_SUMSQ_WORDS <= ADAMW_CLIP_THREADS, "one clip thread per word");

/* The coefficient from the squared norm ss: max_norm / (sqrt(ss) + 1e-6) where that is < 1,
 * else 0 (torch: a coefficient of 1 changes nothing); max_norm <= 0: no clipping (0). */
static __host__ __device__ double clip_coef(double ss, double max_norm) {
    if (max_norm <= 0) return 0;
    const double coef = max_norm / (sqrt(ss) + 1e-6);
    return coef < 1 ? coef : 0;
}

/* One warp: thread k adds word k of the blocks' partials (exact: each < 2^40, blocks << 2^24),
 * then thread 0 normalizes the total into sum (the host merges the ranks' sums from it),
 * rounds it once: state[0] = the squared norm, state[1] = clip_coef.
 * partial [blocks][EXACT_SUMSQ_WORDS], sum [EXACT_SUMSQ_WORDS], state [2] */
__global__ void __launch_bounds__(ADAMW_CLIP_THREADS) adamw_clip_kernel(double *state, uint64_t *sum,
                                                                        const uint64_t *partial, int blocks,
                                                                        const AdamWScalars *sc) {
    __shared__ uint64_t tot[EXACT_SUMSQ_WORDS];
    const int k = (int)threadIdx.x;
    if (k < EXACT_SUMSQ_WORDS) {
        uint64_t s = 0;
        for (int b = 0; b < blocks; b++) s += partial[(size_t)b * EXACT_SUMSQ_WORDS + k];
        tot[k] = s;
    }
    __syncthreads();
    if (k != 0) return;
    uint64_t w[EXACT_SUMSQ_WORDS];
    for (int q = 0; q < EXACT_SUMSQ_WORDS; q++) w[q] = tot[q];
    exact_sumsq_normalize(w);
    for (int q = 0; q < EXACT_SUMSQ_WORDS; q++) sum[q] = w[q];
    const double ss = exact_sumsq_round(w);
    state[0] = ss;
    state[1] = clip_coef(ss, sc->max_norm);
}

/* p ← p·decay (if dec); m ← m + w1·(g − m); v ← v·β2 + w2·g·g;
 * p ← p + step_size·m / (sqrt(v)/bc2_sqrt + eps); g is clipped in place first when
 * *clip_coef (device, adamw_clip_kernel's) is not 0. The scalars are read from the device
 * (this step's, written before the launch), so a replayed graph uses the current step's. */
template <int W>
__global__ void adamw_update_kernel(float *p, bf16 *p16, float *g, float *ma, float *va, size_t n,
                                    const double *clip_coef, int dec, const AdamWScalars *sc) {
    size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W; /* W consecutive elements */
    if (i >= n) return;
    const float decay = sc->decay, w1 = sc->w1, b2 = sc->b2, w2 = sc->w2, bc2_sqrt = sc->bc2_sqrt, eps = sc->eps,
                step_size = sc->step_size;
    const double cc = *clip_coef;
    Vec<W, float> gv = load_vec<W>(g + i), pv = load_vec<W>(p + i), mv = load_vec<W>(ma + i), vv = load_vec<W>(va + i);
    Vec<W, bf16> p16v;
#pragma unroll
    for (int k = 0; k < W; k++) {
        float gi = gv.e[k];
        if (cc != 0) gi = gv.e[k] = __fmul_rn(gi, (float)cc);
        float pi = pv.e[k];
        if (dec) pi = __fmul_rn(pi, decay);
        const float mi = __fadd_rn(mv.e[k], __fmul_rn(w1, __fsub_rn(gi, mv.e[k])));
        const float vi = __fadd_rn(__fmul_rn(vv.e[k], b2), __fmul_rn(__fmul_rn(w2, gi), gi));
        const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), eps);
        pi = __fadd_rn(pi, __fdiv_rn(__fmul_rn(step_size, mi), denom));
        mv.e[k] = mi, vv.e[k] = vi, pv.e[k] = pi;
        p16v.e[k] = __float2bfloat16(pi);
    }
    if (cc != 0) store_vec<W>(g + i, gv);
    store_vec<W>(ma + i, mv);
    store_vec<W>(va + i, vv);
    store_vec<W>(p + i, pv);
    store_vec<W>(p16 + i, p16v);
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

#if VRL_HAVE_NCCL
/* ZeRO-2: the ranks' exact sums (normalized, so any number of ranks below 2^32 adds without
 * overflow) meet on the host, are added in rank order (any order gives the same integer) and
 * rounded once: the squared norm has the bits one process gets from the whole gradient. The
 * coefficient needs all of them, so the host waits here.  state [2], sum [EXACT_SUMSQ_WORDS] (device) */
static int merge_rank_norms(FastModel *m, const AdamWConfig *opt, double *state, const uint64_t *sum) {
    const int world = dist_world();
    uint64_t mine[EXACT_SUMSQ_WORDS], total[EXACT_SUMSQ_WORDS];
    uint64_t *all = (uint64_t *)malloc((size_t)world * sizeof mine); /* [world][EXACT_SUMSQ_WORDS] */
    if (!all) return vrl_error("fast: out of host memory for %d ranks' norms", world);
    cudaError_t e = cudaMemcpyAsync(mine, sum, sizeof mine, cudaMemcpyDeviceToHost, m->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(m->stream);
    if (e != cudaSuccess) {
        free(all);
        return vrl_error("fast: AdamW norm: %s", cudaGetErrorString(e));
    }
    dist_allgather(mine, all, sizeof mine);
    exact_sumsq_clear(total);
    for (int r = 0; r < world; r++) exact_sumsq_merge(total, all + (size_t)r * EXACT_SUMSQ_WORDS);
    free(all);
    exact_sumsq_normalize(total);
    const double ss = exact_sumsq_round(total), st[2] = {ss, clip_coef(ss, opt->clip)};
    CUDA_CHECK(cudaMemcpyAsync(state, st, sizeof st, cudaMemcpyHostToDevice, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream)); /* st is on this stack frame */
    return 0;
}
#endif

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
    double *state = fast_adamw_norm_sq(m);  /* [2] squared norm, clip coefficient */
    uint64_t *sum = fast_adamw_norm_sum(m); /* [EXACT_SUMSQ_WORDS] this rank's exact sum */
    /* a grid of at most ADAMW_NORM_BLOCKS blocks, and no more than the gradient fills (every
     * thread with at least one pack): the sum is exact, so the grid changes no bit, and a small
     * model's norm does not pay for 1024 blocks' merges */
    const int vec = vec_path(vec_fits(P, {gn})), W = vec ? VEC_W : 1;
    const size_t per_block = (size_t)ADAMW_THREADS * W;
    const int blocks = (int)(P / per_block + 1 < ADAMW_NORM_BLOCKS ? P / per_block + 1 : ADAMW_NORM_BLOCKS);
    if (vec) LAUNCH(adamw_norm_kernel<VEC_W>, blocks, ADAMW_THREADS, 0, s)(m->norm_words, gn, P);
    else LAUNCH(adamw_norm_kernel<1>, blocks, ADAMW_THREADS, 0, s)(m->norm_words, gn, P);
    LAUNCH(adamw_clip_kernel, 1, ADAMW_CLIP_THREADS, 0, s)(state, sum, m->norm_words, blocks, m->adamw_scalars);
    ADAMW_CHECK("norm");
#if VRL_HAVE_NCCL
    if (m->zero && merge_rank_norms(m, opt, state, sum) < 0) return -1;
#endif
    for (int k = 0; k < t->n;) {
        /* a run of tensors that are consecutive in the buffer and share the decay flag, each
         * with its padding gap (zeros in the gradient, weights and moments, which the update
         * keeps zero: params.h), so a run starts and ends on whole vectors */
        const int dec = t->p[k].decay && opt->weight_decay != 0;
        const size_t o0 = t->p[k].offset;
        size_t o1 = o0 + t->p[k].slot;
        int k1 = k + 1;
        while (k1 < t->n && t->p[k1].offset == o1 && (t->p[k1].decay && opt->weight_decay != 0) == dec)
            o1 += t->p[k1++].slot;
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
            float *p32 = m->params32 + x0, *ma = m->exp_avg + x0, *va = m->exp_avg_sq + x0;
            bf16 *p16 = m->params16 + x0;
            /* the vector path needs the run's ends on whole packs (the table pads every
             * tensor's offset to a pack: common/model/params.h); a ZeRO shard cut may not */
            if (vec_path(vec_fits(n, {p32, p16, g, ma, va})))
                LAUNCH(adamw_update_kernel<VEC_W>, cdiv(n / VEC_W, 256), 256, 0, s)(p32, p16, g, ma, va, n, state + 1,
                                                                                    dec, m->adamw_scalars);
            else
                LAUNCH(adamw_update_kernel<1>, cdiv(n, 256), 256, 0, s)(p32, p16, g, ma, va, n, state + 1, dec,
                                                                        m->adamw_scalars);
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
