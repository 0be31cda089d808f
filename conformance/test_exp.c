/* test_exp.c: the reference's own exponentials (ref/exp_shifted.h) against libm.
 *
 * exp_shifted (double) and exp_shifted_for_float (rounded to float) replace glibc's exp and
 * expf in the reference's hot loops: the cross-entropy, attention's softmax and SwiGLU's
 * sigmoid. Their error bounds, as the header states them, are checked here; so are the edges
 * a training run can meet (0, underflow, -inf, NaN). */
#include <criterion/criterion.h>
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
    /* every 64th float of [-103, 0] (down to float's smallest subnormal results) */
    uint32_t worst = 0;
    long n = 0;
    const float lo = 103.0f;
    uint32_t top;
    memcpy(&top, &lo, sizeof top);
    for (uint32_t mag = top;; mag -= 64, n++) { /* the bits of |x|, toward zero */
        float x;
        memcpy(&x, &mag, sizeof x);
        x = -x;
        const float got = (float)exp_shifted_for_float(x), want = (float)exp((double)x);
        const uint32_t u = ulps_f(got, want);
        if (u > worst) worst = u;
        if (mag < 64) break;
    }
    cr_assert_gt(n, 10000000, "only %ld points", n);
    cr_assert_leq(worst, 1, "exp_shifted_for_float is %u float ulps from exp", worst);
}

Test(exp, edges) {
    cr_assert_eq(exp_shifted(0.0), 1.0);
    cr_assert_eq(exp_shifted(-0.0), 1.0);
    cr_assert_eq((float)exp_shifted_for_float(0.0), 1.0f);
    cr_assert_eq(exp_shifted(-709.0), 0.0, "below -708 the result is 0");
    cr_assert_eq(exp_shifted(-INFINITY), 0.0);
    cr_assert_eq(exp_shifted_for_float(-INFINITY), 0.0);
    cr_assert(isnan(exp_shifted(NAN)), "a NaN stays NaN");
    cr_assert(isnan(exp_shifted_for_float(NAN)), "a NaN stays NaN");
    cr_assert_eq(exp_shifted(-1.0), exp(-1.0));
}
