/* layout.h: where each tensor of a LLaMA model sits in the flat buffer, recorded as the
 * parameter table is built (spec.c, value_path.c, stream.c) and handed down in the
 * ModelSpec. ref/ and fast/ read these offsets; the Hugging Face names live only in
 * common/model/, where the table is built. */
#ifndef VRL_LAYOUT_H
#define VRL_LAYOUT_H

#include "common/model/params.h"

/* One LLaMA layer (formulas.md §1, §4). wq, wk, wv: numel 0 where the value plan drops the
 * projection; lam: the trainable value coefficients, numel 0 where the layer has none. */
typedef struct {
    TensorSlot ln1;                /* input_layernorm [d] */
    TensorSlot wq, wk, wv;         /* q_proj [qC,d], k_proj / v_proj [kvC,d] */
    TensorSlot wo;                 /* o_proj [d,qC] */
    TensorSlot lam;                /* v_residual_lambda [n_train[l]] */
    TensorSlot ln2;                /* post_attention_layernorm [d] */
    TensorSlot wgate, wup, wdown;  /* gate/up_proj [F,d], down_proj [d,F] */
} LayerLayout;

/* The most tensors one step of a depth mixer owns (mHC's nine). */
#define STREAM_STEP_TENSORS 9

/* The residual-stream plan's mixing tensors (stream.h), per step s = 0..2L; slot k of a
 * step is the k-th tensor stream_add_params appends for it, absent (numel 0) otherwise:
 *   DENSEFORMER  at[j][0]: the DWA weights after block j (j = 0..L-1)
 *   ATTNRES      at[s][0]: step s's query w_s [d]
 *   HC, MHC      at[s][k]: k as StreamHcTensor / StreamMhcTensor (stream.h), s < 2L */
typedef struct {
    int steps;                               /* 2L+1 (0 for gpt2) */
    TensorSlot (*at)[STREAM_STEP_TENSORS];   /* [steps][STREAM_STEP_TENSORS] */
} StreamLayout;

typedef struct {
    TensorSlot embed, norm, head;  /* embed_tokens [V,d], norm [d], lm_head [V,d] */
    LayerLayout *layer;            /* [L] (NULL for gpt2, whose model binds by name) */
    StreamLayout stream;
} ModelLayout;

#endif
