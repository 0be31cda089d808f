/* test_gradcheck_ops.c: every reference op's backward equals the central finite
 * difference of its forward, in float64.
 *
 * Each op is wrapped in a scalar probe loss L = Σ w ⊙ out with fixed random weights w,
 * so dout = w exercises every output element with a different weight. For each input
 * element x_i: numeric = (L(x_i + h) − L(x_i − h)) / 2h with h = 1e-5, analytic from the
 * op's backward. The reported error of a tensor is max_i |analytic − numeric| divided by
 * max_i |numeric| (normalising by the tensor's largest gradient, because element-wise
 * ratios are meaningless where a gradient is ~0, e.g. masked attention positions).
 *
 * Bound 1e-7: central differences have truncation error ~h²·|L'''|/6 ≈ 1e-11 and rounding
 * error ~eps_64·|L|/h ≈ 1e-11 here, so a correct backward measures ~1e-9 or better, while a
 * wrong term (a missing factor, a dropped path) shows up at 1e-2..1. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <string.h>

#include "common/base/rng.h"
#include "ref/attn_ops.h"
#include "ref/ops.h"

#define FD_H 1e-5
#define TOL 1e-7

static Rng rng;

static void fill(real *x, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(&rng);
}

static double dot(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Compare analytic [n] with central differences of loss() w.r.t. x [n]; print and return
 * the normalised error. */
static double fd_check(const char *what, real *x, size_t n, const real *analytic, double (*loss)(void)) {
    double max_diff = 0, max_num = 0;
    for (size_t i = 0; i < n; i++) {
        real keep = x[i];
        x[i] = keep + FD_H;
        double lp = loss();
        x[i] = keep - FD_H;
        double lm = loss();
        x[i] = keep;
        double num = (lp - lm) / (2 * FD_H);
        double diff = fabs(num - analytic[i]);
        if (diff > max_diff) max_diff = diff;
        if (fabs(num) > max_num) max_num = fabs(num);
    }
    double err = max_diff / (max_num > 0 ? max_num : 1);
    cr_log_info("%-28s n=%4zu  max|grad|=%.3e  rel err=%.3e", what, n, max_num, err);
    printf("gradcheck %-28s n=%4zu  max|grad|=%.3e  rel err=%.3e\n", what, n, max_num, err);
    cr_expect(max_num > 1e-6, "%s: gradient is ~0, the check would prove nothing", what);
    return err;
}

/* ------------------------------------------------------------------ matmul */
enum { MN = 5, MC = 7, MOC = 3 };
static real mm_inp[MN * MC], mm_w[MOC * MC], mm_out[MN * MOC], mm_dout[MN * MOC];
static double mm_loss(void) {
    matmul_forward(mm_out, mm_inp, mm_w, MN, MC, MOC);
    return dot(mm_out, mm_dout, MN * MOC);
}
Test(gradcheck_ops, matmul) {
    rng_seed(&rng, 1);
    fill(mm_inp, MN * MC, 1), fill(mm_w, MOC * MC, 1), fill(mm_dout, MN * MOC, 1);
    real dinp[MN * MC] = {0}, dw[MOC * MC] = {0};
    matmul_backward(dinp, dw, mm_dout, mm_inp, mm_w, MN, MC, MOC, GRAD_ADD);
    cr_assert_lt(fd_check("matmul d(inp)", mm_inp, MN * MC, dinp, mm_loss), TOL);
    cr_assert_lt(fd_check("matmul d(weight)", mm_w, MOC * MC, dw, mm_loss), TOL);
}

/* ------------------------------------------------------------------ embedding */
enum { EN = 6, EC = 4, EV = 5 };
static const int32_t emb_tok[EN] = {3, 0, 3, 4, 1, 3}; /* repeats: gradients must add up */
static real emb_w[EV * EC], emb_out[EN * EC], emb_dout[EN * EC];
static double emb_loss(void) {
    embedding_forward(emb_out, emb_tok, emb_w, EN, EC);
    return dot(emb_out, emb_dout, EN * EC);
}
Test(gradcheck_ops, embedding) {
    rng_seed(&rng, 2);
    fill(emb_w, EV * EC, 1), fill(emb_dout, EN * EC, 1);
    real dw[EV * EC] = {0};
    embedding_backward(dw, emb_dout, emb_tok, EN, EC);
    cr_assert_lt(fd_check("embedding d(wte)", emb_w, EV * EC, dw, emb_loss), TOL);
    for (int i = 0; i < EC; i++) cr_assert_eq(dw[2 * EC + i], 0, "token 2 is unused: its row gets no gradient");
}

/* ------------------------------------------------------------------ rmsnorm */
enum { RN = 4, RC = 8 };
static real rn_x[RN * RC], rn_g[RC], rn_out[RN * RC], rn_rstd[RN], rn_dout[RN * RC];
static double rn_loss(void) {
    rmsnorm_forward(rn_out, rn_rstd, rn_x, rn_g, RN, RC, 1e-5);
    return dot(rn_out, rn_dout, RN * RC);
}
Test(gradcheck_ops, rmsnorm) {
    rng_seed(&rng, 3);
    fill(rn_x, RN * RC, 1), fill(rn_dout, RN * RC, 1);
    for (int i = 0; i < RC; i++) rn_g[i] = 1 + 0.3 * rng_normal(&rng); /* gains != 1 so dg matters */
    rn_loss();
    real dx[RN * RC] = {0}, dg[RC] = {0};
    rmsnorm_backward(dx, dg, rn_dout, rn_x, rn_g, rn_rstd, RN, RC, GRAD_ADD);
    cr_assert_lt(fd_check("rmsnorm d(x)", rn_x, RN * RC, dx, rn_loss), TOL);
    cr_assert_lt(fd_check("rmsnorm d(g)", rn_g, RC, dg, rn_loss), TOL);
}

/* ------------------------------------------------------------------ rope */
enum { PB = 2, PT = 5, PH = 3, PD = 6 };
static real rp_x[PB * PT * PH * PD], rp_out[PB * PT * PH * PD], rp_dout[PB * PT * PH * PD];
static real rp_cos[PT * PD / 2], rp_sin[PT * PD / 2];
static double rp_loss(void) {
    rope_forward(rp_out, rp_x, rp_cos, rp_sin, PB, PT, PH, PD);
    return dot(rp_out, rp_dout, PB * PT * PH * PD);
}
Test(gradcheck_ops, rope) {
    rng_seed(&rng, 4);
    const int n = PB * PT * PH * PD;
    rope_tables(rp_cos, rp_sin, PT, PD, 10000.0);
    fill(rp_x, n, 1), fill(rp_dout, n, 1);
    real dx[PB * PT * PH * PD] = {0};
    rope_backward(dx, rp_dout, rp_cos, rp_sin, PB, PT, PH, PD, GRAD_ADD);
    cr_assert_lt(fd_check("rope d(x)", rp_x, n, dx, rp_loss), TOL);
    /* in place gives the same rotation (the model rotates q and k in place) */
    real y[PB * PT * PH * PD];
    memcpy(y, rp_x, sizeof y);
    rope_forward(y, y, rp_cos, rp_sin, PB, PT, PH, PD);
    rp_loss();
    cr_assert_eq(memcmp(y, rp_out, sizeof y), 0);
}

/* ------------------------------------------------------------------ attention (attn_ops.h) */
/* The two halves of attention, each against its own differences: the probabilities
 * P = causal softmax(q·[k; k2]ᵀ/√hd) w.r.t. q, k, k2, and out = P·[v; v2] w.r.t. P, v, v2.
 * W = T (plain causal attention) or 2T (formulas.md §4 Eq. 2: a second key/value set, one softmax
 * over both halves); MHA, GQA and MQA head groupings. */
enum { AB = 2, AT = 5, AH = 4, AD = 3, AQ = AB * AT * AH * AD, AATT = AB * AH * AT * 2 * AT };
static int a_nkv, a_two; /* kv heads; 1: the second key/value set (W = 2T) */
static real at_q[AQ], at_k[AQ], at_k2[AQ], at_v[AQ], at_v2[AQ];
static real at_att[AATT], at_watt[AATT], at_p[AATT], at_out[AQ], at_wout[AQ];
static size_t att_n(void) { return (size_t)AB * AH * AT * (a_two ? 2 : 1) * AT; }
static double probs_loss(void) {
    attn_probs_forward(at_att, at_q, at_k, a_two ? at_k2 : NULL, AB, AT, AH, a_nkv, AD);
    return dot(at_att, at_watt, att_n());
}
static double apply_loss(void) {
    attn_apply_forward(at_out, at_p, at_v, a_two ? at_v2 : NULL, AB, AT, AH, a_nkv, AD);
    return dot(at_out, at_wout, AQ);
}
static void att_check(const char *what, const char *tag, real *x, size_t n, const real *g, double (*loss)(void)) {
    char name[64];
    snprintf(name, sizeof name, "attn %s%s", what, tag);
    cr_assert_lt(fd_check(name, x, n, g, loss), TOL);
}
static void attention_case(int nkv, int two, const char *tag) {
    rng_seed(&rng, 5 + nkv + 10 * two);
    a_nkv = nkv, a_two = two;
    const int nk = AB * AT * nkv * AD, W = two ? 2 * AT : AT;
    const size_t na = att_n();
    fill(at_q, AQ, 1), fill(at_k, nk, 1), fill(at_k2, nk, 1), fill(at_v, nk, 1), fill(at_v2, nk, 1);
    fill(at_watt, na, 1), fill(at_wout, AQ, 1);
    probs_loss();
    /* probabilities: each row sums to 1 over both halves, zero past the diagonal in each */
    for (int r = 0; r < AB * AH * AT; r++) {
        const int t = r % AT;
        double s = 0;
        for (int j = 0; j < W; j++) {
            s += at_att[r * W + j];
            if (j % AT > t) cr_assert_eq(at_att[r * W + j], 0);
        }
        cr_assert_float_eq(s, 1.0, 1e-14);
    }
    memcpy(at_p, at_att, na * sizeof *at_p); /* the apply half reads real probabilities */
    real dq[AQ] = {0}, dk[AQ] = {0}, dk2[AQ] = {0}, dv[AQ] = {0}, dv2[AQ] = {0}, datt[AATT] = {0};
    attn_probs_backward(dq, dk, two ? dk2 : NULL, at_watt, at_att, at_q, at_k, two ? at_k2 : NULL, AB, AT, AH, nkv, AD);
    attn_apply_backward(datt, dv, two ? dv2 : NULL, at_wout, at_p, at_v, two ? at_v2 : NULL, AB, AT, AH, nkv, AD,
                        GRAD_ADD);
    /* GRAD_SET over NaN: the visible entries get the bits of zero + GRAD_ADD, the masked ones
     * are left alone */
    real dset[AATT];
    for (size_t i = 0; i < na; i++) dset[i] = NAN;
    attn_apply_backward(dset, NULL, NULL, at_wout, at_p, at_v, two ? at_v2 : NULL, AB, AT, AH, nkv, AD, GRAD_SET);
    for (int r = 0; r < AB * AH * AT; r++)
        for (int j = 0; j < W; j++) {
            const size_t i = (size_t)r * W + j;
            if (j % AT > r % AT) cr_assert(isnan(dset[i]), "GRAD_SET wrote a masked entry (%d, %d)", r, j);
            else cr_assert(memcmp(&dset[i], &datt[i], sizeof *dset) == 0, "GRAD_SET differs at (%d, %d)", r, j);
        }
    att_check("probs d(q)", tag, at_q, AQ, dq, probs_loss);
    att_check("probs d(k)", tag, at_k, nk, dk, probs_loss);
    if (two) att_check("probs d(k2)", tag, at_k2, nk, dk2, probs_loss);
    att_check("apply d(att)", tag, at_p, na, datt, apply_loss);
    att_check("apply d(v)", tag, at_v, nk, dv, apply_loss);
    if (two) att_check("apply d(v2)", tag, at_v2, nk, dv2, apply_loss);
}
Test(gradcheck_ops, attention_mha) { attention_case(AH, 0, " MHA"); }
Test(gradcheck_ops, attention_gqa) { attention_case(2, 0, " GQA 4q/2kv"); }
Test(gradcheck_ops, attention_mqa) { attention_case(1, 0, " MQA 4q/1kv"); }
Test(gradcheck_ops, attention_two_key_sets_mha) { attention_case(AH, 1, " W=2T MHA"); }
Test(gradcheck_ops, attention_two_key_sets_gqa) { attention_case(2, 1, " W=2T GQA 4q/2kv"); }

/* ------------------------------------------------------------------ swiglu */
enum { SN = 24 };
static real sw_g[SN], sw_u[SN], sw_out[SN], sw_dout[SN];
static double sw_loss(void) {
    swiglu_forward(sw_out, sw_g, sw_u, SN);
    return dot(sw_out, sw_dout, SN);
}
Test(gradcheck_ops, swiglu) {
    rng_seed(&rng, 7);
    fill(sw_g, SN, 2), fill(sw_u, SN, 1), fill(sw_dout, SN, 1);
    real dg[SN] = {0}, du[SN] = {0};
    swiglu_backward(dg, du, sw_dout, sw_g, sw_u, SN, GRAD_ADD);
    cr_assert_lt(fd_check("swiglu d(gate)", sw_g, SN, dg, sw_loss), TOL);
    cr_assert_lt(fd_check("swiglu d(up)", sw_u, SN, du, sw_loss), TOL);
}

/* ------------------------------------------------------------------ cross-entropy */
enum { CB = 2, CT = 4, CV = 7 };
static const int32_t ce_tok[CB * CT] = {1, 6, 0, 6, 2, 2, 5, 3};
static real ce_logits[CB * CT * CV], ce_losses[CB * CT];
static double ce_lse[CB * CT]; /* [CB, CT] */
static double ce_loss(void) { return crossentropy_forward(ce_losses, ce_lse, ce_logits, ce_tok, CB, CT, CV); }
Test(gradcheck_ops, crossentropy) {
    rng_seed(&rng, 8);
    fill(ce_logits, CB * CT * CV, 2);
    /* the mean over B·(T−1) predictions, by hand: token t+1 from position t */
    double expect = 0;
    for (int b = 0; b < CB; b++)
        for (int t = 0; t < CT - 1; t++) {
            const real *x = ce_logits + (b * CT + t) * CV;
            double z = 0;
            for (int i = 0; i < CV; i++) z += exp(x[i]);
            expect += log(z) - x[ce_tok[b * CT + t + 1]];
        }
    expect /= CB * (CT - 1);
    cr_assert_float_eq(ce_loss(), expect, 1e-14);
    real dl[CB * CT * CV] = {0};
    crossentropy_backward(dl, ce_logits, ce_lse, ce_tok, CB, CT, CV, 1.0, GRAD_ADD);
    cr_assert_lt(fd_check("crossentropy d(logits)", ce_logits, CB * CT * CV, dl, ce_loss), TOL);
    for (int i = 0; i < CV; i++) cr_assert_eq(dl[(CT - 1) * CV + i], 0, "last position has no target");
}

/* ------------------------------------------------------------------ residual and value mixer */
enum { XN = 10 };
static real mx_a[XN], mx_b[XN], mx_c[XN], mx_out[XN], mx_dout[XN];
static double mx_coef[3] = {0.7, 0, -1.3}; /* the zero source must be skipped, not read */
static double mx_loss(void) {
    const real *src[3] = {mx_a, NULL, mx_c};
    mix_forward(mx_out, src, mx_coef, 3, XN);
    residual_forward(mx_out, mx_out, mx_b, XN);
    return dot(mx_out, mx_dout, XN);
}
Test(gradcheck_ops, residual_and_mix) {
    rng_seed(&rng, 9);
    fill(mx_a, XN, 1), fill(mx_b, XN, 1), fill(mx_c, XN, 1), fill(mx_dout, XN, 1);
    real da[XN] = {0}, db[XN] = {0}, dc[XN] = {0}, dmix[XN] = {0};
    double dcoef[3] = {0};
    residual_backward(dmix, db, mx_dout, XN);
    const real *src[3] = {mx_a, NULL, mx_c};
    real *dsrc[3] = {da, NULL, dc};
    mix_backward(dsrc, dcoef, dmix, src, mx_coef, 3, XN);
    cr_assert_lt(fd_check("mix d(src 0)", mx_a, XN, da, mx_loss), TOL);
    cr_assert_lt(fd_check("mix d(src 2)", mx_c, XN, dc, mx_loss), TOL);
    cr_assert_lt(fd_check("residual d(b)", mx_b, XN, db, mx_loss), TOL);
    /* coefficients: dL/dc_i = Σ dout ⊙ src_i, checked by differences on c itself */
    for (int s = 0; s < 3; s += 2) {
        double keep = mx_coef[s];
        mx_coef[s] = keep + FD_H;
        double lp = mx_loss();
        mx_coef[s] = keep - FD_H;
        double lm = mx_loss();
        mx_coef[s] = keep;
        double num = (lp - lm) / (2 * FD_H);
        printf("gradcheck mix d(coef %d)  analytic %.12f numeric %.12f\n", s, dcoef[s], num);
        cr_assert_lt(fabs(num - dcoef[s]) / fabs(num), TOL);
    }
}

/* ------------------------------------------------------------------ GRAD_SET against zeroing */

/* GRAD_SET must give the bits of zeroing the output and adding (GRAD_ADD), whatever the
 * buffer held (here NaN, which an add would carry), including +0.0 where g is -0.0; and
 * GRAD_ADD must still add. One case per op that takes a GradWrite; the shapes are the
 * gradient checks' above. */
/* a d(inp) of 160 rows: two 80-row tiles in ref/ops.c's gemm_tiles, each zeroed by its own
 * beta = 0 product (the small matmul above is one tile) */
enum { TN = 160, TC = 24, TOC = 16 };
enum { GS_MAX = TN * TC };
_Static_assert(GS_MAX >= CB * CT * CV && GS_MAX >= PB * PT * PH * PD, "GRAD_SET buffers too small");
static real gs_set[GS_MAX], gs_set2[GS_MAX], gs_add[GS_MAX], gs_add2[GS_MAX]; /* [n] of the op's output */

static void fill_with(real *x, size_t n, real v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}

/* out (prefilled with junk) written with GRAD_SET equals zero + GRAD_ADD, bit for bit; a
 * second GRAD_ADD on top of the first doubles it. outputs: 1, or 2 when op writes its second
 * buffer too. */
static void check_set(const char *what, void (*op)(real *, real *, GradWrite), size_t n, int outputs) {
    fill_with(gs_set, n, NAN), fill_with(gs_set2, n, NAN);
    op(gs_set, gs_set2, GRAD_SET);
    fill_with(gs_add, n, 0), fill_with(gs_add2, n, 0);
    op(gs_add, gs_add2, GRAD_ADD);
    cr_assert(memcmp(gs_set, gs_add, n * sizeof *gs_set) == 0, "%s: GRAD_SET differs from zero + GRAD_ADD", what);
    if (outputs == 2)
        cr_assert(memcmp(gs_set2, gs_add2, n * sizeof *gs_set2) == 0, "%s: GRAD_SET differs (2nd output)", what);
    op(gs_add, gs_add2, GRAD_ADD);
    for (size_t i = 0; i < n; i++) cr_assert_eq(gs_add[i], 2 * gs_set[i], "%s: GRAD_ADD did not add at %zu", what, i);
}

static void gs_rmsnorm(real *out, real *unused, GradWrite how) {
    (void)unused;
    rmsnorm_backward(out, NULL, rn_dout, rn_x, rn_g, rn_rstd, RN, RC, how);
}
static void gs_rope(real *out, real *unused, GradWrite how) {
    (void)unused;
    rope_backward(out, rp_dout, rp_cos, rp_sin, PB, PT, PH, PD, how);
}
static void gs_matmul(real *out, real *unused, GradWrite how) { /* d(inp): BLAS beta 0 or 1 */
    (void)unused;
    matmul_backward(out, NULL, mm_dout, mm_inp, mm_w, MN, MC, MOC, how);
}
static real tm_inp[TN * TC], tm_w[TOC * TC], tm_dout[TN * TOC];
static void gs_matmul_tiled(real *out, real *unused, GradWrite how) {
    (void)unused;
    matmul_backward(out, NULL, tm_dout, tm_inp, tm_w, TN, TC, TOC, how);
}
static void gs_swiglu(real *dg, real *du, GradWrite how) { swiglu_backward(dg, du, sw_dout, sw_g, sw_u, SN, how); }
static void gs_crossentropy(real *out, real *unused, GradWrite how) {
    (void)unused;
    crossentropy_backward(out, ce_logits, ce_lse, ce_tok, CB, CT, CV, 1.0, how);
}

Test(gradcheck_ops, grad_set_is_zero_then_add) {
    rng_seed(&rng, 10);
    fill(rn_x, RN * RC, 1), fill(rn_g, RC, 1), fill(rn_dout, RN * RC, 1);
    rmsnorm_forward(rn_out, rn_rstd, rn_x, rn_g, RN, RC, 1e-5);
    check_set("rmsnorm", gs_rmsnorm, RN * RC, 1);
    rope_tables(rp_cos, rp_sin, PT, PD, 10000.0);
    fill(rp_dout, PB * PT * PH * PD, 1);
    check_set("rope", gs_rope, PB * PT * PH * PD, 1);
    fill(mm_inp, MN * MC, 1), fill(mm_w, MOC * MC, 1), fill(mm_dout, MN * MOC, 1);
    check_set("matmul", gs_matmul, MN * MC, 1);
    fill(tm_inp, TN * TC, 1), fill(tm_w, TOC * TC, 1), fill(tm_dout, TN * TOC, 1);
    check_set("matmul (two tiles)", gs_matmul_tiled, TN * TC, 1);
    fill(sw_g, SN, 2), fill(sw_u, SN, 1), fill(sw_dout, SN, 1);
    sw_dout[0] = -0.0, sw_u[0] = 1; /* d(gate)[0] = d(up)[0] = -0.0: SET must write +0.0 */
    check_set("swiglu", gs_swiglu, SN, 2);
    cr_assert(!signbit(gs_set[0]) && !signbit(gs_set2[0]), "swiglu: GRAD_SET kept a -0.0");
    fill(ce_logits, CB * CT * CV, 2);
    crossentropy_forward(ce_losses, ce_lse, ce_logits, ce_tok, CB, CT, CV);
    check_set("crossentropy", gs_crossentropy, CB * CT * CV, 1); /* the last rows too: zeros over NaN */
}
