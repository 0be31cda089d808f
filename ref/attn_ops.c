/* attn_ops.c: attention as probabilities and their application (shapes in attn_ops.h).
 *
 * The four products (scores, mixing, and their gradients) run as BLAS GEMMs per batch row
 * and head, on blocks of ATTN_ROWS query rows against the key columns 0..t1-1 the block's
 * last row t1-1 can see, so the masked upper triangle costs at most half a block; masked
 * entries of att are never read (the diagonal block is copied with zeros). Masking, softmax
 * and its backward are plain loops over the block. Each softmax denominator and
 * each row's Σ p·dp accumulate in double (as ops.c). Scratch tiles live on the stack.
 *
 * Threads (threads.h): batch rows and heads are shared among ref_threads() threads, each
 * running single-threaded BLAS on its own. In the backward passes a thread takes a whole
 * group of query heads that share one key/value head, in head order, so the key and value
 * gradients accumulate in the same order for any thread count. */
#include "ref/attn_ops.h"

#include <math.h>

#include "ref/exp_shifted.h"
#include "ref/isa.h"
#include "ref/lanes.h"
#include "ref/threads.h"

#define ATTN_ROWS 64                  /* query rows per block */
#define ATTN_COLS 256                 /* key columns per scratch tile */
#define ATTN_TILE (ATTN_ROWS * ATTN_COLS) /* [ATTN_ROWS, ATTN_COLS]: 64 KiB f32, 128 KiB f64 */

static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }

REF_HOT
void attn_probs_forward(real *att, const real *q, const real *k, const real *k2, int B, int T, int NH, int NKV,
                        int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = k2 ? 2 * T : T, halves = k2 ? 2 : 1;
    const real scale = (real)(1.0 / sqrt((double)hd));
    const int nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const real *qh = q + (size_t)b * T * qC + h * hd;                /* [T,hd], row stride qC */
            const size_t koff = (size_t)b * T * kvC + (size_t)(h / group) * hd; /* [T,hd], stride kvC */
            real *ah = att + ((size_t)b * NH + h) * T * W;                    /* [T,W] */
            for (int t0 = 0; t0 < T; t0 += ATTN_ROWS) {
                const int R = min_int(ATTN_ROWS, T - t0), t1 = t0 + R;
                /* scores [R, t1] = q[t0:t1] · k[0:t1]ᵀ / √hd, in each half */
                for (int half = 0; half < halves; half++)
                    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, t1, hd, scale, qh + (size_t)t0 * qC, qC,
                               (half ? k2 : k) + koff, kvC, 0, ah + (size_t)t0 * W + half * T, W);
                for (int t = t0; t < t1; t++) {
                    real *a = ah + (size_t)t * W; /* row t of [T,W] */
                    real maxv = -INFINITY;
                    for (int half = 0; half < halves; half++)
                        for (int c = 0; c <= t; c++)
                            if (a[half * T + c] > maxv) maxv = a[half * T + c];
                    double sum = 0;
                    for (int half = 0; half < halves; half++) {
                        real *x = a + half * T; /* [t+1] this half's visible scores */
                        for (int c = 0; c <= t; c++) /* vectorises, in `real` throughout */
                            x[c] = exp_shifted_real(x[c] - maxv);
                        sum += sum_lanes(x, t + 1);
                    }
                    const real inv = (real)(1.0 / sum);
                    for (int half = 0; half < halves; half++) {
                        for (int c = 0; c <= t; c++) a[half * T + c] *= inv;
                        for (int c = t + 1; c < T; c++) a[half * T + c] = 0; /* the causal mask */
                    }
                }
            }
        }
}

REF_HOT
void attn_probs_backward(real *dq, real *dk, real *dk2, const real *datt, const real *att, const real *q,
                         const real *k, const real *k2, int B, int T, int NH, int NKV, int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = k2 ? 2 * T : T, halves = k2 ? 2 : 1;
    const real scale = (real)(1.0 / sqrt((double)hd));
    const int nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1) schedule(static)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < NKV; g++)
            for (int h = g * group; h < (g + 1) * group; h++) {
            real ds[ATTN_TILE]; /* [R, cols] score gradients of one tile */
            double rowdot[ATTN_ROWS];
            const size_t qoff = (size_t)b * T * qC + h * hd, koff = (size_t)b * T * kvC + (size_t)(h / group) * hd;
            const size_t aoff = ((size_t)b * NH + h) * T * W;
            const real *ah = att + aoff, *dah = datt + aoff; /* [T,W] */
            for (int t0 = 0; t0 < T; t0 += ATTN_ROWS) {
                const int R = min_int(ATTN_ROWS, T - t0), t1 = t0 + R;
                /* softmax backward: d(score) = p ⊙ (dp − Σ p·dp), the sum over the whole row */
                for (int r = 0; r < R; r++) {
                    const size_t row = (size_t)(t0 + r) * W;
                    double s = 0; /* each half's Σ in lanes.h's fixed order, then the halves in order */
                    for (int half = 0; half < halves; half++)
                        s += dot_lanes(ah + row + half * T, dah + row + half * T, t0 + r + 1);
                    rowdot[r] = s;
                }
                for (int half = 0; half < halves; half++) {
                    const real *kk = (half ? k2 : k) + koff;
                    real *dkk = half ? dk2 : dk;
                    if (!dq && !dkk) continue;
                    for (int c0 = 0; c0 < t1; c0 += ATTN_COLS) {
                        const int n = min_int(ATTN_COLS, t1 - c0);
                        for (int r = 0; r < R; r++) {
                            const int t = t0 + r, seen = max_int(0, min_int(n, t - c0 + 1)); /* c0 + c <= t */
                            const size_t row = (size_t)t * W + half * T + c0;
                            const real rd = (real)rowdot[r];
                            real *dsr = ds + (size_t)r * n; /* [n] */
                            /* two plain loops (not one with a select) so both vectorise */
                            for (int c = 0; c < seen; c++) dsr[c] = ah[row + c] * (dah[row + c] - rd) * scale;
                            for (int c = seen; c < n; c++) dsr[c] = 0;
                        }
                        /* dq[t0:t1] += ds · k[c0:c0+n];  dk[c0:c0+n] += dsᵀ · q[t0:t1] */
                        if (dq)
                            cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, hd, n, 1, ds, n,
                                       kk + (size_t)c0 * kvC, kvC, 1, dq + qoff + (size_t)t0 * qC, qC);
                        if (dkk)
                            cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, hd, R, 1, ds, n,
                                       q + qoff + (size_t)t0 * qC, qC, 1, dkk + koff + (size_t)c0 * kvC, kvC);
                    }
                }
            }
        }
}

/* tile [R,R] = att[t0:t1, t0:t1] with the masked entries c > t as zeros, so the products
 * never read them (they are not inputs: the gradient checks perturb them too) */
static void diagonal_block(real *tile, const real *a, int W, int t0, int R) {
    for (int r = 0; r < R; r++) {
        const real *ar = a + (size_t)(t0 + r) * W + t0; /* [R] row t0 + r from column t0 */
        for (int c = 0; c <= r; c++) tile[r * R + c] = ar[c];
        for (int c = r + 1; c < R; c++) tile[r * R + c] = 0;
    }
}

REF_HOT
void attn_apply_forward(real *out, const real *att, const real *v, const real *v2, int B, int T, int NH, int NKV,
                        int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = v2 ? 2 * T : T, halves = v2 ? 2 : 1;
    const int nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            real tile[ATTN_ROWS * ATTN_ROWS]; /* [R,R] the masked diagonal block */
            const size_t voff = (size_t)b * T * kvC + (size_t)(h / group) * hd;
            const real *ah = att + ((size_t)b * NH + h) * T * W;
            real *oh = out + (size_t)b * T * qC + h * hd; /* [T,hd], stride qC */
            for (int t0 = 0; t0 < T; t0 += ATTN_ROWS) {
                const int R = min_int(ATTN_ROWS, T - t0);
                real *ob = oh + (size_t)t0 * qC;
                /* out[t0:t1] = att[t0:t1, 0:t0] · v[0:t0] + diag · v[t0:t1] (+ the second half's) */
                for (int half = 0; half < halves; half++) {
                    const real *vv = (half ? v2 : v) + voff, *ab = ah + (size_t)t0 * W + half * T;
                    if (t0 > 0)
                        cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, hd, t0, 1, ab, W, vv, kvC,
                                   half ? 1 : 0, ob, qC);
                    diagonal_block(tile, ah + half * T, W, t0, R);
                    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, hd, R, 1, tile, R,
                               vv + (size_t)t0 * kvC, kvC, half || t0 > 0 ? 1 : 0, ob, qC);
                }
            }
        }
}

REF_HOT
void attn_apply_backward(real *datt, real *dv, real *dv2, const real *dout, const real *att, const real *v,
                         const real *v2, int B, int T, int NH, int NKV, int hd, GradWrite datt_how) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = v2 ? 2 * T : T, halves = v2 ? 2 : 1;
    const int nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1) schedule(static)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < NKV; g++)
            for (int h = g * group; h < (g + 1) * group; h++) {
            real dp[ATTN_TILE]; /* [R, cols] dout · vᵀ of one tile */
            const size_t voff = (size_t)b * T * kvC + (size_t)(h / group) * hd;
            const size_t aoff = ((size_t)b * NH + h) * T * W;
            const real *dyh = dout + (size_t)b * T * qC + h * hd; /* [T,hd], stride qC */
            for (int t0 = 0; t0 < T; t0 += ATTN_ROWS) {
                const int R = min_int(ATTN_ROWS, T - t0), t1 = t0 + R;
                for (int half = 0; half < halves; half++) {
                    const real *vv = (half ? v2 : v) + voff;
                    real *dvv = half ? dv2 : dv;
                    /* datt[t, c] += dout_t · v_c for c ≤ t only, each entry once (GRAD_SET: 0 + it, the
                     * bits of a zeroed buffer); the mask stays untouched */
                    for (int c0 = 0; datt && c0 < t1; c0 += ATTN_COLS) {
                        const int n = min_int(ATTN_COLS, t1 - c0);
                        cblas_gemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, n, hd, 1, dyh + (size_t)t0 * qC, qC,
                                   vv + (size_t)c0 * kvC, kvC, 0, dp, n);
                        for (int r = 0; r < R; r++) {
                            real *da = datt + aoff + (size_t)(t0 + r) * W + half * T + c0;
                            const int seen = min_int(n, t0 + r - c0 + 1); /* columns c0 + c <= t0 + r */
                            if (datt_how == GRAD_SET)
                                for (int c = 0; c < seen; c++) da[c] = (real)0 + dp[r * n + c];
                            else
                                for (int c = 0; c < seen; c++) da[c] += dp[r * n + c];
                        }
                    }
                    /* dv[0:t0] += att[t0:t1, 0:t0]ᵀ · dout[t0:t1];  dv[t0:t1] += diagᵀ · dout[t0:t1] */
                    if (!dvv) continue;
                    if (t0 > 0)
                        cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, t0, hd, R, 1,
                                   att + aoff + (size_t)t0 * W + half * T, W, dyh + (size_t)t0 * qC, qC, 1,
                                   dvv + voff, kvC);
                    diagonal_block(dp, att + aoff + half * T, W, t0, R);
                    cblas_gemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, hd, R, 1, dp, R, dyh + (size_t)t0 * qC, qC,
                               1, dvv + voff + (size_t)t0 * kvC, kvC);
                }
            }
        }
}

REF_HOT
void repeat_kv_add_forward(real *out, const real *src, int N, int NH, int NKV, int hd) {
    const int group = NH / NKV;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            real *o = out + ((size_t)n * NH + h) * hd;
            const real *s = src + ((size_t)n * NKV + h / group) * hd;
            for (int i = 0; i < hd; i++) o[i] += s[i];
        }
}

REF_HOT
void repeat_kv_add_backward(real *dsrc, const real *dout, int N, int NH, int NKV, int hd) {
    const int group = NH / NKV;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            real *d = dsrc + ((size_t)n * NKV + h / group) * hd;
            const real *g = dout + ((size_t)n * NH + h) * hd;
            for (int i = 0; i < hd; i++) d[i] += g[i];
        }
}
