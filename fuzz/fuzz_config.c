/* fuzz_config.c: config.json text -> ModelConfig -> the model spec (its vrl_variant
 * parsed into plans, and the parameter table). */
#include <stdlib.h>
#include <string.h>

#include "common/model/config.h"
#include "common/model/params.h"
#include "common/model/spec.h"
#include "fuzz/fuzz_util.h"

/* The sizes the trainer allocates from the table: every tensor's element count is its
 * shape's product without wrap-around, its slot holds it and is whole PARAM_ALIGN blocks,
 * the slots tile [0, total) in order, the tensors add up to count, and the largest buffer
 * made from it (three host copies of doubles, 24 bytes a parameter) fits in size_t. A
 * wrapped count here is the heap overflow issue 24 found. */
static void check_allocation_sizes(const ParamTable *t) {
    size_t offset = 0, count = 0;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        size_t numel = 1;
        for (int d = 0; d < p->ndim; d++)
            if (p->shape[d] < 0 || __builtin_mul_overflow(numel, (size_t)p->shape[d], &numel)) abort();
        if (numel != p->numel || p->offset != offset || p->slot < numel || p->slot % PARAM_ALIGN) abort();
        if (__builtin_add_overflow(offset, p->slot, &offset)) abort();
        count += numel;
    }
    size_t bytes;
    if (offset != t->total || count != t->count || t->total > PARAM_MAX_TOTAL ||
        __builtin_mul_overflow(t->total, (size_t)24, &bytes))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    ModelConfig c;
    int rc = config_load_json(fuzz_file("config.json", data, n), &c);
    fuzz_check_error(rc);
    if (rc < 0) return 0;
    ModelSpec spec;
    /* huge but valid shapes only size a table; nothing is allocated per element */
    rc = model_spec_build(&c, &spec);
    fuzz_check_error(rc);
    if (rc == 0) {
        check_allocation_sizes(&spec.table);
        model_spec_free(&spec);
    }
    return 0;
}
