/* stream.h: residual-stream variants (formulas.md §5) as data: the depth-mixing plan.
 *
 * Every sublayer (attention and MLP of each layer; 0-based sublayer s = 2i or 2i+1 for
 * layer i) reads one input and writes one raw output y. Numbering as in the golden
 * README: y_0 is the embedding, y_k (k = 1..2L) the raw output of sublayer k−1 (after
 * o_proj / down_proj, before any residual add). Step s (0..2L) forms the input of
 * sublayer s from the history; step 2L is the head's input (before the final norm).
 *
 * The plan says, for each step, which sources are mixed and which named parameters do
 * the mixing; ref/stream.c executes it (forward and backward), one executor per kind:
 *   PLAIN        x_{s+1} = x_s + y_{s+1}                          (the baseline residual)
 *   DENSEFORMER  plain inside a block; after block j (1-based) a DWA Σ α_j,i·X_i
 *   ATTNRES      Σ_g softmax_g(w_s · RMSNorm(S_g))·S_g, S_g = Σ_{k∈range g} y_k
 *   HC, MHC      n explicit streams H [n,d] per token with width/depth maps
 * common/ holds no arithmetic: this file only builds the plan and the parameter table
 * entries (names, shapes, inits) from the variant string. */
#ifndef VRL_STREAM_H
#define VRL_STREAM_H

#include "common/model/config.h"
#include "common/model/layout.h"
#include "common/model/params.h"
#include "common/model/variant.h"

typedef enum { STREAM_PLAIN = 0, STREAM_DENSEFORMER, STREAM_ATTNRES, STREAM_HC, STREAM_MHC } StreamKind;

/* A source of an AttnRes aggregation: the sum y_lo + ... + y_{hi-1}. */
typedef struct {
    int lo, hi;
} StreamRange;

typedef struct {
    StreamKind kind;
    int L;               /* layers; 2L sublayers; steps 0..2L */
    /* DENSEFORMER: DWA after block j = 1..L (dwa_n[j-1] sources, 0 = none: the input is X_j) */
    int dilation, period;
    int *dwa_n;          /* [L] */
    int *dwa_src;        /* [L][L+1] X indices, ascending (X_0 = embedding, X_j = block j's output) */
    /* ATTNRES: step s mixes n_src[s] sources src[s][0..n_src[s]) */
    int block;           /* sublayers per block; 0 for full */
    int *n_src;          /* [2L+1] */
    StreamRange *src;    /* [2L+1][2L+1] */
    /* HC / MHC */
    int n_streams, iters;
} StreamPlan;

/* The residual-stream variants (name, family, summary), i = 0, 1, ...; NULL past the end
 * (variant.c's registry). */
const VariantInfo *stream_variant_info(int i);

/* Build the plan of a parsed residual-stream part (NULL → PLAIN) for c's shape. Errors name
 * `origin`, the variant and the bad option. Called by model_spec_build (spec.h) only. */
int stream_plan_build(VariantPart *part, const ModelConfig *c, StreamPlan *p, const char *origin);
void stream_plan_free(StreamPlan *p);

/* The slots of an HC / mHC sublayer's tensors in its StreamLayout step (layout.h). */
typedef enum { HC_AM, HC_AR, HC_B, HC_WM, HC_WR, HC_WB, HC_SA, HC_SB, HC_NP } StreamHcTensor;
typedef enum { MH_PHI_PRE, MH_PHI_POST, MH_PHI_RES, MH_B_PRE, MH_B_POST, MH_B_RES, MH_A_PRE, MH_A_POST, MH_A_RES,
               MH_NP } StreamMhcTensor;

/* Append the plan's trainable mixing parameters to the table (none for PLAIN) and record
 * their slots in out (layout.h; out->at is allocated here, freed by stream_layout_free):
 *   model.dwa.{j}.alpha [dwa_n[j]]                       1 on the last source (X_{j+1})
 *   model.layers.{i}.{attn,mlp}_res_query [d], model.final_res_query [d]      zeros
 *   model.layers.{i}.hc_{attn,mlp}.{alpha_m [n], alpha_r [n,n], beta [n], dyn_alpha_m [d],
 *       dyn_alpha_r [d,n], dyn_beta [d], scale_alpha [1], scale_beta [1]}
 *   model.layers.{i}.mhc_{attn,mlp}.{phi_pre [nd,n], phi_post [nd,n], phi_res [nd,n²],
 *       b_pre [n], b_post [n], b_res [n,n], alpha_pre, alpha_post, alpha_res [1]}
 * All without weight decay (formulas.md §2 [A]). */
int stream_add_params(const StreamPlan *p, const ModelConfig *c, ParamTable *t, StreamLayout *out);
void stream_layout_free(StreamLayout *l);

/* "attnres", "hc", ... for messages; "plain" for the baseline residual. */
const char *stream_kind_name(StreamKind k);

#endif
