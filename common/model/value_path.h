/* value_path.h: the value-path variants of formulas.md §4 as tables (pure data, no arithmetic).
 *
 * A ValuePlan says, for every layer l (0-based here; layer n = l+1 of formulas.md), what its
 * attention reads. With Q_i, K_i, V_i the raw flat projections of layer i (before RoPE,
 * before the head split) and A_i layer i's own causal softmax:
 *
 *   q_l  = Σ_{i≤l} cq[l][i]·Q_i          k_l = Σ_{i≤l} ck[l][i]·K_i        (then RoPE)
 *   V'_l = Σ_{i≤l} cv[l][i]·V_i          P_l = Σ_{i≤l} ca[l][i]·A_i        (A_l from q_l, k_l)
 *   U_l  = P_l·V'_l + Σ_{i≤l} ce[l][i]·V_i                 (ce: NeuTRENO / Eq. 6 corrections,
 *                                                            in kv space, repeated to query heads)
 *   cross[l] = m ≥ 0: Eq. 2, one softmax over [q_l·k_lᵀ ; q_l·RoPE(k_m)ᵀ] and values [V'_l ; V_m]
 *   hidden residual: the attention norm reads hx[l]·x_{l} + hh[l]·H_0 (H_0 = embedding output)
 *
 * Every table is [L][L] row-major, entries above the diagonal zero. The baseline is the identity
 * everywhere (hx = 1, hh = 0, cross = -1). A projection whose raw output no layer reads does not
 * exist (has_q/has_k/has_v = 0: no tensor in the parameter table).
 *
 * Trainable value coefficients: layer l's tensor "model.layers.{l}.self_attn.v_residual_lambda"
 * has n_train[l] entries; entry j is cv[l][train_src[l][j]] and starts at that table value.
 *
 * Building a plan from the parsed variant (value_plan_build, called by spec.c) validates every
 * option and names the origin (a config file or "--variant") in errors. */
#ifndef VRL_VALUE_PATH_H
#define VRL_VALUE_PATH_H

#include "common/model/config.h"
#include "common/model/layout.h"
#include "common/model/params.h"
#include "common/model/variant.h"

typedef struct {
    int L;
    char name[48];   /* the value-family variant's name, or "baseline" */
    int *has_q;      /* [L] layer l has q_proj */
    int *has_k;      /* [L] layer l has k_proj */
    int *has_v;      /* [L] layer l has v_proj */
    double *cq;      /* [L,L] query sources (raw Q_i, pre-RoPE) */
    double *ck;      /* [L,L] key sources (raw K_i, pre-RoPE) */
    double *cv;      /* [L,L] value sources (raw V_i) */
    double *ce;      /* [L,L] output corrections (raw V_i, added after attention) */
    double *ca;      /* [L,L] attention-matrix sources (A_i, per query head, after softmax) */
    double *hx;      /* [L] weight of the layer input x in the attention norm's input */
    double *hh;      /* [L] weight of H_0 (the embedding output) there */
    int *cross;      /* [L] Eq. 2 partner layer m (0-based), or -1 */
    int *n_train;    /* [L] trainable entries of cv row l (0: none) */
    int *train_src;  /* [L,L] entry j of layer l's v_residual_lambda multiplies V_{train_src[l][j]} */
} ValuePlan;

/* The value-path variants (name, family, summary), i = 0, 1, ...; NULL past the end
 * (variant.c's registry). */
const VariantInfo *value_variant_info(int i);

/* The plan of a parsed value-family part (NULL: the baseline) for c's shape; every option
 * of the part must be read. origin names the source of the string in errors. Called by
 * model_spec_build (spec.h) only. */
int value_plan_build(VariantPart *part, const ModelConfig *c, ValuePlan *p, const char *origin);
void value_plan_free(ValuePlan *p);

/* Append layer l's attention tensors, in this order: the q/k/v_proj the plan keeps (has_q,
 * has_k, has_v), o_proj, then v_residual_lambda [n_train[l]] (no decay, starting at the
 * table's values) where the layer trains coefficients; their slots go to out (wq, wk, wv,
 * wo, lam; the dropped ones stay absent). */
int value_plan_add_params(const ValuePlan *p, const ModelConfig *c, int l, ParamTable *t, LayerLayout *out);

/* 1 if any layer after i reads source i of the [L,L] table tab (cv, ce, cq, ck or ca). */
int value_plan_read_later(const ValuePlan *p, const double *tab, int i);

/* The name of layer l's trainable coefficient tensor. */
void value_plan_lambda_name(int l, char *out, size_t n);

#endif
