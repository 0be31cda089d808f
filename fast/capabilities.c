/* capabilities.c: what the CUDA backend implements of a model spec (fast_capabilities).
 *
 * The CUDA model runs the llama block with the spec's ValuePlan mixes of raw projections
 * (formulas.md §4): queries Σ_i cq·Q_i and keys Σ_i ck·K_i before RoPE, values Σ_i cv·V_i with
 * constant or trainable (v_residual_lambda) coefficients, and output corrections
 * repeat_kv(Σ_i ce·V_i) after attention; layers without their own projections (SVFormer, CLA,
 * shared Q/K) read earlier layers'. That covers baseline, every ResFormer mode and V-source
 * ablation, SVFormer with anchors, NeuTRENO (+ResFormer), identity mapping (Eq. 6), CLA,
 * the query/key residuals, shared Q/K and the hidden residual, the attention-matrix residual
 * (ca rows Σ_i ca·A_i that keep the layer's own A_l) and Eq. 2 cross-layer attention
 * (fast/attention_mix.cu), all with GQA/MQA, on the plain residual stream, DenseFormer's,
 * AttnRes' (full and block), Hyper-Connections' or mHC's (fast/stream.cu). It also runs the
 * GPT-2 baseline (fast/gpt2.cu) without dropout. A spec that needs anything else (GPT-2
 * dropout, a ca row without the layer's own softmax or mixing an Eq. 2 layer's) is refused by
 * name (docs/design/kernels.md, "Variants" says why), so
 * the CUDA backend never trains a different model than ref. What it trains it also scores
 * (`vrl eval`: the same forward, then log-probabilities on the device). It declares no
 * analysis views; it decodes (fast/decode.cu) what fast_decode_missing allows.
 *
 * Layers are 0-based here: row l is layer n = l+1, and V_0 is formulas.md's V_1. */
#include <stdio.h>

#include "fast/decode.h"
#include "fast/fast.h"

/* The first thing of the value plan the CUDA kernels lack, or NULL. fast/attention_mix.cu
 * mixes the terms A_i·V'_l of a ca row that keeps the layer's own softmax, each A_i a causal
 * softmax of width T (not an Eq. 2 layer's [T, 2T]) in a layer that is not itself Eq. 2. */
static const char *value_plan_missing(const ValuePlan *p) {
    const int L = p->L;
    for (int l = 0; l < L; l++) {
        const double *row = p->ca + (size_t)l * L;
        int mixes = row[l] != 1.0;
        for (int i = 0; i < l; i++) {
            mixes |= row[i] != 0;
            if (row[i] != 0 && p->cross[i] >= 0) return "the softmax of an Eq. 2 layer mixed into a later layer";
        }
        if (mixes && row[l] == 0) return "attention-matrix mixing without the layer's own softmax";
        if (mixes && p->cross[l] >= 0) return "attention-matrix mixing in an Eq. 2 layer";
    }
    return NULL;
}

/* What fast/decode.cu decodes: GPT-2, and the llama block whose attention reads its own queries,
 * one layer's keys (its own, or CLA's shared ones) and its own softmax (no ca mixing, no Eq. 2);
 * values and corrections mix freely and every residual stream runs (per token). */
const char *fast_decode_missing(const ModelSpec *s) {
    const ValuePlan *p = &s->value;
    const int L = p->L;
    if (s->config.arch == ARCH_GPT2) return NULL;
    for (int l = 0; l < L; l++) {
        const double *cq = p->cq + (size_t)l * L, *ck = p->ck + (size_t)l * L, *ca = p->ca + (size_t)l * L;
        int k_sources = 0, k_one = 1;
        for (int i = 0; i <= l; i++) {
            if (i < l && cq[i] != 0) return "queries mixed across layers (query residual, shared Q)";
            if (i < l && ca[i] != 0) return "attention-matrix mixing across layers";
            if (ck[i] != 0) k_sources++, k_one &= ck[i] == 1.0;
        }
        if (cq[l] != 1.0) return "queries mixed across layers (query residual, shared Q)";
        if (k_sources != 1 || !k_one) return "keys mixed across layers (key residual)";
        if (ca[l] != 1.0) return "attention-matrix mixing across layers";
        if (p->cross[l] >= 0) return "Eq. 2 cross-layer attention";
    }
    return NULL;
}

unsigned fast_capabilities(const ModelSpec *s, char *why, size_t why_len) {
    const ModelConfig *c = &s->config;
    const int hd = config_head_dim(c);
    char buf[512];
    const char *missing;
    buf[0] = '\0';
    if (c->arch == ARCH_GPT2 && c->dropout > 0) /* ref's masks are per element of the [T,T] probabilities */
        snprintf(buf, sizeof buf, "GPT-2 with dropout %g is not implemented on CUDA (set resid_pdrop, embd_pdrop and "
                 "attn_pdrop to 0, or train on cpu)", c->dropout);
    else if ((missing = value_plan_missing(&s->value)))
        snprintf(buf, sizeof buf, "variant \"%.200s\" needs %s, not implemented on CUDA",
                 c->variant, missing);
    else if (c->n_layers > FAST_MAX_LAYERS)
        snprintf(buf, sizeof buf, "at most %d layers (got %d)", FAST_MAX_LAYERS, c->n_layers);
    else if (hd != 8 && hd != 16 && hd != 32 && hd != 64 && hd != 128)
        snprintf(buf, sizeof buf, "head_dim must be 8, 16, 32, 64 or 128 (got %d)", hd);
    if (buf[0]) {
        if (why && why_len) snprintf(why, why_len, "%s", buf);
        return 0u;
    }
    unsigned caps = BACKEND_CAN_TRAIN | BACKEND_CAN_SCORE; /* scoring is the training forward's trunk */
    const char *no_decode = fast_decode_missing(s);
    if (!no_decode) caps |= BACKEND_CAN_GENERATE;
    if (why && why_len) {
        if (no_decode)
            snprintf(why, why_len, "variant \"%.200s\" needs %s, which the CUDA decoder (fast/decode.cu) does not "
                     "implement", c->variant, no_decode);
        else snprintf(why, why_len, "no analysis views on CUDA");
    }
    return caps;
}
