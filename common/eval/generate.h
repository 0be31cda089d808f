/* generate.h: continuing a prompt one token at a time through a backend's KV cache
 * (Backend kv_create / decode, docs/generate.md), each token drawn by sample.h. What is
 * done with each token (printed as ids, decoded as text) is the caller's sink. */
#ifndef VRL_GENERATE_H
#define VRL_GENERATE_H

#include <stdint.h>

#include "common/data/tokenizer.h"
#include "common/eval/sample.h"
#include "common/model/backend.h"
#include "common/model/spec.h"

typedef struct {
    int made;              /* tokens drawn (EOS not counted) */
    int at_eos;            /* 1: stopped because EOS was drawn */
    double prompt_seconds; /* the prompt's one decode call */
    double seconds;        /* the drawn tokens' decode calls and draws */
    double min_margin;     /* greedy: the smallest gap between the largest and second-largest logit (among
                            * the ids drawn from) over every step, a token's or EOS's; how far the logits
                            * could move before a tie flips a token. INFINITY when nothing was drawn */
    int min_margin_step;   /* the step (0-based) where it was smallest */
} GenerateStats;

/* Called once with next = -1 when the prompt is accepted (before it is decoded), then after
 * each drawn token: ids holds the prompt and every token so far, next the new one. 0, or -1
 * (vrl_error set) to stop. */
typedef int (*GenerateSink)(void *ctx, const TokIds *ids, int32_t next);

/* Continue the prompt in ids (checked here: at least one token, every id inside the
 * vocabulary, shorter than max_position_embeddings) with up to max_new tokens from be's
 * model of spec at params, stopping at EOS (the config's eos_token_id: the end token of the
 * run's tokenizer, common/run/hf_export.h; never when null) or at the model's last position.
 * Draws only ids below draw_vocab (a tokenizer's vocabulary may be smaller than the model's).
 * The caller has checked BACKEND_CAN_GENERATE. 0, or -1 with vrl_error. */
int generate(const Backend *be, const ModelSpec *spec, const void *params, TokIds *ids, int max_new, int draw_vocab,
             const SampleParams *sp, uint64_t seed, GenerateSink sink, void *ctx, GenerateStats *st);

#endif
