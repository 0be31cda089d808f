/* run_folder.h: the one place that knows a run folder's file names and opens a finished or
 * running run for reading (docs/run-folder.md "The run folder").
 *
 *   RUN/config.json                 the model (config.h)
 *   RUN/checkpoints/step-N/, latest the published checkpoints (ckpt_folder.h)
 *   RUN/model.safetensors           -> latest/model.safetensors (checkpoint.h)
 *   RUN/train_state.safetensors     -> latest/train_state.safetensors (moments, flags)
 *   RUN/metrics.jsonl               the training log (metrics.h)
 *   RUN/.lock                       the PID of the `vrl train` holding the folder (runlock.h)
 *   RUN/tokenizer.json, tokenizer_config.json   copied from the data folder (hf_export.h)
 *   RUN/generation_config.json      the end token for Hugging Face's generate() (hf_export.h)
 *   RUN/eval.json                   `vrl eval`'s summary
 * The names and run_path, which formats every path into a run folder, are run_paths.h's;
 * this file opens a run. */
#ifndef VRL_RUN_FOLDER_H
#define VRL_RUN_FOLDER_H

#include <stddef.h>

#include "common/base/safetensors.h"
#include "common/model/spec.h"
#include "common/run/checkpoint.h"
#include "common/run/run_paths.h"
#include "common/run/train_args.h"

/* What run_folder_open reads beyond config.json and the spec. */
enum {
    RUN_OPEN_PARAMS = 1, /* the published model.safetensors, converted to the dtype asked */
    RUN_OPEN_ARGS = 2,   /* the training state's TrainState and the training flags it stores */
    RUN_OPEN_MOMENTS = 4 | RUN_OPEN_ARGS, /* and its AdamW moments */
};

typedef struct {
    char dir[4096];       /* the run folder */
    ModelConfig config;   /* RUN/config.json (= spec.config) */
    ModelSpec spec;       /* the model built from it */
    DType dtype;          /* of params, exp_avg, exp_avg_sq */
    void *params;         /* [spec.table.total] with RUN_OPEN_PARAMS, else NULL */
    void *exp_avg;        /* [spec.table.total] AdamW moments with RUN_OPEN_MOMENTS, else NULL */
    void *exp_avg_sq;     /* [spec.table.total] */
    TrainState state;     /* with RUN_OPEN_ARGS: step, RNG, data position, flags JSON */
    TrainArgs args;       /* with RUN_OPEN_ARGS: the flags the run trained with (backend unset) */
} RunFolder;

/* Open the run in dir: its config and spec always, and what `what` asks for. A checkpoint
 * whose tensors do not match its config is an error naming the file and the tensor. On
 * failure everything is freed. */
int run_folder_open(const char *dir, unsigned what, DType dtype, RunFolder *r);
/* Read more of an open run (what: as for run_folder_open, parts not read yet). On failure
 * the run stays open with what it had. */
int run_folder_read(RunFolder *r, unsigned what);
void run_folder_close(RunFolder *r);
/* 0 when every parameter read (RUN_OPEN_PARAMS) is finite, else -1 naming CKPT's model file,
 * the tensor and the element: a diverged run is refused by eval and generate alike. */
int run_folder_check_finite(const RunFolder *r, const char *ckpt);

#endif
