/* value_path.h (ref): the attention sublayer of every value-path variant (formulas.md §4), driven
 * by the spec's ValuePlan (common/model/value_path.h). It owns its state: layer l's norm and
 * q/k/v projections and trainable coefficients (bound in the model's flat buffers), the
 * activations every later layer may read (raw Q_i, K_i, V_i, A_i), and the per-layer gradient
 * accumulators that collect the shares of every reader. The model (model.c) hands it each
 * layer's input and gets U_l back; W_o and everything after it are the model's. */
#ifndef VRL_REF_VALUE_PATH_H
#define VRL_REF_VALUE_PATH_H

#include "common/model/backend.h"
#include "common/model/spec.h"
#include "ref/real.h"

typedef struct VpState VpState;

#define vp_create REF(vp_create)
#define vp_destroy REF(vp_destroy)
#define vp_forward REF(vp_forward)
#define vp_backward_begin REF(vp_backward_begin)
#define vp_backward REF(vp_backward)
#define vp_backward_end REF(vp_backward_end)
#define vp_view REF(vp_view)

/* The attention sublayers of spec's model for [B,T] inputs: binds every layer's
 * attention norm, the W_q/W_k/W_v the plan keeps and its trainable value coefficients in
 * params/grads (flat buffers at the offsets of spec->layout); emb [B*T, d] is the embedding output H_0 (read by hidden
 * residuals); eps the model's RMSNorm eps. spec must outlive the state. NULL with vrl_error
 * on failure. */
VpState *vp_create(const ModelSpec *spec, int B, int T, real *params, real *grads, const real *emb, double eps);
void vp_destroy(VpState *vp);

/* Layer l's attention from its input x [N,d] (kept until the backward): returns U_l [N,qC],
 * the heads concatenated before W_o. */
const real *vp_forward(VpState *vp, int l, const real *x);

/* Zero the cross-layer accumulators (before the last layer's backward). */
void vp_backward_begin(VpState *vp);
/* From datty = dLoss/dU_l [N,qC]: write dLoss/dx into dx [N,d] (overwriting it); add the
 * gradients of layer l's tensors, and the shares of earlier layers' Q/K/V/A and H_0 into their
 * accumulators. Layers run from L-1 down to 0. */
void vp_backward(VpState *vp, int l, const real *datty, real *dx);
/* Add the hidden residuals' d(H_0) into demb [N,d] (the embedding output's gradient). */
void vp_backward_end(VpState *vp, real *demb);

/* VIEW_ATTENTION, VIEW_QUERIES, VIEW_KEYS, VIEW_VALUES of layer l (backend.h); else NULL. */
const real *vp_view(const VpState *vp, BackendView what, int l);

#endif
