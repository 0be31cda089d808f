/* model_compare.h: two float64 reference models on the same weights, run on one batch and
 * compared tensor by tensor, shared by test_variant_equivalence.c and
 * test_stream_equivalence.c (compiled with VRL_FP64=1: `real` is double). */
#ifndef VRL_MODEL_COMPARE_H
#define VRL_MODEL_COMPARE_H

#include <stdint.h>

#include "ref/model.h"

typedef struct {
    ModelConfig c;
    ModelSpec spec;
    const ParamTable *t; /* &spec.table */
    RefModel *m;
    int B, T;
    double loss; /* of the last run_step */
} Run;

/* c's model for [B,T] inputs with weights params_init_f64(seed): keyed by name, so tensors
 * that two models share get identical values. */
void run_build(Run *r, const ModelConfig *c, int B, int T, uint64_t seed);
/* zero_grad, forward on tokens [B*T], backward with scale 1. */
void run_step(Run *r, const int32_t *tokens);
void run_release(Run *r);

/* max |logit difference| of the last steps (same B, T and vocabulary). */
double run_logits_diff(const Run *a, const Run *b);
/* max |grad_a − grad_b| (*diff) and max |grad_a| (*max_a) of tensor `name`; 0 when b has no
 * such tensor, else 1. */
int run_grad_diff(const Run *a, const Run *b, const char *name, double *diff, double *max_a);

#endif
