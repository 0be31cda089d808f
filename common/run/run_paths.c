/* run_paths.c: run-folder paths (run_paths.h). */
#include "common/run/run_paths.h"

#include <stdio.h>
#include <string.h>

#include "common/base/error.h"

int run_path(char *out, size_t n, const char *run, const char *file) {
    /* `--ckpt run/` names the same folder: no "run//config.json" in a message */
    size_t len = strlen(run);
    while (len > 1 && run[len - 1] == '/') len--;
    const int w = snprintf(out, n, "%.*s%s%s", (int)len, run, len && run[len - 1] == '/' ? "" : "/", file);
    if (w < 0 || (size_t)w >= n) return vrl_error("%s: path too long", run);
    return 0;
}
