/* run_folder.h: the one place that knows a run folder's file names and opens a finished or
 * running run for reading (docs/architecture.md "The run folder").
 *
 *   RUN/config.json                 the model (config.h)
 *   RUN/checkpoints/step-N/, latest the published checkpoints (ckpt_folder.h)
 *   RUN/model.safetensors           -> latest/model.safetensors (checkpoint.h)
 *   RUN/train_state.safetensors     -> latest/train_state.safetensors (moments, flags)
 *   RUN/metrics.jsonl               the training log (metrics.h)
 *   RUN/.lock                       the PID of the `vrl train` holding the folder (runlock.h)
 *   RUN/tokenizer.json, tokenizer_config.json   copied from the data folder (hf_export.h)
 *   RUN/eval.json                   `vrl eval`'s summary
 * Every path into a run folder is formatted by run_path. */
#ifndef VRL_RUN_FOLDER_H
#define VRL_RUN_FOLDER_H

#include <stddef.h>

#include "common/base/safetensors.h"
#include "common/model/spec.h"
#include "common/run/checkpoint.h"
#include "common/run/train_args.h"

#define RUN_CONFIG "config.json"
#define RUN_CHECKPOINTS "checkpoints"
#define RUN_LATEST "latest"
#define RUN_MODEL "model.safetensors"
#define RUN_TRAIN_STATE "train_state.safetensors"
#define RUN_METRICS "metrics.jsonl"
#define RUN_LOCK ".lock"
#define RUN_TOKENIZER "tokenizer.json"
#define RUN_TOKENIZER_CONFIG "tokenizer_config.json"
#define RUN_EVAL "eval.json"

/* out = "RUN/FILE" (FILE one of the names above, or a checkpoint file inside a step
 * folder). 0, or -1 with vrl_error when it does not fit in n. */
int run_path(char *out, size_t n, const char *run, const char *file);

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

#endif
