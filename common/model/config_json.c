/* config_json.c: config.json in Hugging Face form (LlamaConfig or GPT2Config keys) plus
 * vrl_ keys. Every key is known: unknown keys, wrong types and values that describe a
 * model vrl does not build (tied embeddings, biases, another activation, rope scaling)
 * are errors naming the file and key, so a config never means something we ignore. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/model/config.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"

/* ------------------------------------------------------------------ typed getters */

static int get_int(const char *path, const char *key, json_t *v, int *out) {
    if (!json_is_integer(v)) return vrl_error("%s: key \"%s\" must be an integer", path, key);
    json_int_t x = json_integer_value(v);
    if (x < -2147483647LL || x > 2147483647LL) return vrl_error("%s: key \"%s\" is out of range", path, key);
    *out = (int)x;
    return 0;
}

/* JSON does not distinguish 1e4 from 10000: any number is accepted where a float is meant. */
static int get_num(const char *path, const char *key, json_t *v, double *out) {
    if (!json_is_number(v)) return vrl_error("%s: key \"%s\" must be a number", path, key);
    *out = json_number_value(v);
    return 0;
}

static int get_bool(const char *path, const char *key, json_t *v, int *out) {
    if (!json_is_boolean(v)) return vrl_error("%s: key \"%s\" must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

static int get_str(const char *path, const char *key, json_t *v, char *out, size_t cap) {
    if (!json_is_string(v)) return vrl_error("%s: key \"%s\" must be a string", path, key);
    const char *s = json_string_value(v);
    if (strlen(s) >= cap) return vrl_error("%s: key \"%s\" is too long (%zu bytes max)", path, key, cap - 1);
    snprintf(out, cap, "%s", s);
    return 0;
}

/* Token ids: an integer, or null (HF writes null when a tokenizer has no such token): -1. */
static int get_token_id(const char *path, const char *key, json_t *v, int *out) {
    if (json_is_null(v)) {
        *out = -1;
        return 0;
    }
    if (!json_is_integer(v)) return vrl_error("%s: key \"%s\" must be an integer or null", path, key);
    if (get_int(path, key, v, out) < 0) return -1;
    return *out < 0 ? vrl_error("%s: key \"%s\" must be >= 0 (got %d)", path, key, *out) : 0;
}

static int get_bos_eos(const char *path, const char *key, json_t *v, ModelConfig *c) {
    return get_token_id(path, key, v, !strcmp(key, "bos_token_id") ? &c->bos_id : &c->eos_id);
}

static int check_string_array(const char *path, const char *key, json_t *v) {
    if (!json_is_array(v)) return vrl_error("%s: key \"%s\" must be an array of strings", path, key);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) if (!json_is_string(e)) return vrl_error("%s: key \"%s\" must be an array of strings",
                                                                          path, key);
    return 0;
}

/* ------------------------------------------------------------------ keys of every transformers config */

/* What a key of transformers' PretrainedConfig (any model type) means to vrl. */
typedef enum {
    KEY_IGNORED,      /* transformers' bookkeeping, forward()/generate() defaults, task heads:
                       * no effect on the model's outputs; any value is accepted */
    KEY_MUST_BE_FALSE /* a model vrl does not build when true (encoder-decoder, cross-attention) */
} CommonKeyUse;

/* The keys `save_pretrained` of transformers 4.44 and 5.x may write into any config beside the
 * model's own (PretrainedConfig.to_dict(); with use_diff only non-defaults, so a config names a
 * few of them). docs/huggingface.md lists them; "architectures", bos/eos and tie_word_embeddings
 * are read by the model loaders. */
static const struct {
    const char *key;
    CommonKeyUse use;
} common_keys[] = {
    {"_name_or_path", KEY_IGNORED}, /* where it was loaded from (4.x) */
    {"transformers_version", KEY_IGNORED},
    {"torch_dtype", KEY_IGNORED}, /* 4.x; the weights say their dtype in model.safetensors */
    {"dtype", KEY_IGNORED},       /* 5.x's name for torch_dtype */
    {"use_cache", KEY_IGNORED},
    {"pad_token_id", KEY_IGNORED}, /* vrl's losses never pad; HF pads and masks around it */
    {"sep_token_id", KEY_IGNORED},
    {"decoder_start_token_id", KEY_IGNORED},
    {"output_attentions", KEY_IGNORED},
    {"output_hidden_states", KEY_IGNORED},
    {"return_dict", KEY_IGNORED},
    {"torchscript", KEY_IGNORED},
    {"use_bfloat16", KEY_IGNORED},
    {"tf_legacy_loss", KEY_IGNORED},
    {"chunk_size_feed_forward", KEY_IGNORED}, /* computes the MLP in chunks: the same numbers */
    {"_attn_implementation_autoset", KEY_IGNORED},
    {"is_decoder", KEY_IGNORED},
    {"pruned_heads", KEY_IGNORED}, /* the weights' shapes say what is left: a mismatch is refused there */
    {"id2label", KEY_IGNORED}, /* classification heads, not the causal LM */
    {"label2id", KEY_IGNORED},
    {"problem_type", KEY_IGNORED},
    {"finetuning_task", KEY_IGNORED},
    {"tokenizer_class", KEY_IGNORED},
    {"prefix", KEY_IGNORED},
    {"task_specific_params", KEY_IGNORED},
    /* generate() defaults (4.x kept them in the config; `vrl generate` takes its own flags) */
    {"max_length", KEY_IGNORED},
    {"min_length", KEY_IGNORED},
    {"do_sample", KEY_IGNORED},
    {"early_stopping", KEY_IGNORED},
    {"num_beams", KEY_IGNORED},
    {"num_beam_groups", KEY_IGNORED},
    {"diversity_penalty", KEY_IGNORED},
    {"temperature", KEY_IGNORED},
    {"top_k", KEY_IGNORED},
    {"top_p", KEY_IGNORED},
    {"typical_p", KEY_IGNORED},
    {"repetition_penalty", KEY_IGNORED},
    {"length_penalty", KEY_IGNORED},
    {"no_repeat_ngram_size", KEY_IGNORED},
    {"encoder_no_repeat_ngram_size", KEY_IGNORED},
    {"bad_words_ids", KEY_IGNORED},
    {"num_return_sequences", KEY_IGNORED},
    {"output_scores", KEY_IGNORED},
    {"return_dict_in_generate", KEY_IGNORED},
    {"forced_bos_token_id", KEY_IGNORED},
    {"forced_eos_token_id", KEY_IGNORED},
    {"remove_invalid_values", KEY_IGNORED},
    {"exponential_decay_length_penalty", KEY_IGNORED},
    {"suppress_tokens", KEY_IGNORED},
    {"begin_suppress_tokens", KEY_IGNORED},
    /* another kind of model */
    {"is_encoder_decoder", KEY_MUST_BE_FALSE},
    {"add_cross_attention", KEY_MUST_BE_FALSE},
    {"tie_encoder_decoder", KEY_MUST_BE_FALSE},
};

/* 1 when `key` is one of common_keys (then *rc is 0 or -1 with vrl_error), 0 when it is not. */
static int common_key(const char *path, const char *key, json_t *v, int *rc) {
    for (size_t i = 0; i < sizeof common_keys / sizeof common_keys[0]; i++) {
        if (strcmp(key, common_keys[i].key)) continue;
        int b = 0;
        *rc = 0;
        if (common_keys[i].use == KEY_MUST_BE_FALSE && !(*rc = get_bool(path, key, v, &b)) && b)
            *rc = vrl_error("%s: %s must be false (vrl builds decoder-only models)", path, key);
        return 1;
    }
    return 0;
}

/* transformers 5's rope_parameters: {"rope_type": "default", "rope_theta": X} is vrl's RoPE
 * (theta read into *theta, *have set); any other rope_type or key is a scaled RoPE vrl does
 * not build. */
static int get_rope_parameters(const char *path, json_t *v, double *theta, int *have) {
    if (json_is_null(v)) return 0;
    if (!json_is_object(v)) return vrl_error("%s: key \"rope_parameters\" must be an object or null", path);
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e) {
        if (!strcmp(k, "rope_type")) {
            if (!json_is_string(e) || strcmp(json_string_value(e), "default"))
                return vrl_error("%s: rope_parameters.rope_type must be \"default\" (scaled RoPE is not supported)",
                                 path);
        } else if (!strcmp(k, "rope_theta")) {
            if (get_num(path, "rope_parameters.rope_theta", e, theta) < 0) return -1;
            *have = 1;
        } else
            return vrl_error("%s: rope_parameters.%s is not supported (vrl's RoPE is the default one)", path, k);
    }
    return 0;
}

/* ------------------------------------------------------------------ llama */

static int load_llama(const char *path, json_t *root, ModelConfig *c) {
    int have_hidden = 0, have_ffn = 0, have_layers = 0, have_heads = 0, have_vocab = 0, have_kv = 0;
    int head_dim = -1, have_theta = 0, have_rope_params = 0;
    double rope_theta = 0; /* rope_parameters.rope_theta */
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        int b = 0, rc = 0;
        double x = 0;
        char s[VRL_VARIANT_LEN];
        if (!strcmp(key, "model_type")) continue; /* checked by the caller */
        else if (!strcmp(key, "auto_map")) continue; /* the Python classes of non-baseline variants */
        else if (!strcmp(key, "architectures")) rc = check_string_array(path, key, v);
        else if (!strcmp(key, "hidden_size")) rc = get_int(path, key, v, &c->d_model), have_hidden = 1;
        else if (!strcmp(key, "intermediate_size")) rc = get_int(path, key, v, &c->d_ffn), have_ffn = 1;
        else if (!strcmp(key, "num_hidden_layers")) rc = get_int(path, key, v, &c->n_layers), have_layers = 1;
        else if (!strcmp(key, "num_attention_heads")) rc = get_int(path, key, v, &c->n_heads), have_heads = 1;
        else if (!strcmp(key, "num_key_value_heads")) rc = get_int(path, key, v, &c->n_kv_heads), have_kv = 1;
        else if (!strcmp(key, "vocab_size")) rc = get_int(path, key, v, &c->vocab_size), have_vocab = 1;
        else if (!strcmp(key, "max_position_embeddings")) rc = get_int(path, key, v, &c->max_seq);
        else if (!strcmp(key, "rms_norm_eps")) rc = get_num(path, key, v, &c->norm_eps);
        else if (!strcmp(key, "rope_theta")) rc = get_num(path, key, v, &c->rope_theta), have_theta = 1;
        else if (!strcmp(key, "initializer_range")) rc = get_num(path, key, v, &c->init_std);
        else if (!strcmp(key, "head_dim")) {
            rc = get_int(path, key, v, &head_dim);
            if (!rc && head_dim < 1) rc = vrl_error("%s: head_dim %d must be >= 1", path, head_dim);
        }
        else if (!strcmp(key, "hidden_act")) {
            if (!(rc = get_str(path, key, v, s, sizeof s)) && strcmp(s, "silu"))
                rc = vrl_error("%s: hidden_act \"%s\" is not supported (vrl's LLaMA uses \"silu\")", path, s);
        } else if (!strcmp(key, "tie_word_embeddings")) {
            if (!(rc = get_bool(path, key, v, &b)) && b)
                rc = vrl_error("%s: tie_word_embeddings must be false (vrl's lm_head is untied)", path);
        } else if (!strcmp(key, "attention_bias") || !strcmp(key, "mlp_bias")) {
            if (!(rc = get_bool(path, key, v, &b)) && b)
                rc = vrl_error("%s: %s must be false (vrl's LLaMA has no biases)", path, key);
        } else if (!strcmp(key, "rope_scaling")) {
            if (!json_is_null(v)) rc = vrl_error("%s: rope_scaling must be null (not supported)", path);
        } else if (!strcmp(key, "attention_dropout")) {
            if (!(rc = get_num(path, key, v, &x)) && x != 0)
                rc = vrl_error("%s: attention_dropout must be 0 (got %g)", path, x);
        } else if (!strcmp(key, "pretraining_tp")) {
            int tp;
            if (!(rc = get_int(path, key, v, &tp)) && tp != 1)
                rc = vrl_error("%s: pretraining_tp must be 1 (got %d)", path, tp);
        } else if (!strcmp(key, "rope_parameters")) rc = get_rope_parameters(path, v, &rope_theta, &have_rope_params);
        else if (!strcmp(key, "bos_token_id") || !strcmp(key, "eos_token_id")) rc = get_bos_eos(path, key, v, c);
        else if (common_key(path, key, v, &rc)) {
        } else if (!strcmp(key, "vrl_preset")) rc = get_str(path, key, v, c->preset, sizeof c->preset);
        else if (!strcmp(key, "vrl_variant")) rc = get_str(path, key, v, c->variant, sizeof c->variant);
        else rc = vrl_error("%s: unknown key \"%s\"", path, key);
        if (rc) return -1;
    }
    if (!have_hidden) return vrl_error("%s: missing key \"hidden_size\"", path);
    if (!have_ffn) return vrl_error("%s: missing key \"intermediate_size\"", path);
    if (!have_layers) return vrl_error("%s: missing key \"num_hidden_layers\"", path);
    if (!have_heads) return vrl_error("%s: missing key \"num_attention_heads\"", path);
    if (!have_vocab) return vrl_error("%s: missing key \"vocab_size\"", path);
    if (!have_kv) c->n_kv_heads = c->n_heads; /* LlamaConfig's default */
    if (have_rope_params) {
        if (have_theta && rope_theta != c->rope_theta)
            return vrl_error("%s: rope_theta %g differs from rope_parameters.rope_theta %g", path, c->rope_theta,
                             rope_theta);
        c->rope_theta = rope_theta;
    }
    if (head_dim >= 0 && (c->n_heads < 1 || (long long)head_dim * c->n_heads != c->d_model))
        return vrl_error("%s: head_dim %d must equal hidden_size / num_attention_heads", path, head_dim);
    return 0;
}

/* ------------------------------------------------------------------ gpt2 */

static int load_gpt2(const char *path, json_t *root, ModelConfig *c) {
    int have_embd = 0, have_layer = 0, have_head = 0, have_vocab = 0, n_ctx = -1;
    int inner_null = 1;
    double pdrop[3] = {0.1, 0.1, 0.1}; /* resid, embd, attn: GPT2Config's defaults */
    const char *key;
    json_t *v;
    c->max_seq = 1024;
    json_object_foreach(root, key, v) {
        int b = 0, rc = 0;
        char s[VRL_VARIANT_LEN];
        if (!strcmp(key, "model_type")) continue;
        else if (!strcmp(key, "architectures")) rc = check_string_array(path, key, v);
        else if (!strcmp(key, "n_embd")) rc = get_int(path, key, v, &c->d_model), have_embd = 1;
        else if (!strcmp(key, "n_layer")) rc = get_int(path, key, v, &c->n_layers), have_layer = 1;
        else if (!strcmp(key, "n_head")) rc = get_int(path, key, v, &c->n_heads), have_head = 1;
        else if (!strcmp(key, "vocab_size")) rc = get_int(path, key, v, &c->vocab_size), have_vocab = 1;
        else if (!strcmp(key, "n_positions")) rc = get_int(path, key, v, &c->max_seq);
        else if (!strcmp(key, "n_ctx")) rc = get_int(path, key, v, &n_ctx);
        else if (!strcmp(key, "n_inner")) {
            if (!json_is_null(v)) rc = get_int(path, key, v, &c->d_ffn), inner_null = 0;
        } else if (!strcmp(key, "layer_norm_epsilon")) rc = get_num(path, key, v, &c->norm_eps);
        else if (!strcmp(key, "initializer_range")) rc = get_num(path, key, v, &c->init_std);
        else if (!strcmp(key, "resid_pdrop")) rc = get_num(path, key, v, &pdrop[0]);
        else if (!strcmp(key, "embd_pdrop")) rc = get_num(path, key, v, &pdrop[1]);
        else if (!strcmp(key, "attn_pdrop")) rc = get_num(path, key, v, &pdrop[2]);
        else if (!strcmp(key, "activation_function")) {
            /* formulas.md §1: GELU, tanh form, which HF calls gelu_new */
            if (!(rc = get_str(path, key, v, s, sizeof s)) && strcmp(s, "gelu_new"))
                rc = vrl_error("%s: activation_function \"%s\" is not supported (vrl's GPT-2 uses \"gelu_new\")", path,
                               s);
        } else if (!strcmp(key, "tie_word_embeddings")) {
            if (!(rc = get_bool(path, key, v, &b)) && b)
                rc = vrl_error("%s: tie_word_embeddings must be false (vrl's lm_head is untied)", path);
        } else if (!strcmp(key, "scale_attn_weights")) {
            if (!(rc = get_bool(path, key, v, &b)) && !b)
                rc = vrl_error("%s: scale_attn_weights must be true", path);
        } else if (!strcmp(key, "scale_attn_by_inverse_layer_idx") || !strcmp(key, "reorder_and_upcast_attn")) {
            if (!(rc = get_bool(path, key, v, &b)) && b) rc = vrl_error("%s: %s must be false", path, key);
        } else if (!strcmp(key, "summary_type") || !strcmp(key, "summary_activation")) {
            /* summary_*: only used by GPT2DoubleHeadsModel, kept for HF compatibility */
            if (!json_is_null(v)) rc = get_str(path, key, v, s, sizeof s);
        } else if (!strcmp(key, "summary_use_proj") || !strcmp(key, "summary_proj_to_labels"))
            rc = get_bool(path, key, v, &b);
        else if (!strcmp(key, "summary_first_dropout")) {
            double x;
            rc = get_num(path, key, v, &x);
        } else if (!strcmp(key, "bos_token_id") || !strcmp(key, "eos_token_id")) rc = get_bos_eos(path, key, v, c);
        else if (common_key(path, key, v, &rc)) {
        } else if (!strcmp(key, "vrl_preset")) rc = get_str(path, key, v, c->preset, sizeof c->preset);
        else if (!strcmp(key, "vrl_variant")) rc = get_str(path, key, v, c->variant, sizeof c->variant);
        else rc = vrl_error("%s: unknown key \"%s\"", path, key);
        if (rc) return -1;
    }
    if (!have_embd) return vrl_error("%s: missing key \"n_embd\"", path);
    if (!have_layer) return vrl_error("%s: missing key \"n_layer\"", path);
    if (!have_head) return vrl_error("%s: missing key \"n_head\"", path);
    if (!have_vocab) return vrl_error("%s: missing key \"vocab_size\"", path);
    if (inner_null) { /* GPT2Config: n_inner null means 4d */
        if (c->d_model < 1 || c->d_model > CONFIG_MAX_WIDTH / 4) /* both ends: 4 * n_embd must not overflow */
            return vrl_error("%s: n_embd %d: must be 1..%d (4 * n_embd is the MLP width, at most %d)", path, c->d_model,
                             CONFIG_MAX_WIDTH / 4, CONFIG_MAX_WIDTH);
        c->d_ffn = 4 * c->d_model;
    }
    if (n_ctx >= 0 && n_ctx != c->max_seq)
        return vrl_error("%s: n_ctx %d differs from n_positions %d", path, n_ctx, c->max_seq);
    /* vrl has one dropout rate; the official runs use the same value in all three places. */
    if (pdrop[0] != pdrop[1] || pdrop[0] != pdrop[2])
        return vrl_error("%s: resid_pdrop, embd_pdrop and attn_pdrop must be equal (vrl has one dropout rate)", path);
    c->dropout = pdrop[0];
    c->n_kv_heads = c->n_heads;
    return 0;
}

/* Parse config JSON text; `path` names the origin (a file, or e.g. a fixture's metadata)
 * in every error. */
static int parse_text(const char *text, size_t n, const char *path, ModelConfig *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->preset, sizeof c->preset, "custom");
    snprintf(c->variant, sizeof c->variant, "baseline");
    /* LlamaConfig defaults for what a file may leave out */
    c->max_seq = 2048;
    c->norm_eps = 1e-6;
    c->rope_theta = 10000.0;
    c->init_std = 0.02;

    json_error_t err;
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &err);
    if (!root) return vrl_error("%s:%d: %s", path, err.line, err.text);
    int rc = -1;
    json_t *mt = json_object_get(root, "model_type");
    if (!json_is_object(root)) vrl_error("%s: the top level must be a JSON object", path);
    else if (!mt) vrl_error("%s: missing key \"model_type\"", path);
    else if (!json_is_string(mt)) vrl_error("%s: key \"model_type\" must be a string", path);
    else if (!strcmp(json_string_value(mt), "llama") || !strcmp(json_string_value(mt), "vrl")) {
        c->arch = ARCH_LLAMA;
        rc = load_llama(path, root, c);
    } else if (!strcmp(json_string_value(mt), "gpt2")) {
        c->arch = ARCH_GPT2;
        c->norm_eps = 1e-5; /* GPT2Config's default */
        rc = load_gpt2(path, root, c);
    } else vrl_error("%s: model_type \"%s\" is not supported (llama, vrl or gpt2)", path, json_string_value(mt));
    json_decref(root);
    if (rc < 0) return -1;
    return config_validate(c, path);
}

int config_parse_json(const char *text, ModelConfig *c, const char *origin) {
    return parse_text(text, strlen(text), origin, c);
}

int config_load_json(const char *path, ModelConfig *c) {
    void *text;
    size_t n;
    if (read_file_all(path, &text, &n) < 0) return -1;
    int rc = parse_text(text, n, path, c);
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ writing */

/* Shortest %.Ng that reads back as the same double, but at least 6 digits so round
 * numbers print as "10000.0" rather than "1e+04". */
static int digits_needed(double x) {
    char buf[64];
    for (int p = 6; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return p;
    }
    return 17;
}

static int set(json_t *o, const char *key, json_t *v) { return v ? json_object_set_new(o, key, v) : -1; }

int config_save_json(const char *path, const ModelConfig *c) { return config_save_json_dtype(path, c, "float32"); }

int config_save_json_dtype(const char *path, const ModelConfig *c, const char *torch_dtype) {
    if (config_validate(c, path) < 0) return -1;
    json_t *o = json_object();
    if (!o) return vrl_error("%s: out of memory", path);
    int rc = 0, prec = 6;
    double reals[4] = {c->norm_eps, c->rope_theta, c->init_std, c->dropout};
    for (int i = 0; i < 4; i++) {
        int p = digits_needed(reals[i]);
        if (p > prec) prec = p;
    }
    json_t *arch = json_array();
    if (c->arch == ARCH_LLAMA) {
        /* Every variant but the baseline is another model: model_type "vrl" makes a plain
         * LlamaForCausalLM warn, and auto_map names the classes the run folder carries
         * (common/run/hf_export.c, python/vrl_hf/) for trust_remote_code=True. */
        const int plain = !strcmp(c->variant, "baseline");
        rc |= json_array_append_new(arch, json_string(plain ? "LlamaForCausalLM" : "VrlForCausalLM"));
        rc |= set(o, "architectures", arch);
        rc |= set(o, "model_type", json_string(plain ? "llama" : "vrl"));
        if (!plain)
            rc |= set(o, "auto_map", json_pack("{s:s, s:s}", "AutoConfig", "configuration_vrl.VrlConfig",
                                               "AutoModelForCausalLM", "modeling_vrl.VrlForCausalLM"));
        rc |= set(o, "hidden_size", json_integer(c->d_model));
        rc |= set(o, "intermediate_size", json_integer(c->d_ffn));
        rc |= set(o, "num_hidden_layers", json_integer(c->n_layers));
        rc |= set(o, "num_attention_heads", json_integer(c->n_heads));
        rc |= set(o, "num_key_value_heads", json_integer(c->n_kv_heads));
        rc |= set(o, "head_dim", json_integer(config_head_dim(c)));
        rc |= set(o, "vocab_size", json_integer(c->vocab_size));
        rc |= set(o, "max_position_embeddings", json_integer(c->max_seq));
        rc |= set(o, "rms_norm_eps", json_real(c->norm_eps));
        rc |= set(o, "rope_theta", json_real(c->rope_theta));
        rc |= set(o, "rope_scaling", json_null());
        rc |= set(o, "initializer_range", json_real(c->init_std));
        rc |= set(o, "hidden_act", json_string("silu"));
        rc |= set(o, "tie_word_embeddings", json_false());
        rc |= set(o, "attention_bias", json_false());
        rc |= set(o, "mlp_bias", json_false());
        rc |= set(o, "attention_dropout", json_real(0.0));
        rc |= set(o, "pretraining_tp", json_integer(1));
    } else {
        rc |= json_array_append_new(arch, json_string("GPT2LMHeadModel"));
        rc |= set(o, "architectures", arch);
        rc |= set(o, "model_type", json_string("gpt2"));
        rc |= set(o, "n_embd", json_integer(c->d_model));
        rc |= set(o, "n_inner", json_integer(c->d_ffn));
        rc |= set(o, "n_layer", json_integer(c->n_layers));
        rc |= set(o, "n_head", json_integer(c->n_heads));
        rc |= set(o, "vocab_size", json_integer(c->vocab_size));
        rc |= set(o, "n_positions", json_integer(c->max_seq));
        rc |= set(o, "n_ctx", json_integer(c->max_seq));
        rc |= set(o, "layer_norm_epsilon", json_real(c->norm_eps));
        rc |= set(o, "initializer_range", json_real(c->init_std));
        rc |= set(o, "activation_function", json_string("gelu_new"));
        rc |= set(o, "resid_pdrop", json_real(c->dropout));
        rc |= set(o, "embd_pdrop", json_real(c->dropout));
        rc |= set(o, "attn_pdrop", json_real(c->dropout));
        rc |= set(o, "scale_attn_weights", json_true());
        rc |= set(o, "tie_word_embeddings", json_false());
    }
    /* the training tokenizer's end token (GPT-2: 50256), which generate() stops at */
    rc |= set(o, "bos_token_id", c->bos_id < 0 ? json_null() : json_integer(c->bos_id));
    rc |= set(o, "eos_token_id", c->eos_id < 0 ? json_null() : json_integer(c->eos_id));
    rc |= set(o, "torch_dtype", json_string(torch_dtype));
    rc |= set(o, "transformers_version", json_string("4.44.0")); /* the version formulas.md [C] matches */
    rc |= set(o, "use_cache", json_true());
    rc |= set(o, "vrl_preset", json_string(c->preset));
    rc |= set(o, "vrl_variant", json_string(c->variant));
    char *text = rc ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(prec));
    json_decref(o);
    if (!text) return vrl_error("%s: out of memory building JSON", path);
    size_t len = strlen(text);
    const void *parts[2] = {text, "\n"};
    size_t sizes[2] = {len, 1};
    rc = write_file_atomic_parts(path, parts, sizes, 2);
    free(text);
    return rc;
}
