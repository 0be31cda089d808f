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
/* Mean loss over the batch's B*(T-1) predictions; with backward, adds grad_scale *
 * dLoss/dParam into the fp32 gradients. NaN with vrl_error on failure. */
double fast_model_forward(void *m, const int32_t *tokens /* [B,T] */, double grad_scale, int backward);
int fast_model_zero_grad(void *m);
double fast_model_step(void *m, const AdamWConfig *opt, double lr, long t);
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
