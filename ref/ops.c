/* ops.c: forward and backward of every reference op (shapes in ops.h).
 *
 * Plain loops in the order a reader would write them; matmuls go to BLAS. Sums that
 * decide a normalisation (RMSNorm's mean square, softmax denominators, the loss) are
 * accumulated in double, so the float32 build is at least as accurate as torch's fp32
 * and the float64 build is exact to rounding. Nothing here is threaded except BLAS,
 * so results do not depend on the number of cores. */
#include "ref/ops.h"

#include <string.h>
#include <time.h>

#include "ref/profile.h"

/* ------------------------------------------------------------------ matmul */

/* Seconds spent inside BLAS products (profile.h, for bench_ref_train). The reference is
 * single-threaded outside BLAS, so a plain static counter per precision suffices. */
static double matmul_seconds;
double REF(ref_matmul_seconds)(void) { return matmul_seconds; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC) {
    double t0 = now();
    /* out [N,OC] = inp [N,C] · weightᵀ [C,OC] */
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1, inp, C, weight, C, 0, out, OC);
    matmul_seconds += now() - t0;
}

void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight, int N,
                     int C, int OC) {
    double t0 = now();
    /* dinp [N,C] += dout [N,OC] · weight [OC,C] */
    if (dinp) cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1, dout, OC, weight, C, 1, dinp, C);
    /* dweight [OC,C] += doutᵀ [OC,N] · inp [N,C] */
    if (dweight)
        cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1, dout, OC, inp, C, 1, dweight, C);
    matmul_seconds += now() - t0;
}

/* ------------------------------------------------------------------ embedding */

void embedding_forward(real *out, const int32_t *tokens, const real *wte, int N, int C) {
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)tokens[n] * C, (size_t)C * sizeof(real));
}

void embedding_backward(real *dwte, const real *dout, const int32_t *tokens, int N, int C) {
    /* Positions are visited in order, so repeated tokens accumulate deterministically. */
    for (int n = 0; n < N; n++) {
        real *dw = dwte + (size_t)tokens[n] * C;
        const real *d = dout + (size_t)n * C;
        for (int i = 0; i < C; i++) dw[i] += d[i];
    }
}

/* ------------------------------------------------------------------ rmsnorm */

void rmsnorm_forward(real *out, real *rstd, const real *inp, const real *weight, int N, int C, double eps) {
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        real *y = out + (size_t)n * C;
        double ss = 0;
        for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
        real r = (real)(1.0 / sqrt(ss / C + eps));
        /* torch order: weight * (x * rstd) */
        for (int i = 0; i < C; i++) y[i] = weight[i] * (x[i] * r);
        rstd[n] = r;
    }
}

void rmsnorm_backward(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight,
                      const real *rstd, int N, int C) {
    /* y_i = g_i x_i r, r = (mean(x²)+eps)^(-1/2), dr/dx_j = -r³ x_j / C:
     * dx_j = r g_j dy_j − (r³/C) x_j Σ_i dy_i g_i x_i;  dg_i += dy_i x_i r. */
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        double r = rstd[n];
        if (dweight)
            for (int i = 0; i < C; i++) dweight[i] += dy[i] * (x[i] * (real)r);
        if (dinp) {
            real *dx = dinp + (size_t)n * C;
            double dot = 0;
            for (int i = 0; i < C; i++) dot += (double)dy[i] * weight[i] * x[i];
            double c = r * r * r * dot / C;
            for (int i = 0; i < C; i++) dx[i] += (real)(r * weight[i] * dy[i] - c * x[i]);
        }
    }
}

/* ------------------------------------------------------------------ rope */

void rope_tables(real *cos_t, real *sin_t, int T, int hd, double theta) {
    int h2 = hd / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++) {
            double inv_freq = pow(theta, -2.0 * i / hd);
            double a = t * inv_freq;
            cos_t[t * h2 + i] = (real)cos(a);
            sin_t[t * h2 + i] = (real)sin(a);
        }
}

void rope_forward(real *out, const real *inp, const real *cos_t, const real *sin_t, int B, int T, int NHX, int hd) {
    int h2 = hd / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NHX; h++) {
                size_t o = ((size_t)(b * T + t) * NHX + h) * hd;
                const real *x = inp + o, *c = cos_t + t * h2, *s = sin_t + t * h2;
                real *y = out + o;
                for (int i = 0; i < h2; i++) {
                    real x1 = x[i], x2 = x[i + h2]; /* read both first: out may alias inp */
                    y[i] = x1 * c[i] - x2 * s[i];
                    y[i + h2] = x2 * c[i] + x1 * s[i];
                }
            }
}

void rope_backward(real *dinp, const real *dout, const real *cos_t, const real *sin_t, int B, int T, int NHX,
                   int hd) {
    /* The transpose of the 2x2 rotation [[c, −s], [s, c]] is [[c, s], [−s, c]]. */
    int h2 = hd / 2;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NHX; h++) {
                size_t o = ((size_t)(b * T + t) * NHX + h) * hd;
                const real *dy = dout + o, *c = cos_t + t * h2, *s = sin_t + t * h2;
                real *dx = dinp + o;
                for (int i = 0; i < h2; i++) {
                    dx[i] += dy[i] * c[i] + dy[i + h2] * s[i];
                    dx[i + h2] += dy[i + h2] * c[i] - dy[i] * s[i];
                }
            }
}

/* ------------------------------------------------------------------ swiglu */

void swiglu_forward(real *out, const real *gate, const real *up, size_t n) {
    for (size_t i = 0; i < n; i++) {
        real g = gate[i];
        real silu = g / (1 + rexp(-g));
        out[i] = silu * up[i];
    }
}

void swiglu_backward(real *dgate, real *dup, const real *dout, const real *gate, const real *up, size_t n) {
    /* silu(g) = g·σ(g), silu'(g) = σ(g)·(1 + g·(1 − σ(g))) */
    for (size_t i = 0; i < n; i++) {
        real g = gate[i];
        real sig = 1 / (1 + rexp(-g));
        real silu = g * sig;
        if (dgate) dgate[i] += dout[i] * up[i] * sig * (1 + g * (1 - sig));
        if (dup) dup[i] += dout[i] * silu;
    }
}

/* ------------------------------------------------------------------ cross-entropy */

/* log Σ exp(x) with the max subtracted, in double. x [V] */
static double logsumexp(const real *x, int V) {
    double maxv = x[0];
    for (int i = 1; i < V; i++)
        if (x[i] > maxv) maxv = x[i];
    double s = 0;
    for (int i = 0; i < V; i++) s += exp(x[i] - maxv);
    return maxv + log(s);
}

double crossentropy_forward(real *losses, double *lse, const real *logits, const int32_t *tokens, int B, int T,
                            int V) {
    double total = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t n = (size_t)b * T + t;
            if (t == T - 1) { /* no next token inside this sequence */
                losses[n] = 0;
                lse[n] = 0;
                continue;
            }
            const real *x = logits + n * V;
            lse[n] = logsumexp(x, V);
            double l = lse[n] - x[tokens[n + 1]];
            losses[n] = (real)l;
            total += l;
        }
    return total / ((double)B * (T - 1));
}

void crossentropy_backward(real *dlogits, const real *logits, const double *lse, const int32_t *tokens, int B, int T,
                           int V, double scale) {
    const double w = scale / ((double)B * (T - 1)); /* d(mean)/d(loss_n) times the caller's scale */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T - 1; t++) {
            size_t n = (size_t)b * T + t;
            const real *x = logits + n * V;
            real *dx = dlogits + n * V;
            int target = tokens[n + 1];
            for (int i = 0; i < V; i++) {
                double p = exp(x[i] - lse[n]);
                dx[i] += (real)(w * (p - (i == target)));
            }
        }
}

/* ------------------------------------------------------------------ residual and mixing */

void residual_forward(real *out, const real *a, const real *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void residual_backward(real *da, real *db, const real *dout, size_t n) {
    if (da)
        for (size_t i = 0; i < n; i++) da[i] += dout[i];
    if (db)
        for (size_t i = 0; i < n; i++) db[i] += dout[i];
}

void mix_forward(real *out, const real *const *src, const double *coef, int nsrc, size_t n) {
    int first = 1;
    for (int s = 0; s < nsrc; s++) {
        if (coef[s] == 0) continue;
        const real c = (real)coef[s], *x = src[s];
        if (first && c == 1) memcpy(out, x, n * sizeof(real)); /* the identity, exactly */
        else if (first)
            for (size_t i = 0; i < n; i++) out[i] = c * x[i];
        else
            for (size_t i = 0; i < n; i++) out[i] += c * x[i];
        first = 0;
    }
    if (first) memset(out, 0, n * sizeof(real)); /* no source: a zero value input */
}

void mix_backward(real *const *dsrc, double *dcoef, const real *dout, const real *const *src, const double *coef,
                  int nsrc, size_t n) {
    for (int s = 0; s < nsrc; s++) {
        if (dcoef && src[s]) {
            double acc = 0;
            for (size_t i = 0; i < n; i++) acc += (double)dout[i] * src[s][i];
            dcoef[s] += acc;
        }
        if (coef[s] == 0 || !dsrc[s]) continue;
        const real c = (real)coef[s];
        real *d = dsrc[s];
        for (size_t i = 0; i < n; i++) d[i] += c * dout[i];
    }
}
