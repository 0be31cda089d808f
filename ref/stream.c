/* stream.c: the depth mixers of formulas.md §5, forward and backward (interface in stream.h).
 *
 * Numbering: step s = 0..2L forms the input of sublayer s (2L: the head); y_k (k ≥ 1)
 * is sublayer k−1's raw output, y_0 the embedding. Per plan kind:
 *   PLAIN        x_0 = y_0, x_s = x_{s−1} + y_s                   (formulas.md §1 residuals)
 *   DENSEFORMER  block i (0-based layer): h_i = D_i + y_{2i+1}, X_{i+1} = h_i + y_{2i+2},
 *                D_0 = X_0 = y_0, D_{i+1} = Σ_c α_c X_{src_c} (or X_{i+1} without a DWA)
 *   ATTNRES      in_s = Σ_g a_g S_g, a = softmax_g(r_g·⟨w_s, S_g⟩), r_g = rsqrt(mean(S_g²)+eps),
 *                S_g = Σ_{k∈[lo,hi)} y_k (plan ranges; full: one y each)
 *   HC / MHC     explicit streams H_s [n,d] per token, H_0[i] = y_0;
 *                in_s = Σ_i a_s[i] H_s[i],   H_{s+1}[j] = Σ_i R_s[i,j] H_s[i] + b_s[j] y_{s+1},
 *                head input Σ_i H_2L[i]. The maps (a, R, b) come from H_s:
 *                HC:  H̄ = RMSNorm per stream; a = α_m + s_α tanh(H̄W_m), R = α_r + s_α tanh(H̄W_r),
 *                     b = β + s_β tanh(H̄W_β)
 *                mHC: x̃ = RMSNorm(vec H); a = σ(α_pre x̃φ_pre + b_pre), b = 2σ(α_post x̃φ_post + b_post),
 *                     R[i,j] = Sinkhorn(exp(α_res mat(x̃φ_res) + b_res))[j,i]
 *                HC and mHC share the stream arithmetic; only the maps differ.
 * Dot products accumulate in double, like ref/ops.c's norms. */
#include "ref/stream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "ref/arena.h"
#include "ref/ops.h"


struct StreamState {
    const StreamPlan *plan;  /* the spec's (spec.h), not owned */
    const real *const *y;    /* [S] the model's history: y[0] the embedding, y[k] sublayer k−1's output [N,d] */
    real *params, *grads;    /* the model's flat buffers; the mixer's tensors sit at the offsets below */
    double eps;              /* the config's norm eps */
    int S, n, N, d;
    void **allocs;           /* every buffer below, freed together */
    int n_allocs, cap_allocs;
    real *xin_buf;           /* scratch pointer for the returned input */
    real **xin;              /* [S] the input of each step [N,d] (owned buffers or aliases) */
    /* PLAIN */
    real *dx;                /* [N,d] dLoss/dx_s, carried down */
    /* DENSEFORMER */
    real **X, **h, **D;      /* [L+1], [L], [L+1] of [N,d] */
    real **dX, *dD, *dh;     /* [L+1] of [N,d]; [N,d]; [N,d] */
    size_t *alpha_off;       /* [L] offset of the DWA weights after block i */
    /* ATTNRES */
    size_t *q_off;           /* [S] offset of the step's query w [d] */
    const real ***srcp;      /* [S][n_src] source pointers [N,d] */
    real ***sumbuf;          /* [S][n_src] owned range sums (NULL for single y) */
    real **rstd;             /* [S] [n_src][N] */
    real **alpha;            /* [S] [N][n_src] softmax weights */
    real **dy;               /* [S] of [N,d] dLoss/dy_k accumulators */
    /* HC / MHC */
    size_t (*po)[STREAM_STEP_TENSORS]; /* [2L] parameter offsets per sublayer, HC_* / MH_* (stream.h) */
    real **H;                /* [S] streams [N,n,d] */
    real **nrm;              /* [2L] rstd: HC [N,n] per stream, mHC [N] */
    real **a_in, **R, **b_out; /* [2L] maps [N,n], [N,n,n] (row = source i), [N,n] */
    real **aux;              /* [2L] HC: tanh of (m, r, b) [N, 2n + n²]; mHC: projections (pre, post, res) */
    real *dH, *dHp;          /* [N,n,d] dLoss/dH_s and dLoss/dH_{s−1} */
    real *dR, *db;           /* [N,n,n], [N,n] from the update backward, used by the map backward */
    real *daA, *dRA, *dbA;   /* [N,n], [N,n,n], [N,n] their Σ|terms| (stream_set_magnitudes) */
    real *hfin, *dfin;       /* [N,d] */
    real *sk;                /* Sinkhorn replay scratch [(2·iters+1)·n²] and its gradient [2·n²] */
    double *vec;             /* per-token scratch [max(2L+1, n·d, 2n+n²)] */
};

static void *salloc(StreamState *st, size_t n, size_t size) {
    if (st->n_allocs == st->cap_allocs) {
        int cap = st->cap_allocs ? 2 * st->cap_allocs : 64;
        void **p = realloc(st->allocs, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        st->allocs = p;
        st->cap_allocs = cap;
    }
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = ref_arena_alloc(n ? n * size : size); /* large streams on huge pages (arena.c) */
    if (p) st->allocs[st->n_allocs++] = p;
    return p;
}
#define ALLOC(ptr, count) (((ptr) = salloc(st, (size_t)(count), sizeof *(ptr))) != NULL)

void stream_destroy(StreamState *st) {
    if (!st) return;
    for (int i = 0; i < st->n_allocs; i++) ref_arena_free(st->allocs[i]);
    free(st->allocs);
    free(st);
}

StreamState *stream_create(const ModelSpec *spec, int N, real *params, real *grads, const real *const *y) {
    StreamState *st = calloc(1, sizeof *st);
    if (!st) {
        vrl_error("model: out of memory");
        return NULL;
    }
    st->plan = &spec->stream;
    st->y = y;
    st->params = params;
    st->grads = grads;
    st->eps = spec->config.norm_eps;
    const StreamPlan *p = st->plan;
    const int L = p->L, S = 2 * L + 1, d = spec->config.d_model, n = p->n_streams;
    const size_t Nd = (size_t)N * d;
    const StreamLayout *lay = &spec->layout.stream; /* the mixing tensors' slots (layout.h) */
    st->S = S, st->n = n, st->N = N, st->d = d;
    /* HC/mHC keep da [N,n] in an [N,d] buffer during the backward */
    if (n > d) {
        vrl_error("%s: variant %s: n=%d streams exceeds hidden_size %d", config_origin(&spec->config), spec->config.variant, n, d);
        stream_destroy(st);
        return NULL;
    }
    int ok = ALLOC(st->xin, S) && ALLOC(st->vec, (size_t)S + (size_t)(n + 2) * d + 2 * n + n * n);
    switch (p->kind) {
    case STREAM_PLAIN:
        for (int s = 1; s < S && ok; s++) ok = ALLOC(st->xin[s], Nd);
        ok = ok && ALLOC(st->dx, Nd);
        break;
    case STREAM_DENSEFORMER:
        ok = ok && ALLOC(st->X, L + 1) && ALLOC(st->h, L) && ALLOC(st->D, L + 1) && ALLOC(st->dX, L + 1) &&
             ALLOC(st->dD, Nd) && ALLOC(st->dh, Nd) && ALLOC(st->alpha_off, L);
        for (int i = 0; i <= L && ok; i++) {
            ok = ALLOC(st->dX[i], Nd) && (i == 0 || ALLOC(st->X[i], Nd)) && (i == L || ALLOC(st->h[i], Nd)) &&
                 (i == 0 || !p->dwa_n[i - 1] || ALLOC(st->D[i], Nd));
            if (ok && i > 0) st->alpha_off[i - 1] = lay->at[i - 1][0].offset;
        }
        break;
    case STREAM_ATTNRES:
        ok = ok && ALLOC(st->q_off, S) && ALLOC(st->srcp, S) && ALLOC(st->sumbuf, S) && ALLOC(st->rstd, S) &&
             ALLOC(st->alpha, S) && ALLOC(st->dy, S);
        for (int s = 0; s < S && ok; s++) {
            const int ns = p->n_src[s];
            const StreamRange *r = p->src + (size_t)s * S;
            ok = ALLOC(st->srcp[s], ns) && ALLOC(st->sumbuf[s], ns) && ALLOC(st->rstd[s], (size_t)ns * N) &&
                 ALLOC(st->alpha[s], (size_t)N * ns) && ALLOC(st->dy[s], Nd) && ALLOC(st->xin[s], Nd);
            for (int g = 0; g < ns && ok; g++)
                if (r[g].hi - r[g].lo > 1) ok = ALLOC(st->sumbuf[s][g], Nd);
            if (ok) st->q_off[s] = lay->at[s][0].offset;
        }
        break;
    case STREAM_HC:
    case STREAM_MHC: {
        const int mhc = p->kind == STREAM_MHC;
        const size_t nd = (size_t)n * d;
        ok = ok && ALLOC(st->po, 2 * L) && ALLOC(st->H, S) && ALLOC(st->nrm, 2 * L) && ALLOC(st->a_in, 2 * L) &&
             ALLOC(st->R, 2 * L) && ALLOC(st->b_out, 2 * L) && ALLOC(st->aux, 2 * L) && ALLOC(st->dH, N * nd) &&
             ALLOC(st->dHp, N * nd) && ALLOC(st->dR, (size_t)N * n * n) && ALLOC(st->db, (size_t)N * n) &&
             ALLOC(st->daA, (size_t)N * n) && ALLOC(st->dRA, (size_t)N * n * n) && ALLOC(st->dbA, (size_t)N * n) &&
             ALLOC(st->hfin, Nd) && ALLOC(st->dfin, Nd) && ALLOC(st->sk, (size_t)(2 * p->iters + 4) * n * n);
        for (int s = 0; s < S && ok; s++) {
            ok = ALLOC(st->H[s], N * nd);
            if (!ok || s == 2 * L) break;
            ok = ALLOC(st->xin[s], Nd) && ALLOC(st->nrm[s], (size_t)N * (mhc ? 1 : n)) &&
                 ALLOC(st->a_in[s], (size_t)N * n) && ALLOC(st->R[s], (size_t)N * n * n) &&
                 ALLOC(st->b_out[s], (size_t)N * n) && ALLOC(st->aux[s], (size_t)N * (2 * n + n * n));
            for (int k = 0; k < STREAM_STEP_TENSORS && ok; k++) st->po[s][k] = lay->at[s][k].offset;
        }
        break;
    }
    }
    if (ok) return st;
    vrl_error("model: out of memory for the depth mixer");
    stream_destroy(st);
    return NULL;
}

/* ------------------------------------------------------------------ small helpers */

/* out = a + b and out += a, element by element: ops.c's, which run on the threads */
static void add_into(real *out, const real *a, const real *b, size_t n) { residual_forward(out, a, b, n); }
static void acc(real *out, const real *a, size_t n) { residual_backward(out, NULL, a, n); }
static double dot(const real *a, const real *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}
static real rms_rstd(const real *x, int n, double eps) { return (real)(1.0 / sqrt(dot(x, x, n) / n + eps)); }
static double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }
static double adot(const real *a, const real *b, int n) { /* Σ|a_i·b_i| */
    double s = 0;
    for (int i = 0; i < n; i++) s += fabs((double)a[i] * b[i]);
    return s;
}

/* Magnitude mode (stream_set_magnitudes, stream.h): the maps' parameter gradients become sums
 * of absolute values, the rest of the backward unchanged. One switch for the process: a test
 * hook, set only between models. */
static int magnitudes;
void stream_set_magnitudes(int on) { magnitudes = on; }
int stream_magnitudes(void) { return magnitudes; }
/* x, or |x| in magnitude mode */
static double mag(double x) { return magnitudes ? fabs(x) : x; }

/* ------------------------------------------------------------------ DenseFormer */

/* D = Σ_c α_c X_{src_c}; zero weights are skipped and a leading weight of exactly 1 is
 * a copy, so the identity init reproduces the baseline bit for bit. */
static void dwa_forward(StreamState *st, const real *alpha, const int *src, int ns, real *out) {
    const size_t Nd = (size_t)st->N * st->d;
    int first = 1;
    for (int c = 0; c < ns; c++) {
        const real a = alpha[c], *x = st->X[src[c]];
        if (a == 0) continue;
        if (first && a == 1) memcpy(out, x, Nd * sizeof *out);
        else if (first)
            for (size_t i = 0; i < Nd; i++) out[i] = a * x[i];
        else
            for (size_t i = 0; i < Nd; i++) out[i] += a * x[i];
        first = 0;
    }
    if (first) zero_fill(out, Nd);
}

static const real *dense_forward(StreamState *st, int s) {
    const StreamPlan *p = st->plan;
    const size_t Nd = (size_t)st->N * st->d;
    if (s == 0) {
        st->X[0] = st->D[0] = (real *)st->y[0]; /* never written: block 0 reads the embedding */
        return st->y[0];
    }
    const int i = (s - 1) / 2; /* layer whose sublayer s−1 just ran */
    if (s % 2) {               /* MLP input h_i = D_i + y_{2i+1} */
        add_into(st->h[i], st->D[i], st->y[s], Nd);
        return st->h[i];
    }
    add_into(st->X[i + 1], st->h[i], st->y[s], Nd); /* block output X_{i+1} */
    if (p->dwa_n[i]) {
        dwa_forward(st, st->params + st->alpha_off[i], p->dwa_src + (size_t)i * (p->L + 1), p->dwa_n[i], st->D[i + 1]);
    } else {
        st->D[i + 1] = st->X[i + 1];
    }
    return st->D[i + 1];
}

static const real *dense_backward(StreamState *st, int s, const real *din) {
    const StreamPlan *p = st->plan;
    const int L = p->L;
    const size_t Nd = (size_t)st->N * st->d;
    if (s % 2) { /* h_i = D_i + y_{2i+1}; h_i also feeds X_{i+1} */
        const int i = (s - 1) / 2;
        add_into(st->dh, din, st->dX[i + 1], Nd);
        return st->dh;
    }
    const int j = s / 2; /* step s reads D_j */
    /* dD_j: this step's input, plus h_j = D_j + y (step s+1) when there is a layer j */
    if (j < L) add_into(st->dD, din, st->dh, Nd);
    else memcpy(st->dD, din, Nd * sizeof *din);
    if (j == 0) { /* D_0 = X_0 = embedding, also read by the DWAs through dX[0] */
        acc(st->dD, st->dX[0], Nd);
        return st->dD;
    }
    if (p->dwa_n[j - 1]) {
        const int *src = p->dwa_src + (size_t)(j - 1) * (L + 1);
        const real *alpha = st->params + st->alpha_off[j - 1];
        real *dalpha = st->grads + st->alpha_off[j - 1];
        for (int c = 0; c < p->dwa_n[j - 1]; c++) {
            dalpha[c] += (real)dot(st->dD, st->X[src[c]], (int)Nd);
            real *dx = st->dX[src[c]];
            for (size_t k = 0; k < Nd; k++) dx[k] += alpha[c] * st->dD[k];
        }
    } else {
        acc(st->dX[j], st->dD, Nd);
    }
    return st->dX[j]; /* X_j = h_{j−1} + y_{2j}: complete, every DWA reading X_j is done */
}

/* ------------------------------------------------------------------ AttnRes */

static const real *attnres_forward(StreamState *st, int s) {
    const StreamPlan *p = st->plan;
    const int N = st->N, d = st->d, ns = p->n_src[s];
    const StreamRange *r = p->src + (size_t)s * st->S;
    const real *w = st->params + st->q_off[s];
    for (int g = 0; g < ns; g++) {
        if (!st->sumbuf[s][g]) {
            st->srcp[s][g] = st->y[r[g].lo];
            continue;
        }
        real *sum = st->sumbuf[s][g]; /* the block's sum, in sublayer order */
        add_into(sum, st->y[r[g].lo], st->y[r[g].lo + 1], (size_t)N * d);
        for (int k = r[g].lo + 2; k < r[g].hi; k++) acc(sum, st->y[k], (size_t)N * d);
        st->srcp[s][g] = sum;
    }
    real *out = st->xin[s], *alpha = st->alpha[s], *rstd = st->rstd[s];
    for (int t = 0; t < N; t++) {
        real *a = alpha + (size_t)t * ns;
        double mx = -INFINITY;
        for (int g = 0; g < ns; g++) {
            const real *x = st->srcp[s][g] + (size_t)t * d;
            rstd[(size_t)g * N + t] = rms_rstd(x, d, st->eps);
            a[g] = (real)(rstd[(size_t)g * N + t] * dot(w, x, d)); /* logit, then weight */
            if (a[g] > mx) mx = a[g];
        }
        double z = 0;
        for (int g = 0; g < ns; g++) z += exp(a[g] - mx);
        for (int g = 0; g < ns; g++) a[g] = (real)(exp(a[g] - mx) / z);
        real *o = out + (size_t)t * d;
        for (int c = 0; c < d; c++) {
            real v = 0;
            for (int g = 0; g < ns; g++) v += a[g] * st->srcp[s][g][(size_t)t * d + c];
            o[c] = v;
        }
    }
    return out;
}

static const real *attnres_backward(StreamState *st, int s, const real *din) {
    const StreamPlan *p = st->plan;
    const int N = st->N, d = st->d, ns = p->n_src[s];
    const StreamRange *r = p->src + (size_t)s * st->S;
    const real *w = st->params + st->q_off[s];
    real *dw = st->grads + st->q_off[s];
    double *dlog = st->vec; /* [n_src] dLoss/da_g */
    for (int t = 0; t < N; t++) {
        const real *a = st->alpha[s] + (size_t)t * ns, *dt = din + (size_t)t * d;
        double sum = 0;
        for (int g = 0; g < ns; g++) {
            dlog[g] = dot(dt, st->srcp[s][g] + (size_t)t * d, d); /* dLoss/da_g */
            sum += a[g] * dlog[g];
        }
        for (int g = 0; g < ns; g++) {
            const real *x = st->srcp[s][g] + (size_t)t * d;
            const double rr = st->rstd[s][(size_t)g * N + t], dl = a[g] * (dlog[g] - sum); /* softmax backward */
            /* logit = r·⟨w,x⟩: dw += dl·r·x; dx = dl·(r·w − r³·x·⟨w,x⟩/d) + a·din */
            const double c3 = rr * rr * rr * dot(w, x, d) / d;
            for (int k = r[g].lo; k < r[g].hi; k++) {
                real *dy = st->dy[k] + (size_t)t * d;
                for (int c = 0; c < d; c++) dy[c] += (real)(a[g] * dt[c] + dl * (rr * w[c] - c3 * x[c]));
            }
            for (int c = 0; c < d; c++) dw[c] += (real)(dl * rr * x[c]);
        }
    }
    return st->dy[s];
}

/* ------------------------------------------------------------------ HC / mHC maps */

/* The maps of sublayer s from its streams H [N,n,d]: a_in [N,n], R [N,n,n], b_out [N,n]. */
static void hc_maps(StreamState *st, int s) {
    const int N = st->N, d = st->d, n = st->n;
    const size_t *o = st->po[s];
    const real *P = st->params, *am = P + o[HC_AM], *ar = P + o[HC_AR], *be = P + o[HC_B], *wm = P + o[HC_WM],
               *wr = P + o[HC_WR], *wb = P + o[HC_WB], sa = P[o[HC_SA]], sb = P[o[HC_SB]];
    for (int t = 0; t < N; t++) {
        real *tm = st->aux[s] + (size_t)t * (2 * n + n * n), *tb = tm + n, *tr = tm + 2 * n;
        for (int i = 0; i < n; i++) {
            const real *x = st->H[s] + ((size_t)t * n + i) * d;
            const real rr = rms_rstd(x, d, st->eps);
            st->nrm[s][(size_t)t * n + i] = rr;
            double zm = 0, zb = 0;
            for (int c = 0; c < d; c++) {
                zm += (double)(x[c] * rr) * wm[c];
                zb += (double)(x[c] * rr) * wb[c];
            }
            tm[i] = (real)tanh(zm);
            tb[i] = (real)tanh(zb);
            for (int j = 0; j < n; j++) {
                double zr = 0;
                for (int c = 0; c < d; c++) zr += (double)(x[c] * rr) * wr[(size_t)c * n + j];
                tr[i * n + j] = (real)tanh(zr);
                st->R[s][((size_t)t * n + i) * n + j] = ar[i * n + j] + sa * tr[i * n + j];
            }
            st->a_in[s][(size_t)t * n + i] = am[i] + sa * tm[i];
            st->b_out[s][(size_t)t * n + i] = be[i] + sb * tb[i];
        }
    }
}

/* Backward of hc_maps: da [n] (this token's dLoss/da_in), st->dR, st->db → params, dH. */
static void hc_maps_backward(StreamState *st, int s, const real *da_all) {
    const int N = st->N, d = st->d, n = st->n;
    const size_t *o = st->po[s];
    const real *P = st->params, *wm = P + o[HC_WM], *wr = P + o[HC_WR], *wb = P + o[HC_WB], sa = P[o[HC_SA]],
               sb = P[o[HC_SB]];
    real *G = st->grads;
    double gsa = 0, gsb = 0;
    for (int t = 0; t < N; t++) {
        const real *tm = st->aux[s] + (size_t)t * (2 * n + n * n), *tb = tm + n, *tr = tm + 2 * n;
        const real *da = da_all + (size_t)t * n, *dR = st->dR + (size_t)t * n * n, *db = st->db + (size_t)t * n;
        /* the parameters' terms: da, dR, db, or their Σ|terms| in magnitude mode */
        const real *daG = magnitudes ? st->daA + (size_t)t * n : da, *dRG = magnitudes ? st->dRA + (size_t)t * n * n : dR,
                   *dbG = magnitudes ? st->dbA + (size_t)t * n : db;
        for (int i = 0; i < n; i++) {
            const real *x = st->H[s] + ((size_t)t * n + i) * d;
            real *dx = st->dH + ((size_t)t * n + i) * d;
            const double rr = st->nrm[s][(size_t)t * n + i];
            G[o[HC_AM] + i] += daG[i];
            G[o[HC_B] + i] += dbG[i];
            gsa += daG[i] * mag(tm[i]);
            gsb += dbG[i] * mag(tb[i]);
            const double zm = (double)da[i] * sa * (1 - (double)tm[i] * tm[i]);
            const double zb = (double)db[i] * sb * (1 - (double)tb[i] * tb[i]);
            const double zmG = daG[i] * mag(sa) * (1 - (double)tm[i] * tm[i]);
            const double zbG = dbG[i] * mag(sb) * (1 - (double)tb[i] * tb[i]);
            double *zr = st->vec, *dh = st->vec + n, *zrG = st->vec + n + d; /* [n], [d], [n] */
            for (int j = 0; j < n; j++) {
                const double t2 = 1 - (double)tr[i * n + j] * tr[i * n + j];
                G[o[HC_AR] + i * n + j] += dRG[i * n + j];
                gsa += dRG[i * n + j] * mag(tr[i * n + j]);
                zr[j] = (double)dR[i * n + j] * sa * t2;
                zrG[j] = dRG[i * n + j] * mag(sa) * t2;
            }
            /* pre-activations z = H̄·W: dW += dz·H̄, dH̄ = Σ dz·W, then the RMSNorm backward */
            double dd = 0;
            for (int c = 0; c < d; c++) {
                const double xn = (double)x[c] * rr;
                double g = zm * wm[c] + zb * wb[c];
                G[o[HC_WM] + c] += (real)(zmG * mag(xn));
                G[o[HC_WB] + c] += (real)(zbG * mag(xn));
                for (int j = 0; j < n; j++) {
                    g += zr[j] * wr[(size_t)c * n + j];
                    G[o[HC_WR] + (size_t)c * n + j] += (real)(zrG[j] * mag(xn));
                }
                dh[c] = g;
                dd += g * x[c];
            }
            const double c3 = rr * rr * rr * dd / d;
            for (int c = 0; c < d; c++) dx[c] += (real)(rr * dh[c] - c3 * x[c]);
        }
    }
    G[o[HC_SA]] += (real)gsa;
    G[o[HC_SB]] += (real)gsb;
}

/* Sinkhorn-Knopp: mats[0] = M, then mats[2k+1] = rows of mats[2k] normalised,
 * mats[2k+2] = columns of mats[2k+1] normalised; returns mats[2·iters]. */
real *stream_sinkhorn(real *mats, int n, int iters) {
    const int nn = n * n;
    for (int k = 0; k < 2 * iters; k++) {
        const real *a = mats + (size_t)k * nn;
        real *b = mats + (size_t)(k + 1) * nn;
        for (int u = 0; u < n; u++) {
            double sum = 0;
            for (int v = 0; v < n; v++) sum += k % 2 ? a[v * n + u] : a[u * n + v];
            for (int v = 0; v < n; v++) {
                const int at = k % 2 ? v * n + u : u * n + v;
                b[at] = (real)(a[at] / sum);
            }
        }
    }
    return mats + (size_t)2 * iters * nn;
}

/* Backward through every normalisation: g [n²] = dLoss/dmats[2·iters] → dLoss/dmats[0]. With
 * mag [n²] (magnitude mode), each step's terms (|g| + |Σ_line g·b|) / sum are added into mag:
 * the size of what every step rounds (each step's error then passes through the remaining
 * normalisations' backward, projections of norm about 1 once the iteration has converged). */
static void sinkhorn_backward(const real *mats, real *g, real *tmp, int n, int iters, real *mag) {
    const int nn = n * n;
    for (int k = 2 * iters - 1; k >= 0; k--) {
        const real *a = mats + (size_t)k * nn, *b = mats + (size_t)(k + 1) * nn;
        /* b = a / sum over the line: da = (db − Σ_line db·b) / sum */
        for (int u = 0; u < n; u++) {
            double sum = 0, gb = 0;
            for (int v = 0; v < n; v++) {
                const int at = k % 2 ? v * n + u : u * n + v;
                sum += a[at];
                gb += (double)g[at] * b[at];
            }
            for (int v = 0; v < n; v++) {
                const int at = k % 2 ? v * n + u : u * n + v;
                tmp[at] = (real)((g[at] - gb) / sum);
                if (mag) mag[at] += (real)((fabs(g[at]) + fabs(gb)) / sum);
            }
        }
        memcpy(g, tmp, (size_t)nn * sizeof *g);
    }
}

/* mHC projections of x̃ = RMSNorm(vec H): aux = [x̃φ_pre (n), x̃φ_post (n), x̃φ_res (n²)]. */
static void mhc_maps(StreamState *st, int s) {
    const int N = st->N, d = st->d, n = st->n, nd = n * d, nn = n * n, W = 2 * n + nn;
    const size_t *o = st->po[s];
    const real *P = st->params, *fpre = P + o[MH_PHI_PRE], *fpost = P + o[MH_PHI_POST], *fres = P + o[MH_PHI_RES],
               *bpre = P + o[MH_B_PRE], *bpost = P + o[MH_B_POST], *bres = P + o[MH_B_RES];
    const double apre = P[o[MH_A_PRE]], apost = P[o[MH_A_POST]], ares = P[o[MH_A_RES]];
    for (int t = 0; t < N; t++) {
        const real *x = st->H[s] + (size_t)t * nd;
        const real rr = rms_rstd(x, nd, st->eps);
        st->nrm[s][t] = rr;
        real *pr = st->aux[s] + (size_t)t * W;
        for (int j = 0; j < W; j++) {
            const real *f = j < n ? fpre + j : j < 2 * n ? fpost + (j - n) : fres + (j - 2 * n);
            const int stride = j < 2 * n ? n : nn;
            double z = 0;
            for (int k = 0; k < nd; k++) z += (double)(x[k] * rr) * f[(size_t)k * stride];
            pr[j] = (real)z;
        }
        for (int j = 0; j < n; j++) {
            st->a_in[s][(size_t)t * n + j] = (real)sigmoid(apre * pr[j] + bpre[j]);
            st->b_out[s][(size_t)t * n + j] = (real)(2 * sigmoid(apost * pr[n + j] + bpost[j]));
        }
        real *M = st->sk;
        for (int k = 0; k < nn; k++) M[k] = (real)exp(ares * pr[2 * n + k] + bres[k]);
        const real *Hres = stream_sinkhorn(M, n, st->plan->iters);
        /* H'[a] = Σ_b Hres[a,b] H[b]: in R's [source, target] layout R[b,a] = Hres[a,b] */
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) st->R[s][(size_t)t * nn + b * n + a] = Hres[a * n + b];
    }
}

static void mhc_maps_backward(StreamState *st, int s, const real *da_all) {
    const int N = st->N, d = st->d, n = st->n, nd = n * d, nn = n * n, W = 2 * n + nn, it = st->plan->iters;
    const size_t *o = st->po[s];
    const real *P = st->params, *bres = P + o[MH_B_RES];
    const double apre = P[o[MH_A_PRE]], apost = P[o[MH_A_POST]], ares = P[o[MH_A_RES]];
    real *G = st->grads;
    real *M = st->sk, *g = st->sk + (size_t)(2 * it + 1) * nn, *tmp = g + nn, *gG = tmp + nn;
    double *dproj = st->vec, *dprojG = st->vec + W; /* [2n + n²] each: the gradient, the parameters' terms */
    for (int t = 0; t < N; t++) {
        const real *pr = st->aux[s] + (size_t)t * W, *x = st->H[s] + (size_t)t * nd;
        const double rr = st->nrm[s][t];
        const real *da = da_all + (size_t)t * n, *dR = st->dR + (size_t)t * nn, *db = st->db + (size_t)t * n;
        const real *daG = magnitudes ? st->daA + (size_t)t * n : da, *dRG = magnitudes ? st->dRA + (size_t)t * nn : dR,
                   *dbG = magnitudes ? st->dbA + (size_t)t * n : db;
        for (int j = 0; j < n; j++) {
            const double a = st->a_in[s][(size_t)t * n + j], b = st->b_out[s][(size_t)t * n + j];
            const double zpre = da[j] * a * (1 - a), zpost = db[j] * b * (1 - b / 2); /* σ' and (2σ)' */
            const double zpreG = daG[j] * a * (1 - a), zpostG = dbG[j] * b * (1 - b / 2);
            G[o[MH_B_PRE] + j] += (real)zpreG;
            G[o[MH_B_POST] + j] += (real)zpostG;
            G[o[MH_A_PRE]] += (real)(zpreG * mag(pr[j]));
            G[o[MH_A_POST]] += (real)(zpostG * mag(pr[n + j]));
            dproj[j] = zpre * apre;
            dproj[n + j] = zpost * apost;
            dprojG[j] = zpreG * mag(apre);
            dprojG[n + j] = zpostG * mag(apost);
        }
        /* replay Sinkhorn for this token, then back through it and exp */
        for (int k = 0; k < nn; k++) M[k] = (real)exp(ares * pr[2 * n + k] + bres[k]);
        stream_sinkhorn(M, n, it);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) g[a * n + b] = dR[b * n + a], gG[a * n + b] = dRG[b * n + a];
        sinkhorn_backward(M, g, tmp, n, it, magnitudes ? gG : NULL); /* gG: |dR|'s terms, then each step's */
        if (!magnitudes) memcpy(gG, g, (size_t)nn * sizeof *g);
        for (int k = 0; k < nn; k++) {
            const double z = (double)g[k] * M[k], zG = (double)gG[k] * M[k]; /* d exp */
            G[o[MH_B_RES] + k] += (real)zG;
            G[o[MH_A_RES]] += (real)(zG * mag(pr[2 * n + k]));
            dproj[2 * n + k] = z * ares;
            dprojG[2 * n + k] = zG * mag(ares);
        }
        /* projections z_j = Σ_k x̃_k φ[k,j]: dφ += x̃·dz, dx̃ = Σ_j φ·dz, then RMSNorm backward */
        double dd = 0;
        real *dx = st->dH + (size_t)t * nd;
        for (int k = 0; k < nd; k++) {
            const double xn = (double)x[k] * rr;
            double gk = 0;
            for (int j = 0; j < W; j++) {
                const size_t at = j < n ? o[MH_PHI_PRE] + (size_t)k * n + j
                                  : j < 2 * n ? o[MH_PHI_POST] + (size_t)k * n + (j - n)
                                              : o[MH_PHI_RES] + (size_t)k * nn + (j - 2 * n);
                G[at] += (real)(mag(xn) * dprojG[j]);
                gk += P[at] * dproj[j];
            }
            dd += gk * x[k];
            dx[k] += (real)(rr * gk); /* the −r³·x·dd/nd part is added below, once dd is known */
        }
        const double c3 = rr * rr * rr * dd / nd;
        for (int k = 0; k < nd; k++) dx[k] -= (real)(c3 * x[k]);
    }
}

/* ------------------------------------------------------------------ HC / mHC streams */

static const real *streams_forward(StreamState *st, int s) {
    const int N = st->N, d = st->d, n = st->n, S2 = 2 * st->plan->L;
    real *H = st->H[s];
    if (s == 0) {
        for (int t = 0; t < N; t++)
            for (int i = 0; i < n; i++) memcpy(H + ((size_t)t * n + i) * d, st->y[0] + (size_t)t * d, d * sizeof *H);
    } else { /* H_s[j] = Σ_i R[i,j] H_{s−1}[i] + b[j]·y_s */
        const real *Hp = st->H[s - 1], *y = st->y[s];
        for (int t = 0; t < N; t++) {
            const real *R = st->R[s - 1] + (size_t)t * n * n, *b = st->b_out[s - 1] + (size_t)t * n;
            for (int j = 0; j < n; j++) {
                real *hj = H + ((size_t)t * n + j) * d;
                for (int c = 0; c < d; c++) hj[c] = b[j] * y[(size_t)t * d + c];
                for (int i = 0; i < n; i++) {
                    const real *hi = Hp + ((size_t)t * n + i) * d;
                    for (int c = 0; c < d; c++) hj[c] += R[i * n + j] * hi[c];
                }
            }
        }
    }
    if (s == S2) { /* the head reads the sum of the streams */
        for (int t = 0; t < N; t++)
            for (int c = 0; c < d; c++) {
                real v = 0;
                for (int i = 0; i < n; i++) v += H[((size_t)t * n + i) * d + c];
                st->hfin[(size_t)t * d + c] = v;
            }
        return st->hfin;
    }
    if (st->plan->kind == STREAM_HC) hc_maps(st, s);
    else mhc_maps(st, s);
    real *out = st->xin[s];
    for (int t = 0; t < N; t++) {
        const real *a = st->a_in[s] + (size_t)t * n;
        for (int c = 0; c < d; c++) {
            real v = 0;
            for (int i = 0; i < n; i++) v += a[i] * H[((size_t)t * n + i) * d + c];
            out[(size_t)t * d + c] = v;
        }
    }
    return out;
}

static const real *streams_backward(StreamState *st, int s, const real *din) {
    const int N = st->N, d = st->d, n = st->n, S2 = 2 * st->plan->L;
    const size_t Nnd = (size_t)N * n * d;
    real *H = st->H[s];
    if (s == S2) {
        for (int t = 0; t < N; t++)
            for (int i = 0; i < n; i++) memcpy(st->dH + ((size_t)t * n + i) * d, din + (size_t)t * d, d * sizeof *din);
    } else { /* in = Σ_i a[i] H[i]: da[i] = ⟨din, H[i]⟩, dH[i] += a[i]·din; then the maps */
        real *da = st->dfin; /* [N,n] fits in [N,d] when n ≤ d; checked at create by the plan bound */
        for (int t = 0; t < N; t++) {
            const real *a = st->a_in[s] + (size_t)t * n, *g = din + (size_t)t * d;
            for (int i = 0; i < n; i++) {
                const real *hi = H + ((size_t)t * n + i) * d;
                real *dhi = st->dH + ((size_t)t * n + i) * d;
                da[(size_t)t * n + i] = (real)dot(g, hi, d);
                if (magnitudes) st->daA[(size_t)t * n + i] = (real)adot(g, hi, d);
                for (int c = 0; c < d; c++) dhi[c] += a[i] * g[c];
            }
        }
        if (st->plan->kind == STREAM_HC) hc_maps_backward(st, s, da);
        else mhc_maps_backward(st, s, da);
    }
    if (s == 0) { /* H_0[i] = embedding for every i */
        real *demb = st->dfin;
        for (int t = 0; t < N; t++)
            for (int c = 0; c < d; c++) {
                real v = 0;
                for (int i = 0; i < n; i++) v += st->dH[((size_t)t * n + i) * d + c];
                demb[(size_t)t * d + c] = v;
            }
        return demb;
    }
    /* H_s[j] = Σ_i R[i,j] H_{s−1}[i] + b[j] y_s: dy, dR, db (for the maps of s−1), dH_{s−1} */
    const real *Hp = st->H[s - 1], *y = st->y[s];
    real *dy = st->dfin;
    zero_fill(st->dHp, Nnd);
    for (int t = 0; t < N; t++) {
        const real *R = st->R[s - 1] + (size_t)t * n * n, *b = st->b_out[s - 1] + (size_t)t * n;
        real *dR = st->dR + (size_t)t * n * n, *db = st->db + (size_t)t * n, *dyt = dy + (size_t)t * d;
        memset(dyt, 0, d * sizeof *dyt);
        for (int j = 0; j < n; j++) {
            const real *g = st->dH + ((size_t)t * n + j) * d;
            db[j] = (real)dot(g, y + (size_t)t * d, d);
            if (magnitudes) st->dbA[(size_t)t * n + j] = (real)adot(g, y + (size_t)t * d, d);
            for (int c = 0; c < d; c++) dyt[c] += b[j] * g[c];
            for (int i = 0; i < n; i++) {
                const real *hi = Hp + ((size_t)t * n + i) * d;
                real *dhi = st->dHp + ((size_t)t * n + i) * d;
                dR[i * n + j] = (real)dot(g, hi, d);
                if (magnitudes) st->dRA[((size_t)t * n + i) * n + j] = (real)adot(g, hi, d);
                for (int c = 0; c < d; c++) dhi[c] += R[i * n + j] * g[c];
            }
        }
    }
    real *tmp = st->dH; /* dH_{s−1} becomes the current gradient */
    st->dH = st->dHp;
    st->dHp = tmp;
    return dy;
}

/* ------------------------------------------------------------------ dispatch */

const real *stream_forward(StreamState *st, int s) {
    const size_t Nd = (size_t)st->N * st->d;
    switch (st->plan->kind) {
    case STREAM_PLAIN:
        if (s == 0) return st->xin[0] = (real *)st->y[0];
        add_into(st->xin[s], st->xin[s - 1], st->y[s], Nd); /* x_s = x_{s−1} + y_s */
        return st->xin[s];
    case STREAM_DENSEFORMER: return dense_forward(st, s);
    case STREAM_ATTNRES: return attnres_forward(st, s);
    case STREAM_HC:
    case STREAM_MHC: return streams_forward(st, s);
    }
    return NULL;
}

void stream_backward_begin(StreamState *st) {
    const size_t Nd = (size_t)st->N * st->d;
    switch (st->plan->kind) {
    case STREAM_PLAIN: zero_fill(st->dx, Nd); break;
    case STREAM_DENSEFORMER:
        for (int i = 0; i <= st->plan->L; i++) zero_fill(st->dX[i], Nd);
        break;
    case STREAM_ATTNRES:
        for (int s = 0; s < st->S; s++) zero_fill(st->dy[s], Nd);
        break;
    case STREAM_HC:
    case STREAM_MHC: break; /* the head's step overwrites dH */
    }
}

const real *stream_backward(StreamState *st, int s, const real *din) {
    switch (st->plan->kind) {
    case STREAM_PLAIN: /* dx_s = dx_{s+1} + din = dLoss/dy_s */
        acc(st->dx, din, (size_t)st->N * st->d);
        return st->dx;
    case STREAM_DENSEFORMER: return dense_backward(st, s, din);
    case STREAM_ATTNRES: return attnres_backward(st, s, din);
    case STREAM_HC:
    case STREAM_MHC: return streams_backward(st, s, din);
    }
    return NULL;
}

const real *stream_depth_weights(const StreamState *st, int s) {
    if (st->plan->kind != STREAM_ATTNRES || s < 0 || s >= st->S) return NULL;
    return st->alpha[s];
}
