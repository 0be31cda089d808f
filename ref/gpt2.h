/* gpt2.h (ref): the GPT-2 baseline of formulas.md §1 as its own model (ref/gpt2.c), with its own
 * opaque state; ref/backend.c reaches it through ref_net_gpt2 (ref/net.h). Compiled twice
 * (real.h). */
#ifndef VRL_REF_GPT2_H
#define VRL_REF_GPT2_H

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

/* A model of spec (a gpt2 config) for [batch, seq]; parameters start at zero. */
Gpt2Model *gpt2_create(const ModelSpec *spec, int batch, int seq);
void gpt2_destroy(Gpt2Model *m);
/* Mean next-token loss of tokens [batch, seq]; NaN with vrl_error on bad token ids. */
double gpt2_forward(Gpt2Model *m, const int32_t *tokens);
void gpt2_backward(Gpt2Model *m, double grad_scale);
/* Dropout on (training = 1) for the next forwards, with the mask key (seed, step, micro). */
void gpt2_set_dropout(Gpt2Model *m, int training, uint64_t seed, uint64_t step, uint64_t micro);

#endif
