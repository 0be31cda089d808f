/* test_adamw.c: clipping + AdamW (ref/adamw.c) against a hand computation of formulas.md §2
 * written here with the textbook formulas, on a table of one decayed tensor "w" [2,3]
 * and one non-decayed "g" [3] (like a norm gain), over two steps (so the bias
 * corrections 1−β^t are exercised at t = 1 and t = 2), clipping active and inactive.
 *
 * Tolerance 1e-14 relative (float64): the reference follows torch's operation order
 * (lerp for m, sqrt(v)/sqrt(bc2) + eps) and the hand version the textbook order
 * (β1·m + (1−β1)·g, sqrt(v/bc2) + eps); they agree to a few ulps, while a wrong
 * formula (no bias correction, decay on g, clip after the moments) is off by >1e-4. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <string.h>

#include "ref/adamw.h"

enum { P = 9, PT = 16 }; /* elements; the table's flat buffer: "w" [6] padded to 8 (params.h), "g" at 8 */

static ParamTable table(void) {
    ParamTable t;
    memset(&t, 0, sizeof t);
    int64_t sw[2] = {2, 3}, sg[1] = {3};
    cr_assert_eq(param_table_add(&t, "w", 2, sw, 1, INIT_NORMAL, 0.02), 0);
    cr_assert_eq(param_table_add(&t, "g", 1, sg, 0, INIT_CONST, 1.0), 0);
    cr_assert_eq(t.count, P);
    cr_assert_eq(t.total, PT);
    cr_assert_eq(t.p[1].offset, 8);
    return t;
}

/* The hand computation's P elements ("w" then "g") into the table's flat buffer [PT], the
 * padding gaps zero, and back. */
static void to_table(const ParamTable *t, const double *x, double *flat) {
    memset(flat, 0, PT * sizeof *flat);
    memcpy(flat + t->p[0].offset, x, 6 * sizeof *x);
    memcpy(flat + t->p[1].offset, x + 6, 3 * sizeof *x);
}
static void from_table(const ParamTable *t, const double *flat, double *x) {
    memcpy(x, flat + t->p[0].offset, 6 * sizeof *x);
    memcpy(x + 6, flat + t->p[1].offset, 3 * sizeof *x);
}

/* One step by hand; returns the pre-clip norm. */
static double hand_step(double *p, double *g, double *m, double *v, int t, const AdamWConfig *o, double lr) {
    double ss = 0;
    for (int i = 0; i < P; i++) ss += g[i] * g[i];
    double norm = sqrt(ss);
    double coef = o->clip > 0 ? fmin(1.0, o->clip / (norm + 1e-6)) : 1.0;
    for (int i = 0; i < P; i++) {
        double gi = g[i] * coef;
        g[i] = gi;
        if (i < 6) p[i] -= lr * o->weight_decay * p[i]; /* "w" decays, "g" does not */
        m[i] = o->beta1 * m[i] + (1 - o->beta1) * gi;
        v[i] = o->beta2 * v[i] + (1 - o->beta2) * gi * gi;
        double mhat = m[i] / (1 - pow(o->beta1, t)), vhat = v[i] / (1 - pow(o->beta2, t));
        p[i] -= lr * mhat / (sqrt(vhat) + o->eps);
    }
    return norm;
}

static void run_case(double gscale, double clip, int expect_clipped) {
    ParamTable t = table();
    const AdamWConfig o = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = clip};
    const double p0[P] = {0.5, -0.3, 0.2, 1.1, -0.7, 0.05, 1.0, 0.9, 1.2};
    const double g1[P] = {0.3, -0.1, 0.02, -0.4, 0.25, 0.0, 0.15, -0.05, 0.08};
    const double g2[P] = {-0.2, 0.05, 0.3, 0.1, -0.15, 0.2, -0.1, 0.12, 0.01};
    double rp[P], rg[P], rm[P] = {0}, rv[P] = {0}; /* reference (real is double here) */
    double fp[PT], fg[PT], fm[PT] = {0}, fv[PT] = {0}; /* the reference's flat buffers */
    double hp[P], hg[P], hm[P] = {0}, hv[P] = {0}; /* hand */
    memcpy(rp, p0, sizeof rp);
    memcpy(hp, p0, sizeof hp);
    to_table(&t, rp, fp);
    long step = 0;
    const double lrs[2] = {1e-3, 3e-2};
    for (int s = 0; s < 2; s++) {
        const double *gs = s == 0 ? g1 : g2;
        for (int i = 0; i < P; i++) rg[i] = hg[i] = gscale * gs[i];
        step += 1;
        to_table(&t, rg, fg);
        double rn = adamw_update(&t, fp, fg, fm, fv, step, &o, lrs[s]);
        for (int i = 0; i < PT; i++) /* the gaps stay zero */
            cr_assert(fp[i] == 0 || i < 6 || (i >= 8 && i < 11), "gap element %d became %g", i, fp[i]);
        from_table(&t, fp, rp), from_table(&t, fg, rg), from_table(&t, fm, rm), from_table(&t, fv, rv);
        double hn = hand_step(hp, hg, hm, hv, s + 1, &o, lrs[s]);
        cr_assert_float_eq(rn, hn, 1e-15 * hn, "the returned norm is the pre-clip norm");
        cr_assert_eq(hn > clip && clip > 0, expect_clipped, "case setup: norm %.3f clip %.3f", hn, clip);
        double worst = 0;
        for (int i = 0; i < P; i++) {
            cr_assert_float_eq(rg[i], hg[i], 1e-15, "gradients are clipped in place");
            worst = fmax(worst, fabs(rp[i] - hp[i]) / fabs(hp[i]));
            worst = fmax(worst, fabs(rm[i] - hm[i]) / fmax(fabs(hm[i]), 1e-300));
            worst = fmax(worst, fabs(rv[i] - hv[i]) / fmax(fabs(hv[i]), 1e-300));
        }
        printf("adamw clip=%.1f step %d: pre-clip norm %.6f, p[0] %.15f -> hand %.15f, worst rel err %.2e\n", clip,
               s + 1, rn, rp[0], hp[0], worst);
        cr_assert_lt(worst, 1e-14);
        /* p[5] (in "w", decayed) has g1 = 0, so m = v = 0 and its first step is decay only */
        if (s == 0) cr_assert_float_eq(rp[5], p0[5] * (1 - lrs[0] * 0.1), 1e-17);
    }
    param_table_free(&t);
}

Test(adamw, clipping_inactive) { run_case(1.0, 1.0, 0); }   /* ‖g‖ ≈ 0.6 < 1 */
Test(adamw, clipping_active) { run_case(10.0, 1.0, 1); }    /* ‖g‖ ≈ 6 > 1 */
Test(adamw, clipping_disabled) { run_case(10.0, 0.0, 0); }  /* clip <= 0: raw gradients */
