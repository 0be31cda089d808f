/* kv_layout.c: cache rows per token from the value plan (kv_layout.h). */
#include "common/model/kv_layout.h"

#include "common/model/value_path.h"

int kv_layout(const ModelConfig *c, KvLayout *out) {
    const size_t row = (size_t)c->n_kv_heads * config_head_dim(c);
    out->row_elems = row;
    if (c->arch == ARCH_GPT2) {
        out->k_rows = out->v_rows = c->n_layers;
    } else {
        ValuePlan p;
        if (value_plan_build(c, &p, c->preset[0] ? c->preset : "config") < 0) return -1;
        out->k_rows = out->v_rows = 0;
        for (int l = 0; l < p.L; l++) {
            out->k_rows += p.has_k[l];
            out->v_rows += p.has_v[l];
        }
        value_plan_free(&p);
    }
    out->elems_per_token = (size_t)(out->k_rows + out->v_rows) * row;
    return 0;
}
