/* procgroup.c: the processes of a job (procgroup.h): MPI when launched by mpirun/srun. */
#include "common/base/procgroup.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

#if VRL_HAVE_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_world = 1, g_started = 0;
static const char *g_launcher = "";

/* A positive integer from the environment, or -1 when unset or not a number. */
static long env_long(const char *name) {
    const char *s = getenv(name);
    if (!s || !*s) return -1;
    char *end;
    long x = strtol(s, &end, 10);
    return *end || x < 0 ? -1 : x;
}

int dist_init(void) {
    if (g_started) return 0;
    long world = -1, rank = -1;
    if ((world = env_long("OMPI_COMM_WORLD_SIZE")) > 0) {
        rank = env_long("OMPI_COMM_WORLD_RANK");
        g_launcher = "mpirun";
    } else if ((world = env_long("SLURM_STEP_NUM_TASKS")) > 0) { /* set by srun, not by sbatch's script */
        rank = env_long("SLURM_PROCID");
        g_launcher = "srun";
    } else {
        g_launcher = "";
        g_rank = 0, g_world = 1;
        return 0;
    }
#if VRL_HAVE_MPI
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return vrl_error("%s: MPI_Init failed", g_launcher);
    int r, w;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &w);
    g_started = 1;
    g_rank = r, g_world = w;
    if (w != world || (rank >= 0 && r != rank))
        return vrl_error("%s: the environment says rank %ld of %ld but MPI says rank %d of %d (under SLURM, "
                         "launch with srun --mpi=pmix)",
                         g_launcher, rank, world, r, w);
    return 0;
#else
    g_rank = 0, g_world = 1;
    if (world > 1)
        return vrl_error("started by %s as rank %ld of %ld, but this build of vrl has no MPI (install libopenmpi-dev "
                         "with scripts/deps.sh and rebuild)",
                         g_launcher, rank, world);
    return 0;
#endif
}

void dist_finalize(void) {
#if VRL_HAVE_MPI
    int done = 0;
    if (g_started) MPI_Finalized(&done);
    if (g_started && !done) MPI_Finalize();
#endif
    g_started = 0;
}

int dist_rank(void) { return g_rank; }
int dist_local_rank(void) {
    long r = env_long("OMPI_COMM_WORLD_LOCAL_RANK");
    if (r < 0) r = env_long("SLURM_LOCALID");
    return r < 0 ? 0 : (int)r;
}
int dist_world(void) { return g_world; }
const char *dist_launcher(void) { return g_launcher; }

void dist_barrier(void) {
#if VRL_HAVE_MPI
    if (g_world > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

/* MPI counts are int: move large buffers in pieces of at most 1 GiB. */
#define DIST_CHUNK ((size_t)1 << 30)

void dist_broadcast(void *buf, size_t bytes) {
#if VRL_HAVE_MPI
    for (size_t at = 0; g_world > 1 && at < bytes; at += DIST_CHUNK) {
        const size_t n = bytes - at < DIST_CHUNK ? bytes - at : DIST_CHUNK;
        MPI_Bcast((char *)buf + at, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
#else
    (void)buf, (void)bytes;
#endif
}

void dist_abort(const char *prefix, const char *message) {
    if (g_world <= 1) return;
    fprintf(stderr, "%s: rank %d of %d: %s\n", prefix, g_rank, g_world, message);
    fflush(stderr);
#if VRL_HAVE_MPI
    MPI_Abort(MPI_COMM_WORLD, 1);
#endif
}

void dist_allgather(const void *mine, void *out, size_t bytes) {
#if VRL_HAVE_MPI
    if (g_world > 1) {
        MPI_Allgather(mine, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        return;
    }
#endif
    memcpy(out, mine, bytes);
}

double dist_sum_f64(double x) {
    if (g_world == 1) return x;
    double *all = malloc((size_t)g_world * sizeof *all); /* [world] rank order */
    if (!all) return NAN;
    dist_allgather(&x, all, sizeof x);
    double s = 0;
    for (int r = 0; r < g_world; r++) s += all[r];
    free(all);
    return s;
}
