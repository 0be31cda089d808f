/* stream.cu: the sublayers' inputs on CUDA (interface and numbering in stream.cuh):
 *
 *   PLAIN        x_{l+1} = layer output (the layer adds its residuals itself)
 *   DENSEFORMER  D_0 = X_0 = y_0; layer l reads D_l and writes X_{l+1}; after block j a DWA
 *                D_j = Σ_c α_{j,c}·X_{src_c} (ref/stream.c's dense_forward)
 *   ATTNRES      in_s = Σ_g a_g S_g, a = softmax_g(r_g·⟨w_s, S_g⟩), r_g = rsqrt(mean(S_g²) + eps),
 *                S_g = Σ_{k∈[lo,hi)} y_k (full: one y per source; block: sums of m sublayers)
 *   HC / MHC     n streams H_s [N,n,d] per token, H_0[i] = y_0; in_s = Σ_i a_i H_s[i],
 *                H_{s+1}[j] = Σ_i R[i,j] H_s[i] + b_j y_{s+1}, the head reads Σ_i H_2L[i]; the
 *                maps (a, R, b) of step s from H_s (ref/stream.c's hc_maps, mhc_maps)
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

/* pass 1: partial[chunk, c] = Σ of x[r, c] (row stride ld) over the chunk's rows, in row order */
__global__ void colsum_partial_kernel(float *partial, const float *x, int N, int C, int ld) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, chunk = blockIdx.y;
    if (c >= C) return;
    const int r1 = min((chunk + 1) * COLSUM_ROWS, N);
    float s = 0;
    for (int r = chunk * COLSUM_ROWS; r < r1; r++) s += x[(size_t)r * ld + c];
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

/* ------------------------------------------------------------------ HC / mHC kernels
 * ref/stream.c's streams_forward, hc_maps, mhc_maps and their backwards, one warp per token
 * (HC's maps: one warp per token and stream). Sums over d or n·d are each lane's strided
 * partial then an xor shuffle: a fixed order. Maps, their statistics and every gradient are
 * fp32; the streams H are bf16 activations (rounded once, after their fp32 sum). */

#define HC_WARPS 4       /* rows per block, one warp each */
#define HC_MAX_N 16      /* common/model/stream.c's bound on n */

__device__ __forceinline__ float stream_sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

/* H_s[t,j,c] = Σ_i R[t,i,j]·Hp[t,i,c] + b[t,j]·y[t,c] (s >= 1, fp32 in ref's order: b·y first,
 * then i ascending), or H_0[t,j,c] = y_0[t,c] (Hp == NULL).
 * H, Hp [N,n,d] bf16, y [N,d], R [N,n,n] (row = source i), b [N,n] */
__global__ void streams_update_kernel(bf16 *H, const bf16 *Hp, const bf16 *y, const float *R, const float *b, int N,
                                      int n, int d) {
    const size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= (size_t)N * n * d) return;
    const size_t t = q / ((size_t)n * d);
    const int j = (int)(q / d % n), c = (int)(q % d);
    const float yv = stream_bf(y[t * d + c]);
    if (!Hp) {
        H[q] = __float2bfloat16(yv);
        return;
    }
    float v = b[t * n + j] * yv;
    for (int i = 0; i < n; i++) v += R[(t * n + i) * n + j] * stream_bf(Hp[(t * n + i) * d + c]);
    H[q] = __float2bfloat16(v);
}

/* out[t,c] = Σ_i a[t,i]·H[t,i,c] (the sublayer's input), or with a == NULL Σ_i H[t,i,c] (the
 * head's).  out [N,d] bf16, H [N,n,d], a [N,n] */
__global__ void streams_read_kernel(bf16 *out, const bf16 *H, const float *a, int N, int n, int d) {
    const size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= (size_t)N * d) return;
    const size_t t = q / d;
    const int c = (int)(q % d);
    float v = 0;
    for (int i = 0; i < n; i++) v += (a ? a[t * n + i] : 1.0f) * stream_bf(H[(t * n + i) * d + c]);
    out[q] = __float2bfloat16(v);
}

/* HC's maps, one warp per row r = (token t, stream i): H̄ = x·rstd (x = H[t,i]),
 * tm = tanh(H̄·W_m), tb = tanh(H̄·W_β), tr_j = tanh(H̄·W_r[:,j]);
 * a = α_m[i] + s_α·tm, R[i,j] = α_r[i,j] + s_α·tr_j, b = β[i] + s_β·tb.
 * nrm [N·n], aux [N, 2n+n²] (tm, tb, tr as ref), amap/bmap [N,n], rmap [N,n,n]; parameters bf16 */
__global__ void __launch_bounds__(32 * HC_WARPS)
    hc_maps_kernel(float *nrm, float *aux, float *amap, float *rmap, float *bmap, const bf16 *H, const bf16 *am,
                   const bf16 *ar, const bf16 *be, const bf16 *wm, const bf16 *wr, const bf16 *wb, const bf16 *sa_p,
                   const bf16 *sb_p, int N, int n, int d, float eps) {
    const int lane = threadIdx.x % 32, r = blockIdx.x * HC_WARPS + threadIdx.x / 32;
    if (r >= N * n) return;
    const int t = r / n, i = r % n, W = 2 * n + n * n;
    const bf16 *x = H + (size_t)r * d;
    float ss = 0, zm = 0, zb = 0, zr[HC_MAX_N];
    for (int c = lane; c < d; c += 32) ss += stream_bf(x[c]) * stream_bf(x[c]);
    const float rr = rsqrtf(stream_warp_sum(ss) / d + eps);
    for (int j = 0; j < n; j++) zr[j] = 0;
    for (int c = lane; c < d; c += 32) {
        const float xn = stream_bf(x[c]) * rr;
        zm += xn * stream_bf(wm[c]);
        zb += xn * stream_bf(wb[c]);
        for (int j = 0; j < n; j++) zr[j] += xn * stream_bf(wr[(size_t)c * n + j]);
    }
    zm = stream_warp_sum(zm), zb = stream_warp_sum(zb);
    for (int j = 0; j < n; j++) zr[j] = stream_warp_sum(zr[j]);
    if (lane) return;
    const float sa = stream_bf(*sa_p), sb = stream_bf(*sb_p), tm = tanhf(zm), tb = tanhf(zb);
    float *ax = aux + (size_t)t * W;
    nrm[r] = rr;
    ax[i] = tm, ax[n + i] = tb;
    for (int j = 0; j < n; j++) {
        const float tr = tanhf(zr[j]);
        ax[2 * n + i * n + j] = tr;
        rmap[(size_t)r * n + j] = stream_bf(ar[i * n + j]) + sa * tr;
    }
    amap[r] = stream_bf(am[i]) + sa * tm;
    bmap[r] = stream_bf(be[i]) + sb * tb;
}

/* Sinkhorn-Knopp on one token's matrices (ref's stream_sinkhorn), kept as logarithms: lm[0] =
 * the exponents E (the matrix is exp(E)), then alternately rows (even k) and columns (odd k)
 * of exp(lm[k]) normalised into exp(lm[k+1]): lm[k+1] = lm[k] − log Σ_line exp(lm[k]), the sum
 * taken with the line's largest term factored out. The same matrices as ref's in exact
 * arithmetic; in fp32, exp(E) itself overflows past E = 88 and a line of it can underflow to
 * all zeros under −103 (ref's double: 709, −745), which gave NaN (issue 48), the logarithms
 * never do. Lane u < n does line u, summing in index order. Every lane of the warp calls it. */
__device__ void sinkhorn_warp(float *lm, int n, int iters) {
    const int lane = threadIdx.x % 32, nn = n * n;
    for (int k = 0; k < 2 * iters; k++) {
        const float *a = lm + (size_t)k * nn;
        float *b = lm + (size_t)(k + 1) * nn;
        if (lane < n) {
            float mx = -INFINITY, sum = 0;
            for (int v = 0; v < n; v++) mx = fmaxf(mx, a[k % 2 ? v * n + lane : lane * n + v]);
            for (int v = 0; v < n; v++) sum += expf(a[k % 2 ? v * n + lane : lane * n + v] - mx);
            const float lse = mx + logf(sum);
            for (int v = 0; v < n; v++) {
                const int at = k % 2 ? v * n + lane : lane * n + v;
                b[at] = a[at] - lse;
            }
        }
        __syncwarp();
    }
}

/* Backward through every normalisation (ref's sinkhorn_backward) in the logarithms: with
 * h = dLoss/dlm[k] (= ref's gradient ⊙ the matrix) and b = exp(lm[k+1]), ref's
 * da = (db − Σ_line db·b) / sum is h_a = h_b − b·Σ_line h_b, without the division by a line
 * sum that may be tiny. g [n²] = dLoss/dexp(lm[2·iters]) (the map's gradient) in; out (in g
 * or tmp: the returned one) dLoss/dlm[0], the exponents' gradient (ref's dM ⊙ M). Every lane
 * of the warp calls it. */
__device__ float *sinkhorn_backward_warp(const float *lm, float *g, float *tmp, int n, int iters) {
    const int lane = threadIdx.x % 32, nn = n * n;
    const float *last = lm + (size_t)2 * iters * nn;
    for (int k = lane; k < nn; k += 32) g[k] *= expf(last[k]);
    __syncwarp();
    for (int k = 2 * iters - 1; k >= 0; k--) {
        const float *b = lm + (size_t)(k + 1) * nn;
        if (lane < n) {
            float hs = 0;
            for (int v = 0; v < n; v++) hs += g[k % 2 ? v * n + lane : lane * n + v];
            for (int v = 0; v < n; v++) {
                const int at = k % 2 ? v * n + lane : lane * n + v;
                tmp[at] = g[at] - expf(b[at]) * hs;
            }
        }
        __syncwarp();
        float *sw = g;
        g = tmp, tmp = sw;
    }
    return g;
}

/* mHC's φ[k, j] of the concatenated projections j < 2n + n² (pre, post, res). */
__device__ __forceinline__ float mhc_phi(const bf16 *fpre, const bf16 *fpost, const bf16 *fres, int n, size_t k,
                                         int j) {
    return stream_bf(j < n ? fpre[k * n + j] : j < 2 * n ? fpost[k * n + j - n] : fres[k * n * n + j - 2 * n]);
}

/* The exponents α_res·x̃φ_res + b_res of token t into lm[0] [n²] (sinkhorn_warp takes logarithms). */
__device__ void mhc_res_exponents(float *lm, const float *pr, const bf16 *bres, float ares, int n) {
    for (int k = threadIdx.x % 32; k < n * n; k += 32) lm[k] = ares * pr[2 * n + k] + stream_bf(bres[k]);
    __syncwarp();
}

/* mHC's maps, one warp per token: x̃ = vec(H)·rstd; pr = x̃·[φ_pre φ_post φ_res];
 * a = σ(α_pre·pr_pre + b_pre), b = 2σ(α_post·pr_post + b_post),
 * R[i,j] = Sinkhorn(exp(α_res·pr_res + b_res))[j,i].
 * nrm [N], aux [N, 2n+n²], amap/bmap [N,n], rmap [N,n,n], sk [N, SKW] scratch */
__global__ void __launch_bounds__(32 * HC_WARPS)
    mhc_maps_kernel(float *nrm, float *aux, float *amap, float *rmap, float *bmap, float *sk, int skw,
                    const bf16 *H, const bf16 *fpre, const bf16 *fpost, const bf16 *fres, const bf16 *bpre,
                    const bf16 *bpost, const bf16 *bres, const bf16 *apre_p, const bf16 *apost_p, const bf16 *ares_p,
                    int N, int n, int d, int iters, float eps) {
    const int lane = threadIdx.x % 32, t = blockIdx.x * HC_WARPS + threadIdx.x / 32;
    if (t >= N) return;
    const int nd = n * d, nn = n * n, W = 2 * n + nn;
    const bf16 *x = H + (size_t)t * nd;
    float *pr = aux + (size_t)t * W, *M = sk + (size_t)t * skw;
    float ss = 0;
    for (int k = lane; k < nd; k += 32) ss += stream_bf(x[k]) * stream_bf(x[k]);
    const float rr = rsqrtf(stream_warp_sum(ss) / nd + eps);
    for (int j = 0; j < W; j++) {
        float z = 0;
        for (int k = lane; k < nd; k += 32) z += stream_bf(x[k]) * rr * mhc_phi(fpre, fpost, fres, n, k, j);
        z = stream_warp_sum(z);
        if (lane == 0) pr[j] = z;
    }
    if (lane == 0) nrm[t] = rr;
    __syncwarp();
    const float apre = stream_bf(*apre_p), apost = stream_bf(*apost_p), ares = stream_bf(*ares_p);
    if (lane < n) {
        amap[(size_t)t * n + lane] = stream_sigmoid(apre * pr[lane] + stream_bf(bpre[lane]));
        bmap[(size_t)t * n + lane] = 2 * stream_sigmoid(apost * pr[n + lane] + stream_bf(bpost[lane]));
    }
    mhc_res_exponents(M, pr, bres, ares, n);
    sinkhorn_warp(M, n, iters);
    const float *Hres = M + (size_t)2 * iters * nn; /* its logarithms */
    for (int k = lane; k < nn; k += 32) { /* R's [source, target] layout: R[b,a] = Hres[a,b] */
        const int a = k / n, b = k % n;
        rmap[(size_t)t * nn + b * n + a] = expf(Hres[k]);
    }
}

/* in_s = Σ_i a_i H[i] backward for one token's stream i: da_i = ⟨din, H_i⟩, dH_i += a_i·din;
 * every lane returns da_i. */
__device__ float streams_read_backward(float *dH, const bf16 *H, const float *din, float a, int d) {
    const int lane = threadIdx.x % 32;
    float s = 0;
    for (int c = lane; c < d; c += 32) {
        s += din[c] * stream_bf(H[c]);
        dH[c] += a * din[c];
    }
    return stream_warp_sum(s);
}

/* HC at step s < 2L, one warp per row r = (t, i), din = d(in_s) [N,d] fp32: the input's
 * backward (da), then the maps' (hc_maps_backward in ref), with dR, db [N,n,n], [N,n] from
 * the step above:
 *   zm = da·s_α(1−tm²), zb = db·s_β(1−tb²), zr_j = dR[i,j]·s_α(1−tr_j²)      (tanh)
 *   g = zm·W_m + zb·W_β + Σ_j zr_j·W_r[:,j], dH[t,i] += rstd·g − rstd³·⟨g,x⟩/d·x   (RMSNorm)
 * writes da [N,n], zrow [N·n, 2+n] = (zm, zb, zr) and sab [N·n, 2] (the scales' shares). */
__global__ void __launch_bounds__(32 * HC_WARPS)
    hc_maps_backward_kernel(float *dH, float *da, float *zrow, float *sab, const float *din, const bf16 *H,
                            const float *nrm, const float *aux, const float *amap, const float *dR, const float *db,
                            const bf16 *wm, const bf16 *wr, const bf16 *wb, const bf16 *sa_p, const bf16 *sb_p, int N,
                            int n, int d) {
    const int lane = threadIdx.x % 32, r = blockIdx.x * HC_WARPS + threadIdx.x / 32;
    if (r >= N * n) return;
    const int t = r / n, i = r % n, W = 2 * n + n * n;
    const bf16 *x = H + (size_t)r * d;
    float *dx = dH + (size_t)r * d;
    const float dai = streams_read_backward(dx, x, din + (size_t)t * d, amap[r], d);
    const float *tm = aux + (size_t)t * W, *tb = tm + n, *tr = tm + 2 * n + i * n, *dRi = dR + (size_t)r * n;
    const float sa = stream_bf(*sa_p), sb = stream_bf(*sb_p), rr = nrm[r], dbi = db[r];
    const float zm = dai * sa * (1 - tm[i] * tm[i]), zb = dbi * sb * (1 - tb[i] * tb[i]);
    float zr[HC_MAX_N], gsa = dai * tm[i];
    for (int j = 0; j < n; j++) {
        zr[j] = dRi[j] * sa * (1 - tr[j] * tr[j]);
        gsa += dRi[j] * tr[j];
    }
    float dd = 0;
    for (int c = lane; c < d; c += 32) {
        float g = zm * stream_bf(wm[c]) + zb * stream_bf(wb[c]);
        for (int j = 0; j < n; j++) g += zr[j] * stream_bf(wr[(size_t)c * n + j]);
        dd += g * stream_bf(x[c]);
    }
    const float c3 = rr * rr * rr * stream_warp_sum(dd) / d;
    for (int c = lane; c < d; c += 32) {
        float g = zm * stream_bf(wm[c]) + zb * stream_bf(wb[c]);
        for (int j = 0; j < n; j++) g += zr[j] * stream_bf(wr[(size_t)c * n + j]);
        dx[c] += rr * g - c3 * stream_bf(x[c]);
    }
    if (lane) return;
    da[r] = dai;
    float *z = zrow + (size_t)r * (2 + n);
    z[0] = zm, z[1] = zb;
    for (int j = 0; j < n; j++) z[2 + j] = zr[j];
    sab[(size_t)r * 2] = gsa;
    sab[(size_t)r * 2 + 1] = dbi * tb[i];
}

/* mHC at step s < 2L, one warp per token (mhc_maps_backward in ref): the input's backward,
 * then σ' and (2σ)', Sinkhorn replayed from the kept projections and back through it and exp,
 * then the projections and the RMSNorm of vec H:
 *   dproj = (zpre·α_pre, zpost·α_post, z·α_res), z = (Sinkhorn backward of dRᵀ)·exp(·) (in logarithms)
 *   g = φ·dproj, dH[t] += rstd·g − rstd³·⟨g,x⟩/(n·d)·x
 * writes zrow [N, 2n+n²] = dproj and sab [N, 2n+n²+3] = (zpre, zpost, z, Σ zpre·pr_pre,
 * Σ zpost·pr_post, Σ z·pr_res): the bias and scale gradients' shares. */
__global__ void __launch_bounds__(32 * HC_WARPS)
    mhc_maps_backward_kernel(float *dH, float *zrow, float *sab, float *sk, int skw, const float *din, const bf16 *H,
                             const float *nrm, const float *aux, const float *amap, const float *bmap,
                             const float *dR, const float *db, const bf16 *fpre, const bf16 *fpost, const bf16 *fres,
                             const bf16 *bres, const bf16 *apre_p, const bf16 *apost_p, const bf16 *ares_p, int N,
                             int n, int d, int iters) {
    const int lane = threadIdx.x % 32, t = blockIdx.x * HC_WARPS + threadIdx.x / 32;
    if (t >= N) return;
    const int nd = n * d, nn = n * n, W = 2 * n + nn;
    const bf16 *x = H + (size_t)t * nd;
    const float *pr = aux + (size_t)t * W, rr = nrm[t];
    const float apre = stream_bf(*apre_p), apost = stream_bf(*apost_p), ares = stream_bf(*ares_p);
    float *dx = dH + (size_t)t * nd, *dp = zrow + (size_t)t * W, *sm = sab + (size_t)t * (W + 3);
    float *M = sk + (size_t)t * skw, *g = M + (size_t)(2 * iters + 1) * nn, *tmp = g + nn;
    for (int j = 0; j < n; j++) {
        const float daj = streams_read_backward(dx + (size_t)j * d, x + (size_t)j * d, din + (size_t)t * d,
                                                amap[(size_t)t * n + j], d);
        if (lane == 0) {
            const float a = amap[(size_t)t * n + j], b = bmap[(size_t)t * n + j];
            const float zpre = daj * a * (1 - a), zpost = db[(size_t)t * n + j] * b * (1 - b / 2);
            sm[j] = zpre, sm[n + j] = zpost;
            dp[j] = zpre * apre, dp[n + j] = zpost * apost;
        }
    }
    mhc_res_exponents(M, pr, bres, ares, n);
    sinkhorn_warp(M, n, iters);
    for (int k = lane; k < nn; k += 32) g[k] = dR[(size_t)t * nn + (k % n) * n + k / n]; /* g[a,b] = dR[b,a] */
    __syncwarp();
    g = sinkhorn_backward_warp(M, g, tmp, n, iters);
    for (int k = lane; k < nn; k += 32) {
        const float z = g[k]; /* the exponent's gradient: through exp already */
        sm[2 * n + k] = z;
        dp[2 * n + k] = z * ares;
    }
    __syncwarp();
    if (lane == 0) {
        float s0 = 0, s1 = 0, s2 = 0;
        for (int j = 0; j < n; j++) s0 += sm[j] * pr[j], s1 += sm[n + j] * pr[n + j];
        for (int k = 0; k < nn; k++) s2 += sm[2 * n + k] * pr[2 * n + k];
        sm[W] = s0, sm[W + 1] = s1, sm[W + 2] = s2;
    }
    float dd = 0;
    for (int k = lane; k < nd; k += 32) {
        float gk = 0;
        for (int j = 0; j < W; j++) gk += mhc_phi(fpre, fpost, fres, n, k, j) * dp[j];
        dd += gk * stream_bf(x[k]);
    }
    const float c3 = rr * rr * rr * stream_warp_sum(dd) / nd;
    for (int k = lane; k < nd; k += 32) {
        float gk = 0;
        for (int j = 0; j < W; j++) gk += mhc_phi(fpre, fpost, fres, n, k, j) * dp[j];
        dx[k] += rr * gk - c3 * stream_bf(x[k]);
    }
}

/* G[k, j] += Σ_r x[r,k]·rstd[r]·z[r, j] over rows r in order: a projection weight's gradient
 * (dW = Σ H̄ ⊗ dz), one thread per element.  G [K,W], x [R,K] bf16, rstd [R], z [R, ldz] */
__global__ void norm_outer_kernel(float *G, const bf16 *x, const float *rstd, const float *z, int R, int K, int W,
                                  int ldz) {
    const size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= (size_t)K * W) return;
    const size_t k = q / W;
    const int j = (int)(q % W);
    float s = 0;
    for (int r = 0; r < R; r++) s += stream_bf(x[(size_t)r * K + k]) * rstd[r] * z[(size_t)r * ldz + j];
    G[q] += s;
}

/* The update's backward for one token (one warp), dH = dLoss/dH_s [N,n,d]:
 *   db[j] = ⟨dH_j, y⟩, dR[i,j] = ⟨dH_j, Hp_i⟩ (the maps of step s−1),
 *   dy = Σ_j b_j·dH_j → dres (+ bf16), dHp_i = Σ_j R[i,j]·dH_j (overwritten).
 * With Hp == NULL (s = 0: H_0[i] = y_0) only dy = Σ_i dH_i. */
__global__ void __launch_bounds__(32 * HC_WARPS)
    streams_update_backward_kernel(float *dres, bf16 *dres16, float *dHp, float *dR, float *db, const float *dH,
                                   const bf16 *Hp, const bf16 *y, const float *R, const float *b, int N, int n,
                                   int d) {
    const int lane = threadIdx.x % 32, t = blockIdx.x * HC_WARPS + threadIdx.x / 32;
    if (t >= N) return;
    const size_t row = (size_t)t * n * d;
    const float *g = dH + row;
    if (Hp) {
        for (int j = 0; j < n; j++) {
            float sy = 0;
            for (int c = lane; c < d; c += 32) sy += g[(size_t)j * d + c] * stream_bf(y[(size_t)t * d + c]);
            sy = stream_warp_sum(sy);
            if (lane == 0) db[(size_t)t * n + j] = sy;
            for (int i = 0; i < n; i++) {
                float sr = 0;
                for (int c = lane; c < d; c += 32) sr += g[(size_t)j * d + c] * stream_bf(Hp[row + (size_t)i * d + c]);
                sr = stream_warp_sum(sr);
                if (lane == 0) dR[((size_t)t * n + i) * n + j] = sr;
            }
        }
    }
    const float *Rt = Hp ? R + (size_t)t * n * n : NULL, *bt = Hp ? b + (size_t)t * n : NULL;
    for (int c = lane; c < d; c += 32) {
        float v = 0;
        for (int j = 0; j < n; j++) v += (Hp ? bt[j] : 1.0f) * g[(size_t)j * d + c];
        dres[(size_t)t * d + c] = v;
        dres16[(size_t)t * d + c] = __float2bfloat16(v);
        for (int i = 0; Hp && i < n; i++) {
            float h = 0;
            for (int j = 0; j < n; j++) h += Rt[i * n + j] * g[(size_t)j * d + c];
            dHp[row + (size_t)i * d + c] = h;
        }
    }
}

/* The head reads Σ_i H_2L[i]: dH[t,i,c] = din[t,c].  dH [N,n,d], din [N,d] */
__global__ void streams_head_backward_kernel(float *dH, const float *din, int N, int n, int d) {
    const size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= (size_t)N * n * d) return;
    dH[q] = din[q / ((size_t)n * d) * d + q % d];
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

/* out [C] += Σ_r x[r, :] over N rows of stride ld (fixed order).  partial [ceil(N/256), C] */
static int colsum_add_ld(float *out, float *partial, const float *x, int N, int C, int ld) {
    const int chunks = (int)cdiv(N, COLSUM_ROWS);
    LAUNCH(colsum_partial_kernel, dim3(cdiv(C, 128), chunks), 128, 0, ops_stream)(partial, x, N, C, ld);
    LAUNCH_CHECK();
    LAUNCH(colsum_reduce_kernel, cdiv(C, 128), 128, 0, ops_stream)(out, partial, chunks, C);
    LAUNCH_CHECK();
    return 0;
}

static int colsum_add(float *out, float *partial, const float *x, int N, int C) {
    return colsum_add_ld(out, partial, x, N, C, C);
}

/* ------------------------------------------------------------------ create / destroy */

static void *carve(char *base, size_t *off, size_t n, size_t size) {
    const size_t at = (*off + 255) & ~(size_t)255;
    *off = at + n * size;
    return base ? base + at : NULL;
}
#define CARVE(ptr, n) ((ptr) = (__typeof__(ptr))carve(base, &off, (size_t)(n), sizeof *(ptr)))

/* mHC's per-token Sinkhorn scratch: the 2·iters+1 matrices and the backward's two [n²]. */
static size_t hc_scratch_width(const FastStream *st) { return (size_t)(2 * st->iters + 3) * st->n * st->n; }

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
    if (st->kind == STREAM_HC || st->kind == STREAM_MHC) {
        const size_t n = st->n, nn = n * n, W = 2 * n + nn;
        for (int s = 0; s < S; s++) {
            CARVE(st->H[s], N * n * d);
            CARVE(st->in[s], Nd);
            if (s == S - 1) break;
            CARVE(st->nrm[s], N * n);
            CARVE(st->amap[s], N * n);
            CARVE(st->rmap[s], N * nn);
            CARVE(st->bmap[s], N * n);
            CARVE(st->aux[s], N * W);
        }
        CARVE(st->dHbuf[0], N * n * d);
        CARVE(st->dHbuf[1], N * n * d);
        CARVE(st->da, N * n);
        CARVE(st->dR, N * nn);
        CARVE(st->db, N * n);
        CARVE(st->zrow, N * (n * (2 + n) > W ? n * (2 + n) : W));
        CARVE(st->sab, N * (W + 3));
        st->sk = NULL;
        if (st->kind == STREAM_MHC) CARVE(st->sk, N * hc_scratch_width(st));
        CARVE(st->colpart, (size_t)cdiv(N, COLSUM_ROWS) * (W + 3 > d ? W + 3 : d));
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
    st->n = st->plan->n_streams, st->iters = st->plan->iters;
    if ((st->kind == STREAM_HC || st->kind == STREAM_MHC) && (st->n < 1 || st->n > HC_MAX_N))
        return vrl_error("fast model: %d streams (the kernels take 1 to %d)", st->n, HC_MAX_N);
    for (int s = 0; (st->kind == STREAM_HC || st->kind == STREAM_MHC) && s < 2 * L; s++)
        for (int k = 0; k < STREAM_STEP_TENSORS; k++) st->po[s][k] = spec->layout.stream.at[s][k].offset;
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

/* y_s: the embedding (s = 0) or what sublayer s−1 wrote (raw: no residual around it). */
static const bf16 *stream_y(const FastModel *m, int s) {
    return s == 0 ? m->emb : s % 2 ? m->acts[(s - 1) / 2].h : m->acts[(s - 2) / 2].out;
}

#define HC_PARAM(s, k) (m->params16 + st->po[s][k])

/* HC / mHC at step s: H_s from H_{s−1}, the maps of step s and in_s (s = 2L: Σ_i H_2L[i]). */
static int streams_forward(FastModel *m, int s) {
    FastStream *st = m->mix;
    const int N = m->N, d = m->d, n = st->n;
    const size_t Nnd = (size_t)N * n * d;
    LAUNCH(streams_update_kernel, cdiv(Nnd, 256), 256, 0, ops_stream)(
        st->H[s], s ? st->H[s - 1] : NULL, stream_y(m, s), s ? st->rmap[s - 1] : NULL, s ? st->bmap[s - 1] : NULL, N,
        n, d);
    LAUNCH_CHECK();
    if (s < 2 * m->L && st->kind == STREAM_HC) {
        LAUNCH(hc_maps_kernel, cdiv((size_t)N * n, HC_WARPS), 32 * HC_WARPS, 0, ops_stream)(
            st->nrm[s], st->aux[s], st->amap[s], st->rmap[s], st->bmap[s], st->H[s], HC_PARAM(s, HC_AM),
            HC_PARAM(s, HC_AR), HC_PARAM(s, HC_B), HC_PARAM(s, HC_WM), HC_PARAM(s, HC_WR), HC_PARAM(s, HC_WB),
            HC_PARAM(s, HC_SA), HC_PARAM(s, HC_SB), N, n, d, st->eps);
        LAUNCH_CHECK();
    } else if (s < 2 * m->L) {
        LAUNCH(mhc_maps_kernel, cdiv(N, HC_WARPS), 32 * HC_WARPS, 0, ops_stream)(
            st->nrm[s], st->aux[s], st->amap[s], st->rmap[s], st->bmap[s], st->sk, (int)hc_scratch_width(st),
            st->H[s], HC_PARAM(s, MH_PHI_PRE), HC_PARAM(s, MH_PHI_POST), HC_PARAM(s, MH_PHI_RES),
            HC_PARAM(s, MH_B_PRE), HC_PARAM(s, MH_B_POST), HC_PARAM(s, MH_B_RES), HC_PARAM(s, MH_A_PRE),
            HC_PARAM(s, MH_A_POST), HC_PARAM(s, MH_A_RES), N, n, d, st->iters, st->eps);
        LAUNCH_CHECK();
    }
    LAUNCH(streams_read_kernel, cdiv((size_t)N * d, 256), 256, 0, ops_stream)(
        st->in[s], st->H[s], s < 2 * m->L ? st->amap[s] : NULL, N, n, d);
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
    const int raw = st->kind == STREAM_ATTNRES || st->kind == STREAM_HC || st->kind == STREAM_MHC;
    if (st->kind == STREAM_ATTNRES) {
        TRY(attnres_forward(m, s));
        x = st->in[s];
    } else if (raw) {
        TRY(streams_forward(m, s));
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
    const bf16 *res = raw ? NULL : x; /* AttnRes', HC's and mHC's sublayers write raw outputs */
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

int stream_norm_backward(FastModel *m, int s, const bf16 *norm_weight, const float *rstd, float *dweight) {
    FastStream *st = m->mix;
    const FastActs *a = &m->acts[s / 2];
    const int N = m->N, d = m->d;
    const size_t Nd = (size_t)N * d;
    const bf16 *inp = s % 2 ? a->h_in : a->x_in, *res = s % 2 ? a->h_res : a->x_res;
    if (!res) CUDA_CHECK(cudaMemsetAsync(m->dres32, 0, Nd * sizeof(float), ops_stream)); /* no path around the sublayer */
    if (s % 2 || !st->xn[s / 2])
        return rmsnorm_backward(m->dres32, m->dres16, dweight, m->norm_scratch, m->dln16, inp, norm_weight, rstd, N, d);
    /* hidden residual: d(norm input) splits into hx·(to x) and hh·(to H_0) */
    CUDA_CHECK(cudaMemsetAsync(st->dnorm, 0, Nd * sizeof(float), ops_stream));
    TRY(rmsnorm_backward(st->dnorm, NULL, dweight, m->norm_scratch, m->dln16, inp, norm_weight, rstd, N, d));
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

/* The maps' parameter gradients of step s from the rows the maps' backward left: the
 * projection weights (norm_outer), then the per-token shares summed over tokens (colsum). */
static int streams_param_grads(FastModel *m, int s) {
    FastStream *st = m->mix;
    const int N = m->N, d = m->d, n = st->n, nn = n * n, W = 2 * n + nn;
    float *G = m->grads;
    const size_t *o = st->po[s];
    if (st->kind == STREAM_HC) { /* rows (t, i) of H̄ [d] against zrow (zm, zb, zr) */
        const int R = N * n;
        const size_t woff[3] = {o[HC_WM], o[HC_WB], o[HC_WR]};
        const int wcols[3] = {1, 1, n}, zcol[3] = {0, 1, 2};
        for (int k = 0; k < 3; k++) {
            LAUNCH(norm_outer_kernel, cdiv((size_t)d * wcols[k], 128), 128, 0, ops_stream)(
                G + woff[k], st->H[s], st->nrm[s], st->zrow + zcol[k], R, d, wcols[k], 2 + n);
            LAUNCH_CHECK();
        }
        TRY(colsum_add(G + o[HC_AM], st->colpart, st->da, N, n));
        TRY(colsum_add(G + o[HC_AR], st->colpart, st->dR, N, nn));
        TRY(colsum_add(G + o[HC_B], st->colpart, st->db, N, n));
        TRY(colsum_add_ld(G + o[HC_SA], st->colpart, st->sab, R, 1, 2));
        return colsum_add_ld(G + o[HC_SB], st->colpart, st->sab + 1, R, 1, 2);
    }
    const size_t poff[3] = {o[MH_PHI_PRE], o[MH_PHI_POST], o[MH_PHI_RES]}; /* vec H̄ [n·d] against dproj */
    const int pcols[3] = {n, n, nn}, pz[3] = {0, n, 2 * n};
    for (int k = 0; k < 3; k++) {
        LAUNCH(norm_outer_kernel, cdiv((size_t)n * d * pcols[k], 128), 128, 0, ops_stream)(
            G + poff[k], st->H[s], st->nrm[s], st->zrow + pz[k], N, n * d, pcols[k], W);
        LAUNCH_CHECK();
    }
    const size_t soff[6] = {o[MH_B_PRE], o[MH_B_POST], o[MH_B_RES], o[MH_A_PRE], o[MH_A_POST], o[MH_A_RES]};
    const int scols[6] = {n, n, nn, 1, 1, 1}, sz[6] = {0, n, 2 * n, W, W + 1, W + 2};
    for (int k = 0; k < 6; k++) TRY(colsum_add_ld(G + soff[k], st->colpart, st->sab + sz[k], N, scols[k], W + 3));
    return 0;
}

/* HC / mHC at step s: dres32 = d(in_s) (s = 2L: the head's input); afterwards dres32 =
 * dLoss/dy_s, and dH (by the parity of s) = dLoss/dH_{s−1} for the next call. */
static int streams_backward(FastModel *m, int s) {
    FastStream *st = m->mix;
    const int N = m->N, d = m->d, n = st->n;
    float *dH = st->dHbuf[s % 2], *dHp = st->dHbuf[(s + 1) % 2];
    if (s == 2 * m->L) {
        LAUNCH(streams_head_backward_kernel, cdiv((size_t)N * n * d, 256), 256, 0, ops_stream)(dH, m->dres32, N, n, d);
        LAUNCH_CHECK();
    } else if (st->kind == STREAM_HC) {
        LAUNCH(hc_maps_backward_kernel, cdiv((size_t)N * n, HC_WARPS), 32 * HC_WARPS, 0, ops_stream)(
            dH, st->da, st->zrow, st->sab, m->dres32, st->H[s], st->nrm[s], st->aux[s], st->amap[s], st->dR, st->db,
            HC_PARAM(s, HC_WM), HC_PARAM(s, HC_WR), HC_PARAM(s, HC_WB), HC_PARAM(s, HC_SA), HC_PARAM(s, HC_SB), N, n,
            d);
        LAUNCH_CHECK();
        TRY(streams_param_grads(m, s));
    } else {
        LAUNCH(mhc_maps_backward_kernel, cdiv(N, HC_WARPS), 32 * HC_WARPS, 0, ops_stream)(
            dH, st->zrow, st->sab, st->sk, (int)hc_scratch_width(st), m->dres32, st->H[s], st->nrm[s], st->aux[s],
            st->amap[s], st->bmap[s], st->dR, st->db, HC_PARAM(s, MH_PHI_PRE), HC_PARAM(s, MH_PHI_POST),
            HC_PARAM(s, MH_PHI_RES), HC_PARAM(s, MH_B_RES), HC_PARAM(s, MH_A_PRE), HC_PARAM(s, MH_A_POST),
            HC_PARAM(s, MH_A_RES), N, n, d, st->iters);
        LAUNCH_CHECK();
        TRY(streams_param_grads(m, s));
    }
    /* dy_s (s = 0: the embedding's, Σ_i dH_0[i]); dR, db for step s−1's maps; dH_{s−1} */
    LAUNCH(streams_update_backward_kernel, cdiv(N, HC_WARPS), 32 * HC_WARPS, 0, ops_stream)(
        m->dres32, m->dres16, dHp, st->dR, st->db, dH, s ? st->H[s - 1] : NULL, stream_y(m, s),
        s ? st->rmap[s - 1] : NULL, s ? st->bmap[s - 1] : NULL, N, n, d);
    LAUNCH_CHECK();
    return 0;
}

int stream_backward(FastModel *m, int s) {
    FastStream *st = m->mix;
    const size_t Nd = (size_t)m->N * m->d;
    if (st->kind == STREAM_HC || st->kind == STREAM_MHC) {
        TRY(streams_backward(m, s));
    } else if (st->kind == STREAM_ATTNRES) {
        TRY(attnres_backward(m, s));
    } else if (st->kind == STREAM_DENSEFORMER && s % 2 == 0) {
        TRY(dense_backward(m, s / 2));
    }
    /* the embedding output's gradient: the hidden residuals' share too */
    if (s == 0 && st->demb) TRY(grad_sum(m->dres32, NULL, m->dres32, st->demb, Nd));
    return 0;
}

FAST_NS_END
