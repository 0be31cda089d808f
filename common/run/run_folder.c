/* run_folder.c: run-folder paths and the one open of a run (run_folder.h). */
#include "common/run/run_folder.h"
#include "common/run/model_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

int run_folder_open(const char *dir, unsigned what, DType dtype, RunFolder *r) {
    memset(r, 0, sizeof *r);
    r->dtype = dtype;
    char path[4200];
    if (snprintf(r->dir, sizeof r->dir, "%s", dir) >= (int)sizeof r->dir) return vrl_error("%s: path too long", dir);
    if (run_path(path, sizeof path, dir, RUN_CONFIG) < 0 || config_load_json(path, &r->config) < 0) return -1;
    if (model_record_check(dir, &r->config, path) < 0) return -1; /* config.json edited since the weights? */
    if (model_spec_build_from(&r->config, path, &r->spec) < 0) return -1;
    if (run_folder_read(r, what) < 0) {
        run_folder_close(r);
        return -1;
    }
    return 0;
}

int run_folder_read(RunFolder *r, unsigned what) {
    const size_t total = r->spec.table.total, bytes = total * dtype_size(r->dtype);
    char path[4200];
    if ((what & RUN_OPEN_PARAMS) && !r->params) {
        if (!(r->params = malloc(bytes))) return vrl_error("%s: out of memory for %zu parameters", r->dir, total);
        if (checkpoint_load_model(r->dir, &r->spec.table, r->dtype, r->params) < 0) return -1;
    }
    if ((what & RUN_OPEN_MOMENTS & ~RUN_OPEN_ARGS) && !r->exp_avg &&
        (!(r->exp_avg = malloc(bytes)) || !(r->exp_avg_sq = malloc(bytes))))
        return vrl_error("%s: out of memory for %zu moments", r->dir, total);
    if (what & RUN_OPEN_ARGS) {
        if (checkpoint_load_state(r->dir, &r->spec.table, r->dtype, r->exp_avg, r->exp_avg_sq, &r->state) < 0) return -1;
        train_args_defaults(&r->args);
        r->args.model = r->config;
        if (run_path(path, sizeof path, r->dir, RUN_TRAIN_STATE) < 0 ||
            train_args_from_json(r->state.train_args_json, &r->args, path) < 0)
            return -1;
    }
    return 0;
}

void run_folder_close(RunFolder *r) {
    free(r->params);
    free(r->exp_avg);
    free(r->exp_avg_sq);
    model_spec_free(&r->spec);
    r->params = r->exp_avg = r->exp_avg_sq = NULL;
}

int run_folder_check_finite(const RunFolder *run, const char *ckpt) {
    for (int i = 0; i < run->spec.table.n; i++) {
        const ParamInfo *p = &run->spec.table.p[i];
        for (size_t j = 0; j < p->numel; j++) {
            const size_t at = p->offset + j;
            const double x = run->dtype == DT_F64 ? ((const double *)run->params)[at] : ((const float *)run->params)[at];
            if (isfinite(x)) continue;
            char path[4200];
            if (run_path(path, sizeof path, ckpt, RUN_MODEL) < 0) return -1;
            return vrl_error("%s: tensor %s holds a non-finite value (%g at element %zu); the training diverged", path,
                             p->name, x, j);
        }
    }
    return 0;
}
