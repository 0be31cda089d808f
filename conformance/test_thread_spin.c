/* test_thread_spin.c: the reference's idle threads never spin on a busy machine.
 *
 * Story: ref_threads_adapt (ref/threads.c) lets idle OpenMP threads spin 1 ms between
 * parallel loops only while the machine has a free core for each of the reference's
 * threads. With one busy process per core started beside it, a 2-thread reference must
 * choose to sleep at once (libomp's blocktime 0). (The quiet case, spin, is not asserted:
 * ctest runs tests side by side, so a quiet machine cannot be promised here; a 1-thread
 * reference has no idle thread, so its setting decides nothing.) */
#include <criterion/criterion.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ref/threads.h"

int kmp_get_blocktime(void); /* libomp */

static pid_t busy[256]; /* the busy children started so far: only these are ever killed */
static int n_busy;

static void start_busy(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int want = cores < 1 ? 1 : cores > 256 ? 256 : (int)cores;
    for (int i = 0; i < want; i++) {
        const pid_t pid = fork();
        cr_assert_geq(pid, 0, "fork");
        if (pid == 0)
            for (volatile unsigned long x = 0;; x++) {
            }
        busy[n_busy++] = pid;
    }
    usleep(100000); /* let them be scheduled */
}

static void stop_busy(void) {
    for (int i = 0; i < n_busy; i++) {
        kill(busy[i], SIGKILL);
        waitpid(busy[i], NULL, 0);
    }
}

Test(thread_spin, sleeps_when_every_core_is_busy, .fini = stop_busy) {
    start_busy();
    cr_assert_eq(ref_threads_set(2), 2);
    ref_threads_adapt();
    cr_assert_eq(kmp_get_blocktime(), 0, "2 threads, %d busy processes: blocktime %d ms, expected 0", n_busy,
                 kmp_get_blocktime());
}
