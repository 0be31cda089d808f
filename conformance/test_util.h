/* test_util.h: small helpers shared by the Criterion tests: a fresh temp folder per
 * test, raw file writes for building corrupt inputs, and an error-message check. */
#ifndef VRL_TEST_UTIL_H
#define VRL_TEST_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/error.h"

/* mkdtemp under $TMPDIR (ctest points it at build/tmp), else /tmp. */
static inline const char *test_tmpdir(void) {
    static char dir[PATH_MAX];
    const char *base = getenv("TMPDIR");
    if (snprintf(dir, sizeof dir, "%s/vrltest.XXXXXX", base && *base ? base : "/tmp") >= (int)sizeof dir)
        cr_assert_fail("TMPDIR too long");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp(%s) failed", dir);
    return dir;
}

/* dir/name into a static ring of buffers, so a few can be alive at once. */
static inline const char *test_path(const char *dir, const char *name) {
    static char buf[8][PATH_MAX];
    static int k;
    char *p = buf[k++ % 8];
    if (snprintf(p, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX) cr_assert_fail("path too long: %s", name);
    return p;
}

static inline void test_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Whole file into malloc'd memory; *n its size. */
static inline unsigned char *test_read(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)sz + 1);
    cr_assert_eq(fread(p, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return p;
}

/* The call failed (-1) and the error mentions `frag`. */
#define expect_error(call, frag)                                                                          \
    do {                                                                                                  \
        vrl_clear_error();                                                                                \
        int rc_ = (call);                                                                                 \
        cr_assert_eq(rc_, -1, "%s succeeded, expected an error containing \"%s\"", #call, (frag));         \
        cr_assert(strstr(vrl_last_error(), (frag)) != NULL, "error \"%s\" lacks \"%s\"", vrl_last_error(), \
                  (frag));                                                                                \
    } while (0)

/* Number of entries in dir whose name contains `frag`. */
static inline int test_count_files(const char *dir, const char *frag) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, frag)) n++;
    closedir(d);
    return n;
}

#endif
