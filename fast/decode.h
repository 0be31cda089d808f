/* decode.h: fast/'s KV-cache decoder, its C interface (fast/decode.cu; docs/generate.md).
 *
 * The Backend's kv_create / kv_free / decode for the CUDA backend: the cache holds, per layer,
 * the keys after RoPE and the value input the layer's attention reads (Σ_i cv·V_i, formed once
 * per token), bf16, on the device; decode feeds a prompt into an empty cache as one prefill
 * forward, then each sequence's next tokens one position at a time through a one-position model
 * (fast_model_create_decoder), both reading the generating model's bf16 weights in place, and
 * returns fp32 logits. What it decodes: the llama block with
 * its own queries, keys that are one layer's (own or shared, CLA), any value mix and correction,
 * any residual stream; and GPT-2. fast_capabilities says BACKEND_CAN_GENERATE for those and
 * names what else is missing. */
#ifndef VRL_FAST_DECODE_H
#define VRL_FAST_DECODE_H

#include <stdint.h>

#include "common/model/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A cache for batch sequences of up to max_seq positions of model m (fast_model_create's), which
 * must outlive it. NULL with vrl_error. */
void *fast_kv_create(void *m, int batch, int max_seq);
void fast_kv_free(void *kv);
/* Feed tokens [batch, n_new] and write their logits [batch, n_new, vocab] (fp32). 0, or -1 with
 * vrl_error (a bad id, or past max_seq; the cache unchanged). */
int fast_decode(void *m, void *kv, const int32_t *tokens, int n_new, float *logits);

/* The first thing of spec the decoder lacks, or NULL (capabilities.c). */
const char *fast_decode_missing(const ModelSpec *spec);

#ifdef __cplusplus
}
#endif

#endif
