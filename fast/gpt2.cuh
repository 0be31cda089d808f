/* gpt2.cuh: the GPT-2 model's entry points (fast/gpt2.cu), called by model.cu where a FastModel
 * with m->gpt2 set differs from the llama one. Each returns 0 or -1 with vrl_error. */
#ifndef VRL_FAST_GPT2_CUH
#define VRL_FAST_GPT2_CUH

#include "fast/model.cuh"

FAST_NS_BEGIN

/* At create: m->gpt2 (host) with the table's offsets, looked up by ref/gpt2.c's names; refuses
 * what this step lacks (several processes, cuDNN attention). */
int gpt2_bind(FastModel *m, const ModelSpec *spec);
/* The arena's layout (model.cu's carve): bytes, and the pointers when base is not NULL. */
size_t gpt2_layout(FastModel *m, char *base);
/* Queued on m->stream: the embeddings, the layers and LN_f into m->lnf. */
int gpt2_trunk_forward(FastModel *m);
/* Queued: the backward from d(lnf) in m->dln32 to every parameter's gradient (+=). */
int gpt2_backward(FastModel *m);

FAST_NS_END

#endif
