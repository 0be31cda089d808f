/* threads.c: the reference's thread count (threads.h). Compiled once, shared by both
 * precisions. */
#include "ref/threads.h"

#include <cblas.h>
#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/base/clock.h"

/* libomp (CMakeLists.txt): milliseconds an idle thread spins before it sleeps */
void kmp_set_blocktime(int msec);

/* Milliseconds an idle OpenMP thread spins before it sleeps (libomp's blocktime) while the
 * machine has a core for each of our threads. A step runs hundreds of parallel loops a few
 * microseconds of serial work apart; a worker that sleeps after each is woken by a futex
 * call, in a VM an interrupt through the hypervisor. Measured at `small`, 2 threads
 * (docs/results/cpu-speed.md, "Waking the second thread"): 1 ms against 0 ms, +6% wall on a quiet
 * machine for 1.5% more CPU time; but -12% with two other busy processes, where the
 * spinning worker takes the core the main thread needs. So the spin is chosen again every
 * ADAPT_SECONDS (ref_threads_adapt): REF_SPIN_MS while no other process wants a core,
 * else 0. */
#define REF_SPIN_MS 1
#define ADAPT_SECONDS 0.05

static int ref_thread_count = 1;
static int cores = 1;
static int spin_ms = -1;       /* the blocktime last set */
static double adapted_at = -1; /* when ref_threads_adapt last looked */

static void set_spin(int ms) {
    if (ms != spin_ms) kmp_set_blocktime(ms);
    spin_ms = ms;
}

int ref_threads_set(int n) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cores = online > 1 ? (int)online : 1;
    if (n <= 0) n = cores;
    ref_thread_count = n;
    /* each OpenMP thread calls BLAS on its own share: BLAS must not start threads of its own */
    openblas_set_num_threads(1);
    omp_set_num_threads(n);
    /* sleep until ref_threads_adapt has seen the machine: never spin on a busy one */
    set_spin(0);
    adapted_at = -1;
    return n;
}

int ref_threads(void) { return ref_thread_count; }

/* Threads of this process that are running or want to run (state R). */
static int own_runnable(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (const struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        const char *state = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL; /* "tid (comm) S ..." */
        n += state && state[1] == ' ' && state[2] == 'R';
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Threads on the whole machine that are running or want to run (/proc/loadavg's 4th
 * field, "running/total"). */
static int machine_runnable(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    int running = -1;
    if (fscanf(f, "%*s %*s %*s %d/", &running) != 1) running = -1;
    fclose(f);
    return running;
}

void ref_threads_adapt(void) {
    if (ref_thread_count < 2) return;
    const double now = now_seconds();
    if (adapted_at >= 0 && now - adapted_at < ADAPT_SECONDS) return;
    adapted_at = now;
    const int all = machine_runnable(), own = own_runnable();
    if (all < 0 || own < 0) return; /* no /proc: keep sleeping */
    set_spin(all - own + ref_thread_count <= cores ? REF_SPIN_MS : 0);
}
