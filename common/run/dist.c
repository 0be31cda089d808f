/* dist.c: the update's gradient summed in a fixed order (dist.h); the ranks and the
 * bytes MPI moves are common/base/procgroup.c's. Every sum is ours. */
#include "common/run/dist.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

/* ------------------------------------------------------------------ the update's gradient */

int dist_grad_open(DistGrad *g, const Backend *be, void *model, size_t n, int accum) {
    memset(g, 0, sizeof *g);
    g->rank = dist_rank(), g->world = dist_world(), g->accum = accum, g->n = n, g->dtype = be->dtype;
    if (accum % dist_world())
        return vrl_error("an update of %d micro-batches does not split over %d processes (the process count must "
                         "divide it)",
                         accum, dist_world());
    /* Kept apart whenever more than one micro-batch makes an update, so that one process
     * with --accum A and A/K processes with --accum K sum the same numbers in the same order. */
    g->mode = be->shard_open ? DIST_SHARDED : accum > 1 && be->grad_buffer ? DIST_HOST_SUM : DIST_IN_PLACE;
    if (dist_world() > 1 && g->mode == DIST_IN_PLACE)
        return vrl_error("backend %s cannot share its gradients between processes (built without NCCL?)", be->name);
    if (g->mode == DIST_SHARDED && be->shard_open(model) < 0) return -1;
    g->losses = malloc((size_t)dist_world() * sizeof *g->losses);
    if (!g->losses) return vrl_error("out of memory");
    if (g->mode != DIST_HOST_SUM) return 0;
    const size_t bytes = n * dtype_size(g->dtype);
    if (bytes > INT_MAX)
        return vrl_error("%zu gradients are more than one MPI message holds (%d bytes)", n, INT_MAX);
    g->sum = malloc(bytes);
    g->gathered = malloc(bytes * (size_t)dist_world());
    if (!g->sum || !g->gathered) {
        dist_grad_close(g);
        return vrl_error("out of memory for %d copies of %zu gradients", dist_world() + 1, n);
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

void dist_grad_begin_micro(DistGrad *g, const Backend *be, void *model, int round) {
    if (g->mode == DIST_HOST_SUM) be->zero_grad(model);
    if (g->mode == DIST_SHARDED && round == dist_grad_rounds(g) - 1) be->reduce_next(model);
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
    if (g->mode == DIST_HOST_SUM) dist_allgather(be->grad_buffer(model), g->gathered, bytes);
    dist_allgather(&loss, g->losses, sizeof loss);
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
