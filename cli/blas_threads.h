/* blas_threads.h: how many OpenBLAS threads a command runs the reference with.
 *
 * The reference's matrix products are the only multi-threaded part; everything between
 * them runs on one core while OpenBLAS's idle workers spin. For a model as small as
 * `small` (d 128) the products are too short to pay for that spinning: on a 2-core
 * machine the demo spent most of its time in system time. So models below d_model 512
 * run with one thread, larger ones with as many as there are cores. */
#ifndef VRL_BLAS_THREADS_H
#define VRL_BLAS_THREADS_H

#include "common/model/config.h"

/* Thread count for `c`: `requested` when > 0 (--threads), else OPENBLAS_NUM_THREADS when
 * the environment sets it, else the rule above. */
int blas_threads_choose(int requested, const ModelConfig *c);
/* Choose and apply (openblas_set_num_threads); returns the count in use. */
int blas_threads_apply(int requested, const ModelConfig *c);

#endif
