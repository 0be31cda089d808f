/* threads.h: how many threads the reference runs on (one setting for both precisions).
 *
 * The reference's own loops (norms, RoPE, SwiGLU, cross-entropy, attention, AdamW) and its
 * large matrix products are split among this many OpenMP threads. Work is split by rows or
 * elements only, never inside a sum, so every result is the same bits for any count
 * (conformance/test_thread_bits.c). While more than one thread is set, OpenBLAS itself runs
 * single-threaded: each thread calls it on its own share, and no BLAS worker is left
 * spinning between products. Until ref_threads_set is called the reference runs on one
 * thread and leaves OpenBLAS's own setting alone. */
#ifndef VRL_REF_THREADS_H
#define VRL_REF_THREADS_H

/* Use n threads (n <= 0: every online core); returns the count now in use. */
int ref_threads_set(int n);
/* The count in use (1 until ref_threads_set). */
int ref_threads(void);
/* Called once per training step (ref/backend.c): idle threads spin briefly between parallel
 * loops while no other process wants a core, else sleep at once (threads.c). Timing only:
 * results do not depend on it. */
void ref_threads_adapt(void);

#endif
