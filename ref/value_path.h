/* value_path.h (ref): the attention sublayer of every value-path variant (SPEC.md §4), driven
 * by the tables of common/model/value_path.h. model.c calls these around W_o; nothing else does. */
#ifndef VRL_REF_VALUE_PATH_H
#define VRL_REF_VALUE_PATH_H

#include "ref/model_impl.h"

#define vp_model_init REF(vp_model_init)
#define vp_model_free REF(vp_model_free)
#define vp_attention_forward REF(vp_attention_forward)
#define vp_backward_begin REF(vp_backward_begin)
#define vp_attention_backward REF(vp_attention_backward)
#define vp_backward_end REF(vp_backward_end)

/* Build the plan from m->c, bind q/k/v_proj and v_residual_lambda of every layer (the ones the
 * plan keeps), allocate the value-path buffers. After layout(); -1 with vrl_error on failure. */
int vp_model_init(RefModel *m);
void vp_model_free(RefModel *m);

/* Layer l's attention sublayer from its input x [N,d] up to acts[l].atty [N,qC] (before W_o). */
void vp_attention_forward(RefModel *m, int l, const real *x);

/* Zero the cross-layer accumulators (before the first layer's backward). */
void vp_backward_begin(RefModel *m);
/* From g.datty [N,qC] (dLoss/dU_l): add dLoss/dx into dx [N,d], the parameter gradients of
 * layer l's attention, and the shares of earlier layers' Q/K/V/A and H_0 into their accumulators. */
void vp_attention_backward(RefModel *m, int l, real *dx);
/* Add the hidden residuals' d(H_0) into demb [N,d] (the embedding output's gradient). */
void vp_backward_end(RefModel *m, real *demb);

#endif
