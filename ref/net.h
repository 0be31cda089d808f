/* net.h (ref): what ref/backend.c needs from one reference architecture.
 *
 * The LLaMA model (model.c, formulas.md §1 with the variants of §4-5) and the GPT-2 baseline
 * (gpt2.c) are separate models with their own opaque state; each exports one RefNet table,
 * and ref_net() picks the table of a config's architecture, once, at create. The optimizer,
 * checkpoints and get/set_state only see the flat buffers (RefBuffers) laid out by the
 * spec's table. Compiled twice (real.h). */
#ifndef VRL_REF_NET_H
#define VRL_REF_NET_H

#include <stdint.h>

#include "common/model/backend.h"
#include "common/model/spec.h"
#include "ref/real.h"

typedef struct {
    real *params, *grads;       /* [table.total] each, laid out by the spec's table */
    real *exp_avg, *exp_avg_sq; /* AdamW moments [table.total] */
    const real *logits;         /* [batch, seq, vocab] of the last forward */
} RefBuffers;

typedef struct {
    /* Parameters and moments start at zero. NULL with vrl_error on failure. */
    void *(*create)(const ModelSpec *s, int batch, int seq);
    void (*destroy)(void *net);
    /* Mean next-token loss of tokens [batch, seq], keeping what the backward needs; NaN
     * (and vrl_error) on token ids outside the vocabulary, after which backward does nothing. */
    double (*forward)(void *net, const int32_t *tokens);
    /* Adds grad_scale · dLoss/dParam into the gradients. */
    void (*backward)(void *net, double grad_scale);
    /* Dropout on (training = 1) for the next forwards, masks keyed by (seed, step, micro);
     * NULL for an architecture without dropout. */
    void (*set_dropout)(void *net, int training, uint64_t seed, uint64_t step, uint64_t micro);
    RefBuffers (*buffers)(void *net);
    /* Analysis views of the last forward (backend.h); NULL where the architecture has none. */
    const real *(*view)(void *net, BackendView what, int index);
} RefNet;

#define ref_net_llama REF(ref_net_llama)
#define ref_net_gpt2 REF(ref_net_gpt2)
#define ref_net REF(ref_net)

extern const RefNet ref_net_llama; /* ref/model.c */
extern const RefNet ref_net_gpt2;  /* ref/gpt2.c */

/* The table of c's architecture. */
static inline const RefNet *ref_net(const ModelConfig *c) { return c->arch == ARCH_GPT2 ? &ref_net_gpt2 : &ref_net_llama; }

#endif
