/* zero.h: the C face of fast/'s NCCL data parallelism (zero.cu, zero.cuh): what the
 * Backend table (backend.c) points at. Built only when NCCL is found (VRL_HAVE_NCCL). */
#ifndef VRL_FAST_ZERO_H
#define VRL_FAST_ZERO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Join the job's NCCL communicator (id from rank 0 over MPI; world 1 too) and cut the
 * table into buckets and this rank's shard. 0, or -1 with vrl_error. */
int fast_shard_open(void *model);
/* The next forward_backward reduce-scatters its gradients bucket by bucket. */
void fast_reduce_next(void *model);
/* Free the communicator (fast_model_destroy calls it). */
void fast_shard_close(void *model);

#ifdef __cplusplus
}
#endif

#endif
