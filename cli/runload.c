/* runload.c: a run folder's model into memory (runload.h). */
#include "cli/runload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/run/checkpoint.h"
#include "common/run/model_record.h"
#include "common/base/error.h"

int run_load(const char *dir, DType dtype, RunModel *r) {
    memset(r, 0, sizeof *r);
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (config_load_json(path, &r->config) < 0 || model_record_check(dir, &r->config, path) < 0) return -1;
    if (model_spec_build_from(&r->config, path, &r->spec) < 0) return -1;
    r->dtype = dtype;
    r->params = malloc(r->spec.table.total * dtype_size(dtype));
    if (!r->params) {
        run_free(r);
        return vrl_error("%s: out of memory for %zu parameters", dir, r->spec.table.total);
    }
    if (checkpoint_load_model(dir, &r->spec.table, dtype, r->params) < 0) {
        run_free(r);
        return -1;
    }
    return 0;
}

void run_free(RunModel *r) {
    free(r->params);
    model_spec_free(&r->spec);
    r->params = NULL;
}
