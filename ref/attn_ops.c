/* attn_ops.c: attention as probabilities and their application (shapes in attn_ops.h).
 * Scores and products accumulate in real, each softmax denominator in double (as ops.c). */
#include "ref/attn_ops.h"

#include <math.h>

void attn_probs_forward(real *att, const real *q, const real *k, const real *k2, int B, int T, int NH, int NKV,
                        int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = k2 ? 2 * T : T, halves = k2 ? 2 : 1;
    const real scale = (real)(1.0 / sqrt((double)hd));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / group;
            for (int t = 0; t < T; t++) {
                const real *qt = q + (size_t)(b * T + t) * qC + h * hd;
                real *a = att + (((size_t)b * NH + h) * T + t) * W; /* row t of [T,W] */
                for (int c = 0; c < W; c++) a[c] = 0;              /* causal mask in both halves */
                real maxv = -INFINITY;
                for (int half = 0; half < halves; half++) {
                    const real *kk = half ? k2 : k;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const real *kt = kk + (size_t)(b * T + t2) * kvC + kh * hd;
                        real s = 0;
                        for (int i = 0; i < hd; i++) s += qt[i] * kt[i];
                        s *= scale;
                        a[half * T + t2] = s;
                        if (s > maxv) maxv = s;
                    }
                }
                double sum = 0;
                for (int half = 0; half < halves; half++)
                    for (int t2 = 0; t2 <= t; t2++) {
                        real *x = &a[half * T + t2];
                        *x = rexp(*x - maxv);
                        sum += *x;
                    }
                real inv = (real)(1.0 / sum);
                for (int half = 0; half < halves; half++)
                    for (int t2 = 0; t2 <= t; t2++) a[half * T + t2] *= inv;
            }
        }
}

void attn_probs_backward(real *dq, real *dk, real *dk2, const real *datt, const real *att, const real *q,
                         const real *k, const real *k2, int B, int T, int NH, int NKV, int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = k2 ? 2 * T : T, halves = k2 ? 2 : 1;
    const real scale = (real)(1.0 / sqrt((double)hd));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / group;
            for (int t = 0; t < T; t++) {
                const size_t row = (((size_t)b * NH + h) * T + t) * W;
                const real *a = att + row, *da = datt + row;
                const real *qt = q + (size_t)(b * T + t) * qC + h * hd;
                real *dqt = dq ? dq + (size_t)(b * T + t) * qC + h * hd : NULL;
                /* softmax backward: d(score) = p ⊙ (dp − Σ p·dp), over the whole row */
                double s = 0;
                for (int half = 0; half < halves; half++)
                    for (int t2 = 0; t2 <= t; t2++) s += (double)a[half * T + t2] * da[half * T + t2];
                for (int half = 0; half < halves; half++) {
                    const real *kk = half ? k2 : k;
                    real *dkk = half ? dk2 : dk;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const real *kt = kk + (size_t)(b * T + t2) * kvC + kh * hd;
                        real ds = a[half * T + t2] * (da[half * T + t2] - (real)s) * scale;
                        if (dqt)
                            for (int i = 0; i < hd; i++) dqt[i] += ds * kt[i];
                        if (dkk) {
                            real *dkt = dkk + (size_t)(b * T + t2) * kvC + kh * hd;
                            for (int i = 0; i < hd; i++) dkt[i] += ds * qt[i];
                        }
                    }
                }
            }
        }
}

void attn_apply_forward(real *out, const real *att, const real *v, const real *v2, int B, int T, int NH, int NKV,
                        int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = v2 ? 2 * T : T, halves = v2 ? 2 : 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / group;
            for (int t = 0; t < T; t++) {
                const real *a = att + (((size_t)b * NH + h) * T + t) * W;
                real *ot = out + (size_t)(b * T + t) * qC + h * hd;
                for (int i = 0; i < hd; i++) ot[i] = 0;
                for (int half = 0; half < halves; half++) {
                    const real *vv = half ? v2 : v;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const real *vt = vv + (size_t)(b * T + t2) * kvC + kh * hd;
                        const real p = a[half * T + t2];
                        for (int i = 0; i < hd; i++) ot[i] += p * vt[i];
                    }
                }
            }
        }
}

void attn_apply_backward(real *datt, real *dv, real *dv2, const real *dout, const real *att, const real *v,
                         const real *v2, int B, int T, int NH, int NKV, int hd) {
    const int group = NH / NKV, qC = NH * hd, kvC = NKV * hd, W = v2 ? 2 * T : T, halves = v2 ? 2 : 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / group;
            for (int t = 0; t < T; t++) {
                const size_t row = (((size_t)b * NH + h) * T + t) * W;
                const real *a = att + row;
                const real *dy = dout + (size_t)(b * T + t) * qC + h * hd;
                for (int half = 0; half < halves; half++) {
                    const real *vv = half ? v2 : v;
                    real *dvv = half ? dv2 : dv;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const real *vt = vv + (size_t)(b * T + t2) * kvC + kh * hd;
                        if (datt) {
                            real dp = 0;
                            for (int i = 0; i < hd; i++) dp += dy[i] * vt[i];
                            datt[row + half * T + t2] += dp;
                        }
                        if (dvv) {
                            real *dvt = dvv + (size_t)(b * T + t2) * kvC + kh * hd;
                            const real p = a[half * T + t2];
                            for (int i = 0; i < hd; i++) dvt[i] += p * dy[i];
                        }
                    }
                }
            }
        }
}

void repeat_kv_add_forward(real *out, const real *src, int N, int NH, int NKV, int hd) {
    const int group = NH / NKV;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            real *o = out + ((size_t)n * NH + h) * hd;
            const real *s = src + ((size_t)n * NKV + h / group) * hd;
            for (int i = 0; i < hd; i++) o[i] += s[i];
        }
}

void repeat_kv_add_backward(real *dsrc, const real *dout, int N, int NH, int NKV, int hd) {
    const int group = NH / NKV;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            real *d = dsrc + ((size_t)n * NKV + h / group) * hd;
            const real *g = dout + ((size_t)n * NH + h) * hd;
            for (int i = 0; i < hd; i++) d[i] += g[i];
        }
}
