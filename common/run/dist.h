/* dist.h: data parallelism across processes (docs/distributed.md).
 *
 * `mpirun -np W vrl train ...` (or `srun` under SLURM) starts W copies of the trainer.
 * This file is the one place that decides what each of them reads and when they talk:
 *
 *   - An update of A micro-batches (A = --accum x W, stored in the run as "accum") is
 *     split into A / W rounds. In round j, micro-batch i = j*W + r is rank r's. Every
 *     rank walks the whole global batch stream and keeps only its own micro-batches, so
 *     the data position is global and the tokens of an update are exactly those of one
 *     process with --accum A.
 *   - The reference backend's micro-batch gradients are summed by the trainer in global
 *     micro-batch order i = 0, 1, ..., A-1, each one computed into a cleared gradient
 *     buffer. One process does this alone; W processes exchange each round's W
 *     gradients with MPI_Allgather (pure data movement) and every rank adds them in rank
 *     order, which is the same order. The sum is the same bits whatever MPI does inside.
 *   - Parameters and AdamW moments stay replicated; rank 0 alone writes the run folder,
 *     the metrics and the progress line.
 *
 * Without MPI in the build (libopenmpi-dev absent) everything here is the single-process
 * case, and a launch by mpirun/srun with more than one process is an error. */
#ifndef VRL_DIST_H
#define VRL_DIST_H

#include <stddef.h>

#include "common/base/procgroup.h"
#include "common/base/safetensors.h"
#include "common/model/backend.h"

/* ------------------------------------------------------------------ the update's gradient */

/* How an update's micro-batch gradients become one gradient:
 *   DIST_HOST_SUM  each micro-batch into a cleared host buffer (Backend.grad_buffer), summed
 *                  here in global micro-batch order: the reference with accum > 1;
 *   DIST_SHARDED   the backend accumulates its micro-batches in place and reduce-scatters
 *                  during the last backward (Backend.shard_open): fast/, world 1 included;
 *   DIST_IN_PLACE  the backend accumulates in place, one process (accum 1, or no NCCL). */
enum { DIST_IN_PLACE, DIST_HOST_SUM, DIST_SHARDED };

/* Sums an update's micro-batch gradients in global micro-batch order (see above). */
typedef struct {
    int rank, world, accum; /* accum: micro-batches of the whole update, a multiple of world */
    int mode;               /* DIST_IN_PLACE, DIST_HOST_SUM or DIST_SHARDED (below) */
    size_t n;               /* gradient elements */
    DType dtype;            /* F32 or F64, the backend's */
    void *sum;              /* [n] the update's gradient so far */
    void *gathered;         /* [world, n] this round's micro-batch gradients in rank order */
    double *losses;         /* [world] this round's micro-batch losses in rank order */
    double loss;            /* sum of the micro-batch losses so far, in order */
    int rounds_done;
} DistGrad;

/* For `model` of n parameters trained with `accum` micro-batches per update. -1 with
 * vrl_error when accum does not split over the processes or the backend cannot share
 * its gradients. */
int dist_grad_open(DistGrad *g, const Backend *be, void *model, size_t n, int accum);
void dist_grad_close(DistGrad *g);

/* Rounds per update (accum / world) and the global index of this rank's micro-batch in
 * round j (j*world + rank): the trainer reads world batches per round and keeps that one. */
int dist_grad_rounds(const DistGrad *g);
int dist_grad_micro(const DistGrad *g, int round);

/* Before this rank's micro-batch of round `round` (0-based): clear the backend's gradients
 * when each micro-batch is kept apart; before the last round of a sharded backend, ask its
 * backward to reduce-scatter. (The round is passed, not counted by dist_grad_end_micro: a
 * backend with deferred losses ends its micro-batches only after its step.) */
void dist_grad_begin_micro(DistGrad *g, const Backend *be, void *model, int round);
/* After it: `loss` is its mean loss. Exchanges the round's gradients and losses and adds
 * them in micro-batch order. */
int dist_grad_end_micro(DistGrad *g, const Backend *be, void *model, double loss);
/* After the last round: the summed gradient goes into the backend's buffer; returns the
 * update's loss (mean of the micro-batch losses). Starts the next update afresh. */
double dist_grad_finish(DistGrad *g, const Backend *be, void *model);

#endif
