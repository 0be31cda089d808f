/* test_metrics_log.c: RUN/metrics.jsonl (common/run/metrics.c) stays valid JSON line by
 * line: non-finite values are null, a failed write is an error, and a resume drops lines
 * past the checkpoint and any line a full disk cut or glued to the next. The TensorBoard events
 * file beside it (common/run/tensorboard.c) is cut back the same way. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/fsutil.h"
#include "common/run/metrics.h"
#include "conformance/test_util.h"

static char *read_all(const char *path) {
    void *d;
    size_t n;
    cr_assert(read_file_all(path, &d, &n) == 0, "%s: unreadable", path);
    return d;
}

Test(metrics_log, non_finite_values_are_null) {
    char path[PATH_MAX + 32];
    const char *dir = test_tmpdir();
    Metrics m;
    cr_assert(metrics_open(&m, dir, -1) == 0);
    cr_assert(metrics_log_step(&m, 1, NAN, 1e-3, INFINITY, 10.0) == 0);
    cr_assert(metrics_log_eval(&m, 1, "val", "ArXiv", -INFINITY) == 0);
    cr_assert(metrics_log_eval(&m, 1, "val", NULL, 2.5) == 0);
    metrics_close(&m);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    char *text = read_all(path);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        cr_assert(json_is_object(o), "line %d is not JSON: %s (%s)", lines + 1, line, e.text);
        json_decref(o);
    }
    cr_assert_eq(lines, 3);
    free(text);
    text = read_all(path);
    cr_assert(strstr(text, "\"loss\":null,\"lr\":0.001,\"grad_norm\":null"), "%s", text);
    free(text);
}

Test(metrics_log, failed_write_is_an_error) {
    Metrics m = {0};
    snprintf(m.path, sizeof m.path, "/dev/full");
    m.f = fopen("/dev/full", "w");
    if (!m.f) cr_skip_test("/dev/full is not available here");
    cr_assert(metrics_log_step(&m, 1, 3.0, 1e-3, 1.0, 10.0) == -1, "a write to a full disk must fail");
    metrics_close(&m);
}

Test(metrics_log, resume_drops_later_and_partial_lines) {
    char path[PATH_MAX + 32];
    const char *dir = test_tmpdir();
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    const char *log = "{\"step\":1,\"loss\":3}\n"
                      "{\"step\":2,\"loss\":2.9,\"elap{\"step\":3,\"loss\":2.8}\n" /* glued by a full disk */
                      "{\"step\":4,\"loss\":2.7}\n"
                      "{\"step\":5,\"loss\":2.6}\n" /* past the checkpoint */
                      "{\"step\":5,\"lo";            /* cut */
    cr_assert(write_file_atomic(path, log, strlen(log)) == 0);
    Metrics m;
    cr_assert(metrics_open(&m, dir, 4) == 0);
    metrics_close(&m);
    char *text = read_all(path);
    cr_assert_str_eq(text, "{\"step\":1,\"loss\":3}\n{\"step\":4,\"loss\":2.7}\n");
    free(text);
}

Test(metrics_log, restart_keeps_the_old_log) {
    char path[PATH_MAX + 32], old[PATH_MAX + 64];
    const char *dir = test_tmpdir();
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    snprintf(old, sizeof old, "%s.restarted", path);
    cr_assert(write_file_atomic(path, "{\"step\":1}\n", 11) == 0);
    Metrics m;
    cr_assert(metrics_open(&m, dir, -1) == 0);
    metrics_close(&m);
    char *text = read_all(old);
    cr_assert_str_eq(text, "{\"step\":1}\n");
    free(text);
}

/* The events file: a resume keeps the records up to the checkpoint's step and drops the rest and
 * a record cut short (its contents are read by TensorBoard itself in test_tensorboard.sh). */
static long events_size(const char *dir) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/events.out.tfevents.vrl", dir);
    void *d;
    size_t n;
    if (read_file_all(path, &d, &n) != 0) return -1;
    free(d);
    return (long)n;
}

Test(metrics_log, resume_cuts_the_events_file) {
#ifndef VRL_HAVE_TENSORBOARD
    cr_skip_test("built without protobuf-c and ISA-L (VRL_TENSORBOARD): no events file");
#endif
    const char *dir = test_tmpdir();
    Metrics m;
    cr_assert(metrics_open(&m, dir, -1) == 0);
    cr_assert(metrics_log_step(&m, 1, 3.0, 1e-3, 1.0, 10.0) == 0);
    cr_assert(metrics_log_step(&m, 2, 2.9, 1e-3, 1.0, 10.0) == 0);
    cr_assert(metrics_log_eval(&m, 2, "val", "ArXiv", 2.95) == 0);
    metrics_close(&m);
    const long upto2 = events_size(dir);
    cr_assert(upto2 > 0);
    cr_assert(metrics_open(&m, dir, 2) == 0);
    cr_assert(metrics_log_step(&m, 3, 2.8, 1e-3, 1.0, 10.0) == 0);
    metrics_close(&m);
    const long upto3 = events_size(dir);
    cr_assert(upto3 > upto2, "step 3 appended: %ld > %ld", upto3, upto2);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/events.out.tfevents.vrl", dir);
    FILE *f = fopen(path, "ab"); /* a record a crash cut after 5 bytes */
    cr_assert(f && fwrite("\x20\0\0\0\0", 1, 5, f) == 5 && fclose(f) == 0);
    cr_assert(metrics_open(&m, dir, 5) == 0);
    metrics_close(&m);
    cr_assert_eq(events_size(dir), upto3, "the cut record is dropped, the whole ones kept");
    cr_assert(metrics_open(&m, dir, 2) == 0);
    metrics_close(&m);
    cr_assert_eq(events_size(dir), upto2, "step 3 is past the checkpoint at step 2");
}
