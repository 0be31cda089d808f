/* gpt2.h (ref): the GPT-2 baseline inside RefModel (ref/gpt2.c); model.c dispatches to
 * it when config arch is gpt2. Compiled twice (real.h). */
#ifndef VRL_REF_GPT2_H
#define VRL_REF_GPT2_H

#include "ref/model_impl.h"

typedef struct Gpt2Acts Gpt2Acts;

#define gpt2_create REF(gpt2_create)
#define gpt2_forward REF(gpt2_forward)
#define gpt2_backward REF(gpt2_backward)
#define gpt2_set_dropout REF(gpt2_set_dropout)
#define gpt2_destroy REF(gpt2_destroy)

RefModel *gpt2_create(const ModelConfig *c, const ParamTable *t, int batch, int seq);
void gpt2_destroy(Gpt2Acts *g);
double gpt2_forward(RefModel *m, const int32_t *tokens);
void gpt2_backward(RefModel *m, double grad_scale);
/* Dropout on (training = 1) for the next forwards, with the mask key (seed, step, micro). */
void gpt2_set_dropout(RefModel *m, int training, uint64_t seed, uint64_t step, uint64_t micro);

#endif
