/* spec.c: config + variant → plans → parameter table, once (spec.h). */
#include "common/model/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/variant_registry.h"

#define SPEC_MAX_LAYERS 1024 /* dense ResFormer: one coefficient per earlier layer */

/* Shorthands for the two shapes the LLaMA baseline uses; each records the tensor's slot. */
static int add_linear(ParamTable *t, TensorSlot *slot, const char *name, int64_t out, int64_t in, double std) {
    int64_t shape[2] = {out, in};
    if (param_table_add(t, name, 2, shape, 1, INIT_NORMAL, std) < 0) return -1;
    *slot = param_table_last_slot(t);
    return 0;
}

static int add_norm(ParamTable *t, TensorSlot *slot, const char *name, int64_t d) {
    int64_t shape[1] = {d};
    if (param_table_add(t, name, 1, shape, 0, INIT_CONST, 1.0) < 0) return -1;
    *slot = param_table_last_slot(t);
    return 0;
}

/* LLaMA (formulas.md §1) with the value path's attention tensors and the stream's mixing tensors. */
static int table_llama(ModelSpec *s) {
    const ModelConfig *c = &s->config;
    ParamTable *t = &s->table;
    ModelLayout *lay = &s->layout;
    const int64_t d = c->d_model;
    const double std = c->init_std;
    char name[PARAM_NAME_LEN];
    lay->layer = calloc((size_t)c->n_layers, sizeof *lay->layer);
    if (!lay->layer) return vrl_error("out of memory building the parameter table");
    int rc = add_linear(t, &lay->embed, "model.embed_tokens.weight", c->vocab_size, d, std);
    for (int i = 0; i < c->n_layers && !rc; i++) {
        LayerLayout *ll = &lay->layer[i];
#define LAYER(fmt) (snprintf(name, sizeof name, "model.layers.%d." fmt, i), name)
        rc |= add_norm(t, &ll->ln1, LAYER("input_layernorm.weight"), d);
        rc |= value_plan_add_params(&s->value, c, i, t, ll); /* q/k/v/o_proj, v_residual_lambda */
        rc |= add_norm(t, &ll->ln2, LAYER("post_attention_layernorm.weight"), d);
        rc |= add_linear(t, &ll->wgate, LAYER("mlp.gate_proj.weight"), c->d_ffn, d, std);
        rc |= add_linear(t, &ll->wup, LAYER("mlp.up_proj.weight"), c->d_ffn, d, std);
        rc |= add_linear(t, &ll->wdown, LAYER("mlp.down_proj.weight"), d, c->d_ffn, std);
#undef LAYER
    }
    if (!rc) rc = add_norm(t, &lay->norm, "model.norm.weight", d);
    if (!rc) rc = add_linear(t, &lay->head, "lm_head.weight", c->vocab_size, d, std);
    /* int64: vocab_size + 127 overflows an int from 2^31 - 127 (the GPT-2 path is int64 too) */
    if (!rc) rc = param_table_pad_rows(t, ((int64_t)c->vocab_size + PARAM_VOCAB_PAD - 1) / PARAM_VOCAB_PAD * PARAM_VOCAB_PAD);
    /* formulas.md §5 mixing parameters, none for PLAIN */
    if (!rc) rc = stream_add_params(&s->stream, c, t, &lay->stream);
    return rc ? -1 : 0;
}

/* GPT-2 baseline (formulas.md §1) in transformers' GPT2LMHeadModel names. Linear weights use
 * GPT-2's Conv1D layout [in, out]; c_attn's output columns are q | k | v. Init as HF:
 * N(0, std) for weights and both embeddings, c_proj weights N(0, std/√(2L)), biases 0,
 * LayerNorm weight 1 / bias 0. Biases and LayerNorm parameters are not decayed. */
static int table_gpt2(const ModelConfig *c, ParamTable *t) {
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
    /* its slot padded as the llama head's: fast/ runs the head's GEMMs over the padded rows */
    if (!rc) rc = param_table_pad_rows(t, (V + PARAM_VOCAB_PAD - 1) / PARAM_VOCAB_PAD * PARAM_VOCAB_PAD);
#undef W1
#undef W2
    return rc ? -1 : 0;
}

int model_spec_build_from(const ModelConfig *c, const char *origin, ModelSpec *s) {
    memset(s, 0, sizeof *s);
    s->config = *c;
    if (config_validate(c, origin) < 0) return -1;
    if (c->n_layers > SPEC_MAX_LAYERS) return vrl_error("%s: at most %d layers", origin, SPEC_MAX_LAYERS);
    if (variant_parse(c->variant, variant_lookup, &s->variant, origin) < 0) return -1;
    int rc = value_plan_build(variant_part(&s->variant, FAMILY_VALUE), c, &s->value, origin);
    if (!rc) rc = stream_plan_build(variant_part(&s->variant, FAMILY_STREAM), c, &s->stream, origin);
    if (!rc && c->arch == ARCH_GPT2 && s->variant.n_parts)
        /* The variants are defined on the LLaMA block (RMSNorm, RoPE, SwiGLU; formulas.md §4-5). */
        rc = vrl_error("%s: variant \"%s\" is not supported with model_type gpt2 (the GPT-2 baseline is plain; "
                       "variants are defined on the llama block)", origin, c->variant);
    if (!rc) rc = c->arch == ARCH_LLAMA ? table_llama(s) : table_gpt2(c, &s->table);
    if (rc) model_spec_free(s);
    return rc ? -1 : 0;
}

int model_spec_build(const ModelConfig *c, ModelSpec *s) { return model_spec_build_from(c, config_origin(c), s); }

int model_spec_table(const ModelConfig *c, ParamTable *t) {
    ModelSpec s;
    memset(t, 0, sizeof *t);
    if (model_spec_build(c, &s) < 0) return -1;
    *t = s.table; /* moved out: the rest of the spec is freed */
    memset(&s.table, 0, sizeof s.table);
    model_spec_free(&s);
    return 0;
}

void model_spec_free(ModelSpec *s) {
    value_plan_free(&s->value);
    stream_plan_free(&s->stream);
    param_table_free(&s->table);
    free(s->layout.layer);
    stream_layout_free(&s->layout.stream);
    memset(s, 0, sizeof *s);
}

int model_spec_set_variant(ModelConfig *c, const char *text, const char *origin, ModelSpec *out) {
    if (text && snprintf(c->variant, sizeof c->variant, "%s", text) >= (int)sizeof c->variant)
        return vrl_error("%s: variant string longer than %d characters", origin, VRL_VARIANT_LEN - 1);
    ModelSpec s;
    if (model_spec_build_from(c, origin, out ? out : &s) < 0) return -1;
    if (!out) model_spec_free(&s);
    return 0;
}
