/* gpt2.h (ref): the GPT-2 baseline of formulas.md §1 as its own model (ref/gpt2.c), with its own
 * opaque state; ref/backend.c reaches it through ref_net_gpt2 (ref/net.h). Compiled twice
 * (real.h). */
#ifndef VRL_REF_GPT2_H
#define VRL_REF_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "common/model/spec.h"
#include "ref/net.h"
#include "ref/real.h"

typedef struct Gpt2Model Gpt2Model;

#define gpt2_create REF(gpt2_create)
#define gpt2_forward REF(gpt2_forward)
#define gpt2_backward REF(gpt2_backward)
#define gpt2_set_dropout REF(gpt2_set_dropout)
#define gpt2_destroy REF(gpt2_destroy)
#define gpt2_layernorm_forward REF(gpt2_layernorm_forward)
#define gpt2_layernorm_backward REF(gpt2_layernorm_backward)
#define gpt2_gelu_forward REF(gpt2_gelu_forward)
#define gpt2_gelu_backward REF(gpt2_gelu_backward)

/* A model of spec (a gpt2 config) for [batch, seq]; parameters start at zero. */
Gpt2Model *gpt2_create(const ModelSpec *spec, int batch, int seq);
void gpt2_destroy(Gpt2Model *m);
/* Mean next-token loss of tokens [batch, seq]; NaN with vrl_error on bad token ids. */
double gpt2_forward(Gpt2Model *m, const int32_t *tokens);
void gpt2_backward(Gpt2Model *m, double grad_scale);
/* Dropout on (training = 1) for the next forwards, with the mask key (seed, step, micro). */
void gpt2_set_dropout(Gpt2Model *m, int training, uint64_t seed, uint64_t step, uint64_t micro);

/* The model's ops, exported for fast/'s kernel tests (conformance/test_fast_cpu_ops.cpp).
 * LayerNorm with the biased variance, eps added to it: out = (x − mean)·rstd·w + b.
 * out [N,C], mean/rstd [N], inp [N,C], w/b [C] */
void gpt2_layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w, const real *b, int N,
                            int C, double eps);
/* dinp += rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dout·w; dw += Σ dout·x̂; db += Σ dout. */
void gpt2_layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp, const real *w,
                             const real *mean, const real *rstd, int N, int C);
/* GELU, tanh form: out = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); the backward adds dout·gelu'(x) to dx.  [n] */
void gpt2_gelu_forward(real *out, const real *x, size_t n);
void gpt2_gelu_backward(real *dx, const real *dout, const real *x, size_t n);

#endif
