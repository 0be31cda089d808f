/* adamw.h: clipping + AdamW on flat buffers laid out by a ParamTable (formulas.md §2).
 * ref/backend.c applies it to a model's buffers; tests call it on a hand-made table. */
#ifndef VRL_REF_ADAMW_H
#define VRL_REF_ADAMW_H

#include "common/model/backend.h"
#include "common/model/params.h"
#include "ref/real.h"

#define adamw_update REF(adamw_update)

/* Clip grads [t->total] in place to the global L2 norm opt->clip (skipped if clip <= 0),
 * then AdamW update number `step` (1-based: torch's state["step"] after its increment,
 * used for the bias corrections) of params [t->total] with moments exp_avg,
 * exp_avg_sq [t->total]. Returns the pre-clip norm. */
double adamw_update(const ParamTable *t, real *params, real *grads, real *exp_avg, real *exp_avg_sq, long step,
                    const AdamWConfig *opt, double lr);

#endif
