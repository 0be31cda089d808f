/* backend.h: what the trainer, evaluation and analysis need from a model implementation.
 *
 * The training loop, evaluation, analysis and checkpointing are written once against this
 * table; ref/ provides it in float32 and float64 (ref_backend_f32, ref_backend_f64),
 * fast/ provides it on CUDA. Every model is built from one ModelSpec (spec.h): parameters,
 * gradients and AdamW moments are flat buffers laid out by spec->table; the host view of
 * them is in `dtype`. What a backend can do with a given spec it says in `capabilities`;
 * a command checks the flag it needs first and refuses by the backend's name. */
#ifndef VRL_BACKEND_H
#define VRL_BACKEND_H

#include <stdint.h>

#include "common/base/safetensors.h"
#include "common/model/spec.h"

typedef struct {
    double beta1, beta2, eps;   /* 0.9, 0.95, 1e-8 */
    double weight_decay;        /* 0.1, applied where ParamInfo.decay */
    double clip;                /* global-norm clip, 1.0; <= 0 disables */
} AdamWConfig;

/* Capability flags (Backend.capabilities). */
#define BACKEND_CAN_TRAIN 1u    /* create, forward_backward, step, get/set_state */
#define BACKEND_CAN_ANALYZE 2u  /* view: the activations `vrl analyze` reads */
#define BACKEND_CAN_GENERATE 4u /* incremental decoding (`vrl generate`) */
#define BACKEND_CAN_SCORE 8u    /* create, set_state, token_logprobs (`vrl eval`) */

/* What `view` returns of the last forward; B batch, T seq, NH/NKV heads, hd head dim,
 * d width, L layers; layers 0-based. Host memory in the backend's dtype, owned by the
 * model, valid until its next call. */
typedef enum {
    VIEW_ATTENTION = 0, /* layer l: causal softmax A_l [B, NH, T, T] (Eq. 2 layers: [B, NH, T, 2T]) */
    VIEW_QUERIES,       /* layer l: post-RoPE queries [B, T, NH*hd] */
    VIEW_KEYS,          /* layer l: post-RoPE keys [B, T, NKV*hd] */
    VIEW_VALUES,        /* layer l: raw values V_l [B, T, NKV*hd] */
    VIEW_HIDDEN,        /* s = 0..L: transformers' output_hidden_states [B, T, d] (formulas.md §6): 0 the
                         * embedding output, 1..L-1 layer s's output, L the final post-norm output */
    VIEW_DEPTH_WEIGHTS, /* step s = 0..2L (AttnRes): softmax weights over spec->stream's sources of
                         * step s, [B*T, n_src[s]] */
} BackendView;

typedef struct Backend {
    const char *name;           /* "ref-fp32", "ref-fp64", "cuda-bf16" */
    DType dtype;                /* host view of params, grads and moments */

    /* What this backend does for the model of s (BACKEND_CAN_* flags). For each flag it
     * leaves out that the caller may want, `why` (if not NULL) gets one line saying what is
     * missing ("cuda-bf16: residual-stream variant attnres is not implemented"). */
    unsigned (*capabilities)(const ModelSpec *s, char *why, size_t why_len);

    /* A model for batches of [batch, seq] tokens; s is not copied and must outlive the model.
     * NULL with vrl_error() on failure (a spec it cannot train: the capabilities' reason). */
    void *(*create)(const ModelSpec *s, int batch, int seq);
    void (*destroy)(void *m);

    /* Forward and backward of one micro-batch; gradients are *added* to the gradient
     * buffer scaled by grad_scale (1/accum). Returns the micro-batch's mean loss, or, where
     * micro_losses is not NULL, 0 (the loss stays with the backend until the step); NaN with
     * vrl_error when it refused the batch. */
    double (*forward_backward)(void *m, const int32_t *tokens /* [batch, seq] */, double grad_scale);
    /* Deferred losses (fast/: no host wait inside a step): the mean losses of the last n
     * forward_backward calls since zero_grad, in call order, into out [n]; the trainer calls
     * it after step, whose one wait brought them back (earlier, it waits itself). 0, or -1
     * with vrl_error. NULL where forward_backward returns the loss itself (ref/). */
    int (*micro_losses)(void *m, double *out, int n);
    /* Key the randomness of the next training forward (GPT-2 dropout masks) by the run's
     * seed, the update about to be taken (1-based) and the micro-batch within it, so a
     * resumed run draws exactly the masks the uninterrupted run drew. NULL if the
     * backend's training forward is deterministic. */
    void (*set_rng_key)(void *m, uint64_t seed, long step, int micro);
    /* Forward only: mean loss over the batch's B*(T-1) predictions. */
    double (*forward_loss)(void *m, const int32_t *tokens /* [batch, seq] */);
    void (*zero_grad)(void *m);
    /* The host gradient buffer [table.total] in dtype that forward_backward adds into, for
     * the trainer to sum micro-batches in a fixed order across processes (common/run/dist.h).
     * NULL if the gradients live elsewhere (fast/: device memory). */
    void *(*grad_buffer)(void *m);
    /* Data parallelism with the gradients kept on the device (fast/: NCCL, ZeRO-2 style).
     * shard_open joins the job (common/run/dist.h gives rank, world and the broadcast of
     * the communicator's id; world 1 too). From then on step() clips with the global norm,
     * updates this rank's shard and gathers the parameters, and get_state is collective
     * (every rank calls it; it gathers the whole state first). reduce_next: the next
     * forward_backward is this rank's last of the update, so its backward reduce-scatters
     * the gradients bucket by bucket as layers finish. NULL where the trainer sums the
     * micro-batch gradients itself (grad_buffer). */
    int (*shard_open)(void *m);
    void (*reduce_next)(void *m);

    /* Clip the gradients to the global norm and apply AdamW update number t (1-based,
     * for the bias corrections) with this lr. Returns the pre-clip global norm. The
     * trainer owns t, so a resumed run continues the count exactly. */
    double (*step)(void *m, const AdamWConfig *opt, double lr, long t);

    /* Host copies of the state, laid out by the table, in `dtype`. Any pointer may be NULL. */
    void (*get_state)(void *m, void *params, void *grads, void *exp_avg, void *exp_avg_sq);
    void (*set_state)(void *m, const void *params, const void *exp_avg, const void *exp_avg_sq);
    /* The backend's own host state, laid out by the table, in `dtype`, to be read in place
     * (checkpoints are written from it: no second copy of the state in memory); valid while
     * the model lives, changed by step and set_state. NULL where the state is not in host
     * memory (fast/: on the device; the trainer keeps host copies and calls get_state). */
    void (*state_view)(void *m, void **params, void **exp_avg, void **exp_avg_sq);

    /* Last forward's logits [batch, seq, vocab], host copy in dtype (for tests). */
    void (*get_logits)(void *m, void *out);

    /* Scoring (vrl eval, common/eval/lmeval.c): a forward of tokens, then at every position i
     * with targets[i] >= 0, logprob[i] = log softmax(logits_i)[targets[i]] and greedy[i] = 1
     * if targets[i] is the argmax of logits_i, else 0. Ties: the argmax is the lowest id
     * among equal maxima (torch.argmax, which lm-eval's is_greedy compares with), so a
     * target tied with a lower id is not greedy. Positions with target -1 are left as they
     * are. Only these two [batch, seq] arrays reach the host, never the logits. 0, or -1
     * with vrl_error (a token or target outside the vocabulary, a failed forward); a
     * non-finite logit row gives a non-finite logprob, which the caller checks. */
    int (*token_logprobs)(void *m, const int32_t *tokens /* [batch, seq] */, const int32_t *targets /* [batch, seq] */,
                          double *logprob /* [batch, seq] */, uint8_t *greedy /* [batch, seq] */);

    /* BACKEND_CAN_ANALYZE: an activation of the last forward (BackendView), or NULL with
     * vrl_error when this model has no such view (e.g. depth weights without AttnRes).
     * NULL table entry where the backend cannot analyze. */
    const void *(*view)(void *m, BackendView what, int index);

    /* Incremental decoding (ref/decode.h): a KV cache for `batch` sequences of up to max_seq
     * positions of model m (whose weights it reads in place), and decode, which feeds the next
     * n_new tokens of every sequence and writes their logits in dtype. kv_create: NULL with
     * vrl_error(); decode: 0 or -1 with vrl_error(). ref decodes every model (ref/decode.c,
     * ref/gpt2_decode.c), fast/ what fast_decode_missing allows (fast/decode.cu).
     * All three NULL where the backend does not generate. */
    void *(*kv_create)(void *m, int batch, int max_seq);
    void (*kv_free)(void *kv);
    int (*decode)(void *m, void *kv, const int32_t *tokens /* [batch, n_new] */, int n_new,
                  void *logits_out /* [batch, n_new, vocab] */);
} Backend;

/* forward_backward's mean loss, read at once also from a backend that keeps it
 * (micro_losses: this waits for the device): for tests and benchmarks, not the trainer. */
double backend_forward_backward_now(const Backend *be, void *m, const int32_t *tokens, double grad_scale);

/* 1 if be can do everything in `need` for s; else 0 with vrl_error("NAME: reason"). */
int backend_require(const Backend *be, const ModelSpec *s, unsigned need);

/* A decode call's input, the same for every backend: n_new more positions fit a cache of tmax
 * holding pos, and every token of tokens [batch, n_new] is in [0, vocab). 0, or -1 with
 * vrl_error(). */
int backend_decode_check(const int32_t *tokens, int batch, int n_new, int pos, int tmax, int vocab);

#endif
