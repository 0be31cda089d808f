/* analysis.c: formulas.md §6 analysis metrics (analysis.h). Inputs are the build's `real`;
 * every sum is in double so the fp32 build loses nothing beyond its inputs. */
#include "ref/analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

/* LAPACK's symmetric eigensolver (OpenBLAS ships it). The trailing lengths are the
 * hidden CHARACTER arguments of the gfortran ABI. */
extern void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                   double *work, const int *lwork, int *info, size_t jobz_len, size_t uplo_len);

double metric_attention_entropy(const real *att, int NH, int T) {
    double *col = calloc((size_t)T, sizeof *col); /* [T] Σ_i Ā_ij */
    if (!col) return NAN;
    double total = 0;
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) { /* causal: entries above the diagonal are 0 */
                const double a = att[((size_t)h * T + i) * T + j] / NH;
                col[j] += a;
                total += a;
            }
    double e = 0;
    for (int j = 0; j < T; j++) {
        const double p = col[j] / total;
        if (p > 0) e -= p * log(p);
    }
    free(col);
    return e;
}

double metric_token_similarity(const real *x, int T, int D, int stride) {
    /* Σ_{i≠j} x̂_i·x̂_j = |Σ_i x̂_i|² − Σ_i |x̂_i|²: O(T·D) instead of O(T²·D). */
    double *sum = calloc((size_t)D, sizeof *sum); /* [D] Σ_i x̂_i */
    if (!sum) return NAN;
    double diag = 0;
    for (int i = 0; i < T; i++) {
        const real *r = x + (size_t)i * stride;
        double n2 = 0;
        for (int c = 0; c < D; c++) n2 += (double)r[c] * r[c];
        const double inv = 1.0 / fmax(sqrt(n2), 1e-12); /* F.normalize(eps = 1e-12) */
        for (int c = 0; c < D; c++) sum[c] += r[c] * inv;
        diag += n2 * inv * inv;
    }
    double s2 = 0;
    for (int c = 0; c < D; c++) s2 += sum[c] * sum[c];
    free(sum);
    return (s2 - diag) / ((double)T * (T - 1));
}

double metric_key_similarity(const real *k, int T, int NKV, int hd, int concat) {
    if (concat) return metric_token_similarity(k, T, NKV * hd, NKV * hd);
    double s = 0;
    for (int h = 0; h < NKV; h++) s += metric_token_similarity(k + (size_t)h * hd, T, hd, NKV * hd);
    return s / NKV;
}

int metric_value_spectrum(const real *v, int T, int D, double *eig) {
    double *c = calloc((size_t)D * D, sizeof *c); /* [D,D] (1/T) Σ_i v_i v_iᵀ */
    if (!c) return vrl_error("value spectrum: out of memory");
    for (int i = 0; i < T; i++) {
        const real *r = v + (size_t)i * D;
        for (int a = 0; a < D; a++)
            for (int b = 0; b <= a; b++) c[(size_t)a * D + b] += (double)r[a] * r[b];
    }
    for (int a = 0; a < D; a++)
        for (int b = 0; b <= a; b++) c[(size_t)b * D + a] = c[(size_t)a * D + b] /= T;
    int n = D, info = 0, lwork = -1;
    double wq;
    dsyev_("N", "U", &n, c, &n, eig, &wq, &lwork, &info, 1, 1); /* workspace query */
    lwork = info == 0 ? (int)wq : 3 * D;
    double *work = malloc((size_t)lwork * sizeof *work);
    if (!work) {
        free(c);
        return vrl_error("value spectrum: out of memory");
    }
    dsyev_("N", "U", &n, c, &n, eig, work, &lwork, &info, 1, 1);
    free(work);
    free(c);
    if (info != 0) return vrl_error("value spectrum: LAPACK dsyev failed (info %d)", info);
    for (int a = 0, b = D - 1; a < b; a++, b--) { /* dsyev gives ascending order */
        const double t = eig[a];
        eig[a] = eig[b];
        eig[b] = t;
    }
    return 0;
}

static double cosine(const double *a, const double *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
    return ab / (fmax(sqrt(aa), 1e-8) * fmax(sqrt(bb), 1e-8)); /* torch cosine_similarity eps */
}

int metric_cross_layer(const real *q, const real *k, const real *v, const real *km, const real *vm, int T, int NH,
                       int NKV, int hd, double *cos3, double *cos6) {
    const int qC = NH * hd, kvC = NKV * hd, group = NH / NKV;
    const double scale = 1.0 / sqrt((double)hd);
    double *s1 = malloc((size_t)T * sizeof *s1);      /* [T] scores of one query against K_n */
    double *s2 = malloc((size_t)T * sizeof *s2);      /* [T] against K_m */
    double *u2 = calloc((size_t)T * qC, sizeof *u2);  /* [T,qC] Eq. 2 */
    double *u3 = calloc((size_t)T * qC, sizeof *u3);  /* [T,qC] Eq. 3 */
    double *u6 = calloc((size_t)T * qC, sizeof *u6);  /* [T,qC] ½(A_n V_n + V_m) */
    if (!s1 || !s2 || !u2 || !u3 || !u6) {
        free(s1), free(s2), free(u2), free(u3), free(u6);
        return vrl_error("cross-layer metric: out of memory");
    }
    for (int h = 0; h < NH; h++) {
        const int kh = h / group; /* GQA: query head h reads kv head kh */
        for (int t = 0; t < T; t++) {
            const real *qt = q + (size_t)t * qC + h * hd;
            double mx = -INFINITY, mx1 = -INFINITY;
            for (int j = 0; j <= t; j++) {
                double a = 0, b = 0;
                for (int i = 0; i < hd; i++) {
                    a += (double)qt[i] * k[(size_t)j * kvC + kh * hd + i];
                    b += (double)qt[i] * km[(size_t)j * kvC + kh * hd + i];
                }
                s1[j] = a * scale, s2[j] = b * scale;
                mx1 = fmax(mx1, s1[j]);
                mx = fmax(mx, fmax(s1[j], s2[j]));
            }
            double z = 0, z1 = 0; /* joint softmax over both halves; A_n over the first */
            for (int j = 0; j <= t; j++) z += exp(s1[j] - mx) + exp(s2[j] - mx), z1 += exp(s1[j] - mx1);
            double *o2 = u2 + (size_t)t * qC + h * hd, *o3 = u3 + (size_t)t * qC + h * hd,
                   *o6 = u6 + (size_t)t * qC + h * hd;
            for (int j = 0; j <= t; j++) {
                const double p1 = exp(s1[j] - mx) / z, p2 = exp(s2[j] - mx) / z, a = exp(s1[j] - mx1) / z1;
                const real *vn = v + (size_t)j * kvC + kh * hd, *vmj = vm + (size_t)j * kvC + kh * hd;
                for (int i = 0; i < hd; i++) {
                    o2[i] += p1 * vn[i] + p2 * vmj[i];
                    o3[i] += 0.5 * a * (vn[i] + vmj[i]);
                    o6[i] += 0.5 * a * vn[i];
                }
            }
            const real *vmt = vm + (size_t)t * kvC + kh * hd; /* ½V_m at the token itself */
            for (int i = 0; i < hd; i++) o6[i] += 0.5 * vmt[i];
        }
    }
    double c3 = 0, c6 = 0;
    for (int t = 0; t < T; t++) {
        c3 += cosine(u2 + (size_t)t * qC, u3 + (size_t)t * qC, qC);
        c6 += cosine(u2 + (size_t)t * qC, u6 + (size_t)t * qC, qC);
    }
    *cos3 = c3 / T;
    *cos6 = c6 / T;
    free(s1), free(s2), free(u2), free(u3), free(u6);
    return 0;
}

/* One view of the last forward, or NULL (vrl_error set by the backend). */
static const real *view(const Backend *be, void *model, BackendView what, int index) {
    return (const real *)be->view(model, what, index);
}

int metrics_accumulate(const Backend *be, void *model, const ModelConfig *c, int B, int T, const int32_t *tokens,
                       MetricSums *s) {
    const int L = c->n_layers, d = c->d_model, NH = c->n_heads, NKV = c->n_kv_heads, hd = config_head_dim(c),
              qC = NH * hd, kvC = NKV * hd;
    if (s->L != L || s->kvC != kvC)
        return vrl_error("metrics: sums sized for L=%d, kv width %d; the model has L=%d, %d", s->L, s->kvC, L, kvC);
    if (be->dtype != REAL_DTYPE || !be->view)
        return vrl_error("metrics: backend %s does not give %s analysis views", be->name, REAL_DTYPE == DT_F64 ? "fp64" : "fp32");
    vrl_clear_error();
    if (isnan(be->forward_loss(model, tokens))) /* bad ids set vrl_error; else the weights are not finite */
        return vrl_last_error()[0] ? -1 : vrl_error("metrics: the loss is NaN: the model's weights hold NaN or Inf");
    double *eig = malloc((size_t)kvC * sizeof *eig); /* [kvC] one sample's spectrum */
    if (!eig) return vrl_error("metrics: out of memory");
    int rc = 0;
    for (int b = 0; b < B && !rc; b++) {
        const size_t tk = (size_t)b * T * kvC; /* sample b's offset in [B,T,kvC] */
        const real *kprev = NULL, *vprev = NULL;  /* layer l-1's keys and values [B,T,kvC] */
        for (int l = 0; l < L && !rc; l++) {
            const real *att = view(be, model, VIEW_ATTENTION, l), *q = view(be, model, VIEW_QUERIES, l),
                       *k = view(be, model, VIEW_KEYS, l), *v = view(be, model, VIEW_VALUES, l);
            if (!att || !q || !k || !v) {
                rc = -1;
                break;
            }
            s->entropy[l] += metric_attention_entropy(att + (size_t)b * NH * T * T, NH, T);
            s->sim_keys_avg[l] += metric_key_similarity(k + tk, T, NKV, hd, 0);
            s->sim_keys_cat[l] += metric_key_similarity(k + tk, T, NKV, hd, 1);
            if (metric_value_spectrum(v + tk, T, kvC, eig) < 0) rc = -1;
            for (int i = 0; i < kvC && !rc; i++) s->spectrum[(size_t)l * kvC + i] += eig[i];
            if (l >= 1 && !rc) { /* Fig. 3: layer n = l+1 >= 2 against m = n-1 */
                double c3, c6;
                rc = metric_cross_layer(q + (size_t)b * T * qC, k + tk, v + tk, kprev + tk, vprev + tk, T, NH, NKV, hd,
                                        &c3, &c6);
                if (!rc) s->cos_eq3[l] += c3, s->cos_eq6[l] += c6;
            }
            kprev = k, vprev = v;
        }
        for (int h = 0; h <= L && !rc; h++) {
            const real *x = view(be, model, VIEW_HIDDEN, h);
            if (!x) rc = -1;
            else s->sim_hidden[h] += metric_token_similarity(x + (size_t)b * T * d, T, d, d);
        }
        if (!rc) s->n_samples++;
    }
    free(eig);
    return rc;
}
