/* test_schedule.c: formulas.md §2 learning rates against hand computations.
 *
 * b = 6e-4, lr_end = 6e-5, W = 120, S = 10000, lr_start = 1e-7. Each expected value is
 * written from the formula in closed form here, not by calling the same expression:
 *   warm-up   lr(s) = 1e-7 + (b - 1e-7)·s/W
 *   cosine    lr(5060) = e + (b-e)/2 since (5060-120)/9880 = 1/2;
 *             lr(9999) = e + (b-e)·sin²(π/19760) because 1 + cos(π - x) = 2 sin²(x/2)
 *   linear    lr(5060) = e + (b-e)/2, lr(9999) = e + (b-e)/9880
 *   exponential γ^9880 = 1e-10/(b-e), so lr(5060) = e + sqrt((b-e)·1e-10) and
 *             lr(9999) = e + 1e-10/γ with γ = (1e-10/(b-e))^(1/9880)
 *   all three: lr(120) = b, lr(s >= S) = e.
 * Tolerance 1e-15 relative: every value is a handful of correctly rounded double
 * operations (relative error a few 1e-16), well above double's 1.1e-16 unit roundoff but
 * far below any real schedule mistake (an off-by-one step changes lr by > 1e-6 relative).
 * The exponential schedule's mid-decay point is the exception: pow(γ, 4940) magnifies γ's
 * own rounding (≤ 1.1e-16 relative) 4940-fold in the excess term, which is 3.9e-3 of lr,
 * giving ≤ 2.2e-15 relative; we allow 5e-15 there. */
#include <criterion/criterion.h>
#include <math.h>

#include "common/run/schedule.h"

static const double B = 6e-4, E = 6e-5;
static const long W = 120, S = 10000;

static void near(double got, double want, double rel, const char *what, long step) {
    cr_assert(fabs(got - want) <= rel * fabs(want), "%s lr(%ld) = %.17g, expected %.17g", what, step, got, want);
}

static Schedule sched(ScheduleKind k) { return (Schedule){.kind = k, .peak = B, .end = E, .warmup = W, .decay_end = S}; }

/* Warm-up and the end are shared by the three kinds. */
static void common_points(ScheduleKind k, const char *what) {
    Schedule s = sched(k);
    near(schedule_lr(&s, 0), 1e-7, 1e-15, what, 0);
    near(schedule_lr(&s, 1), 1e-7 + (6e-4 - 1e-7) / 120.0, 1e-15, what, 1);
    near(schedule_lr(&s, 119), 1e-7 + (6e-4 - 1e-7) * 119.0 / 120.0, 1e-15, what, 119);
    near(schedule_lr(&s, 120), 6e-4, 1e-15, what, 120);
    near(schedule_lr(&s, 10000), 6e-5, 0, what, 10000); /* returned as lr_end itself */
    near(schedule_lr(&s, 123456), 6e-5, 0, what, 123456);
}

Test(schedule, cosine) {
    common_points(SCHED_COSINE, "cosine");
    Schedule s = sched(SCHED_COSINE);
    near(schedule_lr(&s, 5060), 3.3e-4, 1e-15, "cosine", 5060);
    double sn = sin(M_PI / 19760.0);
    near(schedule_lr(&s, 9999), 6e-5 + 5.4e-4 * sn * sn, 1e-15, "cosine", 9999);
}

Test(schedule, linear) {
    common_points(SCHED_LINEAR, "linear");
    Schedule s = sched(SCHED_LINEAR);
    near(schedule_lr(&s, 5060), 3.3e-4, 1e-15, "linear", 5060);
    near(schedule_lr(&s, 9999), 6e-5 + 5.4e-4 / 9880.0, 1e-15, "linear", 9999);
}

Test(schedule, exponential) {
    common_points(SCHED_EXPONENTIAL, "exponential");
    Schedule s = sched(SCHED_EXPONENTIAL);
    near(schedule_lr(&s, 5060), 6e-5 + sqrt(5.4e-4 * 1e-10), 5e-15, "exponential", 5060);
    double gamma = pow(1e-10 / 5.4e-4, 1.0 / 9880.0);
    near(schedule_lr(&s, 9999), 6e-5 + 1e-10 / gamma, 1e-15, "exponential", 9999);
}

Test(schedule, monotone_decay) {
    /* Every kind rises through warm-up and never rises after it. */
    for (int k = 0; k < 3; k++) {
        Schedule s = sched((ScheduleKind)k);
        for (long t = 1; t <= 10001; t++) {
            double a = schedule_lr(&s, t - 1), b = schedule_lr(&s, t);
            if (t <= W) cr_assert(b > a, "%s not rising at %ld", schedule_kind_name(s.kind), t);
            else cr_assert(b <= a, "%s rising at %ld", schedule_kind_name(s.kind), t);
        }
    }
}

Test(schedule, update_offset) {
    /* Update u uses lr(u - 1) by default, lr(u) with offset 1: the first warm-up update is b / W. */
    Schedule s = sched(SCHED_COSINE);
    near(schedule_lr_update(&s, 1), 1e-7, 1e-15, "offset 0, update", 1);
    near(schedule_lr_update(&s, 121), 6e-4, 1e-15, "offset 0, update", 121);
    s.offset = 1;
    near(schedule_lr_update(&s, 1), 1e-7 + (6e-4 - 1e-7) / 120.0, 1e-15, "offset 1, update", 1);
    near(schedule_lr_update(&s, 120), 6e-4, 1e-15, "offset 1, update", 120);
    near(schedule_lr_update(&s, 5060), 3.3e-4, 1e-15, "offset 1, update", 5060);
    near(schedule_lr_update(&s, 10000), 6e-5, 0, "offset 1, update", 10000);
}

Test(schedule, parse_names) {
    ScheduleKind k;
    cr_assert_eq(schedule_kind_parse("cosine", &k), 0);
    cr_assert_eq(k, SCHED_COSINE);
    cr_assert_eq(schedule_kind_parse("linear", &k), 0);
    cr_assert_eq(k, SCHED_LINEAR);
    cr_assert_eq(schedule_kind_parse("exponential", &k), 0);
    cr_assert_eq(k, SCHED_EXPONENTIAL);
    cr_assert_eq(schedule_kind_parse("Cosine", &k), -1);
    cr_assert_str_eq(schedule_kind_name(SCHED_EXPONENTIAL), "exponential");
}
