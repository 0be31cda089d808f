/* ops.c: forward and backward of every reference op (shapes in ops.h).
 *
 * Plain loops in the order a reader would write them; matmuls go to BLAS. Sums that
 * decide a normalisation (RMSNorm's mean square, softmax denominators, the loss) are
 * accumulated in double, so the float32 build is at least as accurate as torch's fp32
 * and the float64 build is exact to rounding.
 *
 * Threads (threads.h): loops are split by rows or elements among ref_threads() OpenMP
 * threads, never inside a sum, so every result is the same bits for any thread count; a
 * sum over rows (a norm's weight gradient, the embedding gradient) is split by columns
 * instead, each column summed over the rows in order. Matrix products are split into
 * tiles of the output that do not depend on the thread count (gemm_tiles). */
#include "ref/ops.h"

#include <string.h>
#include <time.h>

#include "ref/exp_shifted.h"
#include "ref/profile.h"
#include "ref/isa.h"
#include "ref/lanes.h"
#include "ref/threads.h"

/* elements below which a loop is not worth waking a second thread for */
#define PAR_MIN_ELEMS 16384
/* columns per share when a sum over rows is split by columns */
#define COL_BLOCK 64

/* GradWrite (ops.h): GRAD_SET writes (real)0 + g, the bits that zeroing and then adding give.
 * The two cases are written as two inner loops, not one loop with a select on `how`: with the
 * select, SwiGLU's backward no longer vectorised (2.5% -> 12.5% of a `small` step, perf). */

/* ------------------------------------------------------------------ matmul */

/* Seconds spent inside BLAS products (profile.h, for bench_ref_train), counted by the
 * calling thread around the whole (possibly split) product. */
static double matmul_seconds;
double REF(ref_matmul_seconds)(void) { return matmul_seconds; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Products are cut into tiles of their output C along its longer side, and the tiles are
 * shared among the threads. The tiles depend only on the product's shape, never on the
 * thread count: OpenBLAS's float32 kernels round an element differently depending on where
 * it falls in the product (measured: splitting a product in two changes some of its
 * elements in the last bit), so only a split that does not depend on the thread count keeps
 * the bits independent of it. Cutting the longer side keeps the operand that every tile
 * reads whole small: a tile of rows re-packs all of op(B), a tile of columns all of op(A),
 * so the lm_head's [V,d] weight is packed once per product, not once per block of tokens.
 * A side of D is cut into GEMM_SPLIT tiles (rounded up to a multiple of 16, at least
 * GEMM_TILE_MIN), or tiles of GEMM_TILE_MAX along a vocabulary. Two, because this
 * project's machines have two cores: fewer calls re-pack the shared operand fewer times
 * (one thread), and two equal tiles keep two threads equally busy. More cores gain from a
 * larger GEMM_SPLIT, which changes float32 results in the last bits (never with the
 * thread count). */
#define GEMM_SPLIT 2
#define GEMM_TILE_MIN 64
#define GEMM_TILE_MAX 1024

static int gemm_tile(int D) {
    int t = ((D + GEMM_SPLIT - 1) / GEMM_SPLIT + 15) / 16 * 16;
    return t < GEMM_TILE_MIN ? GEMM_TILE_MIN : t > GEMM_TILE_MAX ? GEMM_TILE_MAX : t;
}

/* C [M,N] (row stride ldc) = op(A)·op(B) + beta·C, op(A) [M,K], op(B) [K,N], tiles of C
 * shared among the threads. */
static void gemm_tiles(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, const real *A, int lda,
                       const real *B, int ldb, real beta, real *C, int ldc) {
    const int by_rows = M >= N, D = by_rows ? M : N, tile = gemm_tile(D), tiles = (D + tile - 1) / tile;
    if (tiles == 1) {
        cblas_gemm(CblasRowMajor, ta, tb, M, N, K, 1, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const int nt = ref_threads() < tiles ? ref_threads() : tiles;
    /* dynamic: the last tile may be short; which thread takes a tile never changes its bits */
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(dynamic, 1)
    for (int p = 0; p < tiles; p++) {
        const int i0 = p * tile, n = i0 + tile <= D ? tile : D - i0;
        if (by_rows) { /* rows i0.. of op(A) (a column offset when A is transposed) and of C */
            const real *Ap = ta == CblasNoTrans ? A + (size_t)i0 * lda : A + i0;
            cblas_gemm(CblasRowMajor, ta, tb, n, N, K, 1, Ap, lda, B, ldb, beta, C + (size_t)i0 * ldc, ldc);
        } else { /* columns i0.. of op(B) (a row offset when B is transposed) and of C */
            const real *Bp = tb == CblasNoTrans ? B + i0 : B + (size_t)i0 * ldb;
            cblas_gemm(CblasRowMajor, ta, tb, M, n, K, 1, A, lda, Bp, ldb, beta, C + i0, ldc);
        }
    }
}

void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC) {
    double t0 = now();
    /* out [N,OC] = inp [N,C] · weightᵀ [C,OC] */
    gemm_tiles(CblasNoTrans, CblasTrans, N, OC, C, inp, C, weight, C, 0, out, OC);
    matmul_seconds += now() - t0;
}

void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight, int N,
                     int C, int OC, GradWrite dinp_how) {
    double t0 = now();
    /* dinp [N,C] (+)= dout [N,OC] · weight [OC,C] */
    if (dinp)
        gemm_tiles(CblasNoTrans, CblasNoTrans, N, C, OC, dout, OC, weight, C, dinp_how == GRAD_SET ? 0 : 1, dinp, C);
    /* dweight [OC,C] += doutᵀ [OC,N] · inp [N,C] */
    if (dweight) gemm_tiles(CblasTrans, CblasNoTrans, OC, C, N, dout, OC, inp, C, 1, dweight, C);
    matmul_seconds += now() - t0;
}

/* ------------------------------------------------------------------ embedding */

REF_HOT
void embedding_forward(real *out, const int32_t *tokens, const real *wte, int N, int C) {
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && (size_t)N * C >= PAR_MIN_ELEMS) schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)tokens[n] * C, (size_t)C * sizeof(real));
}

REF_HOT
void embedding_backward(real *dwte, const real *dout, const int32_t *tokens, int N, int C) {
    /* Positions are visited in order, so repeated tokens accumulate deterministically;
     * threads take column blocks [c0, c1) */
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && (size_t)N * C >= PAR_MIN_ELEMS) schedule(static)
    for (int c0 = 0; c0 < C; c0 += COL_BLOCK) {
        const int c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
        for (int n = 0; n < N; n++) {
            real *dw = dwte + (size_t)tokens[n] * C;
            const real *d = dout + (size_t)n * C;
            for (int i = c0; i < c1; i++) dw[i] += d[i];
        }
    }
}

/* ------------------------------------------------------------------ rmsnorm */

REF_HOT
void rmsnorm_forward(real *out, real *rstd, const real *inp, const real *weight, int N, int C, double eps) {
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && (size_t)N * C >= PAR_MIN_ELEMS) schedule(static)
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        real *y = out + (size_t)n * C;
        const double ss = dot_lanes(x, x, C); /* Σ x², lanes.h's fixed order */
        real r = (real)(1.0 / sqrt(ss / C + eps));
        /* torch order: weight * (x * rstd) */
        for (int i = 0; i < C; i++) y[i] = weight[i] * (x[i] * r);
        rstd[n] = r;
    }
}

REF_HOT
void rmsnorm_backward(real *dinp, real *dweight, const real *dout, const real *inp, const real *weight,
                      const real *rstd, int N, int C, GradWrite how) {
    /* y_i = g_i x_i r, r = (mean(x²)+eps)^(-1/2), dr/dx_j = -r³ x_j / C:
     * dx_j = r g_j dy_j − (r³/C) x_j Σ_i dy_i g_i x_i;  dg_i += dy_i x_i r. */
    const int nt = ref_threads(), par = nt > 1 && (size_t)N * C >= PAR_MIN_ELEMS;
    /* dweight: a sum over rows, so threads take column blocks, rows in order within each */
    if (dweight) {
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
        for (int c0 = 0; c0 < C; c0 += COL_BLOCK) {
            const int c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
            for (int n = 0; n < N; n++) {
                const real *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
                const real r = rstd[n];
                for (int i = c0; i < c1; i++) dweight[i] += dy[i] * (x[i] * r);
            }
        }
    }
    if (!dinp) return;
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        double r = rstd[n];
        real *dx = dinp + (size_t)n * C;
        const double dot = dot3_lanes(dy, weight, x, C); /* Σ dy·g·x, lanes.h's fixed order */
        double c = r * r * r * dot / C;
        if (how == GRAD_SET)
            for (int i = 0; i < C; i++) dx[i] = (real)0 + (real)(r * weight[i] * dy[i] - c * x[i]);
        else
            for (int i = 0; i < C; i++) dx[i] += (real)(r * weight[i] * dy[i] - c * x[i]);
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

REF_HOT
void rope_forward(real *out, const real *inp, const real *cos_t, const real *sin_t, int B, int T, int NHX, int hd) {
    const int h2 = hd / 2, nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1 && (size_t)B * T * NHX * hd >= PAR_MIN_ELEMS) \
    schedule(static)
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

REF_HOT
void rope_backward(real *dinp, const real *dout, const real *cos_t, const real *sin_t, int B, int T, int NHX,
                   int hd, GradWrite how) {
    /* The transpose of the 2x2 rotation [[c, −s], [s, c]] is [[c, s], [−s, c]]. */
    const int h2 = hd / 2, nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1 && (size_t)B * T * NHX * hd >= PAR_MIN_ELEMS) \
    schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < NHX; h++) {
                size_t o = ((size_t)(b * T + t) * NHX + h) * hd;
                const real *dy = dout + o, *c = cos_t + t * h2, *s = sin_t + t * h2;
                real *dx = dinp + o;
                if (how == GRAD_SET)
                    for (int i = 0; i < h2; i++) {
                        dx[i] = (real)0 + (dy[i] * c[i] + dy[i + h2] * s[i]);
                        dx[i + h2] = (real)0 + (dy[i + h2] * c[i] - dy[i] * s[i]);
                    }
                else
                    for (int i = 0; i < h2; i++) {
                        dx[i] += dy[i] * c[i] + dy[i + h2] * s[i];
                        dx[i + h2] += dy[i + h2] * c[i] - dy[i] * s[i];
                    }
            }
}

/* ------------------------------------------------------------------ swiglu */

/* σ(g) = 1 / (1 + e^-g), from e = e^-|g| (never overflows): 1 / (1 + e) for g >= 0 and
 * e / (1 + e) for g < 0. exp_shifted has no library call, so the loops below vectorise;
 * in the float32 build it is float arithmetic throughout (8 lanes per AVX2 vector). */
static inline real sigmoid(real g) {
    const real e = exp_shifted_real(-rfabs(g));
    return (g >= 0 ? 1 : e) / (1 + e);
}

REF_HOT
void swiglu_forward(real *out, const real *gate, const real *up, size_t n) {
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

REF_HOT
void swiglu_backward(real *dgate, real *dup, const real *dout, const real *gate, const real *up, size_t n,
                             GradWrite how) {
    /* silu(g) = g·σ(g), silu'(g) = σ(g)·(1 + g·(1 − σ(g))) */
    const int nt = ref_threads();
    if (how == GRAD_SET) {
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
        for (size_t i = 0; i < n; i++) {
            const real g = gate[i], sig = sigmoid(g), silu = g * sig;
            dgate[i] = (real)0 + dout[i] * up[i] * sig * (1 + g * (1 - sig));
            dup[i] = (real)0 + dout[i] * silu;
        }
        return;
    }
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const real g = gate[i], sig = sigmoid(g), silu = g * sig;
        dgate[i] += dout[i] * up[i] * sig * (1 + g * (1 - sig));
        dup[i] += dout[i] * silu;
    }
}

/* ------------------------------------------------------------------ cross-entropy */

/* log Σ exp(x) with the max subtracted, in double. The exponentials are computed a block
 * at a time (vectorised) and summed in 8 fixed lanes, lane j taking the indices i = j mod 8
 * in order, then the lanes added 0..7: the same order in every build, and no chain of
 * 50,277 dependent additions. x [V] */
REF_HOT
static double logsumexp(const real *x, int V) {
    enum { LANES = 8, BLOCK = 256 };
    double lmax[LANES]; /* [LANES] running maxima; max is exact in any order */
    for (int j = 0; j < LANES; j++) lmax[j] = x[0];
    int i = 0;
    for (; i + LANES <= V; i += LANES)
        for (int j = 0; j < LANES; j++) lmax[j] = x[i + j] > lmax[j] ? x[i + j] : lmax[j];
    double maxv = lmax[0];
    for (int j = 1; j < LANES; j++) maxv = lmax[j] > maxv ? lmax[j] : maxv;
    for (; i < V; i++) maxv = x[i] > maxv ? x[i] : maxv;
    double e[BLOCK];    /* [BLOCK] exp(x - max) of one block */
    double acc[LANES] = {0}; /* [LANES] partial sums */
    for (int i0 = 0; i0 < V; i0 += BLOCK) {
        const int n = V - i0 < BLOCK ? V - i0 : BLOCK;
#pragma GCC unroll 4 /* independent Horner chains side by side: the polynomial is latency-bound */
        for (int k = 0; k < n; k++) e[k] = exp_shifted(x[i0 + k] - maxv);
        int k = 0; /* i0 is a multiple of LANES: e[k] belongs to lane k mod LANES */
        for (; k + LANES <= n; k += LANES)
            for (int j = 0; j < LANES; j++) acc[j] += e[k + j];
        for (; k < n; k++) acc[k % LANES] += e[k];
    }
    double s = 0;
    for (int j = 0; j < LANES; j++) s += acc[j];
    return maxv + log(s);
}

REF_HOT
double crossentropy_forward(real *losses, double *lse, const real *logits, const int32_t *tokens, int B, int T,
                            int V) {
    /* rows in parallel; the mean then sums them in row order */
    const int nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1 && (size_t)B * T * V >= PAR_MIN_ELEMS) \
    schedule(static)
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
            losses[n] = (real)(lse[n] - x[tokens[n + 1]]);
        }
    double total = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T - 1; t++) {
            size_t n = (size_t)b * T + t;
            total += lse[n] - logits[n * V + tokens[n + 1]];
        }
    return total / ((double)B * (T - 1));
}

REF_HOT
void crossentropy_backward(real *dlogits, const real *logits, const double *lse, const int32_t *tokens, int B, int T,
                           int V, double scale, GradWrite how) {
    const double w = scale / ((double)B * (T - 1)); /* d(mean)/d(loss_n) times the caller's scale */
    const int nt = ref_threads();
#pragma omp parallel for collapse(2) num_threads(nt) if (nt > 1 && (size_t)B * T * V >= PAR_MIN_ELEMS) \
    schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T - 1; t++) {
            size_t n = (size_t)b * T + t;
            const real *x = logits + n * V;
            real *dx = dlogits + n * V;
            const int target = tokens[n + 1];
            const double shift = lse[n];
            enum { BLOCK = 256 };
            double p[BLOCK]; /* [BLOCK] softmax of one block of the row */
            for (int i0 = 0; i0 < V; i0 += BLOCK) {
                const int m = V - i0 < BLOCK ? V - i0 : BLOCK;
#pragma GCC unroll 4
                for (int i = 0; i < m; i++) p[i] = exp_shifted(x[i0 + i] - shift);
                if (target >= i0 && target < i0 + m) p[target - i0] -= 1.0;
                if (how == GRAD_SET)
                    for (int i = 0; i < m; i++) dx[i0 + i] = (real)0 + (real)(w * p[i]);
                else
                    for (int i = 0; i < m; i++) dx[i0 + i] += (real)(w * p[i]);
            }
        }
    if (how == GRAD_SET) /* the last position of each sequence has no target: its row is 0 */
        for (int b = 0; b < B; b++) memset(dlogits + ((size_t)b * T + T - 1) * V, 0, (size_t)V * sizeof *dlogits);
}

REF_HOT
void token_logprobs_forward(double *logprob, uint8_t *greedy, const real *logits, const int32_t *targets, size_t N,
                            int V) {
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && N * (size_t)V >= PAR_MIN_ELEMS) schedule(static)
    for (size_t n = 0; n < N; n++) {
        if (targets[n] < 0) continue;
        const real *x = logits + n * V;
        int arg = 0;
        for (int v = 1; v < V; v++) /* strictly greater: the first maximum stays */
            if (x[v] > x[arg]) arg = v;
        logprob[n] = x[targets[n]] - logsumexp(x, V); /* the training loss's log-sum-exp, same bits */
        greedy[n] = arg == targets[n];
    }
}

/* ------------------------------------------------------------------ residual and mixing */

/* memset in blocks of PAR_MIN_ELEMS: a bandwidth-bound pass that one thread alone leaves
 * on the critical path (1.4% of a 2-thread `small` step, perf, all of it on the main thread) */
void zero_fill(real *p, size_t n) {
    const int nt = ref_threads();
    const size_t blocks = (n + PAR_MIN_ELEMS - 1) / PAR_MIN_ELEMS;
#pragma omp parallel for num_threads(nt) if (nt > 1 && blocks > 1) schedule(static)
    for (size_t b = 0; b < blocks; b++) {
        const size_t i0 = b * PAR_MIN_ELEMS, len = n - i0 < PAR_MIN_ELEMS ? n - i0 : PAR_MIN_ELEMS;
        memset(p + i0, 0, len * sizeof *p);
    }
}

REF_HOT
void residual_forward(real *out, const real *a, const real *b, size_t n) {
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

REF_HOT
void residual_backward(real *da, real *db, const real *dout, size_t n) {
    const int nt = ref_threads();
    if (da) {
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
        for (size_t i = 0; i < n; i++) da[i] += dout[i];
    }
    if (db) {
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
        for (size_t i = 0; i < n; i++) db[i] += dout[i];
    }
}

REF_HOT
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

REF_HOT
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
