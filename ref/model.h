/* model.h: the reference model (SPEC.md §1): parameters, gradients, activations and
 * the optimizer moments for one [batch, seq] shape, forward and backward.
 * Compiled twice (real.h); use the plain names, they map to _f32/_f64. */
#ifndef VRL_REF_MODEL_H
#define VRL_REF_MODEL_H

#include <stdint.h>

#include "common/model/backend.h"
#include "common/model/config.h"
#include "common/model/params.h"
#include "ref/real.h"

typedef struct RefModel RefModel;

#define model_create REF(model_create)
#define model_destroy REF(model_destroy)
#define model_forward REF(model_forward)
#define model_backward REF(model_backward)
#define model_zero_grad REF(model_zero_grad)
#define model_params REF(model_params)
#define model_grads REF(model_grads)
#define model_logits REF(model_logits)
#define model_adamw_step REF(model_adamw_step)
#define model_check_tokens REF(model_check_tokens)
#define model_exp_avg REF(model_exp_avg)
#define model_exp_avg_sq REF(model_exp_avg_sq)
#define model_step_count REF(model_step_count)
#define model_set_step_count REF(model_set_step_count)
#define model_attention REF(model_attention)
#define model_values REF(model_values)
#define model_set_dropout REF(model_set_dropout)
#define model_hidden REF(model_hidden)
#define model_keys REF(model_keys)
#define model_queries REF(model_queries)

/* A model for [batch, seq] inputs. Parameters start at zero: fill them through
 * model_params() (params_init_f64 + conversion, or a checkpoint). */
RefModel *model_create(const ModelConfig *c, const ParamTable *t, int batch, int seq);
void model_destroy(RefModel *m);

/* Forward over tokens [batch, seq]; keeps the activations for backward and returns
 * the mean cross-entropy over the batch*(seq-1) next-token predictions. */
double model_forward(RefModel *m, const int32_t *tokens);

/* Backward of the last forward: adds grad_scale * dLoss/dParam into the gradients. */
void model_backward(RefModel *m, double grad_scale);

void model_zero_grad(RefModel *m);

real *model_params(RefModel *m);   /* [t->total], laid out by the table */
real *model_grads(RefModel *m);    /* [t->total] */
real *model_logits(RefModel *m);   /* [batch, seq, vocab] of the last forward */

/* 0 if every token id lies in [0, vocab); else -1 with vrl_error naming the first bad
 * position. model_forward calls it and returns NaN (touching nothing) on bad ids. */
int model_check_tokens(const RefModel *m, const int32_t *tokens /* [batch, seq] */);

real *model_exp_avg(RefModel *m);    /* AdamW first moments  [t->total] */
real *model_exp_avg_sq(RefModel *m); /* AdamW second moments [t->total] */
long model_step_count(const RefModel *m);         /* AdamW steps taken (bias correction) */
void model_set_step_count(RefModel *m, long step); /* restoring a checkpoint */

/* Analysis views of the last forward (0-based layer): attention probabilities
 * [batch, n_heads, seq, seq] and raw values V [batch, seq, n_kv_heads*head_dim]. */
const real *model_attention(const RefModel *m, int layer);
const real *model_values(const RefModel *m, int layer);
/* Hidden state s = 0..L of the last forward, [batch, seq, d], transformers'
 * output_hidden_states convention (SPEC §6): 0 the embedding output, s = 1..L-1 the
 * output of layer s (1-based), L the final post-norm output. */
const real *model_hidden(const RefModel *m, int s);
/* Post-RoPE keys [batch, seq, n_kv_heads*head_dim] and queries [batch, seq, n_heads*head_dim]. */
const real *model_keys(const RefModel *m, int layer);
const real *model_queries(const RefModel *m, int layer);

/* Dropout (GPT-2 only; the rate is config.dropout): training = 1 turns it on for the
 * following forwards, with masks keyed by (seed, step, micro) (ref/gpt2.c); 0 turns it
 * off (evaluation, gradient checks). A no-op for llama, which has no dropout. */
void model_set_dropout(RefModel *m, int training, uint64_t seed, uint64_t step, uint64_t micro);

/* Global-norm clipping then AdamW (SPEC §2) on every tensor; returns the pre-clip norm. */
double model_adamw_step(RefModel *m, const AdamWConfig *opt, double lr);

/* The Backend tables (ref/backend.c). */
extern const Backend ref_backend_f32;
extern const Backend ref_backend_f64;

#endif
