/* value_plan.c: the value-path table c[n][i] of SPEC §4 for the CUDA backend.
 *
 * The plan comes from common/model/value_path.h, the same tables the reference runs. The CUDA
 * model implements the value mix V'_l = Σ_i cv[l][i]·V_i with constant coefficients
 * (baseline, ResFormer identity / general / constant / sparse / V-source ablations,
 * SVFormer with or without anchors, all with GQA/MQA). A plan that needs anything else
 * (trainable coefficients, corrections, Q/K/attention mixing, Eq. 2, hidden residual)
 * is refused by name, so the CUDA backend never trains a different model than ref.
 *
 * Layers are 0-based here: row l is layer n = l+1, and V_0 is SPEC's V_1. */
#include <stdio.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/value_path.h"
#include "common/model/variant.h"
#include "fast/fast.h"

/* 1 if the [L,L] table is the identity (each layer reads only its own source). */
static int is_identity(const double *tab, int L) {
    for (int l = 0; l < L; l++)
        for (int i = 0; i <= l; i++)
            if (tab[(size_t)l * L + i] != (i == l ? 1.0 : 0.0)) return 0;
    return 1;
}

int fast_value_plan(const ModelConfig *c, double *coef) {
    const int L = c->n_layers;
    const char *origin = "fast backend";
    VariantSpec spec;
    if (variant_parse(c->variant, &spec, origin) < 0) return -1;
    VariantPart *stream = variant_part(&spec, FAMILY_STREAM);
    if (stream)
        return vrl_error("fast backend: residual-stream variant \"%s\" is not implemented on CUDA yet", stream->name);
    ValuePlan p;
    if (value_plan_build(c, &p, origin) < 0) return -1;
    const char *missing = NULL;
    int trainable = 0, corrections = 0, cross = 0, hidden = 0;
    for (int l = 0; l < L; l++) {
        trainable |= p.n_train[l] != 0;
        cross |= p.cross[l] >= 0;
        hidden |= p.hx[l] != 1.0 || p.hh[l] != 0.0;
        for (int i = 0; i <= l; i++) corrections |= p.ce[(size_t)l * L + i] != 0.0;
    }
    if (trainable) missing = "trainable value coefficients";
    else if (corrections) missing = "output corrections (NeuTRENO, Eq. 6)";
    else if (!is_identity(p.cq, L) || !is_identity(p.ck, L)) missing = "query/key mixing or sharing";
    else if (!is_identity(p.ca, L)) missing = "attention-matrix mixing";
    else if (cross) missing = "cross-layer attention (Eq. 2)";
    else if (hidden) missing = "the hidden residual to H_0";
    if (missing) {
        vrl_error("fast backend: variant \"%s\" needs %s, not implemented on CUDA yet (constant value mixing is)",
                  c->variant, missing);
        value_plan_free(&p);
        return -1;
    }
    memcpy(coef, p.cv, (size_t)L * L * sizeof *coef);
    value_plan_free(&p);
    return 0;
}
