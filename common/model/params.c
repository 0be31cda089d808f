/* params.c: building the named parameter table and initialising it from a seed. */
#include "common/model/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/hash.h"
#include "common/base/rng.h"
#include "common/model/stream.h"
#include "common/model/variant.h"
#include "common/model/value_path.h"

#define PARAM_MAX_LAMBDA 1024 /* dense ResFormer: one coefficient per earlier layer */

int param_table_add(ParamTable *t, const char *name, int ndim, const int64_t *shape, int decay, InitKind init,
                    double init_value) {
    if (ndim < 1 || ndim > PARAM_MAX_DIM) return vrl_error("parameter %s: %d dimensions", name, ndim);
    if (strlen(name) >= PARAM_NAME_LEN) return vrl_error("parameter name too long: %s", name);
    if (param_table_find(t, name)) return vrl_error("parameter %s defined twice", name);
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        ParamInfo *p = realloc(t->p, (size_t)cap * sizeof *p);
        if (!p) return vrl_error("out of memory building the parameter table");
        t->p = p;
        t->cap = cap;
    }
    ParamInfo *p = &t->p[t->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->numel = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->numel *= (size_t)shape[i];
    }
    p->offset = t->total;
    p->decay = decay;
    p->init = init;
    p->init_value = init_value;
    t->total += p->numel;
    return 0;
}

int param_table_add_values(ParamTable *t, const char *name, int ndim, const int64_t *shape, const double *values) {
    if (param_table_add(t, name, ndim, shape, 0, INIT_VALUES, 0) < 0) return -1;
    ParamInfo *p = &t->p[t->n - 1];
    p->init_values = malloc(p->numel * sizeof *p->init_values);
    if (!p->init_values) return vrl_error("out of memory building the parameter table");
    memcpy(p->init_values, values, p->numel * sizeof *values);
    return 0;
}

/* Shorthands for the two shapes the baseline uses. */
static int add_linear(ParamTable *t, const char *name, int64_t out, int64_t in, double std) {
    int64_t shape[2] = {out, in};
    return param_table_add(t, name, 2, shape, 1, INIT_NORMAL, std);
}

static int add_norm(ParamTable *t, const char *name, int64_t d) {
    int64_t shape[1] = {d};
    return param_table_add(t, name, 1, shape, 0, INIT_CONST, 1.0);
}

static int build_llama(const ModelConfig *c, ParamTable *t, const ValuePlan *vp) {
    const int64_t d = c->d_model, hd = config_head_dim(c);
    const int64_t q_dim = (int64_t)c->n_heads * hd, kv_dim = (int64_t)c->n_kv_heads * hd;
    const double std = c->init_std;
    char name[PARAM_NAME_LEN];
    int rc = add_linear(t, "model.embed_tokens.weight", c->vocab_size, d, std);
    for (int i = 0; i < c->n_layers && !rc; i++) {
#define LAYER(fmt) (snprintf(name, sizeof name, "model.layers.%d." fmt, i), name)
        rc |= add_norm(t, LAYER("input_layernorm.weight"), d);
        /* The value-path plan drops projections nobody reads (SVFormer, CLA, shared Q/K). */
        if (vp->has_q[i]) rc |= add_linear(t, LAYER("self_attn.q_proj.weight"), q_dim, d, std);
        if (vp->has_k[i]) rc |= add_linear(t, LAYER("self_attn.k_proj.weight"), kv_dim, d, std);
        if (vp->has_v[i]) rc |= add_linear(t, LAYER("self_attn.v_proj.weight"), kv_dim, d, std);
        rc |= add_linear(t, LAYER("self_attn.o_proj.weight"), d, q_dim, std);
        if (vp->n_train[i]) { /* trainable value coefficients, starting at the plan's values */
            double init[PARAM_MAX_LAMBDA];
            int64_t shape[1] = {vp->n_train[i]};
            for (int j = 0; j < vp->n_train[i]; j++)
                init[j] = vp->cv[(size_t)i * vp->L + vp->train_src[(size_t)i * vp->L + j]];
            rc |= param_table_add_values(t, LAYER("self_attn.v_residual_lambda"), 1, shape, init);
        }
        rc |= add_norm(t, LAYER("post_attention_layernorm.weight"), d);
        rc |= add_linear(t, LAYER("mlp.gate_proj.weight"), c->d_ffn, d, std);
        rc |= add_linear(t, LAYER("mlp.up_proj.weight"), c->d_ffn, d, std);
        rc |= add_linear(t, LAYER("mlp.down_proj.weight"), d, c->d_ffn, std);
#undef LAYER
    }
    if (!rc) rc = add_norm(t, "model.norm.weight", d);
    if (!rc) rc = add_linear(t, "lm_head.weight", c->vocab_size, d, std);
    if (rc) return -1;
    /* Residual-stream variants (SPEC §5) append their mixing parameters (common/model/stream.c). */
    StreamPlan plan;
    if (stream_plan_build(c, &plan, c->preset[0] ? c->preset : "config") < 0) return -1;
    rc = stream_add_params(&plan, c, t);
    stream_plan_free(&plan);
    return rc;
}

/* GPT-2 baseline (SPEC §1) in transformers' GPT2LMHeadModel names. Linear weights use
 * GPT-2's Conv1D layout [in, out]; c_attn's output columns are q | k | v. Init as HF:
 * N(0, std) for weights and both embeddings, c_proj weights N(0, std/√(2L)), biases 0,
 * LayerNorm weight 1 / bias 0. Biases and LayerNorm parameters are not decayed. */
static int build_gpt2(const ModelConfig *c, ParamTable *t) {
    const char *origin = c->preset[0] ? c->preset : "config";
    VariantSpec vs;
    if (variant_parse(c->variant, &vs, origin) < 0) return -1;
    /* The variants are defined on the LLaMA block (RMSNorm, RoPE, SwiGLU; SPEC §4-5). */
    if (vs.n_parts)
        return vrl_error("%s: variant \"%s\" is not supported with model_type gpt2 (the GPT-2 baseline is "
                         "plain; variants are defined on the llama block)", origin, c->variant);
    const int64_t d = c->d_model, F = c->d_ffn, V = c->vocab_size;
    const double std = c->init_std, std_proj = c->init_std / sqrt(2.0 * c->n_layers);
    char name[PARAM_NAME_LEN];
    int64_t s2[2], s1[1];
#define W2(nm, a, b, sd) (s2[0] = (a), s2[1] = (b), param_table_add(t, nm, 2, s2, 1, INIT_NORMAL, sd))
#define W1(nm, a, v) (s1[0] = (a), param_table_add(t, nm, 1, s1, 0, INIT_CONST, v))
    int rc = W2("transformer.wte.weight", V, d, std);
    rc |= W2("transformer.wpe.weight", c->max_seq, d, std);
    for (int i = 0; i < c->n_layers && !rc; i++) {
#define LAYER(fmt) (snprintf(name, sizeof name, "transformer.h.%d." fmt, i), name)
        rc |= W1(LAYER("ln_1.weight"), d, 1.0);
        rc |= W1(LAYER("ln_1.bias"), d, 0.0);
        rc |= W2(LAYER("attn.c_attn.weight"), d, 3 * d, std);
        rc |= W1(LAYER("attn.c_attn.bias"), 3 * d, 0.0);
        rc |= W2(LAYER("attn.c_proj.weight"), d, d, std_proj);
        rc |= W1(LAYER("attn.c_proj.bias"), d, 0.0);
        rc |= W1(LAYER("ln_2.weight"), d, 1.0);
        rc |= W1(LAYER("ln_2.bias"), d, 0.0);
        rc |= W2(LAYER("mlp.c_fc.weight"), d, F, std);
        rc |= W1(LAYER("mlp.c_fc.bias"), F, 0.0);
        rc |= W2(LAYER("mlp.c_proj.weight"), F, d, std_proj);
        rc |= W1(LAYER("mlp.c_proj.bias"), d, 0.0);
#undef LAYER
    }
    if (!rc) rc |= W1("transformer.ln_f.weight", d, 1.0);
    if (!rc) rc |= W1("transformer.ln_f.bias", d, 0.0);
    if (!rc) rc |= W2("lm_head.weight", V, d, std);
#undef W1
#undef W2
    return rc ? -1 : 0;
}

int param_table_build(const ModelConfig *c, ParamTable *t) {
    memset(t, 0, sizeof *t);
    if (config_validate(c, c->preset[0] ? c->preset : "config") < 0) return -1;
    int rc = -1;
    ValuePlan vp;
    switch (c->arch) {
    case ARCH_LLAMA:
        if (value_plan_build(c, &vp, c->preset[0] ? c->preset : "config") < 0) break;
        rc = c->n_layers > PARAM_MAX_LAMBDA ? vrl_error("config: at most %d layers", PARAM_MAX_LAMBDA)
                                            : build_llama(c, t, &vp);
        value_plan_free(&vp);
        break;
    case ARCH_GPT2: rc = build_gpt2(c, t); break;
    }
    if (rc < 0) param_table_free(t);
    return rc;
}

void param_table_free(ParamTable *t) {
    for (int i = 0; i < t->n; i++) free(t->p[i].init_values);
    free(t->p);
    memset(t, 0, sizeof *t);
}

const ParamInfo *param_table_find(const ParamTable *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->p[i].name, name)) return &t->p[i];
    return NULL;
}

void params_init_f64(const ParamTable *t, uint64_t seed, double *out) {
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        double *x = out + p->offset;
        if (p->init == INIT_CONST) {
            for (size_t j = 0; j < p->numel; j++) x[j] = p->init_value;
        } else if (p->init == INIT_EYE || p->init == INIT_ONEHOT) {
            const size_t n = (size_t)p->shape[0];
            for (size_t j = 0; j < p->numel; j++)
                x[j] = (p->init == INIT_EYE ? j % (n + 1) == 0 : j == p->init_index) ? p->init_value : 0.0;
        } else if (p->init == INIT_VALUES) {
            for (size_t j = 0; j < p->numel; j++) x[j] = p->init_values[j];
        } else {
            /* The stream is keyed by the tensor's name, not its position in the table. */
            Rng r;
            rng_seed_stream(&r, seed, fnv1a64(p->name, strlen(p->name), FNV1A64_INIT));
            for (size_t j = 0; j < p->numel; j++) x[j] = p->init_value * rng_normal(&r);
        }
    }
}
