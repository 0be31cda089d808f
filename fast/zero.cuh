/* zero.cuh: data parallelism for fast/ over NCCL, ZeRO-2 style (zero.cu, docs/distributed.md).
 *
 * The flat parameter table is cut into buckets: runs of tensors adjacent in the table with
 * the same owner (the embedding, one layer, the head = final norm + lm_head, anything else
 * "late"). Each bucket of len values is split into `world` blocks of chunk = ceil(len/world);
 * block r (the last ones may be short or empty) is rank r's shard.
 *
 *   backward  as soon as an owner's gradients are complete (the head first, then layers
 *             L-1 .. 0, then the embedding), its buckets are reduce-scattered (fp32 sum) on
 *             the communication stream into gshard, this rank's blocks back to back, while
 *             the model's stream goes on with the next layer's backward;
 *   step      the global gradient norm = the shards' exact sums of squares (exact_sumsq.h)
 *             gathered and added as integers, rounded once; then AdamW (adamw.cu's kernels,
 *             with offsets) on this rank's blocks of the fp32 master weights and moments,
 *             which also writes their bf16 copy; then every bucket's bf16 blocks are all-gathered, embedding first,
 *             and the next forward's layer l waits only for its own bucket.
 * Buckets whose length divides by world use ncclReduceScatter / ncclAllGather; others a
 * group of per-block ncclReduce / ncclBroadcast (uneven counts, nothing read or written
 * outside the bucket). Master weights and moments stay full-size on every rank (only the
 * shard is kept current); get_state gathers them before a checkpoint.
 *
 * NEVER RUN: no GPU was available when this was written (docs/distributed.md). */
#ifndef VRL_FAST_ZERO_CUH
#define VRL_FAST_ZERO_CUH

#include "fast/model.cuh"

FAST_NS_BEGIN

/* Bucket owners besides layer indices 0 .. L-1. */
#define ZERO_EMBED (-1)
#define ZERO_HEAD (-2)
#define ZERO_LATE (-3)

/* All of these are no-ops when m->zero is NULL (one process: without NCCL, or one rank,
 * where fast_shard_open makes no communicator). */

/* The forward of `owner` is about to read its parameters: wait for their all-gather. */
int zero_wait_params(FastModel *m, int owner);
/* The backward has finished `owner`'s gradients: reduce-scatter its buckets (if armed). */
int zero_grads_ready(FastModel *m, int owner);
/* End of an armed backward: the rest of the buckets, then disarm. */
int zero_backward_end(FastModel *m);

/* For adamw.cu: this rank's shard as ranges of the table. n_ranges() ranges; range k covers
 * table values [start, start + n) whose reduced gradients are at grad. */
int zero_n_ranges(const FastModel *m);
void zero_range(const FastModel *m, int k, size_t *start, size_t *n, float **grad);
/* The reduced shard gradient, all of it (gaps zero): for the norm. */
float *zero_shard_grads(const FastModel *m, size_t *n);
/* Wait (the model's stream) for the backward's reduce-scatters. */
int zero_wait_reduced(FastModel *m);
/* After the shard's update: all-gather the bf16 parameters on the communication stream. */
int zero_gather_params(FastModel *m);
/* Before get_state: all-gather fp32 master weights and moments, and wait for them. */
int zero_gather_state(FastModel *m);

FAST_NS_END

#endif
