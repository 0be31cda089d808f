/* run_paths.c: run-folder paths (run_paths.h). */
#include "common/run/run_paths.h"

#include <stdio.h>

#include "common/base/error.h"

int run_path(char *out, size_t n, const char *run, const char *file) {
    const int w = snprintf(out, n, "%s/%s", run, file);
    if (w < 0 || (size_t)w >= n) return vrl_error("%s: path too long", run);
    return 0;
}
