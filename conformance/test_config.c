/* test_config.c: presets, the parameter count, config.json round trips and every
 * rejection a user can hit, each checked by the fragment of its message. */
#include <jansson.h>

#include "common/model/spec.h"
#include "common/model/config.h"
#include "common/model/params.h"
#include "conformance/test_util.h"

Test(config, presets_validate) {
    char names[256];
    snprintf(names, sizeof names, "%s", config_preset_names());
    int n = 0;
    for (char *save, *p = strtok_r(names, " ", &save); p; p = strtok_r(NULL, " ", &save), n++) {
        ModelConfig c;
        cr_assert_eq(config_preset(p, &c), 0, "%s", vrl_last_error());
        cr_assert_eq(config_validate(&c, p), 0, "preset %s: %s", p, vrl_last_error());
        cr_assert_str_eq(c.preset, p);
    }
    cr_assert_eq(n, 9);
    ModelConfig c;
    expect_error(config_preset("83M", &c), "unknown model preset \"83M\"");
}

/* Count = 2·V·d (embedding, untied head) + L·(4d² + 3·d·ffn + 2d) + d (final norm). */
static size_t count(const char *preset) {
    ModelConfig c;
    ParamTable t;
    cr_assert_eq(config_preset(preset, &c), 0);
    cr_assert_eq(model_spec_table(&c, &t), 0, "%s", vrl_last_error());
    size_t n = param_table_count(&t);
    param_table_free(&t);
    return n;
}

Test(config, parameter_counts) {
    /* 82M: 2·50277·512 = 51,483,648; 8·(4·512² + 3·512·1792 + 1024) = 30,416,896; + 512 */
    cr_assert_eq(count("82M"), 81901056);
    /* 2M: 2·50277·16 = 1,608,864; 4·(4·16² + 3·16·56 + 32) = 14,976; + 16 */
    cr_assert_eq(count("2M"), 1623856);
    /* 8M: 2·50277·256 = 25,741,824; 8·(4·256² + 3·256·896 + 512) = 7,606,272; + 256 */
    cr_assert_eq(count("8M"), 33348352);
    /* 20M: 2·50277·384 = 38,612,736; 10·(4·384² + 3·384·1344 + 768) = 21,388,800; + 384 */
    cr_assert_eq(count("20M"), 60001920);
}

static void expect_same(const ModelConfig *a, const ModelConfig *b) {
    cr_assert_str_eq(a->preset, b->preset);
    cr_assert_eq(a->arch, b->arch);
    cr_assert_eq(a->n_layers, b->n_layers);
    cr_assert_eq(a->n_heads, b->n_heads);
    cr_assert_eq(a->n_kv_heads, b->n_kv_heads);
    cr_assert_eq(a->d_model, b->d_model);
    cr_assert_eq(a->d_ffn, b->d_ffn);
    cr_assert_eq(a->vocab_size, b->vocab_size);
    cr_assert_eq(a->max_seq, b->max_seq);
    /* doubles must come back bit for bit */
    cr_assert_eq(memcmp(&a->norm_eps, &b->norm_eps, sizeof(double)), 0, "%.17g vs %.17g", a->norm_eps, b->norm_eps);
    cr_assert_eq(memcmp(&a->rope_theta, &b->rope_theta, sizeof(double)), 0);
    cr_assert_eq(memcmp(&a->init_std, &b->init_std, sizeof(double)), 0);
    cr_assert_eq(memcmp(&a->dropout, &b->dropout, sizeof(double)), 0);
    cr_assert_str_eq(a->variant, b->variant);
}

Test(config, json_round_trip) {
    const char *dir = test_tmpdir(), *path = test_path(dir, "config.json");
    const char *presets[] = {"tiny", "small", "2M", "82M", "180M", "468M", "1.6B"};
    for (int i = 0; i < 7; i++) {
        ModelConfig a, b;
        cr_assert_eq(config_preset(presets[i], &a), 0);
        cr_assert_eq(config_save_json(path, &a), 0, "%s", vrl_last_error());
        cr_assert_eq(config_load_json(path, &b), 0, "%s", vrl_last_error());
        expect_same(&a, &b);
    }
    /* Awkward values: a GQA shape, doubles that need all 17 digits, a variant string. */
    ModelConfig a, b;
    cr_assert_eq(config_preset("small", &a), 0);
    snprintf(a.preset, sizeof a.preset, "custom");
    a.n_kv_heads = 2;
    a.norm_eps = 1.0 / 3.0 * 1e-5;
    a.rope_theta = 500000.0;
    a.init_std = 0.1 + 0.2;
    snprintf(a.variant, sizeof a.variant, "dense:init=identity,lambda=2");
    cr_assert_eq(config_save_json(path, &a), 0, "%s", vrl_last_error());
    cr_assert_eq(config_load_json(path, &b), 0, "%s", vrl_last_error());
    expect_same(&a, &b);
    cr_assert_eq(test_count_files(dir, ".tmp."), 0, "temp file left behind");
}

Test(config, gpt2_round_trip) {
    const char *path = test_path(test_tmpdir(), "config.json");
    ModelConfig a, b;
    cr_assert_eq(config_preset("small", &a), 0);
    a.arch = ARCH_GPT2;
    a.d_ffn = 4 * a.d_model;
    a.dropout = 0.1;
    cr_assert_eq(config_save_json(path, &a), 0, "%s", vrl_last_error());
    cr_assert_eq(config_load_json(path, &b), 0, "%s", vrl_last_error());
    a.rope_theta = b.rope_theta; /* not part of GPT-2's config */
    expect_same(&a, &b);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "model_type")), "gpt2");
    cr_assert_eq(json_integer_value(json_object_get(j, "n_embd")), 128);
    cr_assert_str_eq(json_string_value(json_object_get(j, "activation_function")), "gelu_new");
    json_decref(j);
}

Test(config, hf_keys_written) {
    const char *path = test_path(test_tmpdir(), "config.json");
    ModelConfig a;
    cr_assert_eq(config_preset("82M", &a), 0);
    cr_assert_eq(config_save_json(path, &a), 0);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert_not_null(j);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "architectures"), 0)), "LlamaForCausalLM");
    cr_assert_str_eq(json_string_value(json_object_get(j, "model_type")), "llama");
    cr_assert_eq(json_integer_value(json_object_get(j, "hidden_size")), 512);
    cr_assert_eq(json_integer_value(json_object_get(j, "intermediate_size")), 1792);
    cr_assert_eq(json_integer_value(json_object_get(j, "num_hidden_layers")), 8);
    cr_assert_eq(json_integer_value(json_object_get(j, "num_attention_heads")), 8);
    cr_assert_eq(json_integer_value(json_object_get(j, "num_key_value_heads")), 8);
    cr_assert_eq(json_integer_value(json_object_get(j, "vocab_size")), 50277);
    cr_assert_eq(json_real_value(json_object_get(j, "rms_norm_eps")), 1e-5);
    cr_assert_eq(json_real_value(json_object_get(j, "rope_theta")), 10000.0);
    cr_assert(json_is_false(json_object_get(j, "tie_word_embeddings")));
    cr_assert_str_eq(json_string_value(json_object_get(j, "hidden_act")), "silu");
    cr_assert_eq(json_integer_value(json_object_get(j, "eos_token_id")), 0);
    cr_assert(json_is_null(json_object_get(j, "rope_scaling")));
    json_decref(j);
    /* human-readable numbers: shortest exact form, not 1.0000000000000001e-05 (jansson drops exponent zeros) */
    size_t n;
    char *text = (char *)test_read(path, &n);
    text[n] = 0;
    cr_assert(strstr(text, "\"rms_norm_eps\": 1e-5,"), "%s", text);
    cr_assert(strstr(text, "\"rope_theta\": 10000.0"), "%s", text);
    free(text);
}

/* A minimal valid llama config with `extra` spliced in before the closing brace. */
static const char *write_cfg(const char *dir, const char *extra) {
    static char text[2048];
    snprintf(text, sizeof text,
             "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 16,\n  \"intermediate_size\": 56,\n"
             "  \"num_hidden_layers\": 2,\n  \"num_attention_heads\": 2,\n  \"vocab_size\": 64%s\n}\n",
             extra);
    const char *path = test_path(dir, "config.json");
    test_write(path, text, strlen(text));
    return path;
}

Test(config, minimal_file_loads) {
    ModelConfig c;
    const char *path = write_cfg(test_tmpdir(), "");
    cr_assert_eq(config_load_json(path, &c), 0, "%s", vrl_last_error());
    cr_assert_eq(c.n_kv_heads, 2, "num_key_value_heads defaults to the head count");
    cr_assert_str_eq(c.variant, "baseline");
}

/* bos/eos_token_id: read, written back, null = none (-1), 0 when absent (formulas.md §3), and an id
 * past the vocabulary or negative is an error naming the file */
Test(config, end_token_ids) {
    const char *dir = test_tmpdir();
    ModelConfig c, d;
    cr_assert_eq(config_load_json(write_cfg(dir, ""), &c), 0, "%s", vrl_last_error());
    cr_assert(c.bos_id == 0 && c.eos_id == 0, "absent: %d %d", c.bos_id, c.eos_id);
    cr_assert_eq(config_load_json(write_cfg(dir, ",\n  \"bos_token_id\": null,\n  \"eos_token_id\": 63"), &c), 0,
                 "%s", vrl_last_error());
    cr_assert(c.bos_id == -1 && c.eos_id == 63, "%d %d", c.bos_id, c.eos_id);
    const char *path = test_path(dir, "out.json");
    cr_assert_eq(config_save_json(path, &c), 0, "%s", vrl_last_error());
    cr_assert_eq(config_load_json(path, &d), 0, "%s", vrl_last_error());
    cr_assert(d.bos_id == -1 && d.eos_id == 63, "round trip: %d %d", d.bos_id, d.eos_id);
    json_t *j = json_load_file(path, 0, NULL);
    cr_assert(json_is_null(json_object_get(j, "bos_token_id")));
    cr_assert_eq(json_integer_value(json_object_get(j, "eos_token_id")), 63);
    json_decref(j);
    expect_error(config_load_json(write_cfg(dir, ",\n  \"eos_token_id\": 64"), &c),
                 "bos_token_id 0 / eos_token_id 64 must lie below vocab_size 64");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"bos_token_id\": -2"), &c), "\"bos_token_id\" must be >= 0");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"eos_token_id\": [1, 2]"), &c),
                 "\"eos_token_id\" must be an integer or null");
}

/* What transformers' save_pretrained adds (issue 50, docs/huggingface.md): 4.44's _name_or_path and
 * torch_dtype, 5.x's dtype, pad_token_id and rope_parameters (its rope_theta is used), generate()
 * defaults: all load; a scaled RoPE, an encoder-decoder or two different thetas do not. */
Test(config, transformers_save_pretrained_keys) {
    const char *dir = test_tmpdir();
    ModelConfig c;
    cr_assert_eq(config_load_json(write_cfg(dir, ",\n  \"_name_or_path\": \"runs/a\", \"torch_dtype\": \"float64\","
                                                 " \"transformers_version\": \"4.44.0\", \"rope_scaling\": null,"
                                                 " \"rope_theta\": 500.0, \"use_cache\": true, \"max_length\": 20"),
                                  &c),
                 0, "%s", vrl_last_error());
    cr_assert_float_eq(c.rope_theta, 500.0, 0);
    cr_assert_eq(config_load_json(write_cfg(dir, ",\n  \"dtype\": \"float32\", \"pad_token_id\": null,"
                                                 " \"rope_parameters\": {\"rope_theta\": 250.0, \"rope_type\": \"default\"},"
                                                 " \"transformers_version\": \"5.23.0\", \"output_hidden_states\": false,"
                                                 " \"is_encoder_decoder\": false, \"add_cross_attention\": false"),
                                  &c),
                 0, "%s", vrl_last_error());
    cr_assert_float_eq(c.rope_theta, 250.0, 0, "rope_parameters.rope_theta is the theta");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_parameters\": {\"rope_theta\": 1e4, \"rope_type\": \"linear\","
                                                 " \"factor\": 2.0}"),
                                  &c),
                 "rope_parameters.rope_type must be \"default\"");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_parameters\": {\"rope_theta\": 1e4, \"factor\": 2.0}"), &c),
                 "rope_parameters.factor is not supported");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_theta\": 1e4, \"rope_parameters\": {\"rope_theta\": 5e5}"),
                                  &c),
                 "rope_theta 10000 differs from rope_parameters.rope_theta 500000");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"is_encoder_decoder\": true"), &c),
                 "is_encoder_decoder must be false");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"add_cross_attention\": 1"), &c),
                 "key \"add_cross_attention\" must be true or false");
    /* GPT-2 as transformers 5.23 saves GPT2LMHeadModel (its keys beside the model's own) */
    const char *gpt2 = "{\"activation_function\": \"gelu_new\", \"add_cross_attention\": false, \"architectures\": "
                       "[\"GPT2LMHeadModel\"], \"attn_pdrop\": 0.1, \"bos_token_id\": 50, \"dtype\": \"float32\", "
                       "\"embd_pdrop\": 0.1, \"eos_token_id\": 50, \"initializer_range\": 0.02, \"layer_norm_epsilon\": 1e-05, "
                       "\"model_type\": \"gpt2\", \"n_embd\": 32, \"n_head\": 4, \"n_inner\": 128, \"n_layer\": 2, "
                       "\"n_positions\": 64, \"pad_token_id\": null, \"reorder_and_upcast_attn\": false, \"resid_pdrop\": 0.1, "
                       "\"scale_attn_by_inverse_layer_idx\": false, \"scale_attn_weights\": true, \"summary_activation\": "
                       "null, \"summary_first_dropout\": 0.1, \"summary_proj_to_labels\": true, \"summary_type\": "
                       "\"cls_index\", \"summary_use_proj\": true, \"tie_word_embeddings\": false, "
                       "\"transformers_version\": \"5.23.0\", \"use_cache\": true, \"vocab_size\": 256}";
    const char *p = test_path(dir, "gpt2.json");
    test_write(p, gpt2, strlen(gpt2));
    cr_assert_eq(config_load_json(p, &c), 0, "%s", vrl_last_error());
    cr_assert(c.arch == ARCH_GPT2 && c.d_model == 32 && c.eos_id == 50);
}

Test(config, rejects) {
    const char *dir = test_tmpdir();
    ModelConfig c;
    char want[512];
    const char *p = write_cfg(dir, ",\n  \"num_attention_heads\": 3");
    /* duplicate keys are rejected by the parser too; use a fresh file for divisibility */
    expect_error(config_load_json(p, &c), "duplicate");
    const char *bad = "{\"model_type\":\"llama\",\"hidden_size\":16,\"intermediate_size\":56,"
                      "\"num_hidden_layers\":2,\"num_attention_heads\":3,\"vocab_size\":64}";
    test_write(p, bad, strlen(bad));
    expect_error(config_load_json(p, &c), "hidden_size 16 is not divisible by num_attention_heads 3");
    snprintf(want, sizeof want, "%s: unknown key \"hiden_size\"", p);
    expect_error(config_load_json(write_cfg(dir, ",\n  \"hiden_size\": 16"), &c), want);
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_theta\": \"big\""), &c),
                 "key \"rope_theta\" must be a number");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"max_position_embeddings\": 2048.5"), &c),
                 "key \"max_position_embeddings\" must be an integer");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"tie_word_embeddings\": true"), &c),
                 "tie_word_embeddings must be false");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"hidden_act\": \"gelu\""), &c), "hidden_act \"gelu\"");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"attention_bias\": true"), &c), "attention_bias must be false");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_scaling\": {\"type\": \"linear\"}"), &c),
                 "rope_scaling must be null");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"head_dim\": 4"), &c), "head_dim 4");
    /* truncated JSON: the error is FILE:LINE: message, line 3 where the text stops */
    const char *trunc = "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 16,";
    test_write(p, trunc, strlen(trunc));
    snprintf(want, sizeof want, "%s:3: ", p);
    expect_error(config_load_json(p, &c), want);
    snprintf(want, sizeof want, "%s: cannot open", test_path(dir, "nope.json"));
    expect_error(config_load_json(test_path(dir, "nope.json"), &c), want);
    test_write(p, "[1, 2]", 6);
    expect_error(config_load_json(p, &c), "must be a JSON object");
    test_write(p, "{\"model_type\": \"bert\"}", 22);
    expect_error(config_load_json(p, &c), "model_type \"bert\"");
}

/* Found by fuzzing and adversarial input (issue 13): each was accepted or crashed. */
Test(config, rejects_out_of_range_values) {
    const char *dir = test_tmpdir();
    ModelConfig c;
    expect_error(config_load_json(write_cfg(dir, ",\n  \"head_dim\": -1"), &c), "head_dim -1 must be >= 1");
    /* 2147483647 heads x head_dim 8 overflowed int (UBSan); now compared in 64 bits */
    const char *big = "{\"model_type\":\"llama\",\"hidden_size\":16,\"intermediate_size\":56,\"num_hidden_layers\":2,"
                      "\"num_attention_heads\":2147483647,\"head_dim\":8,\"vocab_size\":64}";
    const char *p = test_path(dir, "big.json");
    test_write(p, big, strlen(big));
    expect_error(config_load_json(p, &c), "head_dim 8 must equal hidden_size / num_attention_heads");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"initializer_range\": 1e30"), &c),
                 "initializer_range 1e+30 must be in (0, 1]");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rms_norm_eps\": 5"), &c), "rms_norm_eps 5 must be in (0, 1)");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_theta\": 0.5"), &c), "rope_theta 0.5 must be in (1, 1e12]");
    expect_error(config_load_json(write_cfg(dir, ",\n  \"rope_theta\": 1e300"), &c), "rope_theta 1e+300 must be in");
}
