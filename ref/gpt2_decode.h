/* gpt2_decode.h (ref): incremental decoding of the GPT-2 baseline (ref/gpt2.c, formulas.md §1)
 * with a KV cache: each layer's keys and values of every earlier position, [B,Tmax,d] each.
 * ref/decode.c reaches it through its KvCache (kv_cache_create picks it for a gpt2 config), so
 * the Backend's kv_create / decode are the same for both architectures. The weights are read in
 * place from the model's flat buffer. Compiled twice (real.h). */
#ifndef VRL_REF_GPT2_DECODE_H
#define VRL_REF_GPT2_DECODE_H

#include <stdint.h>

#include "common/model/spec.h"
#include "ref/real.h"

typedef struct Gpt2KvCache Gpt2KvCache;

#define gpt2_kv_create REF(gpt2_kv_create)
#define gpt2_kv_free REF(gpt2_kv_free)
#define gpt2_kv_step REF(gpt2_kv_step)

/* A cache for spec's gpt2 model whose weights are params [spec->table.total] (not owned), for
 * batch sequences of up to max_seq positions (checked by the caller). NULL with vrl_error. */
Gpt2KvCache *gpt2_kv_create(const ModelSpec *spec, const real *params, int batch, int max_seq);
void gpt2_kv_free(Gpt2KvCache *kv);

/* One position p (< max_seq) of every sequence: tokens [B] (checked by the caller) in, their
 * logits [B,V] out; the keys and values of p join the cache. */
void gpt2_kv_step(Gpt2KvCache *kv, const int32_t *tokens, int p, real *logits);

#endif
