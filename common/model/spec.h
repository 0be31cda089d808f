/* spec.h: the model a run trains, decided once and handed down.
 *
 * A ModelSpec holds the config, its variant string parsed (variant.h), the two plans the
 * variant becomes (ValuePlan, value_path.h; StreamPlan, stream.h) and the parameter table
 * (params.h) built from them. model_spec_build is the only place that parses a variant or
 * builds a plan: backends (Backend.create), the trainer, the checkpoint code and the CLI
 * all read the same immutable spec, so no two of them can disagree about the model.
 *
 * The table lists, in this order (flat-buffer order, the checkpoint's tensor order):
 *   llama: embed_tokens; per layer input_layernorm, the attention tensors the value plan
 *          keeps (value_plan_add_params), post_attention_layernorm, gate/up/down_proj;
 *          norm, lm_head; then the residual-stream plan's mixing tensors (stream_add_params).
 *   gpt2:  transformers' GPT2LMHeadModel names (no variants).
 * As the llama table is built its slots are recorded in `layout` (layout.h): ref/ and fast/
 * read offsets from it and never spell a tensor name. */
#ifndef VRL_SPEC_H
#define VRL_SPEC_H

#include "common/model/config.h"
#include "common/model/layout.h"
#include "common/model/params.h"
#include "common/model/stream.h"
#include "common/model/value_path.h"
#include "common/model/variant.h"

typedef struct {
    ModelConfig config;
    VariantSpec variant; /* config.variant parsed; options marked used by the plans */
    ValuePlan value;     /* the attention sublayer's tables (the identity for gpt2) */
    StreamPlan stream;   /* the residual stream between sublayers (PLAIN for gpt2) */
    ParamTable table;
    ModelLayout layout;  /* llama: each tensor's slot in the table, so models bind by offset */
} ModelSpec;

/* Validate c and build everything from it; errors name config_origin(c). On failure the
 * spec is left empty (model_spec_free is still safe). */
int model_spec_build(const ModelConfig *c, ModelSpec *s);
/* The same, with errors naming `origin` (a config file, "--variant"). */
int model_spec_build_from(const ModelConfig *c, const char *origin, ModelSpec *s);
void model_spec_free(ModelSpec *s);

/* Only the parameter table of c (the caller frees it with param_table_free), for code that
 * reads or writes tensors without running a model (checkpoint tests, `vrl info`-like tools). */
int model_spec_table(const ModelConfig *c, ParamTable *t);

/* Set c->variant to text (NULL: keep it) and check that the whole model builds with it;
 * errors name origin ("--variant" or the config file). The spec built goes to *out, or is
 * dropped when out is NULL (a check only). */
int model_spec_set_variant(ModelConfig *c, const char *text, const char *origin, ModelSpec *out);

#endif
