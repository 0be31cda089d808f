/* stream.cu: the sublayers' inputs on CUDA (interface and numbering in stream.cuh):
 *
 *   PLAIN        x_{l+1} = layer output (the layer adds its residuals itself)
 *   DENSEFORMER  D_0 = X_0 = y_0; layer l reads D_l and writes X_{l+1}; after block j a DWA
 *                D_j = Σ_c α_{j,c}·X_{src_c} (ref/stream.c's dense_forward)
 *   ATTNRES      in_s = Σ_g a_g S_g, a = softmax_g(r_g·⟨w_s, S_g⟩), r_g = rsqrt(mean(S_g²) + eps),
 *                S_g = Σ_{k∈[lo,hi)} y_k (full: one y per source; block: sums of m sublayers)
 *   hidden       layer l's attention norm reads hx·x + hh·H_0, its residual stays x
 *
 * Precision as the rest of fast/: activations bf16; every depth sum, RMSNorm statistic and
 * softmax in fp32, rounded once to bf16; gradients fp32. The mixing parameters are read from
 * the bf16 copy like every other weight (the norm weights near 1 are too). AttnRes keeps no
 * block sums: each kernel re-adds S_g from the y_k it reads (fp32, in k order, as ref does).
 * Cross-token sums (a weight's gradient) run in a fixed order: the results do not depend on
 * the order threads run. */
#include <math.h>
#include <string.h>

#include "fast/stream.cuh"
#include "fast/vec.cuh"

FAST_NS_BEGIN

/* ------------------------------------------------------------------ kernels */

__device__ __forceinline__ float stream_bf(bf16 x) { return __bfloat162float(x); }

__device__ __forceinline__ float stream_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* out = bf16(Σ_c w_c·src_c), fp32 sum in source order; w_c bf16 parameters (DWA α) or, with
 * w == NULL, the constants c0, c1 of two sources (the hidden residual's hx, hh).
 * out [n], src[c] [n] */
__global__ void depth_mix_kernel(bf16 *out, const bf16 *const *src, const bf16 *w, int n_src, const bf16 *s0,
                                 const bf16 *s1, float c0, float c1, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v;
    if (w) {
        v = 0;
        for (int c = 0; c < n_src; c++) v += stream_bf(w[c]) * stream_bf(src[c][i]);
    } else {
        v = c0 * stream_bf(s0[i]) + c1 * stream_bf(s1[i]);
    }
    out[i] = __float2bfloat16(v);
}

/* The DWA's backward into its sources: dsrc[c] += α_c·dD.  dsrc[c] [n] fp32, dD [n] fp32 */
__global__ void dwa_backward_kernel(float *const *dsrc, const bf16 *alpha, int n_src, const float *dD, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float g = dD[i];
    for (int c = 0; c < n_src; c++) dsrc[c][i] += stream_bf(alpha[c]) * g;
}

/* The hidden residual's backward: dres += hx·dn, demb += hh·dn, dres16 = bf16(dres).  [n] each */
template <int W>
__global__ void hidden_backward_kernel(float *dres, bf16 *dres16, float *demb, const float *dn, float hx, float hh,
                                       size_t n) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W; /* W consecutive elements */
    if (i >= n) return;
    const Vec<W, float> g = load_vec<W>(dn + i);
    Vec<W, float> d = load_vec<W>(dres + i), e = load_vec<W>(demb + i);
    Vec<W, bf16> d16;
#pragma unroll
    for (int k = 0; k < W; k++) {
        d.e[k] = d.e[k] + hx * g.e[k];
        d16.e[k] = __float2bfloat16(d.e[k]);
        e.e[k] += hh * g.e[k];
    }
    store_vec<W>(dres + i, d);
    store_vec<W>(dres16 + i, d16);
    store_vec<W>(demb + i, e);
}

/* out = a + b (b may be NULL; a may be out), out16 = bf16(out) unless NULL.  [n] each */
template <int W> __global__ void grad_sum_kernel(float *out, bf16 *out16, const float *a, const float *b, size_t n) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * W; /* W consecutive elements */
    if (i >= n) return;
    Vec<W, float> v = load_vec<W>(a + i);
    if (b) {
        const Vec<W, float> y = load_vec<W>(b + i);
#pragma unroll
        for (int k = 0; k < W; k++) v.e[k] = v.e[k] + y.e[k];
    }
    store_vec<W>(out + i, v);
    if (out16) {
        Vec<W, bf16> v16;
#pragma unroll
        for (int k = 0; k < W; k++) v16.e[k] = __float2bfloat16(v.e[k]);
        store_vec<W>(out16 + i, v16);
    }
}

#define ATTNRES_WARPS 4 /* tokens per block, one warp each */

/* S_g[t,c] = Σ_{k∈[lo,hi)} y_k[t,c] in fp32, in k order */
__device__ __forceinline__ float source_at(const bf16 *const *y, int lo, int hi, size_t at) {
    float v = 0;
    for (int k = lo; k < hi; k++) v += stream_bf(y[k][at]);
    return v;
}

/* Per token (one warp): every source's RMSNorm rstd r_g, ⟨w,S_g⟩ and, with din, ⟨din,S_g⟩ into
 * shared rows; then the softmax weights a_g. Every lane holds the same sums (xor shuffles),
 * lane 0 writes them; the warp's own rows only, so a __syncwarp orders them. */
__device__ void attnres_stats(const bf16 *const *y, const int *lo, const int *hi, int ns, const bf16 *w,
                              const float *din, size_t row, int d, float eps, float *r, float *wd, float *dd,
                              float *a) {
    const int lane = threadIdx.x % 32;
    for (int g = 0; g < ns; g++) {
        float ss = 0, sw = 0, sd = 0;
        for (int c = lane; c < d; c += 32) {
            const float v = source_at(y, lo[g], hi[g], row + c);
            ss += v * v;
            sw += stream_bf(w[c]) * v;
            if (din) sd += din[row + c] * v;
        }
        ss = stream_warp_sum(ss), sw = stream_warp_sum(sw), sd = stream_warp_sum(sd);
        if (lane == 0) {
            r[g] = rsqrtf(ss / d + eps);
            wd[g] = sw;
            dd[g] = sd;
        }
    }
    __syncwarp();
    if (lane == 0) { /* softmax over the sources of the logits r_g·⟨w,S_g⟩ */
        float mx = -INFINITY, z = 0;
        for (int g = 0; g < ns; g++) mx = fmaxf(mx, r[g] * wd[g]);
        for (int g = 0; g < ns; g++) z += expf(r[g] * wd[g] - mx);
        for (int g = 0; g < ns; g++) a[g] = expf(r[g] * wd[g] - mx) / z;
    }
    __syncwarp();
}

/* out[t] = Σ_g a_g S_g[t] for each token t (one warp per token).
 * out [N,d] bf16, y[k] [N,d], lo/hi [ns], w [d] bf16 */
__global__ void __launch_bounds__(32 * ATTNRES_WARPS)
    attnres_forward_kernel(bf16 *out, const bf16 *const *y, const int *lo, const int *hi, int ns, const bf16 *w,
                           int N, int d, float eps) {
    __shared__ float sh[ATTNRES_WARPS][4][STREAM_MAX_STEPS];
    const int wid = threadIdx.x / 32, lane = threadIdx.x % 32, t = blockIdx.x * ATTNRES_WARPS + wid;
    if (t >= N) return; /* whole warps leave together: only warp-level syncs below */
    float *r = sh[wid][0], *wd = sh[wid][1], *dd = sh[wid][2], *a = sh[wid][3];
    const size_t row = (size_t)t * d;
    attnres_stats(y, lo, hi, ns, w, NULL, row, d, eps, r, wd, dd, a);
    for (int c = lane; c < d; c += 32) {
        float v = 0;
        for (int g = 0; g < ns; g++) v += a[g] * source_at(y, lo[g], hi[g], row + c);
        out[row + c] = __float2bfloat16(v);
    }
}

/* Backward of one step for each token t (one warp per token), din = d(in_s) [N,d] fp32:
 *   dlog_g = ⟨din,S_g⟩, dl_g = a_g·(dlog_g − Σ_h a_h dlog_h)         (softmax)
 *   dS_g = a_g·din + dl_g·(r_g·w − r_g³·⟨w,S_g⟩/d·S_g)               (logit r_g⟨w,S_g⟩)
 *   dy_k += dS_g for k in source g's range;  dwtok[t] = Σ_g dl_g·r_g·S_g
 * dy[k] [N,d] fp32, dwtok [N,d] fp32 */
__global__ void __launch_bounds__(32 * ATTNRES_WARPS)
    attnres_backward_kernel(float *const *dy, float *dwtok, const float *din, const bf16 *const *y, const int *lo,
                            const int *hi, int ns, const bf16 *w, int N, int d, float eps) {
    __shared__ float sh[ATTNRES_WARPS][4][STREAM_MAX_STEPS];
    const int wid = threadIdx.x / 32, lane = threadIdx.x % 32, t = blockIdx.x * ATTNRES_WARPS + wid;
    if (t >= N) return;
    float *r = sh[wid][0], *wd = sh[wid][1], *dd = sh[wid][2], *a = sh[wid][3];
    const size_t row = (size_t)t * d;
    attnres_stats(y, lo, hi, ns, w, din, row, d, eps, r, wd, dd, a);
    if (lane == 0) { /* dd becomes dl_g, wd becomes r_g³⟨w,S_g⟩/d */
        float sum = 0;
        for (int g = 0; g < ns; g++) sum += a[g] * dd[g];
        for (int g = 0; g < ns; g++) {
            dd[g] = a[g] * (dd[g] - sum);
            wd[g] = r[g] * r[g] * r[g] * wd[g] / d;
        }
    }
    __syncwarp();
    for (int c = lane; c < d; c += 32) {
        const float g_in = din[row + c], wc = stream_bf(w[c]);
        float dw = 0;
        for (int g = 0; g < ns; g++) {
            const float v = source_at(y, lo[g], hi[g], row + c);
            const float ds = a[g] * g_in + dd[g] * (r[g] * wc - wd[g] * v);
            for (int k = lo[g]; k < hi[g]; k++) dy[k][row + c] += ds;
            dw += dd[g] * r[g] * v;
        }
        dwtok[row + c] = dw;
    }
}

#define COLSUM_ROWS 256

/* pass 1: partial[chunk, c] = Σ of x[r, c] over the chunk's rows, in row order */
__global__ void colsum_partial_kernel(float *partial, const float *x, int N, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, chunk = blockIdx.y;
    if (c >= C) return;
    const int r1 = min((chunk + 1) * COLSUM_ROWS, N);
    float s = 0;
    for (int r = chunk * COLSUM_ROWS; r < r1; r++) s += x[(size_t)r * C + c];
    partial[(size_t)chunk * C + c] = s;
}

/* pass 2: out[c] += Σ_chunk partial[chunk, c], chunks in order */
__global__ void colsum_reduce_kernel(float *out, const float *partial, int chunks, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0;
    for (int k = 0; k < chunks; k++) s += partial[(size_t)k * C + c];
    out[c] += s;
}

/* ------------------------------------------------------------------ launchers */

static int depth_mix(bf16 *out, const bf16 *const *src, const bf16 *w, int n_src, const bf16 *s0, const bf16 *s1,
                     float c0, float c1, size_t n) {
    LAUNCH(depth_mix_kernel, cdiv(n, 256), 256, 0, ops_stream)(out, src, w, n_src, s0, s1, c0, c1, n);
    LAUNCH_CHECK();
    return 0;
}

static int grad_sum(float *out, bf16 *out16, const float *a, const float *b, size_t n) {
    LAUNCH_VEC(grad_sum_kernel, n, vec_fits(n, {out, out16, a, b}), out, out16, a, b, n);
    LAUNCH_CHECK();
    return 0;
}

/* out [C] += Σ_r x[r, :] over N rows (fixed order).  partial [ceil(N/256), C] */
static int colsum_add(float *out, float *partial, const float *x, int N, int C) {
    const int chunks = (int)cdiv(N, COLSUM_ROWS);
    LAUNCH(colsum_partial_kernel, dim3(cdiv(C, 128), chunks), 128, 0, ops_stream)(partial, x, N, C);
    LAUNCH_CHECK();
    LAUNCH(colsum_reduce_kernel, cdiv(C, 128), 128, 0, ops_stream)(out, partial, chunks, C);
    LAUNCH_CHECK();
    return 0;
}

/* ------------------------------------------------------------------ create / destroy */

static void *carve(char *base, size_t *off, size_t n, size_t size) {
    const size_t at = (*off + 255) & ~(size_t)255;
    *off = at + n * size;
    return base ? base + at : NULL;
}
#define CARVE(ptr, n) ((ptr) = (__typeof__(ptr))carve(base, &off, (size_t)(n), sizeof *(ptr)))

/* The buffers of st for m; with base == NULL only counts. */
static size_t stream_layout(FastModel *m, FastStream *st, char *base) {
    const size_t N = m->N, d = m->d, Nd = N * d;
    const int L = m->L, S = 2 * L + 1;
    const StreamPlan *p = st->plan;
    size_t off = 0;
    int hidden = 0;
    for (int l = 0; l < L; l++) {
        st->xn[l] = NULL;
        if (st->hx[l] != 1.0f || st->hh[l] != 0.0f) CARVE(st->xn[l], Nd), hidden = 1;
    }
    st->dnorm = st->demb = NULL;
    if (hidden) CARVE(st->dnorm, Nd), CARVE(st->demb, Nd);
    if (st->kind == STREAM_DENSEFORMER) {
        for (int j = 0; j <= L; j++) {
            st->D[j] = NULL;
            if (j > 0 && p->dwa_n[j - 1]) CARVE(st->D[j], Nd);
            CARVE(st->dX[j], Nd);
        }
        CARVE(st->dwa_src, (size_t)L * (L + 1));
        CARVE(st->dwa_dsrc, (size_t)L * (L + 1));
        CARVE(st->partial, (size_t)FAST_MAX_LAYERS * LAMBDA_BLOCKS);
    }
    if (st->kind == STREAM_ATTNRES) {
        CARVE(st->y, S);
        CARVE(st->dyp, S);
        CARVE(st->lo, (size_t)S * S);
        CARVE(st->hi, (size_t)S * S);
        for (int s = 0; s < S; s++) {
            CARVE(st->in[s], Nd);
            CARVE(st->dy[s], Nd);
        }
        CARVE(st->dwtok, Nd);
        CARVE(st->colpart, (size_t)cdiv(N, COLSUM_ROWS) * d);
    }
    return off;
}
#undef CARVE

void stream_destroy(FastModel *m) {
    FastStream *st = m->mix;
    if (!st) return;
    if (st->arena) cudaFree(st->arena);
    free(st);
    m->mix = NULL;
}

int stream_create(FastModel *m, const ModelSpec *spec) {
    const int L = m->L, S = 2 * L + 1;
    FastStream *st = (FastStream *)calloc(1, sizeof *st);
    if (!st) return vrl_error("fast model: out of host memory");
    m->mix = st;
    st->plan = &spec->stream;
    st->kind = st->plan->kind;
    st->eps = (float)m->c.norm_eps;
    if (st->kind != STREAM_PLAIN && st->kind != STREAM_DENSEFORMER && st->kind != STREAM_ATTNRES)
        return vrl_error("fast model: residual stream \"%s\" is not implemented on CUDA", stream_kind_name(st->kind));
    for (int l = 0; l < L; l++) st->hx[l] = (float)spec->value.hx[l], st->hh[l] = (float)spec->value.hh[l];
    st->bytes = stream_layout(m, st, NULL);
    if (st->bytes == 0) return 0; /* the plain stream without hidden residual: nothing to keep */
    const cudaError_t e = cudaMalloc(&st->arena, st->bytes);
    if (e != cudaSuccess) {
        st->arena = NULL;
        return vrl_error("fast model: cannot allocate %.2f GiB for the residual stream (%s)", st->bytes / 1073741824.0,
                         cudaGetErrorString(e));
    }
    stream_layout(m, st, (char *)st->arena);
    const StreamLayout *lay = &spec->layout.stream;
    const StreamPlan *p = st->plan;
    if (st->kind == STREAM_DENSEFORMER) { /* the DWAs' source tables */
        const bf16 **src = (const bf16 **)calloc((size_t)L * (L + 1), sizeof *src);
        float **dsrc = (float **)calloc((size_t)L * (L + 1), sizeof *dsrc);
        if (!src || !dsrc) {
            free(src), free(dsrc);
            return vrl_error("fast model: out of host memory");
        }
        for (int j = 0; j < L; j++) {
            st->alpha_off[j] = lay->at[j][0].offset;
            for (int c = 0; c < p->dwa_n[j]; c++) {
                const int x = p->dwa_src[(size_t)j * (L + 1) + c];
                src[(size_t)j * (L + 1) + c] = x == 0 ? m->emb : m->acts[x - 1].out;
                dsrc[(size_t)j * (L + 1) + c] = st->dX[x];
            }
        }
        const cudaError_t e1 = cudaMemcpy(st->dwa_src, src, (size_t)L * (L + 1) * sizeof *src, cudaMemcpyHostToDevice);
        const cudaError_t e2 = cudaMemcpy(st->dwa_dsrc, dsrc, (size_t)L * (L + 1) * sizeof *dsrc, cudaMemcpyHostToDevice);
        free(src), free(dsrc);
        if (e1 != cudaSuccess || e2 != cudaSuccess) return vrl_error("fast model: cannot upload the DWA tables");
    }
    if (st->kind == STREAM_ATTNRES) { /* the history's addresses and each step's source ranges */
        const bf16 **y = (const bf16 **)calloc((size_t)S, sizeof *y);
        int *lo = (int *)calloc((size_t)S * S, sizeof *lo), *hi = (int *)calloc((size_t)S * S, sizeof *hi);
        if (!y || !lo || !hi) {
            free(y), free(lo), free(hi);
            return vrl_error("fast model: out of host memory");
        }
        y[0] = m->emb;
        for (int l = 0; l < L; l++) y[2 * l + 1] = m->acts[l].h, y[2 * l + 2] = m->acts[l].out;
        for (int s = 0; s < S; s++) {
            st->q_off[s] = lay->at[s][0].offset;
            for (int g = 0; g < p->n_src[s]; g++)
                lo[(size_t)s * S + g] = p->src[(size_t)s * S + g].lo, hi[(size_t)s * S + g] = p->src[(size_t)s * S + g].hi;
        }
        const cudaError_t e1 = cudaMemcpy(st->y, y, (size_t)S * sizeof *y, cudaMemcpyHostToDevice);
        const cudaError_t e2 = cudaMemcpy(st->lo, lo, (size_t)S * S * sizeof *lo, cudaMemcpyHostToDevice);
        const cudaError_t e3 = cudaMemcpy(st->hi, hi, (size_t)S * S * sizeof *hi, cudaMemcpyHostToDevice);
        const cudaError_t e4 = cudaMemcpy(st->dyp, st->dy, (size_t)S * sizeof *st->dy, cudaMemcpyHostToDevice);
        free(y), free(lo), free(hi);
        if (e1 != cudaSuccess || e2 != cudaSuccess || e3 != cudaSuccess || e4 != cudaSuccess)
            return vrl_error("fast model: cannot upload the AttnRes tables");
    }
    return 0;
}

/* ------------------------------------------------------------------ forward */

#define TRY(call) \
    if ((call) < 0) return -1

/* AttnRes' input of step s into st->in[s]. */
static int attnres_forward(FastModel *m, int s) {
    FastStream *st = m->mix;
    const int S = 2 * m->L + 1;
    LAUNCH(attnres_forward_kernel, cdiv(m->N, ATTNRES_WARPS), 32 * ATTNRES_WARPS, 0, ops_stream)(
        st->in[s], st->y, st->lo + (size_t)s * S, st->hi + (size_t)s * S, st->plan->n_src[s],
        m->params16 + st->q_off[s], m->N, m->d, st->eps);
    LAUNCH_CHECK();
    return 0;
}

/* DenseFormer's D_j (j >= 1): the DWA after block j, or X_j itself. */
static int dense_input(FastModel *m, int j, const bf16 **out) {
    FastStream *st = m->mix;
    const int n = st->plan->dwa_n[j - 1];
    if (!n) {
        *out = m->acts[j - 1].out;
        return 0;
    }
    TRY(depth_mix(st->D[j], st->dwa_src + (size_t)(j - 1) * (m->L + 1), m->params16 + st->alpha_off[j - 1], n, NULL,
                  NULL, 0, 0, (size_t)m->N * m->d));
    *out = st->D[j];
    return 0;
}

int stream_forward(FastModel *m, int s, const bf16 **head) {
    FastStream *st = m->mix;
    const int L = m->L, l = s / 2;
    const bf16 *x = NULL; /* [N,d] the stream's input of step s */
    if (st->kind == STREAM_ATTNRES) {
        TRY(attnres_forward(m, s));
        x = st->in[s];
    } else if (s % 2) {
        x = m->acts[l].h; /* inside a block: h = x + W_o·U */
    } else if (s == 0) {
        x = m->emb;
    } else if (st->kind == STREAM_DENSEFORMER) {
        TRY(dense_input(m, l, &x));
    } else {
        x = m->acts[l - 1].out;
    }
    const bf16 *res = st->kind == STREAM_ATTNRES ? NULL : x; /* AttnRes' sublayers write raw outputs */
    if (s == 2 * L) {
        *head = x;
        return 0;
    }
    FastActs *a = &m->acts[l];
    if (s % 2) {
        a->h_in = x, a->h_res = res;
        return 0;
    }
    a->x_res = res;
    a->x_in = x;
    if (st->xn[l]) { /* hidden residual: the norm reads hx·x + hh·H_0 */
        TRY(depth_mix(st->xn[l], NULL, NULL, 0, x, m->emb, st->hx[l], st->hh[l], (size_t)m->N * m->d));
        a->x_in = st->xn[l];
    }
    return 0;
}

/* ------------------------------------------------------------------ backward */

int stream_backward_begin(FastModel *m) {
    FastStream *st = m->mix;
    const size_t bytes = (size_t)m->N * m->d * sizeof(float);
    if (st->demb) CUDA_CHECK(cudaMemsetAsync(st->demb, 0, bytes, ops_stream));
    for (int j = 0; st->kind == STREAM_DENSEFORMER && j <= m->L; j++)
        CUDA_CHECK(cudaMemsetAsync(st->dX[j], 0, bytes, ops_stream));
    for (int s = 0; st->kind == STREAM_ATTNRES && s <= 2 * m->L; s++)
        CUDA_CHECK(cudaMemsetAsync(st->dy[s], 0, bytes, ops_stream));
    return 0;
}

int stream_norm_backward(FastModel *m, int s, const bf16 *norm_weight, const float *rstd) {
    FastStream *st = m->mix;
    const FastActs *a = &m->acts[s / 2];
    const int N = m->N, d = m->d;
    const size_t Nd = (size_t)N * d;
    const bf16 *inp = s % 2 ? a->h_in : a->x_in, *res = s % 2 ? a->h_res : a->x_res;
    if (!res) CUDA_CHECK(cudaMemsetAsync(m->dres32, 0, Nd * sizeof(float), ops_stream)); /* no path around the sublayer */
    if (s % 2 || !st->xn[s / 2]) return rmsnorm_backward(m->dres32, m->dres16, m->dln32, inp, norm_weight, rstd, N, d);
    /* hidden residual: d(norm input) splits into hx·(to x) and hh·(to H_0) */
    CUDA_CHECK(cudaMemsetAsync(st->dnorm, 0, Nd * sizeof(float), ops_stream));
    TRY(rmsnorm_backward(st->dnorm, NULL, m->dln32, inp, norm_weight, rstd, N, d));
    LAUNCH_VEC(hidden_backward_kernel, Nd, vec_fits(Nd, {m->dres32, m->dres16, st->demb, st->dnorm}), m->dres32,
               m->dres16, st->demb, st->dnorm, st->hx[s / 2], st->hh[s / 2], Nd);
    LAUNCH_CHECK();
    return 0;
}

/* DenseFormer at step 2j: dres32 = dLoss/dD_j (the layer's input, its residual path included). */
static int dense_backward(FastModel *m, int j) {
    FastStream *st = m->mix;
    const size_t Nd = (size_t)m->N * m->d;
    if (j == 0) return grad_sum(m->dres32, m->dres16, m->dres32, st->dX[0], Nd); /* D_0 = X_0 = embedding */
    const int n = st->plan->dwa_n[j - 1];
    if (!n) return grad_sum(m->dres32, m->dres16, m->dres32, st->dX[j], Nd); /* D_j = X_j */
    const size_t row = (size_t)(j - 1) * (m->L + 1), a_off = st->alpha_off[j - 1];
    const int *srcx = st->plan->dwa_src + row;
    /* dα_c = ⟨dD, X_c⟩ (deterministic block sums, at most FAST_MAX_LAYERS weights a call) */
    for (int c0 = 0; c0 < n; c0 += FAST_MAX_LAYERS) {
        LambdaGradArgs lg;
        lg.n = n - c0 < FAST_MAX_LAYERS ? n - c0 : FAST_MAX_LAYERS;
        for (int c = 0; c < lg.n; c++) {
            const int x = srcx[c0 + c];
            lg.src[c] = x == 0 ? m->emb : m->acts[x - 1].out;
            lg.grad[c] = m->grads + a_off + c0 + c;
        }
        TRY(lambda_backward(&lg, m->dres32, Nd, st->partial));
    }
    LAUNCH(dwa_backward_kernel, cdiv(Nd, 256), 256, 0, ops_stream)(st->dwa_dsrc + row, m->params16 + a_off, n,
                                                                  m->dres32, Nd);
    LAUNCH_CHECK();
    return grad_sum(m->dres32, m->dres16, st->dX[j], NULL, Nd); /* every DWA reading X_j has run */
}

/* AttnRes at step s: dres32 = d(in_s); afterwards dres32 = dLoss/dy_s. */
static int attnres_backward(FastModel *m, int s) {
    FastStream *st = m->mix;
    const int N = m->N, d = m->d, S = 2 * m->L + 1;
    LAUNCH(attnres_backward_kernel, cdiv(N, ATTNRES_WARPS), 32 * ATTNRES_WARPS, 0, ops_stream)(
        st->dyp, st->dwtok, m->dres32, st->y, st->lo + (size_t)s * S, st->hi + (size_t)s * S, st->plan->n_src[s],
        m->params16 + st->q_off[s], N, d, st->eps);
    LAUNCH_CHECK();
    TRY(colsum_add(m->grads + st->q_off[s], st->colpart, st->dwtok, N, d));
    return grad_sum(m->dres32, m->dres16, st->dy[s], NULL, (size_t)N * d);
}

int stream_backward(FastModel *m, int s) {
    FastStream *st = m->mix;
    const size_t Nd = (size_t)m->N * m->d;
    if (st->kind == STREAM_ATTNRES) {
        TRY(attnres_backward(m, s));
    } else if (st->kind == STREAM_DENSEFORMER && s % 2 == 0) {
        TRY(dense_backward(m, s / 2));
    }
    /* the embedding output's gradient: the hidden residuals' share too */
    if (s == 0 && st->demb) TRY(grad_sum(m->dres32, NULL, m->dres32, st->demb, Nd));
    return 0;
}

FAST_NS_END
