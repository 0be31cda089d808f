/* decode.h (ref): incremental decoding with a KV cache, for every llama variant and GPT-2.
 *
 * A KvCache holds, for `batch` sequences of up to `max_seq` positions, the rows that
 * common/model/kv_layout.h lists (post-RoPE keys of layers with W_k, raw values of layers
 * with W_v) plus one token's scratch. kv_decode feeds n_new more tokens to every sequence,
 * one position at a time, and returns the logits of each: the same numbers as a full forward
 * over the whole prefix (conformance/test_decode.c checks fp64 to 1e-12). The weights are read
 * in place from the model's flat buffer (laid out by the ParamTable), so the cache follows
 * training updates without a copy. A GPT-2 config gets GPT-2's own decoder
 * (ref/gpt2_decode.c) behind the same three calls.
 * Compiled twice (real.h). */
#ifndef VRL_REF_DECODE_H
#define VRL_REF_DECODE_H

#include <stdint.h>

#include "common/model/spec.h"
#include "ref/real.h"

typedef struct KvCache KvCache;

#define kv_cache_create REF(kv_cache_create)
#define kv_cache_free REF(kv_cache_free)
#define kv_decode REF(kv_decode)
#define kv_cache_length REF(kv_cache_length)

/* A cache for spec's model whose weights are params [spec->table.total] (spec and params are not
 * owned and must outlive it). NULL with vrl_error on failure. */
KvCache *kv_cache_create(const ModelSpec *spec, const real *params, int batch, int max_seq);
void kv_cache_free(KvCache *kv);

/* Feed tokens [batch, n_new] (row b = the next n_new tokens of sequence b) and write their
 * logits [batch, n_new, vocab]. 0, or -1 with vrl_error (a bad id, or past max_seq) and the
 * cache unchanged. */
int kv_decode(KvCache *kv, const int32_t *tokens, int n_new, real *logits);

/* Positions cached so far (the same for every sequence). */
int kv_cache_length(const KvCache *kv);

#endif
