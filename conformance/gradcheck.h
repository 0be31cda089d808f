/* gradcheck.h: the finite-difference check of a whole float64 reference model, shared by
 * test_gradcheck_model.c, test_gradcheck_variants.c and test_gradcheck_stream.c (compiled
 * with VRL_FP64=1: `real` is double). Each test keeps its own bounds, messages and output;
 * this file builds the model at its check point and measures one tensor at a time.
 *
 * numeric_i = (L(p_i + h) − L(p_i − h)) / 2h, h = 1e-5, against the backward's analytic
 * gradient; a tensor's error is max_i |analytic − numeric| / max_i |numeric| over its checked
 * elements (element-wise ratios are meaningless where a gradient is ~0). */
#ifndef VRL_GRADCHECK_H
#define VRL_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/rng.h"
#include "common/model/spec.h"
#include "ref/net.h"

#define GRADCHECK_STEP 1e-5

typedef struct {
    ModelConfig c;
    ModelSpec spec;
    const ParamTable *t; /* &spec.table */
    const RefNet *net;   /* the config's architecture (ref/net.h): llama or GPT-2 */
    void *m;             /* its model */
    RefBuffers buf;      /* the model's params and grads */
    int B, T;
    int32_t *tokens; /* [B*T] the checked batch */
    Rng r;           /* continues after the weights and tokens: draws sampled elements */
    double loss;     /* of the checked batch */
} Gradcheck;

/* c's model for [B,T] inputs with weights params_init_f64(seed), then every tensor that does
 * not start normal moved off its symmetric start by Rng(seed + 1): + N(0, 0.2²), except the
 * HC/mHC scales (hc_*.scale_*, .alpha_p*, .alpha_res*), set to 0.5 + N(0, 0.2²), and mHC's b_res,
 * set to N(0, 0.5²); the same Rng then draws the tokens. Dropout on for `dropout` (GPT-2;
 * mask key (1234, 7, 1)). Runs one forward and backward: g->buf.grads is the analytic
 * gradient, g->loss the loss. */
void gradcheck_begin(Gradcheck *g, const ModelConfig *c, int B, int T, uint64_t seed, int dropout);
void gradcheck_end(Gradcheck *g);

/* Which elements of a tensor are checked. */
typedef struct {
    size_t full_max;     /* tensors of at most this many elements: every element (SIZE_MAX: all) */
    size_t subset;       /* larger tensors: this many elements drawn from g->r */
    int embed_batch_rows; /* sampled elements of model.embed_tokens.weight lie in rows of tokens
                             of the batch (the only rows with a gradient) */
} GradcheckSampling;

typedef struct {
    size_t n;    /* elements checked */
    double diff; /* max |analytic − numeric| */
    double num;  /* max |numeric| */
} GradcheckTensor;

/* Central differences of the loss over the elements `s` picks of tensor k of g->t. */
GradcheckTensor gradcheck_tensor(Gradcheck *g, int k, const GradcheckSampling *s);

/* diff / max(num, floor); with floor 0 an all-zero numeric gradient divides by 1. */
static inline double gradcheck_rel_err(GradcheckTensor r, double floor) {
    return r.diff / (r.num > floor ? r.num : floor > 0 ? floor : 1);
}

#endif
