/* backend.c: the CUDA model behind the Backend table (common/model/backend.h), the twin of
 * ref/backend.c. Host views are fp32 (DT_F32): the master weights and AdamW moments
 * are fp32 on the device, so get/set_state are plain copies; the bf16 copy the
 * kernels read is rebuilt from the master weights on every set_state and step.
 *
 * The table's void functions cannot return an error: a failure there leaves its message
 * in vrl_last_error() and the next forward or step reports it (NaN). */
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/backends.h"
#include "fast/attention_cudnn.h"
#include "fast/decode.h"
#include "fast/fast.h"
#include "fast/model.h"
#if VRL_HAVE_NCCL
#include "fast/zero.h"
#endif

static void *be_create(const ModelSpec *s, int batch, int seq) { return fast_model_create(s, batch, seq); }

static void be_destroy(void *m) { fast_model_destroy(m); }

static double be_forward_backward(void *m, const int32_t *tokens, double grad_scale) {
    return fast_model_forward(m, tokens, grad_scale, 1);
}

static int be_micro_losses(void *m, double *out, int n) { return fast_model_micro_losses(m, out, n); }

static double be_forward_loss(void *m, const int32_t *tokens) { return fast_model_forward(m, tokens, 0.0, 0); }

static void be_zero_grad(void *m) { (void)fast_model_zero_grad(m); }

static double be_step(void *m, const AdamWConfig *opt, double lr, long t) { return fast_model_step(m, opt, lr, t); }

static void be_get_state(void *m, void *params, void *grads, void *exp_avg, void *exp_avg_sq) {
    (void)fast_model_get_state(m, params, grads, exp_avg, exp_avg_sq);
}

static void be_set_state(void *m, const void *params, const void *exp_avg, const void *exp_avg_sq) {
    (void)fast_model_set_state(m, params, exp_avg, exp_avg_sq);
}

static void be_get_logits(void *m, void *out) { (void)fast_model_get_logits(m, out); }

static int be_decode(void *m, void *kv, const int32_t *tokens, int n_new, void *logits_out) {
    return fast_decode(m, kv, tokens, n_new, logits_out);
}

static int be_token_logprobs(void *m, const int32_t *tokens, const int32_t *targets, double *logprob,
                             uint8_t *greedy) {
    return fast_model_token_logprobs(m, tokens, targets, logprob, greedy);
}

const Backend fast_backend_cuda = {
#if VRL_CUDA_CPU_FP32
    .name = "cuda-cpu-fp32", /* the CPU layer with fp32 storage (tests only: docs/design/precision.md, "Checks in bits") */
#elif VRL_CUDA_CPU
    .name = "cuda-cpu-bf16", /* the same code on the CPU (fast/cuda_cpu/) */
#else
    .name = "cuda-bf16",
#endif
    .dtype = DT_F32,
    .capabilities = fast_capabilities, /* training, scoring, decoding; no analysis views */
    .create = be_create,
    .destroy = be_destroy,
    .forward_backward = be_forward_backward, /* the loss stays on the device: micro_losses */
    .micro_losses = be_micro_losses,
    .forward_loss = be_forward_loss,
    .zero_grad = be_zero_grad,
    .step = be_step,
    .get_state = be_get_state,
    .set_state = be_set_state,
    .get_logits = be_get_logits,
    .token_logprobs = be_token_logprobs, /* vrl eval: log-softmax, gather and argmax on the device */
    .kv_create = fast_kv_create,         /* vrl generate: fast/decode.cu */
    .kv_free = fast_kv_free,
    .decode = be_decode,
#if VRL_HAVE_NCCL
    .shard_open = fast_shard_open,     /* several processes: NCCL (one process: no communicator) */
    .reduce_next = fast_reduce_next,
#endif
};

/* --attention: read by fast_model_create (each model keeps the kind it was made with). The
 * tensor-core kernels unless set; the fp32-storage CPU build keeps flash, as its bf16 is a
 * 4-byte float that mma.sync's packed bf16 pairs cannot hold (fast_set_attention below). */
#if VRL_CUDA_CPU_FP32
static int attention_kind = FAST_ATTENTION_FLASH;
#else
static int attention_kind = FAST_ATTENTION_MMA;
#endif

int fast_set_attention(const char *name) {
    if (!strcmp(name, "flash")) {
        attention_kind = FAST_ATTENTION_FLASH;
        return 0;
    }
    if (!strcmp(name, "mma")) {
#if VRL_CUDA_CPU_FP32 /* fp32 storage: bf16 is a 4-byte wrapper, no two of them pack into a fragment register */
        return vrl_error("--attention mma: the fp32-storage build (VRL_CUDA_CPU_FP32) has no packed bf16 "
                         "fragments for mma.sync; use --attention flash");
#else
        attention_kind = FAST_ATTENTION_MMA;
        return 0;
#endif
    }
    if (!strcmp(name, "wgmma")) {
#if VRL_CUDA_CPU_FP32 /* as mma: no packed bf16 pairs for wgmma's P fragments */
        return vrl_error("--attention wgmma: the fp32-storage build (VRL_CUDA_CPU_FP32) has no packed bf16 "
                         "fragments for wgmma; use --attention flash");
#else
        attention_kind = FAST_ATTENTION_WGMMA; /* the GPU's compute capability: checked at model create */
        return 0;
#endif
    }
    if (strcmp(name, "cudnn")) return vrl_error("--attention: \"%s\" is not flash, mma, wgmma or cudnn", name);
#if VRL_CUDA_CPU
    return vrl_error("--attention cudnn: cuDNN needs a GPU; --device cuda-cpu runs fast/'s own kernels only "
                     "(--attention flash, mma or wgmma)");
#elif !VRL_HAVE_CUDNN
    return vrl_error("--attention cudnn: this vrl was built without cuDNN attention (cmake found no cuDNN or no "
                     "cudnn-frontend headers: scripts/cudnn_frontend.sh, -DVRL_CUDNN; docs/fast.md)");
#else
    if (cudnn_attention_load() < 0) return -1; /* cuDNN is loaded, not linked: a machine may lack it */
    attention_kind = FAST_ATTENTION_CUDNN;
    return 0;
#endif
}

int fast_attention_kind(void) { return attention_kind; }

/* --gemm: read by fast_model_create, like --attention. -1: not set yet (VRL_FAST_GEMM decides). */
static int gemm_kind = -1;

int fast_set_gemm(const char *name) {
    if (!strcmp(name, "cublaslt")) {
        gemm_kind = FAST_GEMM_CUBLASLT;
        return 0;
    }
    if (strcmp(name, "wgmma")) return vrl_error("--gemm: \"%s\" is not cublaslt or wgmma", name);
#if VRL_CUDA_CPU_FP32
    return vrl_error("--gemm wgmma: the fp32-storage build (VRL_CUDA_CPU_FP32) has no packed bf16 for wgmma; use "
                     "--gemm cublaslt");
#else
    gemm_kind = FAST_GEMM_WGMMA;
    return 0;
#endif
}

int fast_gemm_kind(void) {
    if (gemm_kind >= 0) return gemm_kind;
    const char *env = getenv("VRL_FAST_GEMM");
    if (!env || !*env) return FAST_GEMM_CUBLASLT;
    if (fast_set_gemm(env) < 0) return vrl_error("VRL_FAST_GEMM=%s: not cublaslt or wgmma (or not in this build)", env);
    return gemm_kind;
}

static int set_option(const char *name, const char *value) {
    if (!strcmp(name, "attention")) return fast_set_attention(value);
    if (!strcmp(name, "gemm")) return fast_set_gemm(value);
    return vrl_error("--%s: not an option of the CUDA backend", name);
}

void fast_register_backends(void) {
    /* bf16 with fp32 master weights: --precision is for cpu */
#if VRL_CUDA_CPU
    static const BackendEntry cuda = {"cuda-cpu", NULL, &fast_backend_cuda, fast_device_check, set_option}; /* _cpu */
#else
    static const BackendEntry cuda = {"cuda", NULL, &fast_backend_cuda, fast_device_check, set_option};
#endif
    backend_register(&cuda);
}
