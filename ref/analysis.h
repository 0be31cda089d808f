/* analysis.h: the analysis metrics of formulas.md §6 (paper Eq. 11-13, Fig. 3).
 *
 * Two layers: per-sample kernels on plain arrays (closed-form tests feed them directly)
 * and metrics_accumulate(), which runs a backend's model on a batch and adds every
 * metric of every sample, read through the Backend's analysis views, into a MetricSums. All arithmetic is in double whatever the
 * build's `real`; compiled twice like the rest of ref/ (real.h), so use the plain names.
 * Layers are 0-based here (layer l is the paper's n = l + 1). */
#ifndef VRL_REF_ANALYSIS_H
#define VRL_REF_ANALYSIS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/backend.h"
#include "ref/real.h"

#define metric_attention_entropy REF(metric_attention_entropy)
#define metric_token_similarity REF(metric_token_similarity)
#define metric_key_similarity REF(metric_key_similarity)
#define metric_value_spectrum REF(metric_value_spectrum)
#define metric_cross_layer REF(metric_cross_layer)
#define metrics_accumulate REF(metrics_accumulate)

/* Eq. 11 as the authors' code computes it, one sample: Ā = mean over heads of the causal
 * attention att [NH, T, T] (row = query i, column = key j); p_j = Σ_i Ā_ij / Σ_ij Ā_ij;
 * returns -Σ_j p_j ln p_j (0·ln 0 = 0). */
double metric_attention_entropy(const real *att /* [NH,T,T] */, int NH, int T);

/* Eq. 13, one sample: rows x_i (T rows of D values, row i at x + i*stride) normalised
 * as x / max(|x|, 1e-12); the mean cosine over the T(T-1) ordered pairs i != j. T >= 2. */
double metric_token_similarity(const real *x /* [T, stride] */, int T, int D, int stride);

/* Eq. 13 on post-RoPE keys k [T, NKV*hd]: concat = 1 treats the heads as one vector,
 * concat = 0 averages the per-head similarities. */
double metric_key_similarity(const real *k /* [T, NKV*hd] */, int T, int NKV, int hd, int concat);

/* Eq. 12, one sample: eig[D] = eigenvalues of C = (1/T) Σ_i v_i v_iᵀ in descending order
 * (LAPACK dsyev). Returns 0, or -1 with vrl_error if the eigensolver fails. */
int metric_value_spectrum(const real *v /* [T,D] */, int T, int D, double *eig /* [D] */);

/* Fig. 3, one sample, layer n with source layer m: U2 = Eq. 2's output
 * softmax(Q_n [K_n; K_m]ᵀ/√hd)[V_n; V_m] (one softmax over 2T scores, causal in each
 * half), U3 = ½·A_n(V_n + V_m), U6 = ½·(A_n V_n + V_m), A_n = causal softmax(Q_n K_nᵀ/√hd).
 * All outputs [T, NH*hd] (V heads repeated for GQA); *cos3 / *cos6 = mean over tokens of
 * cos(U2_t, U3_t) / cos(U2_t, U6_t). q post-RoPE [T, NH*hd]; k, km post-RoPE and v, vm raw
 * [T, NKV*hd]. Returns 0, or -1 (out of memory). */
int metric_cross_layer(const real *q, const real *k, const real *v, const real *km, const real *vm, int T, int NH,
                       int NKV, int hd, double *cos3, double *cos6);

/* Sums over samples of every metric; divide by n_samples (metric_sums_mean). */
typedef struct {
    int L, kvC;              /* layers, value width n_kv*hd */
    long n_samples;
    double *entropy;         /* [L]     attention entropy */
    double *sim_hidden;      /* [L+1]   token similarity of the hidden states */
    double *sim_keys_avg;    /* [L]     key similarity, heads averaged */
    double *sim_keys_cat;    /* [L]     key similarity, heads concatenated */
    double *spectrum;        /* [L,kvC] value spectrum, descending */
    double *cos_eq3;         /* [L]     Fig. 3 cosines, entry 0 unused (layer 1 has no m) */
    double *cos_eq6;         /* [L] */
} MetricSums;

/* Zeroed sums for L layers of value width kvC; 0 or -1 (out of memory). */
static inline int metric_sums_init(MetricSums *s, int L, int kvC) {
    memset(s, 0, sizeof *s);
    s->L = L;
    s->kvC = kvC;
    s->entropy = calloc((size_t)L, sizeof(double));
    s->sim_hidden = calloc((size_t)L + 1, sizeof(double));
    s->sim_keys_avg = calloc((size_t)L, sizeof(double));
    s->sim_keys_cat = calloc((size_t)L, sizeof(double));
    s->spectrum = calloc((size_t)L * kvC, sizeof(double));
    s->cos_eq3 = calloc((size_t)L, sizeof(double));
    s->cos_eq6 = calloc((size_t)L, sizeof(double));
    return s->entropy && s->sim_hidden && s->sim_keys_avg && s->sim_keys_cat && s->spectrum && s->cos_eq3 &&
                   s->cos_eq6
               ? 0
               : -1;
}

static inline void metric_sums_free(MetricSums *s) {
    free(s->entropy);
    free(s->sim_hidden);
    free(s->sim_keys_avg);
    free(s->sim_keys_cat);
    free(s->spectrum);
    free(s->cos_eq3);
    free(s->cos_eq6);
    memset(s, 0, sizeof *s);
}

/* Divide every sum by the sample count (once, after the last accumulate). */
static inline void metric_sums_mean(MetricSums *s) {
    if (s->n_samples <= 0) return;
    const double k = 1.0 / (double)s->n_samples;
    for (int l = 0; l < s->L; l++) {
        s->entropy[l] *= k;
        s->sim_keys_avg[l] *= k;
        s->sim_keys_cat[l] *= k;
        s->cos_eq3[l] *= k;
        s->cos_eq6[l] *= k;
        for (int i = 0; i < s->kvC; i++) s->spectrum[(size_t)l * s->kvC + i] *= k;
    }
    for (int l = 0; l <= s->L; l++) s->sim_hidden[l] *= k;
    s->n_samples = 1;
}

/* Run be's forward_loss on tokens [B, T] (the model's own shape; model created by be for a
 * spec of config c) and add every sample's metrics, read through be->view (backend.h), to
 * *s (initialised for c's L and n_kv*hd). be's dtype must be this build's `real` (use the
 * _f64 build with ref_backend_f64). 0, or -1 with vrl_error (bad token ids, a backend
 * without the views, eigensolver failure, out of memory). */
int metrics_accumulate(const Backend *be, void *model, const ModelConfig *c, int B, int T,
                       const int32_t *tokens /* [B,T] */, MetricSums *s);

#endif
