/* test_configs.h: the model configs several tests build on (header only: it needs nothing but
 * common/model/config.h, so precision-agnostic tests such as test_resume.c can use it too). */
#ifndef VRL_TEST_CONFIGS_H
#define VRL_TEST_CONFIGS_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "common/model/config.h"

/* The "tiny" preset with n_layers layers, weights std 0.3 (so every nonlinearity works away
 * from its linear regime) and the variant string. */
static inline void test_config_tiny(ModelConfig *c, int n_layers, const char *variant) {
    cr_assert_eq(config_preset("tiny", c), 0);
    c->n_layers = n_layers;
    c->init_std = 0.3;
    snprintf(c->variant, sizeof c->variant, "%s", variant);
}

/* The value-path tests' model: L = 4 (so layers 2..4 read earlier layers), d = 16, 4 query
 * heads on n_kv kv heads (head dim 4), ffn 32, vocab 64. */
static inline ModelConfig test_config_value_path(int n_kv, const char *variant) {
    ModelConfig c;
    test_config_tiny(&c, 4, variant);
    c.n_heads = 4;
    c.n_kv_heads = n_kv;
    c.d_model = 16;
    c.d_ffn = 32;
    return c;
}

/* c's shape as the GPT-2 baseline: ffn 4·d (GPT2Config's n_inner = null) and the dropout rate. */
static inline void test_config_gpt2(ModelConfig *c, double dropout) {
    c->arch = ARCH_GPT2;
    c->d_ffn = 4 * c->d_model;
    c->dropout = dropout;
}

#endif
