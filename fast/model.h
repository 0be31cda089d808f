/* model.h: the CUDA model's C entry points (model.cu), used by backend.c and tests.
 * A FastModel is opaque to C; every call returns an error through vrl_error. */
#ifndef VRL_FAST_MODEL_H
#define VRL_FAST_MODEL_H

#include <stdint.h>

#include "common/model/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A model of spec (which fast_capabilities must accept; spec outlives it) for [batch, seq]. */
void *fast_model_create(const ModelSpec *spec, int batch, int seq);
void fast_model_destroy(void *m);
/* Without backward: the mean loss over the batch's B*(T-1) predictions. With backward: adds
 * grad_scale * dLoss/dParam into the fp32 gradients and keeps the mean loss on the device
 * (returns 0; fast_model_micro_losses reads it). NaN with vrl_error on failure. */
double fast_model_forward(void *m, const int32_t *tokens /* [B,T] */, double grad_scale, int backward);
int fast_model_zero_grad(void *m);
/* Clip and AdamW; the update's one host wait. The pre-clip global norm, or NaN. */
double fast_model_step(void *m, const AdamWConfig *opt, double lr, long t);
/* Backend.micro_losses: the mean losses of the last n forward_backward calls since zero_grad,
 * in order (read back by the step's wait; read here if no step came yet). 0 or -1. */
int fast_model_micro_losses(void *m, double *out, int n);
/* Host copies in fp32, laid out by the table; any pointer may be NULL. */
int fast_model_get_state(void *m, float *params, float *grads, float *exp_avg, float *exp_avg_sq);
int fast_model_set_state(void *m, const float *params, const float *exp_avg, const float *exp_avg_sq);
/* Logits of the last forward [B,T,V] fp32, recomputed chunk by chunk from the kept
 * final-norm output (the forward never holds them whole). */
int fast_model_get_logits(void *m, float *out);
/* Backend.token_logprobs: a forward, then log p(targets[i]) and the greedy flag at each position
 * with targets[i] >= 0, computed on the device from the logits; 0 or -1 with vrl_error.
 * tokens, targets [B,T]; logprob [B,T] (from fp32); greedy [B,T] */
int fast_model_token_logprobs(void *m, const int32_t *tokens, const int32_t *targets, double *logprob,
                              uint8_t *greedy);

#ifdef __cplusplus
}
#endif

#endif
