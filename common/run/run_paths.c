/* run_paths.c: run-folder paths (run_paths.h). */
#include "common/run/run_paths.h"

#include <stdio.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"

int run_path(char *out, size_t n, const char *run, const char *file) {
    /* `--ckpt run/` names the same folder: no "run//config.json" in a message */
    size_t len = strlen(run);
    while (len > 1 && run[len - 1] == '/') len--;
    const int w = snprintf(out, n, "%.*s%s%s", (int)len, run, len && run[len - 1] == '/' ? "" : "/", file);
    if (w < 0 || (size_t)w >= n) return vrl_error("%s: path too long", run);
    return 0;
}

/* The files at the top of a run folder that vrl writes by temp and rename. */
static const char *const own_files[] = {RUN_CONFIG,    RUN_LATEST,    RUN_MODEL,
                                        RUN_TRAIN_STATE, RUN_TOKENIZER, RUN_TOKENIZER_CONFIG,
                                        RUN_GENERATION_CONFIG, RUN_EVAL, RUN_METRICS};

int run_is_own_tmp(const char *name) {
    for (size_t i = 0; i < sizeof own_files / sizeof own_files[0]; i++) {
        const size_t n = strlen(own_files[i]);
        if (strncmp(name, own_files[i], n)) continue;
        const char *t = name + n;
        if (!strncmp(t, VRL_TMP_INFIX, strlen(VRL_TMP_INFIX))) t += strlen(VRL_TMP_INFIX);
        else if (!strncmp(t, ".tmp.", 5)) t += 5;
        else continue;
        if (!*t) return 0;
        for (; *t; t++)
            if (*t < '0' || *t > '9') return 0;
        return 1;
    }
    return 0;
}
