/* value_plan.c: the value-path table c[n][i] of SPEC §4 for the CUDA backend.
 *
 * A stopgap: the value-path plan of common/value_path.h (per-layer coefficient tables,
 * DESIGN-NOTES "Two mechanisms") had not landed on main when fast/ was written, so this
 * reads config.variant minimally. When value_path.h lands, fast_value_plan becomes a
 * call to it and this file goes away; the model code only ever sees the table.
 *
 * Layers are 0-based here: row l is layer n = l+1, and V_0 is SPEC's V_1. */
#include <stdio.h>
#include <string.h>

#include "../common/error.h"
#include "../common/variant.h"
#include "fast.h"

int fast_value_plan(const ModelConfig *c, double *coef) {
    const int L = c->n_layers;
    const char *origin = "fast backend";
    VariantSpec spec;
    if (variant_parse(c->variant, &spec, origin) < 0) return -1;
    VariantPart *stream = variant_part(&spec, FAMILY_STREAM);
    if (stream)
        return vrl_error("fast backend: residual-stream variant \"%s\" is not implemented on CUDA yet", stream->name);
    memset(coef, 0, (size_t)L * L * sizeof *coef);
    for (int l = 0; l < L; l++) coef[(size_t)l * L + l] = 1.0; /* baseline: U_n = A_n V_n */
    VariantPart *p = variant_part(&spec, FAMILY_VALUE);
    if (!p) return 0;
    if (!strcmp(p->name, "resformer")) {
        /* identity: 0.5·V_1 + 0.5·V_n; constant: λ·V_1 + V_n (λ = 2, the paper's best);
         * general: λ1·V_1 + λ2·V_n */
        const char *mode = "identity";
        double l1 = 0.5, l2 = 0.5;
        if (variant_opt_str(p, "mode", &mode) < 0) return -1;
        if (!strcmp(mode, "constant")) {
            l1 = 2.0, l2 = 1.0;
            if (variant_opt_double(p, "lambda", &l1, origin) < 0) return -1;
        } else if (!strcmp(mode, "general")) {
            if (variant_opt_double(p, "lambda1", &l1, origin) < 0) return -1;
            if (variant_opt_double(p, "lambda2", &l2, origin) < 0) return -1;
        } else if (strcmp(mode, "identity"))
            return vrl_error("fast backend: resformer mode=%s is not implemented on CUDA yet "
                             "(identity, constant, general are)", mode);
        for (int l = 1; l < L; l++) {
            coef[(size_t)l * L + 0] = l1;
            coef[(size_t)l * L + l] = l2;
        }
    } else if (!strcmp(p->name, "svformer")) {
        /* U_n = A_n V_1: layers >= 2 compute no V of their own */
        for (int l = 1; l < L; l++) {
            coef[(size_t)l * L + 0] = 1.0;
            coef[(size_t)l * L + l] = 0.0;
        }
    } else {
        return vrl_error("fast backend: value-path variant \"%s\" is not implemented on CUDA yet "
                         "(baseline, resformer, svformer are)", p->name);
    }
    return variant_check_used(&spec, origin);
}
