/* capabilities.c: what the CUDA backend implements of a model spec (fast_capabilities).
 *
 * The CUDA model runs the llama block with the value mix V'_l = Σ_i cv[l][i]·V_i of the spec's
 * ValuePlan with constant coefficients (baseline, ResFormer identity / general / constant /
 * sparse / V-source ablations, SVFormer with or without anchors, all with GQA/MQA) and the
 * plain residual stream. A spec that needs anything else (trainable coefficients,
 * corrections, Q/K/attention mixing, Eq. 2, hidden residual, a residual-stream variant,
 * GPT-2) is refused by name, so the CUDA backend never trains a different model than ref.
 * It declares no analysis views and no decoding.
 *
 * Layers are 0-based here: row l is layer n = l+1, and V_0 is formulas.md's V_1. */
#include <stdio.h>

#include "fast/fast.h"

/* 1 if the [L,L] table is the identity (each layer reads only its own source). */
static int is_identity(const double *tab, int L) {
    for (int l = 0; l < L; l++)
        for (int i = 0; i <= l; i++)
            if (tab[(size_t)l * L + i] != (i == l ? 1.0 : 0.0)) return 0;
    return 1;
}

/* The first thing of the value plan the CUDA kernels lack, or NULL. */
static const char *value_plan_missing(const ValuePlan *p) {
    const int L = p->L;
    int trainable = 0, corrections = 0, cross = 0, hidden = 0;
    for (int l = 0; l < L; l++) {
        trainable |= p->n_train[l] != 0;
        cross |= p->cross[l] >= 0;
        hidden |= p->hx[l] != 1.0 || p->hh[l] != 0.0;
        for (int i = 0; i <= l; i++) corrections |= p->ce[(size_t)l * L + i] != 0.0;
    }
    if (trainable) return "trainable value coefficients";
    if (corrections) return "output corrections (NeuTRENO, Eq. 6)";
    if (!is_identity(p->cq, L) || !is_identity(p->ck, L)) return "query/key mixing or sharing";
    if (!is_identity(p->ca, L)) return "attention-matrix mixing";
    if (cross) return "cross-layer attention (Eq. 2)";
    if (hidden) return "the hidden residual to H_0";
    return NULL;
}

unsigned fast_capabilities(const ModelSpec *s, char *why, size_t why_len) {
    const ModelConfig *c = &s->config;
    const int hd = config_head_dim(c);
    char buf[512];
    const char *missing;
    buf[0] = '\0';
    if (c->arch != ARCH_LLAMA) snprintf(buf, sizeof buf, "the CUDA backend implements the llama architecture only");
    else if (s->stream.kind != STREAM_PLAIN)
        snprintf(buf, sizeof buf, "residual-stream variant \"%s\" is not implemented on CUDA yet",
                 stream_kind_name(s->stream.kind));
    else if ((missing = value_plan_missing(&s->value)))
        snprintf(buf, sizeof buf, "variant \"%.200s\" needs %s, not implemented on CUDA yet (constant value mixing is)",
                 c->variant, missing);
    else if (c->n_layers > FAST_MAX_LAYERS)
        snprintf(buf, sizeof buf, "at most %d layers (got %d)", FAST_MAX_LAYERS, c->n_layers);
    else if (hd != 8 && hd != 16 && hd != 32 && hd != 64 && hd != 128)
        snprintf(buf, sizeof buf, "head_dim must be 8, 16, 32, 64 or 128 (got %d)", hd);
    if (why && why_len) snprintf(why, why_len, "%s", buf[0] ? buf : "no analysis views or decoding on CUDA yet");
    return buf[0] ? 0u : BACKEND_CAN_TRAIN;
}
