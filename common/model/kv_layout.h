/* kv_layout.h: what an incremental decoder keeps per token, per variant (no arithmetic).
 *
 * Attention at a new position needs, for every earlier position, the keys and values that some
 * layer reads. The value path (value_path.h) says which raw projections exist: a layer without
 * k_proj / v_proj (SVFormer's V, CLA's paired layers, shared K) has nothing of its own to keep,
 * and every mix of K_i / V_i is formed from the kept raw tensors at attention time. So the cache
 * holds, per token, one [n_kv_heads·head_dim] row for every layer with k_proj (its post-RoPE
 * keys) and one for every layer with v_proj (its raw values):
 *   baseline, ResFormer, NeuTRENO: 2L rows (ResFormer's V_1 is layer 1's own row)
 *   SVFormer: L + 1 (one V, layer 1's; + one per extra anchor)     CLA: L (K and V every 2nd layer)
 *   GQA / MQA: the same row count, each row n_kv_heads·head_dim wide.
 * Residual-stream variants mix per token across depth and add nothing to the cache. GPT-2 keeps
 * K and V of every layer. */
#ifndef VRL_KV_LAYOUT_H
#define VRL_KV_LAYOUT_H

#include <stddef.h>

#include "common/model/spec.h"

typedef struct {
    int k_rows;             /* layers whose keys are cached */
    int v_rows;             /* layers whose values are cached */
    size_t row_elems;       /* n_kv_heads · head_dim */
    size_t elems_per_token; /* (k_rows + v_rows) · row_elems, per sequence */
} KvLayout;

/* The layout of s's model (its value plan's projections). */
void kv_layout(const ModelSpec *s, KvLayout *out);

#endif
