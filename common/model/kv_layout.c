/* kv_layout.c: cache rows per token from the value plan (kv_layout.h). */
#include "common/model/kv_layout.h"

void kv_layout(const ModelSpec *s, KvLayout *out) {
    const ModelConfig *c = &s->config;
    out->row_elems = (size_t)c->n_kv_heads * config_head_dim(c);
    out->k_rows = out->v_rows = 0;
    for (int l = 0; l < c->n_layers; l++) {
        const int gpt2 = c->arch == ARCH_GPT2; /* no variants: every layer's K and V */
        out->k_rows += gpt2 || s->value.has_k[l];
        out->v_rows += gpt2 || s->value.has_v[l];
    }
    out->elems_per_token = (size_t)(out->k_rows + out->v_rows) * out->row_elems;
}
