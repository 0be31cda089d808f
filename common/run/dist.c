/* dist.c: ranks, launch detection, and the update's gradient summed in a fixed order
 * (dist.h). MPI only moves bytes here (Allgather, Bcast, Barrier); every sum is ours. */
#include "common/run/dist.h"

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

/* Every rank's `bytes` at mine into out [world][bytes], rank order (bytes <= INT_MAX,
 * checked by dist_grad_open). */
static void allgather(const void *mine, void *out, size_t bytes) {
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
    allgather(&x, all, sizeof x);
    double s = 0;
    for (int r = 0; r < g_world; r++) s += all[r];
    free(all);
    return s;
}

/* ------------------------------------------------------------------ the update's gradient */

int dist_grad_open(DistGrad *g, const Backend *be, void *model, size_t n, int accum) {
    memset(g, 0, sizeof *g);
    g->rank = g_rank, g->world = g_world, g->accum = accum, g->n = n, g->dtype = be->dtype;
    if (accum % g_world)
        return vrl_error("an update of %d micro-batches does not split over %d processes (the process count must "
                         "divide it)",
                         accum, g_world);
    /* Kept apart whenever more than one micro-batch makes an update, so that one process
     * with --accum A and A/K processes with --accum K sum the same numbers in the same order. */
    g->mode = be->shard_open ? DIST_SHARDED : accum > 1 && be->grad_buffer ? DIST_HOST_SUM : DIST_IN_PLACE;
    if (g_world > 1 && g->mode == DIST_IN_PLACE)
        return vrl_error("backend %s cannot share its gradients between processes (built without NCCL?)", be->name);
    if (g->mode == DIST_SHARDED && be->shard_open(model) < 0) return -1;
    g->losses = malloc((size_t)g_world * sizeof *g->losses);
    if (!g->losses) return vrl_error("out of memory");
    if (g->mode != DIST_HOST_SUM) return 0;
    const size_t bytes = n * dtype_size(g->dtype);
    if (bytes > INT_MAX)
        return vrl_error("%zu gradients are more than one MPI message holds (%d bytes)", n, INT_MAX);
    g->sum = malloc(bytes);
    g->gathered = malloc(bytes * (size_t)g_world);
    if (!g->sum || !g->gathered) {
        dist_grad_close(g);
        return vrl_error("out of memory for %d copies of %zu gradients", g_world + 1, n);
    }
    return 0;
}

void dist_grad_close(DistGrad *g) {
    free(g->sum);
    free(g->gathered);
    free(g->losses);
    g->sum = g->gathered = NULL;
    g->losses = NULL;
}

int dist_grad_rounds(const DistGrad *g) { return g->accum / g->world; }
int dist_grad_micro(const DistGrad *g, int round) { return round * g->world + g->rank; }

void dist_grad_begin_micro(DistGrad *g, const Backend *be, void *model) {
    if (g->mode == DIST_HOST_SUM) be->zero_grad(model);
    if (g->mode == DIST_SHARDED && g->rounds_done == dist_grad_rounds(g) - 1) be->reduce_next(model);
}

/* sum (+)= x, elementwise, in the backend's precision */
static void add_into(DType dt, void *sum, const void *x, size_t n, int first) {
    if (first) {
        memcpy(sum, x, n * dtype_size(dt));
    } else if (dt == DT_F64) {
        double *s = sum;
        const double *v = x;
        for (size_t i = 0; i < n; i++) s[i] += v[i];
    } else {
        float *s = sum;
        const float *v = x;
        for (size_t i = 0; i < n; i++) s[i] += v[i];
    }
}

int dist_grad_end_micro(DistGrad *g, const Backend *be, void *model, double loss) {
    /* A rank whose batch was refused stops here with its own message, before the exchange. */
    if (!isfinite(loss) && vrl_last_error()[0]) return -1;
    const size_t bytes = g->n * dtype_size(g->dtype);
    if (g->mode == DIST_HOST_SUM) allgather(be->grad_buffer(model), g->gathered, bytes);
    allgather(&loss, g->losses, sizeof loss);
    for (int r = 0; r < g->world; r++) {
        if (g->mode == DIST_HOST_SUM)
            add_into(g->dtype, g->sum, (const char *)g->gathered + (size_t)r * bytes, g->n,
                     g->rounds_done == 0 && r == 0);
        g->loss += g->losses[r];
    }
    g->rounds_done++;
    return 0;
}

double dist_grad_finish(DistGrad *g, const Backend *be, void *model) {
    if (g->mode == DIST_HOST_SUM) memcpy(be->grad_buffer(model), g->sum, g->n * dtype_size(g->dtype));
    const double loss = g->loss / g->accum;
    g->loss = 0;
    g->rounds_done = 0;
    return loss;
}
