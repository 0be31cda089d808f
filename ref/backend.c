/* backend.c: the reference model behind the Backend table (common/model/backend.h), once
 * per precision: ref_backend_f32 from the float build, ref_backend_f64 from the double
 * build. Host views are in the build's own dtype, so get/set_state are plain copies.
 *
 * Bad token ids: forward_loss / forward_backward return NaN with vrl_error() set and
 * leave the gradients untouched (model_check_tokens), so a trainer sees a NaN loss and
 * an error message instead of an out-of-bounds read. */
#include <string.h>

#include "common/base/error.h"
#include "ref/adamw.h"
#include "ref/model_impl.h"

static void *be_create(const ModelConfig *c, const ParamTable *t, int batch, int seq) {
    return model_create(c, t, batch, seq);
}

static void be_destroy(void *m) { model_destroy(m); }

/* Training forwards use dropout (GPT-2 only); its masks are keyed by set_rng_key:
 * (seed, update, micro-batch), all zero until a trainer sets them. */
static void be_set_rng_key(void *vm, uint64_t seed, long step, int micro) {
    RefModel *m = vm;
    m->drop_seed = seed;
    m->drop_step = step;
    m->drop_micro = micro;
}

static double be_forward_backward(void *vm, const int32_t *tokens, double grad_scale) {
    RefModel *m = vm;
    model_set_dropout(m, 1, m->drop_seed, (uint64_t)m->drop_step, (uint64_t)m->drop_micro);
    double loss = model_forward(m, tokens);
    model_backward(m, grad_scale); /* a no-op after a rejected batch */
    model_set_dropout(m, 0, 0, 0, 0);
    return loss;
}

static double be_forward_loss(void *m, const int32_t *tokens) { return model_forward(m, tokens); }

static void be_zero_grad(void *m) { model_zero_grad(m); }

static void *be_grad_buffer(void *m) { return model_grads(m); }

/* The trainer owns the update count t (1-based) so a resumed run continues it exactly. */
static double be_step(void *vm, const AdamWConfig *opt, double lr, long t) {
    RefModel *m = vm;
    m->step = t;
    return adamw_update(m->t, m->params, m->grads, m->exp_avg, m->exp_avg_sq, t, opt, lr);
}

static void be_get_state(void *vm, void *params, void *grads, void *exp_avg, void *exp_avg_sq) {
    RefModel *m = vm;
    const size_t bytes = m->t->total * sizeof(real);
    if (params) memcpy(params, m->params, bytes);
    if (grads) memcpy(grads, m->grads, bytes);
    if (exp_avg) memcpy(exp_avg, m->exp_avg, bytes);
    if (exp_avg_sq) memcpy(exp_avg_sq, m->exp_avg_sq, bytes);
}

static void be_set_state(void *vm, const void *params, const void *exp_avg, const void *exp_avg_sq) {
    RefModel *m = vm;
    const size_t bytes = m->t->total * sizeof(real);
    if (params) memcpy(m->params, params, bytes);
    if (exp_avg) memcpy(m->exp_avg, exp_avg, bytes);
    if (exp_avg_sq) memcpy(m->exp_avg_sq, exp_avg_sq, bytes);
}

static void be_get_logits(void *vm, void *out) {
    RefModel *m = vm;
    memcpy(out, m->logits, (size_t)m->N * m->V * sizeof(real));
}

const Backend REF(ref_backend) = {
#if VRL_FP64
    .name = "ref-fp64",
#else
    .name = "ref-fp32",
#endif
    .dtype = REAL_DTYPE,
    .create = be_create,
    .destroy = be_destroy,
    .forward_backward = be_forward_backward,
    .set_rng_key = be_set_rng_key,
    .forward_loss = be_forward_loss,
    .zero_grad = be_zero_grad,
    .grad_buffer = be_grad_buffer,
    .step = be_step,
    .get_state = be_get_state,
    .set_state = be_set_state,
    .get_logits = be_get_logits,
};
