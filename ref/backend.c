/* backend.c: the reference models behind the Backend table (common/model/backend.h), once
 * per precision: ref_backend_f32 from the float build, ref_backend_f64 from the double
 * build. The spec's architecture picks the model (ref/net.h: LLaMA in model.c, GPT-2 in
 * gpt2.c) once, at create; everything else here is the same for both. Host views are in
 * the build's own dtype, so get/set_state are plain copies.
 *
 * Bad token ids: forward_loss / forward_backward return NaN with vrl_error() set and
 * leave the gradients untouched (model_check_tokens), so a trainer sees a NaN loss and
 * an error message instead of an out-of-bounds read. */
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/backends.h"
#include "ref/adamw.h"
#include "ref/decode.h"
#include "ref/net.h"
#include "ref/ops.h"
#include "ref/ref.h"
#include "ref/threads.h"

typedef struct {
    const RefNet *net;        /* the architecture's table */
    void *m;                  /* its model */
    const ModelSpec *spec;    /* not owned */
    RefBuffers buf;           /* the model's flat buffers, fixed for its life */
    size_t total, n_logits;   /* elements of each buffer; of the logits [batch, seq, vocab] */
    uint64_t drop_seed;       /* dropout key of the next training forward (set_rng_key): */
    long drop_step, drop_micro; /* run seed, update (1-based), micro-batch */
} RefHandle;

/* The reference trains, scores and decodes (ref/decode.c, ref/gpt2_decode.c) every spec model_spec_build accepts;
 * the formulas.md §6 analysis views exist for llama only. */
static unsigned be_capabilities(const ModelSpec *s, char *why, size_t why_len) {
    unsigned caps = BACKEND_CAN_TRAIN | BACKEND_CAN_SCORE | BACKEND_CAN_GENERATE;
    if (ref_net(&s->config)->view) caps |= BACKEND_CAN_ANALYZE;
    else if (why) snprintf(why, why_len, "the analysis views are defined on the llama block, not gpt2");
    return caps;
}

static void *be_create(const ModelSpec *s, int batch, int seq) {
    RefHandle *h = calloc(1, sizeof *h);
    if (!h) {
        vrl_error("model: out of memory");
        return NULL;
    }
    h->net = ref_net(&s->config);
    h->spec = s;
    if (!(h->m = h->net->create(s, batch, seq))) {
        free(h);
        return NULL;
    }
    h->buf = h->net->buffers(h->m);
    h->total = s->table.total;
    h->n_logits = (size_t)batch * seq * s->config.vocab_size;
    return h;
}

static void be_destroy(void *vh) {
    RefHandle *h = vh;
    if (!h) return;
    h->net->destroy(h->m);
    free(h);
}

/* Training forwards use dropout (GPT-2 only); its masks are keyed by set_rng_key:
 * (seed, update, micro-batch), all zero until a trainer sets them. */
static void be_set_rng_key(void *vh, uint64_t seed, long step, int micro) {
    RefHandle *h = vh;
    h->drop_seed = seed;
    h->drop_step = step;
    h->drop_micro = micro;
}

static double be_forward_backward(void *vh, const int32_t *tokens, double grad_scale) {
    RefHandle *h = vh;
    ref_threads_adapt();
    if (h->net->set_dropout)
        h->net->set_dropout(h->m, 1, h->drop_seed, (uint64_t)h->drop_step, (uint64_t)h->drop_micro);
    double loss = h->net->forward(h->m, tokens);
    h->net->backward(h->m, grad_scale); /* a no-op after a rejected batch */
    if (h->net->set_dropout) h->net->set_dropout(h->m, 0, 0, 0, 0);
    return loss;
}

static double be_forward_loss(void *vh, const int32_t *tokens) {
    RefHandle *h = vh;
    return h->net->forward(h->m, tokens);
}

static void be_zero_grad(void *vh) {
    RefHandle *h = vh;
    zero_fill(h->buf.grads, h->total);
}

static void *be_grad_buffer(void *vh) {
    RefHandle *h = vh;
    return h->buf.grads;
}

/* The trainer owns the update count t (1-based) so a resumed run continues it exactly. */
static double be_step(void *vh, const AdamWConfig *opt, double lr, long t) {
    RefHandle *h = vh;
    const RefBuffers *b = &h->buf;
    return adamw_update(&h->spec->table, b->params, b->grads, b->exp_avg, b->exp_avg_sq, t, opt, lr);
}

static void be_get_state(void *vh, void *params, void *grads, void *exp_avg, void *exp_avg_sq) {
    RefHandle *h = vh;
    const size_t bytes = h->total * sizeof(real);
    if (params) memcpy(params, h->buf.params, bytes);
    if (grads) memcpy(grads, h->buf.grads, bytes);
    if (exp_avg) memcpy(exp_avg, h->buf.exp_avg, bytes);
    if (exp_avg_sq) memcpy(exp_avg_sq, h->buf.exp_avg_sq, bytes);
}

static void be_set_state(void *vh, const void *params, const void *exp_avg, const void *exp_avg_sq) {
    RefHandle *h = vh;
    const size_t bytes = h->total * sizeof(real);
    if (params) memcpy(h->buf.params, params, bytes);
    if (exp_avg) memcpy(h->buf.exp_avg, exp_avg, bytes);
    if (exp_avg_sq) memcpy(h->buf.exp_avg_sq, exp_avg_sq, bytes);
}

static void be_state_view(void *vh, void **params, void **exp_avg, void **exp_avg_sq) {
    RefHandle *h = vh;
    *params = h->buf.params;
    *exp_avg = h->buf.exp_avg;
    *exp_avg_sq = h->buf.exp_avg_sq;
}

static void be_get_logits(void *vh, void *out) {
    RefHandle *h = vh;
    memcpy(out, h->buf.logits, h->n_logits * sizeof(real));
}

/* Scoring from this model's own logits (ops.c's token_logprobs_forward); ids are checked
 * first, so a NaN loss can only mean non-finite values, which reach the log-probabilities. */
static int be_token_logprobs(void *vh, const int32_t *tokens, const int32_t *targets, double *logprob,
                             uint8_t *greedy) {
    RefHandle *h = vh;
    const int V = h->spec->config.vocab_size;
    const size_t N = h->n_logits / (size_t)V;
    for (size_t n = 0; n < N; n++)
        if (tokens[n] < 0 || tokens[n] >= V || targets[n] < -1 || targets[n] >= V)
            return vrl_error("scoring: token %d / target %d at position %zu is outside the vocabulary [0, %d)",
                             (int)tokens[n], (int)targets[n], n, V);
    (void)h->net->forward(h->m, tokens);
    token_logprobs_forward(logprob, greedy, h->buf.logits, targets, N, V);
    return 0;
}

static const void *be_view(void *vh, BackendView what, int index) {
    RefHandle *h = vh;
    if (!h->net->view) {
        vrl_error("model: %s has no analysis views", h->spec->config.variant);
        return NULL;
    }
    return h->net->view(h->m, what, index);
}

/* Incremental decoding: a cache over this model's weights (read in place, so it follows set_state). */
static void *be_kv_create(void *vh, int batch, int max_seq) {
    RefHandle *h = vh;
    return kv_cache_create(h->spec, h->buf.params, batch, max_seq);
}

static void be_kv_free(void *kv) { kv_cache_free(kv); }

static int be_decode(void *vh, void *kv, const int32_t *tokens, int n_new, void *logits_out) {
    (void)vh; /* the cache holds the weights' address */
    return kv_decode(kv, tokens, n_new, logits_out);
}

const Backend REF(ref_backend) = {
#if VRL_FP64
    .name = "ref-fp64",
#else
    .name = "ref-fp32",
#endif
    .dtype = REAL_DTYPE,
    .capabilities = be_capabilities,
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
    .state_view = be_state_view,
    .get_logits = be_get_logits,
    .token_logprobs = be_token_logprobs,
    .view = be_view,
    .kv_create = be_kv_create,
    .kv_free = be_kv_free,
    .decode = be_decode,
};

void REF(ref_register_backend)(void) {
    static const BackendEntry entry = {"cpu", VRL_FP64 ? "fp64" : "fp32", &REF(ref_backend), NULL, NULL}; /* no options */
    backend_register(&entry);
}
