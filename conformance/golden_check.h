/* golden_check.h: run one PyTorch golden fixture (conformance/golden/fixtures/<case>.safetensors)
 * through a Backend and measure how far it lands from the oracle.
 *
 * The engine measures and never asserts: test_golden.c turns the numbers into pass/fail
 * against the tolerance table, golden_report.c prints them as docs/results/conformance.md's
 * table. Relative error of a tensor: max_i |a_i − b_i| / max(max_i |b_i|, tiny), b the
 * fixture (float64), a ours. tiny = 1e-300 for logits, loss and the training vectors; for
 * gradients and final weights tiny = GOLDEN_FLOOR × the largest |b| over all of the
 * quantity's tensors, because a tensor whose true gradient is zero or nearly cancels
 * (mHC's b_res / phi_res at init: oracle values ~1e-20) carries only rounding noise of
 * the model's overall gradient scale, and a ratio to its own size measures that noise. */
#ifndef VRL_GOLDEN_CHECK_H
#define VRL_GOLDEN_CHECK_H

#include "common/model/backend.h"
#include "common/model/config.h"
#include "common/model/params.h"

typedef enum {
    GOLDEN_OK = 0,   /* ran; the errors below are measured */
    GOLDEN_SKIP = 1, /* the variant or architecture is not built into ref yet (msg says which) */
    GOLDEN_FAIL = 2, /* structural mismatch: tensor set, shapes, decay flags, unreadable fixture */
} GoldenStatus;

typedef struct {
    GoldenStatus status;
    char msg[1536];               /* why, for SKIP and FAIL */
    char variant[VRL_VARIANT_LEN + 16]; /* the case's vrl_variant */
    int n_kv_heads;
    /* measured relative errors */
    double logits, loss;
    double grad;                  /* worst over every grad.* tensor */
    char grad_worst[PARAM_NAME_LEN];
    double train_loss, grad_norm, lr; /* over the 5 steps */
    int has_final;                /* the fixture carries final.* tensors */
    double final;                 /* worst over the final.* tensors */
    char final_worst[PARAM_NAME_LEN];
    int n_final;
} GoldenResult;

#define GOLDEN_FLOOR 1e-2

/* Relative error as defined above, over n values (tiny = max(floor, 1e-300)). */
double golden_rel_err(const double *ours, const double *want, size_t n);
double golden_rel_err_floor(const double *ours, const double *want, size_t n, double floor);

/* Load dir/<name>.safetensors and run it on `be`. Always fills *r; returns r->status. */
GoldenStatus golden_run(const char *dir, const char *name, const Backend *be, GoldenResult *r);

/* Every case of the fixture set, in report order (metrics_baseline is not a model case). */
#define GOLDEN_CASES(X)                                                                                 \
    X(baseline) X(gqa) X(mqa) X(resformer) X(resformer_general) X(resformer_constant)                   \
    X(resformer_sparse) X(resformer_learnable) X(resformer_dense) X(resformer_learnable_plus)           \
    X(resformer_gqa) X(svformer) X(svformer_anchors) X(svformer_gqa) X(neutreno) X(neutreno_mqa)        \
    X(neutreno_resformer) X(cla) X(ablation_query_residual) X(ablation_key_residual)                    \
    X(ablation_attn_residual) X(ablation_v_prev) X(ablation_v_mean) X(ablation_v_layer2)                \
    X(ablation_hidden_residual) X(ablation_shared_q) X(ablation_shared_k) X(ablation_cross_layer_m1)    \
    X(ablation_cross_layer_prev) X(ablation_identity_mapping) X(denseformer) X(denseformer_k2_p2)       \
    X(attnres_full) X(attnres_block) X(hc) X(mhc) X(attnres_block_resformer) X(denseformer_svformer)    \
    X(mhc_resformer_learnable) X(attnres_full_eps) X(hc_eps) X(mhc_eps) X(gpt2)

#endif
