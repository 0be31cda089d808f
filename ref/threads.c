/* threads.c: the reference's thread count (threads.h). Compiled once, shared by both
 * precisions. */
#include "ref/threads.h"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

/* libomp (CMakeLists.txt): milliseconds an idle thread spins before it sleeps */
void kmp_set_blocktime(int msec);

static int ref_thread_count = 1;

int ref_threads_set(int n) {
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 1 ? (int)cores : 1;
    }
    ref_thread_count = n;
    /* each OpenMP thread calls BLAS on its own share: BLAS must not start threads of its own */
    openblas_set_num_threads(1);
    omp_set_num_threads(n);
    /* idle threads sleep at once: between two parallel loops the other core is free for
     * the serial work (and for other processes), not burnt spinning */
    kmp_set_blocktime(0);
    return n;
}

int ref_threads(void) { return ref_thread_count; }
