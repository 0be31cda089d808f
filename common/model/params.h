/* params.h: the table of named parameter tensors.
 *
 * One table describes the model's parameters for every part of vrl: ref and fast
 * lay out parameters, gradients and optimizer moments as one flat buffer in table
 * order; the checkpoint writes one safetensors tensor per entry under its Hugging
 * Face LLaMA name; the optimizer reads each entry's decay flag; conformance compares
 * tensor by tensor. Shapes are PyTorch's: a linear weight is [out, in], row-major. */
#ifndef VRL_PARAMS_H
#define VRL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "common/model/config.h"

#define PARAM_NAME_LEN 96
#define PARAM_MAX_DIM 4
/* elements in one table (2^40): times 8 bytes and a few buffers, still far inside size_t */
#define PARAM_MAX_TOTAL (1ULL << 40)
/* Every tensor's offset in the flat buffer, and the buffer's total, are multiples of
 * PARAM_ALIGN elements: 16 bytes of bf16, 32 of fp32, so fast/ reads and writes every tensor
 * of its parameter and gradient tables with 16-byte vector accesses and cuBLASLt gets
 * aligned operands (docs/design/kernels.md, "Vector access, padding and alignment"). The gap after a
 * tensor whose size is not a multiple (a trainable λ scalar, a DenseFormer weight vector)
 * is zero in every buffer and belongs to no tensor: checkpoints, written tensor by tensor,
 * never see it. */
#define PARAM_ALIGN 8
/* lm_head's slot holds its rows rounded up to a multiple of PARAM_VOCAB_PAD (50277 -> 50304),
 * the rows past the vocabulary zero: fast/ runs the three lm_head GEMMs at that extent, whose
 * 16-byte aligned leading dimensions cuBLASLt's tensor-core kernels need (docs/design/kernels.md). */
#define PARAM_VOCAB_PAD 128

typedef enum {
    INIT_NORMAL = 0, /* N(0, init_value^2): linears and embeddings, std 0.02 */
    INIT_CONST = 1,  /* every element = init_value: norm gains (1), mixing coefficients */
    INIT_EYE = 2,    /* square [n,n]: init_value on the diagonal, 0 elsewhere (HC/mHC maps) */
    INIT_ONEHOT = 3, /* init_value at element init_index, 0 elsewhere (DWA alpha, HC alpha_m) */
    INIT_VALUES = 4, /* element j = init_values[j]: per-layer value coefficients (value_path.h) */
} InitKind;

typedef struct {
    char name[PARAM_NAME_LEN]; /* Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight" */
    int ndim;
    int64_t shape[PARAM_MAX_DIM];
    size_t offset;             /* first element in the flat buffer */
    size_t numel;
    size_t slot;               /* elements it takes in the flat buffer, its gap included: numel
                                * rounded up to PARAM_ALIGN, or more (param_table_pad_rows) */
    int decay;                 /* 1 if AdamW weight decay applies (formulas.md §2) */
    InitKind init;
    double init_value;         /* std for INIT_NORMAL, value for INIT_CONST / EYE / ONEHOT */
    size_t init_index;         /* INIT_ONEHOT: the element that gets init_value */
    double *init_values;       /* [numel] for INIT_VALUES, owned by the table, else NULL */
} ParamInfo;

typedef struct {
    ParamInfo *p;
    int n, cap;
    size_t total;              /* elements in the flat buffer, the padding gaps included */
    size_t count;              /* elements of the tensors: total less the gaps */
    int *by_name;              /* [name_cap] open-addressed hash of names: index + 1, 0 = empty */
    int name_cap;              /* a power of two, at least 2 * n; 0 before the first add */
} ParamTable;

/* Where one tensor sits in the flat buffer; numel 0 = absent (a tensor the plan drops).
 * The spec's layout (layout.h) hands these down so models never look a name up. */
typedef struct {
    size_t offset;
    size_t numel;
} TensorSlot;

/* n rounded up to the table's alignment: a tensor of n elements takes this much of the flat
 * buffer (itself and its gap). */
static inline size_t param_padded(size_t n) { return (n + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN; }

/* The slot of the tensor appended last (t->n >= 1). */
static inline TensorSlot param_table_last_slot(const ParamTable *t) {
    TensorSlot s = {t->p[t->n - 1].offset, t->p[t->n - 1].numel};
    return s;
}

/* The table of a config is built by model_spec_build (spec.h). */
void param_table_free(ParamTable *t);

/* Append one tensor (spec.c, and the plans adding their own tensors). */
int param_table_add(ParamTable *t, const char *name, int ndim, const int64_t *shape,
                    int decay, InitKind init, double init_value);

/* Give the tensor appended last (a [rows, cols] matrix) a slot of `rows` rows, zero past its
 * own (rows >= its shape[0]). */
int param_table_pad_rows(ParamTable *t, int64_t rows);

/* Append a tensor whose elements start at values[0..numel) (copied; INIT_VALUES, no decay). */
int param_table_add_values(ParamTable *t, const char *name, int ndim, const int64_t *shape, const double *values);

/* Entry by name, or NULL. */
const ParamInfo *param_table_find(const ParamTable *t, const char *name);

/* The offset of a tensor a model binds, checked against the element count it needs, so a
 * table built for another config is an error rather than a wrong read. 0, or -1 with
 * vrl_error naming the tensor. */
int param_table_expect(const ParamTable *t, const char *name, size_t numel, size_t *offset);

/* Deterministic initialisation from a seed, independent of the backend and precision:
 * each tensor draws from its own stream keyed by (seed, name), so adding a tensor
 * does not change the others. Values are produced in double; out has t->total elements,
 * the gaps between tensors set to 0. */
void params_init_f64(const ParamTable *t, uint64_t seed, double *out);
/* The same draw rounded to float (each value as (float) of params_init_f64's), written
 * straight into out [t->total] without a double copy of the whole table. */
void params_init_f32(const ParamTable *t, uint64_t seed, float *out);

/* Total parameter count (what `vrl info` prints): the tensors' elements, not the gaps. */
static inline size_t param_table_count(const ParamTable *t) { return t->count; }

#endif
