/* test_exp.c: the reference's own exponentials (ref/exp_shifted.h) against libm.
 *
 * exp_shifted (double) and exp_shifted_float (float arithmetic) replace glibc's exp and expf
 * in the reference's hot loops: the cross-entropy, attention's softmax and SwiGLU's sigmoid.
 * Their error bounds, as the header states them, are checked here; so are the edges a
 * training run can meet (0, underflow, subnormal results, -inf, NaN). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ref/exp_shifted.h"

/* distance in units in the last place between two finite doubles of the same sign */
static uint64_t ulps_d(double a, double b) {
    int64_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    return ia > ib ? (uint64_t)(ia - ib) : (uint64_t)(ib - ia);
}
static uint32_t ulps_f(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    return ia > ib ? (uint32_t)(ia - ib) : (uint32_t)(ib - ia);
}

Test(exp, double_within_one_ulp_of_libm) {
    /* 4 million points over [-708, 0]: the range where the result is a normal number */
    uint64_t worst = 0;
    long same = 0, n = 0;
    for (long i = 0; i <= 4000000; i++, n++) {
        const double x = -708.0 * (double)i / 4000000.0;
        const double got = exp_shifted(x), want = exp(x);
        const uint64_t u = ulps_d(got, want);
        if (u > worst) worst = u;
        same += got == want;
    }
    cr_assert_leq(worst, 1, "exp_shifted is %llu ulps from exp", (unsigned long long)worst);
    /* mostly the same bits: 89.9% measured on this grid (about 92% over [-750, 0]) */
    cr_assert_gt(same, n * 4 / 5, "only %ld of %ld equal to exp", same, n);
}

Test(exp, float_within_one_ulp_of_rounded_exp) {
    /* every 16th float of [-104, 0], subnormal results included, against glibc's double exp
     * rounded to float (the correctly rounded e^x but for rare double roundings). Every
     * float: 1.12 billion points, 21 s at one thread here, over the 3 s a test may take;
     * checked once that way (docs/design/cpu-reference-speed.md) with the same outcome as below. */
    uint32_t worst = 0;
    long n = 0, same = 0, subnormal = 0;
    const float lo = 104.0f;
    uint32_t top;
    memcpy(&top, &lo, sizeof top);
    for (uint32_t mag = top;; mag -= 16, n++) { /* the bits of |x|, toward zero */
        float x;
        memcpy(&x, &mag, sizeof x);
        x = -x;
        const float got = exp_shifted_float(x), want = (float)exp((double)x);
        const uint32_t u = ulps_f(got, want);
        if (u > worst) worst = u;
        same += got == want;
        subnormal += want > 0 && want < FLT_MIN;
        if (mag < 16) break;
    }
    cr_assert_gt(n, 70000000, "only %ld points", n);
    cr_assert_gt(subnormal, 100000, "only %ld subnormal results", subnormal);
    cr_assert_leq(worst, 1, "exp_shifted_float is %u float ulps from exp", worst);
    /* mostly the correctly rounded float: 99.86% measured on this grid */
    cr_assert_gt(same, n / 1000 * 998, "only %ld of %ld equal to exp", same, n);
}

Test(exp, edges) {
    cr_assert_eq(exp_shifted(0.0), 1.0);
    cr_assert_eq(exp_shifted(-0.0), 1.0);
    cr_assert_eq(exp_shifted(-709.0), 0.0, "below -708 the result is 0");
    cr_assert_eq(exp_shifted(-INFINITY), 0.0);
    cr_assert(isnan(exp_shifted(NAN)), "a NaN stays NaN");
    cr_assert_eq(exp_shifted(-1.0), exp(-1.0));
}

Test(exp, float_edges) {
    cr_assert_eq(exp_shifted_float(0.0f), 1.0f);
    cr_assert_eq(exp_shifted_float(-0.0f), 1.0f);
    cr_assert_eq(exp_shifted_float(-1.0f), (float)exp(-1.0));
    /* the subnormal end: e^-103.97 = 1.39e-45 rounds to the smallest subnormal 2^-149,
     * e^-104 = 6.8e-46 < 2^-150 rounds to 0, and so does everything below */
    cr_assert_eq(exp_shifted_float(-103.97f), 0x1p-149f);
    cr_assert_eq(exp_shifted_float(-104.0f), 0.0f);
    cr_assert_eq(exp_shifted_float(-104.5f), 0.0f);
    cr_assert_eq(exp_shifted_float(-1000.0f), 0.0f);
    cr_assert_eq(exp_shifted_float(-FLT_MAX), 0.0f);
    cr_assert_eq(exp_shifted_float(-INFINITY), 0.0f);
    cr_assert(isnan(exp_shifted_float(NAN)), "a NaN stays NaN");
    cr_assert(isnan(exp_shifted_float(-NAN)), "a NaN stays NaN");
    /* the subnormal/normal border: e^x just above and below FLT_MIN = 2^-126 */
    float x = nextafterf((float)-87.33654475, -INFINITY); /* below ln(2^-126) */
    for (int i = 0; i < 4; i++, x = nextafterf(x, 0)) {
        const float want = (float)exp((double)x);
        cr_assert_leq(ulps_f(exp_shifted_float(x), want), 1, "at %a", (double)x);
    }
}
