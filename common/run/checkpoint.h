/* checkpoint.h: what a run folder holds, written so a crash never leaves a half state.
 *
 *   RUN/config.json          the model (config.h)
 *   RUN/model.safetensors    parameters under Hugging Face LLaMA names, in the run's
 *                            precision (F32 or F64)
 *   RUN/train_state.safetensors  AdamW moments ("exp_avg.<name>", "exp_avg_sq.<name>"),
 *                            and in __metadata__: step, RNG state, data position, the
 *                            training flags needed to continue the run exactly
 *   RUN/metrics.jsonl        one JSON object per step (metrics.h)
 * Each file is written atomically. The training state is written last, and records
 * the checksum of the model file it belongs to, so a crash between the two writes is
 * detected on resume instead of mixing two steps. */
#ifndef VRL_CHECKPOINT_H
#define VRL_CHECKPOINT_H

#include <stdint.h>

#include "common/model/config.h"
#include "common/model/params.h"
#include "common/base/rng.h"
#include "common/base/safetensors.h"

/* Everything beyond the weights that a bit-exact resume needs. */
typedef struct {
    long step;                 /* optimizer updates done */
    Rng rng;                   /* the trainer's generator */
    uint64_t data_pos[16];     /* loader position words (loader-defined) */
    int n_data_pos;
    char train_args_json[4096];/* (TRAIN_ARGS_JSON_LEN) the flags of the run (schedule, batch, ...) as JSON */
} TrainState;

/* Write model.safetensors from a flat buffer laid out by `t` in dtype (F32 or F64). */
int checkpoint_save_model(const char *dir, const ModelConfig *c, const ParamTable *t,
                          DType dtype, const void *params);

/* Load model.safetensors into a flat buffer (converted to dtype). Every tensor of the
 * table must be present with the right shape; extra tensors are an error. */
int checkpoint_load_model(const char *dir, const ParamTable *t, DType dtype, void *params);

/* Write/read train_state.safetensors: moments m and v laid out by `t` in dtype. */
int checkpoint_save_state(const char *dir, const ParamTable *t, DType dtype,
                          const void *m, const void *v, const TrainState *s);
/* m = v = NULL reads and checks only the metadata (step, RNG, data position, flags). */
int checkpoint_load_state(const char *dir, const ParamTable *t, DType dtype,
                          void *m, void *v, TrainState *s);

/* The backend name ("ref-fp32", ...) in the train_args of RUN's published state; an
 * unreadable state is left to the full load to report, with name "". */
int checkpoint_stored_backend(const char *run, char *name, size_t n);
/* The CPU thread count RUN was trained with (its results depend on it), 0 when its state
 * does not record one (older runs, or unreadable: the full load says why). */
int checkpoint_stored_threads(const char *run);

#endif
