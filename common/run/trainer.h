/* trainer.h: the training loop, written once for every backend.
 *
 * One update = `accum` micro-batches of [batch, seq] tokens, gradients averaged, the
 * logged loss the mean of the micro-batch means (formulas.md §2), global-norm clipping,
 * AdamW at lr(update - 1). The run folder (checkpoint.h) is written at --save-every,
 * at the end, and never left half-written. Started by mpirun/srun, the processes share
 * each update's micro-batches and rank 0 writes (common/run/dist.h). */
#ifndef VRL_TRAINER_H
#define VRL_TRAINER_H

#include "common/run/train_args.h"

/* Train: run_open (validate every input, build the spec and the backend's model, the data,
 * and only then create or touch the run folder), then train_loop (train_update: one update
 * = accum micro-batches + optimizer step; log, evaluate, save). trainer.c. Returns 0, or -1
 * with vrl_error() set (bad input, a backend without BACKEND_CAN_TRAIN for the model, NaN
 * loss, I/O failure, the run folder deleted under it), or 128 + SIGTERM/SIGINT when a
 * signal stopped the run after saving the step in hand (stop_request.h). */
int train_run(TrainArgs *a);

#endif
