/* blas_threads.c: the OpenBLAS thread count fitted to the model (see blas_threads.h). */
#include "cli/blas_threads.h"

#include <cblas.h>
#include <stdlib.h>
#include <unistd.h>

/* below this width a matrix product of a B16 x T128 batch takes about a millisecond on one
 * core, too short for a second thread to gain more than its spinning costs */
#define BLAS_THREADS_MIN_D_MODEL 512

int blas_threads_choose(int requested, const ModelConfig *c) {
    if (requested > 0) return requested;
    const char *env = getenv("OPENBLAS_NUM_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    if (c->d_model < BLAS_THREADS_MIN_D_MODEL) return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1 ? (int)cores : 1;
}

int blas_threads_apply(int requested, const ModelConfig *c) {
    int n = blas_threads_choose(requested, c);
    openblas_set_num_threads(n);
    return n;
}
