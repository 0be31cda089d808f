/* stream.h (ref): the depth mixer, i.e. the residual stream between sublayers (formulas.md §5).
 *
 * The model calls it at each step s = 0..2L with the history of raw sublayer outputs
 * y[0..s] (y_0 the embedding, y_k sublayer k−1's output [N,d]); it returns the
 * input of sublayer s (s = 2L: the head's input, before the final norm). Backward runs
 * the steps in reverse: given d(input of s) it returns dLoss/dy_s, complete at that
 * point because y_s is only read by steps ≥ s (s = 0: dLoss/d(embedding output)).
 * The attention and MLP code never sees which mixer runs. The plan (common/model/stream.h)
 * says what is mixed; this file does the arithmetic for each plan kind. */
#ifndef VRL_REF_STREAM_H
#define VRL_REF_STREAM_H

#include "common/model/spec.h"
#include "ref/real.h"

typedef struct StreamState StreamState;

#define stream_create REF(stream_create)
#define stream_destroy REF(stream_destroy)
#define stream_forward REF(stream_forward)
#define stream_backward_begin REF(stream_backward_begin)
#define stream_backward REF(stream_backward)
#define stream_depth_weights REF(stream_depth_weights)
#define stream_sinkhorn REF(stream_sinkhorn)
#define stream_set_magnitudes REF(stream_set_magnitudes)
#define stream_magnitudes REF(stream_magnitudes)

/* The mixer of spec->stream for N = batch·seq tokens: binds its tensors in params/grads (flat
 * buffers laid out by spec->table) and reads the history y[0..2L] (pointers fixed for the
 * model's life, contents written by the model). spec must outlive the state. */
StreamState *stream_create(const ModelSpec *spec, int N, real *params, real *grads, const real *const *y);
void stream_destroy(StreamState *st);
/* Input of step s [N,d]; s ≥ 1 reads y_s, written by the model just before. */
const real *stream_forward(StreamState *st, int s);
/* Zero the backward accumulators; call once before stream_backward(st, 2L, ...). */
void stream_backward_begin(StreamState *st);
/* din [N,d] = dLoss/d(input of step s); returns dLoss/dy_s [N,d] (owned by the mixer,
 * valid until the next call); adds the mixer's parameter gradients into grads. */
const real *stream_backward(StreamState *st, int s, const real *din);
/* AttnRes only: the softmax weights of step s over its sources (spec->stream.n_src[s] of
 * them) from the last forward, [N, n_src] row-major; NULL for other kinds. */
const real *stream_depth_weights(const StreamState *st, int s);

/* Sinkhorn-Knopp as mHC runs it: mats [(2·iters+1)·n²]; mats[0] = the positive input
 * matrix [n,n]; each iteration normalises rows, then columns, keeping every stage (the
 * backward replays them). Returns the last stage. */
real *stream_sinkhorn(real *mats, int n, int iters);

/* Test hook (conformance/test_fast_vs_ref.c's conditioning rule): with on = 1 the HC and mHC
 * maps' parameter gradients are computed with every term's absolute value (the dot products
 * da, dR, db as Σ|a·b|, Sinkhorn's backward as the sum over its steps of (|g| + |Σ g·b|)/sum,
 * each product's factors as magnitudes): Σ|terms| of each, the scale of its rounding error. Everything else, and
 * the gradient that flows on to earlier sublayers, is unchanged. Process-wide; 0 restores.
 * The value path's trainable λ (ref/value_path.c) follows it too: d(λ) = Σ|dV'·V_i|. */
void stream_set_magnitudes(int on);
/* 1 while magnitude mode is on */
int stream_magnitudes(void);

#endif
