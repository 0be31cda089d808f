/* model.h: the reference LLaMA (formulas.md §1, with the variants of §4-5): parameters,
 * gradients, activations and the optimizer moments for one [batch, seq] shape, forward and
 * backward. GPT-2 is its own model (ref/gpt2.h); both sit behind ref/net.h's RefNet table,
 * which ref/backend.c uses. Compiled twice (real.h); use the plain names, they map to
 * _f32/_f64. */
#ifndef VRL_REF_MODEL_H
#define VRL_REF_MODEL_H

#include <stdint.h>

#include "common/model/backend.h"
#include "common/model/spec.h"
#include "ref/real.h"

typedef struct RefModel RefModel;

#define model_create REF(model_create)
#define model_destroy REF(model_destroy)
#define model_forward REF(model_forward)
#define model_backward REF(model_backward)
#define model_zero_grad REF(model_zero_grad)
#define model_params REF(model_params)
#define model_grads REF(model_grads)
#define model_logits REF(model_logits)
#define model_check_tokens REF(model_check_tokens)
#define model_view REF(model_view)
#define model_stream_input REF(model_stream_input)
#define model_sublayer_output REF(model_sublayer_output)

/* A model of spec (a llama config) for [batch, seq] inputs; spec must outlive it.
 * Parameters start at zero: fill them through model_params() (params_init_f64 +
 * conversion, or a checkpoint). */
RefModel *model_create(const ModelSpec *spec, int batch, int seq);
void model_destroy(RefModel *m);

/* Forward over tokens [batch, seq]; keeps the activations for backward and returns
 * the mean cross-entropy over the batch*(seq-1) next-token predictions. */
double model_forward(RefModel *m, const int32_t *tokens);

/* Backward of the last forward: adds grad_scale * dLoss/dParam into the gradients. */
void model_backward(RefModel *m, double grad_scale);

void model_zero_grad(RefModel *m);

real *model_params(RefModel *m);   /* [t->total], laid out by the table */
real *model_grads(RefModel *m);    /* [t->total] */
real *model_logits(RefModel *m);   /* [batch, seq, vocab] of the last forward */

/* 0 if every token id lies in [0, vocab) of a [n / seq, seq] batch; else -1 with vrl_error
 * naming the first bad position. The forwards call it and return NaN (touching nothing)
 * on bad ids. */
int model_check_tokens(const int32_t *tokens, int n, int seq, int vocab);

/* Analysis views of the last forward (BackendView, common/model/backend.h); NULL with
 * vrl_error for a view this model does not have. */
const real *model_view(const RefModel *m, BackendView what, int index);

/* The residual stream of the last forward, for tests: the input of step s = 0..2L (s = 2L:
 * the head's, before the final norm) and the raw output y_k of sublayer k − 1 (y_0: the
 * embedding), [batch, seq, d] each. */
const real *model_stream_input(const RefModel *m, int s);
const real *model_sublayer_output(const RefModel *m, int k);

/* The Backend tables: ref/ref.h. */
#include "ref/ref.h"

#endif
