/* backend.h: what the trainer needs from a model implementation.
 *
 * The training loop, evaluation and checkpointing are written once against this
 * table; ref/ provides it in float32 and float64 (ref_backend_f32, ref_backend_f64),
 * fast/ provides it on CUDA. Parameters, gradients and AdamW moments are flat buffers
 * laid out by the ParamTable; the host view of them is in `dtype`. */
#ifndef VRL_BACKEND_H
#define VRL_BACKEND_H

#include <stdint.h>

#include "common/model/config.h"
#include "common/model/params.h"
#include "common/base/safetensors.h"

typedef struct {
    double beta1, beta2, eps;   /* 0.9, 0.95, 1e-8 */
    double weight_decay;        /* 0.1, applied where ParamInfo.decay */
    double clip;                /* global-norm clip, 1.0; <= 0 disables */
} AdamWConfig;

typedef struct Backend {
    const char *name;           /* "ref-fp32", "ref-fp64", "cuda-bf16" */
    DType dtype;                /* host view of params, grads and moments */

    /* A model for batches of [batch, seq] tokens. NULL with vrl_error() on failure. */
    void *(*create)(const ModelConfig *c, const ParamTable *t, int batch, int seq);
    void (*destroy)(void *m);

    /* Forward and backward of one micro-batch; gradients are *added* to the gradient
     * buffer scaled by grad_scale (1/accum). Returns the micro-batch's mean loss. */
    double (*forward_backward)(void *m, const int32_t *tokens /* [batch, seq] */, double grad_scale);
    /* Key the randomness of the next training forward (GPT-2 dropout masks) by the run's
     * seed, the update about to be taken (1-based) and the micro-batch within it, so a
     * resumed run draws exactly the masks the uninterrupted run drew. NULL if the
     * backend's training forward is deterministic. */
    void (*set_rng_key)(void *m, uint64_t seed, long step, int micro);
    /* Forward only: mean loss over the batch's B*(T-1) predictions. */
    double (*forward_loss)(void *m, const int32_t *tokens /* [batch, seq] */);
    void (*zero_grad)(void *m);

    /* Clip the gradients to the global norm and apply AdamW update number t (1-based,
     * for the bias corrections) with this lr. Returns the pre-clip global norm. The
     * trainer owns t, so a resumed run continues the count exactly. */
    double (*step)(void *m, const AdamWConfig *opt, double lr, long t);

    /* Host copies of the state, laid out by the table, in `dtype`. Any pointer may be NULL. */
    void (*get_state)(void *m, void *params, void *grads, void *exp_avg, void *exp_avg_sq);
    void (*set_state)(void *m, const void *params, const void *exp_avg, const void *exp_avg_sq);

    /* Last forward's logits [batch, seq, vocab], host copy in dtype (for tests, eval). */
    void (*get_logits)(void *m, void *out);

    /* Incremental decoding (ref/decode.h): a KV cache for `batch` sequences of up to max_seq
     * positions of model m (whose weights it reads in place), and decode, which feeds the next
     * n_new tokens of every sequence and writes their logits in dtype. kv_create: NULL with
     * vrl_error() where the model has no decoder (GPT-2); decode: 0 or -1 with vrl_error().
     * All three NULL where the backend does not generate. */
    void *(*kv_create)(void *m, int batch, int max_seq);
    void (*kv_free)(void *kv);
    int (*decode)(void *m, void *kv, const int32_t *tokens /* [batch, n_new] */, int n_new,
                  void *logits_out /* [batch, n_new, vocab] */);
} Backend;

#endif
