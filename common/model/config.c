/* config.c: presets (formulas.md §1) and shape validation. JSON I/O is config_json.c. */
#include "common/model/config.h"

#include <stdio.h>
#include <string.h>

#include "common/base/error.h"

typedef struct {
    const char *name;
    int L, heads, d, ffn, vocab, max_seq;
} Preset;

/* The paper's presets use the GPT-NeoX vocabulary (50277 ids) and SwiGLU width 3.5d.
 * "tiny" (tests) and "small" (the default `vrl train` on the synthetic corpus) are ours, and
 * so are "8M" and "20M": real-text models for a CPU, named like the paper's presets by their
 * non-embedding parameters (7.6M and 21.4M; 33M and 60M with the untied embedding and head),
 * head dim 64 as in 82M. */
static const Preset presets[] = {
    {"tiny", 2, 2, 16, 56, 64, 64},
    {"small", 4, 4, 128, 448, 512, 256},
    {"2M", 4, 2, 16, 56, 50277, 2048},
    {"8M", 8, 4, 256, 896, 50277, 2048},
    {"20M", 10, 6, 384, 1344, 50277, 2048},
    {"82M", 8, 8, 512, 1792, 50277, 2048},
    {"180M", 12, 12, 768, 2688, 50277, 2048},
    {"468M", 24, 16, 1024, 3584, 50277, 2048},
    {"1.6B", 24, 16, 2048, 7168, 50277, 2048},
};

const char *config_preset_names(void) { return "tiny small 2M 8M 20M 82M 180M 468M 1.6B"; }

int config_preset(const char *name, ModelConfig *c) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const Preset *p = &presets[i];
        if (strcmp(p->name, name)) continue;
        memset(c, 0, sizeof *c);
        snprintf(c->preset, sizeof c->preset, "%s", p->name);
        c->arch = ARCH_LLAMA;
        c->n_layers = p->L;
        c->n_heads = p->heads;
        c->n_kv_heads = p->heads;
        c->d_model = p->d;
        c->d_ffn = p->ffn;
        c->vocab_size = p->vocab;
        c->max_seq = p->max_seq;
        c->norm_eps = 1e-5;
        c->rope_theta = 10000.0;
        c->init_std = 0.02;
        c->dropout = 0.0;
        snprintf(c->variant, sizeof c->variant, "baseline");
        return 0;
    }
    return vrl_error("unknown model preset \"%s\" (presets: %s)", name, config_preset_names());
}

int config_validate(const ModelConfig *c, const char *origin) {
    if (c->n_layers < 1) return vrl_error("%s: num_hidden_layers must be >= 1 (got %d)", origin, c->n_layers);
    if (c->n_heads < 1) return vrl_error("%s: num_attention_heads must be >= 1 (got %d)", origin, c->n_heads);
    if (c->d_model < 1) return vrl_error("%s: hidden_size must be >= 1 (got %d)", origin, c->d_model);
    if (c->d_ffn < 1) return vrl_error("%s: intermediate_size must be >= 1 (got %d)", origin, c->d_ffn);
    if (c->vocab_size < 2) return vrl_error("%s: vocab_size must be >= 2 (got %d)", origin, c->vocab_size);
    if (c->max_seq < 2) return vrl_error("%s: max_position_embeddings must be >= 2 (got %d)", origin, c->max_seq);
    if (c->d_model > CONFIG_MAX_WIDTH || c->d_ffn > CONFIG_MAX_WIDTH)
        return vrl_error("%s: hidden_size %d / intermediate_size %d: at most %d", origin, c->d_model, c->d_ffn,
                         CONFIG_MAX_WIDTH);
    if (c->n_layers > CONFIG_MAX_LAYERS)
        return vrl_error("%s: num_hidden_layers %d: at most %d", origin, c->n_layers, CONFIG_MAX_LAYERS);
    if (c->max_seq > CONFIG_MAX_POSITIONS)
        return vrl_error("%s: max_position_embeddings %d: at most %d", origin, c->max_seq, CONFIG_MAX_POSITIONS);
    if (c->d_model % c->n_heads)
        return vrl_error("%s: hidden_size %d is not divisible by num_attention_heads %d", origin, c->d_model,
                         c->n_heads);
    if (c->n_kv_heads < 1 || c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads)
        return vrl_error("%s: num_key_value_heads %d must divide num_attention_heads %d", origin, c->n_kv_heads,
                         c->n_heads);
    if (c->arch == ARCH_LLAMA && config_head_dim(c) % 2)
        return vrl_error("%s: head dim %d must be even for RoPE's half-split rotation", origin, config_head_dim(c));
    /* Beyond these bounds a value is a typo, not a choice: eps swamps the activations,
     * theta gives no rotation (<= 1) or no resolution, the init saturates every layer. */
    if (!(c->norm_eps > 0 && c->norm_eps < 1))
        return vrl_error("%s: rms_norm_eps %g must be in (0, 1)", origin, c->norm_eps);
    if (c->arch == ARCH_LLAMA && !(c->rope_theta > 1 && c->rope_theta <= 1e12))
        return vrl_error("%s: rope_theta %g must be in (1, 1e12]", origin, c->rope_theta);
    if (!(c->init_std > 0 && c->init_std <= 1))
        return vrl_error("%s: initializer_range %g must be in (0, 1]", origin, c->init_std);
    if (!(c->dropout >= 0 && c->dropout < 1)) return vrl_error("%s: dropout must be in [0, 1)", origin);
    if (c->bos_id >= c->vocab_size || c->eos_id >= c->vocab_size)
        return vrl_error("%s: bos_token_id %d / eos_token_id %d must lie below vocab_size %d", origin, c->bos_id,
                         c->eos_id, c->vocab_size);
    return 0;
}

int config_from_arg(const char *arg, ModelConfig *c) {
    if (strchr(arg, '/') || strstr(arg, ".json")) return config_load_json(arg, c);
    return config_preset(arg, c);
}

int config_same_shape(const ModelConfig *a, const ModelConfig *b) {
    return a->arch == b->arch && a->n_layers == b->n_layers && a->n_heads == b->n_heads &&
           a->n_kv_heads == b->n_kv_heads && a->d_model == b->d_model && a->d_ffn == b->d_ffn &&
           a->vocab_size == b->vocab_size && a->max_seq == b->max_seq && a->norm_eps == b->norm_eps &&
           a->rope_theta == b->rope_theta && a->init_std == b->init_std && a->dropout == b->dropout;
}
