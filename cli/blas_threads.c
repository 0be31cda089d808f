/* blas_threads.c: the reference's thread count for a command (see blas_threads.h). */
#include "cli/blas_threads.h"

#include <stdlib.h>

#include "ref/threads.h"

int blas_threads_choose(int requested) {
    if (requested > 0) return requested;
    const char *env = getenv("OPENBLAS_NUM_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    return 0; /* ref_threads_set: every online core */
}

int blas_threads_apply(int requested) { return ref_threads_set(blas_threads_choose(requested)); }
