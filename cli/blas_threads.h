/* blas_threads.h: how many threads a command runs the reference with (ref/threads.h).
 *
 * The reference splits its own loops and its large matrix products among its threads with
 * results independent of the count, and keeps OpenBLAS single-threaded meanwhile, so no
 * BLAS worker spins between products: every model uses every core by default. */
#ifndef VRL_BLAS_THREADS_H
#define VRL_BLAS_THREADS_H

/* Thread count: `requested` when > 0 (--threads), else OPENBLAS_NUM_THREADS when the
 * environment sets it (the name older scripts use), else every online core. */
int blas_threads_choose(int requested);
/* Choose and apply (ref_threads_set); returns the count in use. */
int blas_threads_apply(int requested);

#endif
