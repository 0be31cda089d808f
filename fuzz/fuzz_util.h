/* fuzz_util.h: what every libFuzzer harness in fuzz/ shares. The loaders under test
 * read files by path, so each input is written to a per-process scratch file first. */
#ifndef VRL_FUZZ_UTIL_H
#define VRL_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"

/* The scratch folder of this process: $TMPDIR/vrl-fuzz-PID (made once). */
static inline const char *fuzz_dir(void) {
    static char dir[512];
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/vrl-fuzz-%ld", t && t[0] ? t : "/tmp", (long)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

/* Write n bytes to fuzz_dir()/name and return the path (a static buffer per call site
 * is not needed: callers use it before the next call). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t n) {
    static char path[640];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
    return path;
}

/* A loader that fails must say why: an empty message is a bug worth a crash report. */
static inline void fuzz_check_error(int rc) {
    if (rc < 0 && !vrl_last_error()[0]) abort();
    vrl_clear_error();
}

#endif
