/* test_curves.c: the relative training loss (common/eval/curves.c): window arithmetic on a
 * hand example, a curve against itself, and reading metrics.jsonl. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "common/eval/curves.h"
#include "common/base/error.h"
#include "conformance/test_util.h"

Test(curves, window_arithmetic_by_hand) {
    long st[5] = {1, 2, 3, 4, 5};
    double base_l[5] = {1, 1, 1, 1, 1}, meth_l[5] = {1, 2, 3, 4, 5};
    Curve base = {st, base_l, 5}, meth = {st, meth_l, 5}, r;
    /* w = 2: method smoothed = 1.5 2.5 3.5 4.5 at steps 1..4; base 1 -> 0.5 1.5 2.5 3.5 */
    cr_assert_eq(curve_relative(&base, &meth, 2, &r), 0);
    cr_assert_eq(r.n, 4);
    const double want[4] = {0.5, 1.5, 2.5, 3.5};
    for (int k = 0; k < 4; k++) {
        cr_expect_eq(r.step[k], k + 1);
        cr_expect(fabs(r.loss[k] - want[k]) < 1e-15, "point %d: %g", k, r.loss[k]);
    }
    curve_free(&r);
    /* w = 5: one point, mean 3 - 1 = 2 at step 1; w = 6, longer than the 5-point curves: the
     * window is clamped to them, the same one point (it used to give none, and analyze a NaN) */
    cr_assert_eq(curve_relative(&base, &meth, 5, &r), 0);
    cr_assert_eq(r.n, 1);
    cr_expect(fabs(r.loss[0] - 2) < 1e-15);
    curve_free(&r);
    cr_assert_eq(curve_relative(&base, &meth, 6, &r), 0);
    cr_assert_eq(r.n, 1);
    cr_expect_eq(r.step[0], 1);
    cr_expect(fabs(r.loss[0] - 2) < 1e-15);
    curve_free(&r);
    expect_error(curve_relative(&base, &meth, 0, &r), "--window");
}

Test(curves, itself_is_zero_and_jsonl) {
    const char *dir = test_tmpdir();
    const char *p = test_path(dir, "metrics.jsonl");
    char text[8192] = "";
    for (int s = 1; s <= 30; s++) {
        char line[200];
        snprintf(line, sizeof line, "{\"step\":%d,\"loss\":%.17g,\"lr\":0.001}\n", s, 5.0 / s + 0.1 * sin(s));
        strcat(text, line);
        if (s % 10 == 0) {
            snprintf(line, sizeof line, "{\"step\":%d,\"split\":\"val\",\"val_loss\":9}\n", s);
            strcat(text, line);
        }
    }
    test_write(p, text, strlen(text));
    Curve c, r;
    cr_assert_eq(curve_read(p, &c), 0, "%s", vrl_last_error());
    cr_assert_eq(c.n, 30); /* eval lines skipped */
    cr_expect(fabs(c.loss[2] - (5.0 / 3 + 0.1 * sin(3))) < 1e-15);
    cr_assert_eq(curve_relative(&c, &c, 10, &r), 0);
    cr_assert_eq(r.n, 21);
    for (size_t k = 0; k < r.n; k++) cr_expect_eq(r.loss[k], 0.0);
    curve_free(&r);
    curve_free(&c);
    test_write(p, "{\"step\":1,\"loss\":2}\n{\"loss\":3}\n", 32);
    expect_error(curve_read(p, &c), "metrics.jsonl:2: not a metrics line");
}
