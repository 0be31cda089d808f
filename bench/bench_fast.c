/* bench_fast.c: training throughput of the CUDA backend (fast/).
 *
 * For each preset (82M, 468M by default) and variant (baseline, resformer, svformer) at
 * T = 2048: tokens/s over timed steps (forward+backward+AdamW through the Backend, as the
 * trainer drives it), MFU against a measured bf16 GEMM peak, and the device memory the
 * model holds. --kernels adds a per-kernel table (µs, bytes moved, FLOPs) for layer 0.
 * The model trains with fast/'s default attention, the tensor-core kernels (mma), whose forward
 * and backward rows the table adds beside the flash kernels'; --attention flash trains with
 * the CUDA-core flash kernels, --attention cudnn with cuDNN's fused attention (docs/fast.md),
 * adding its two rows. --gemm wgmma trains with fast/gemm_wgmma.cu's GEMMs and SwiGLU epilogues
 * (H100/H200), its three rows beside the cuBLASLt ones.
 * bench/bench_torch.py prints the same figures for HF LlamaForCausalLM on the same GPU.
 *
 * FLOPs per token: 6·N_matmul (every weight except the embedding table) plus attention
 * 6·L·T·qC (QKᵀ and AV, forward and backward, causal: half of PaLM's 12·L·T·d). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/model/spec.h"
#include "common/model/config.h"
#include "common/base/error.h"
#include "common/model/params.h"
#include "common/base/rng.h"
#include "fast/fast.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int bench_one(const char *preset, const char *variant, int B, int T, int steps, int kernels, double peak) {
    ModelConfig c;
    ModelSpec spec = {0};
    if (config_preset(preset, &c) < 0) return -1;
    if (T > c.max_seq) c.max_seq = T;
    /* the variant's own spec: its table drops the projections the plan does not read */
    if (model_spec_set_variant(&c, variant, "--variant", &spec) < 0) return -1;
    const size_t P = spec.table.total, N = (size_t)B * T;
    float *w = malloc(P * sizeof *w);
    double *init = malloc(P * sizeof *init);
    int32_t *tok = malloc(N * sizeof *tok);
    int rc = -1;
    void *m = NULL;
    if (!w || !init || !tok) {
        vrl_error("out of host memory");
        goto done;
    }
    params_init_f64(&spec.table, 1, init);
    for (size_t i = 0; i < P; i++) w[i] = (float)init[i];
    if (!(m = fast_backend_cuda.create(&spec, B, T))) goto done;
    fast_backend_cuda.set_state(m, w, NULL, NULL);
    Rng r;
    rng_seed(&r, 7);
    AdamWConfig opt = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    double t0 = 0, loss = 0;
    for (int s = 0; s < steps + 2; s++) { /* two warm-up steps, untimed (the second captures the graphs) */
        if (s == 2) t0 = now();
        for (size_t i = 0; i < N; i++) tok[i] = (int32_t)rng_below(&r, (uint64_t)c.vocab_size);
        fast_backend_cuda.zero_grad(m);
        if (isnan(fast_backend_cuda.forward_backward(m, tok, 1.0))) goto done; /* the loss stays on the device */
        fast_backend_cuda.step(m, &opt, 1e-4, s + 1); /* the step's one wait: it ends on the host */
        if (fast_backend_cuda.micro_losses(m, &loss, 1) < 0) goto done;
    }
    const double dt = (now() - t0) / steps;
    /* matmul parameters: all but the embedding table */
    const ParamInfo *emb = param_table_find(&spec.table, "model.embed_tokens.weight");
    const double n_mm = (double)P - (emb ? (double)emb->numel : 0);
    const double flops_tok = 6.0 * n_mm + 6.0 * c.n_layers * T * (double)c.n_heads * config_head_dim(&c);
    const double tps = N / dt;
    printf("%-5s %-10s B=%-3d T=%-5d %10.0f tok/s  %7.1f ms/step  MFU %5.1f%% (of %.0f TFLOP/s)  memory %.2f GiB  "
           "loss %.4f\n",
           preset, variant, B, T, tps, dt * 1e3, 100.0 * tps * flops_tok / (peak * 1e12), peak,
           fast_model_device_bytes(m) / 1073741824.0, loss);
    if (kernels && fast_bench_kernels(m, stdout) < 0) goto done;
    rc = 0;
done:
    if (m) fast_backend_cuda.destroy(m);
    free(w), free(init), free(tok);
    model_spec_free(&spec);
    return rc;
}

int main(int argc, char **argv) {
    const char *presets = "82M,468M", *variants = "baseline,resformer,svformer";
    const char *attention = NULL, *gemm = NULL; /* fast/'s defaults unless given */
    int B = 8, T = 2048, steps = 10, kernels = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--presets") && i + 1 < argc) presets = argv[++i];
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) variants = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) B = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seq") && i + 1 < argc) T = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernels")) kernels = 1;
        else if (!strcmp(argv[i], "--attention") && i + 1 < argc) attention = argv[++i];
        else if (!strcmp(argv[i], "--gemm") && i + 1 < argc) gemm = argv[++i];
        else {
            fprintf(stderr,
                    "usage: bench_fast [--presets 82M,468M] [--variants baseline,resformer,svformer] [--batch 8] "
                    "[--seq 2048] [--steps 10] [--kernels] [--attention mma|flash|wgmma|cudnn] [--gemm cublaslt|wgmma]\n");
            return 2;
        }
    }
    if (B < 1 || T < 2 || steps < 1) {
        fprintf(stderr, "bench_fast: bad --batch/--seq/--steps\n");
        return 2;
    }
    if (fast_device_check() < 0 || (attention && fast_set_attention(attention) < 0) ||
        (gemm && fast_set_gemm(gemm) < 0)) {
        fprintf(stderr, "bench_fast: %s\n", vrl_last_error());
        return 1;
    }
    const double peak = fast_bench_peak_bf16(8192);
    if (peak <= 0) {
        fprintf(stderr, "bench_fast: %s\n", vrl_last_error());
        return 1;
    }
    const int kind = fast_attention_kind();
    printf("measured bf16 GEMM peak (cuBLASLt, 8192^3, fp32 accumulate): %.1f TFLOP/s; attention: %s; GEMMs: %s\n",
           peak, kind == FAST_ATTENTION_MMA     ? "mma"
           : kind == FAST_ATTENTION_WGMMA ? "wgmma (forward; mma's backward)"
           : kind == FAST_ATTENTION_CUDNN ? "cudnn"
                                          : "flash",
           fast_gemm_kind() == FAST_GEMM_WGMMA ? "wgmma (fast/gemm_wgmma.cu)" : "cuBLASLt");
    char pbuf[256], vbuf[256];
    snprintf(pbuf, sizeof pbuf, "%s", presets);
    for (char *sp = NULL, *p = strtok_r(pbuf, ",", &sp); p; p = strtok_r(NULL, ",", &sp)) {
        snprintf(vbuf, sizeof vbuf, "%s", variants);
        for (char *sv = NULL, *v = strtok_r(vbuf, ",", &sv); v; v = strtok_r(NULL, ",", &sv))
            if (bench_one(p, v, B, T, steps, kernels, peak) < 0) {
                fprintf(stderr, "bench_fast: %s %s: %s\n", p, v, vrl_last_error());
                return 1;
            }
    }
    return 0;
}
