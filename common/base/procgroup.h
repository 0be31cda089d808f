/* procgroup.h: the processes of a data-parallel job (docs/distributed.md): who this
 * process is, and the few collective operations the trainer and fast/ need. What each
 * process reads and how gradients are summed is common/run/dist.h's.
 *
 * Without MPI in the build (libopenmpi-dev absent) everything here is the single-process
 * case, and a launch by mpirun/srun with more than one process is an error. */
#ifndef VRL_PROCGROUP_H
#define VRL_PROCGROUP_H

#include <stddef.h>

/* Detect the launcher from the environment (Open MPI: OMPI_COMM_WORLD_SIZE/RANK; SLURM
 * srun: SLURM_STEP_NUM_TASKS/SLURM_PROCID; a plain command: one process) and, when
 * launched by one of them, start MPI. 0, or -1 with vrl_error (launched by mpirun but
 * built without MPI, or the environment and MPI disagree on the ranks). Safe to call
 * again. */
int dist_init(void);
/* End MPI if dist_init started it (after every rank is done with the run folder). */
void dist_finalize(void);

int dist_rank(void);  /* 0 .. world-1; 0 without a launcher */
int dist_local_rank(void); /* the rank among the processes of this node (GPU choice) */
int dist_world(void); /* processes in the job; 1 without a launcher */
/* "mpirun", "srun" or "" (one process) */
const char *dist_launcher(void);

/* Wait for every rank. */
void dist_barrier(void);
/* Rank 0's `bytes` bytes at buf to every rank. */
void dist_broadcast(void *buf, size_t bytes);
/* Every rank's x, summed in rank order (the same bits on every rank, whatever MPI does). */
double dist_sum_f64(double x);
/* Print "PREFIX: rank R of W: MESSAGE" on stderr and stop every rank (MPI_Abort), so
 * one rank's error ends the job with its message instead of a hang. Only the CLI calls
 * it; without MPI it returns and the caller exits as usual. */
void dist_abort(const char *prefix, const char *message);
/* Every rank's `bytes` at mine into out [world][bytes], rank order (bytes <= INT_MAX,
 * checked by dist_grad_open). */
void dist_allgather(const void *mine, void *out, size_t bytes);

#endif
