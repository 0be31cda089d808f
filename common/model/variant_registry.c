/* variant_registry.c: every variant name vrl knows (variant_registry.h). */
#include "common/model/variant_registry.h"

#include <string.h>

#include "common/model/stream.h"
#include "common/model/value_path.h"

/* Every variant vrl knows: the baseline here, then each family's table (value_path.c,
 * stream.c), where each name sits beside the function that turns it into a plan;
 * docs/variants.md gives the formulas. */
static const VariantInfo baseline = {"baseline", FAMILY_NONE, "the LLaMA baseline of formulas.md §1"};

const VariantInfo *variant_info(int i) {
    if (i == 0) return &baseline;
    int n = 0;
    while (value_variant_info(n)) n++;
    return i - 1 < n ? value_variant_info(i - 1) : stream_variant_info(i - 1 - n);
}

const VariantInfo *variant_lookup(const char *name) {
    const VariantInfo *v;
    for (int i = 0; (v = variant_info(i)); i++)
        if (!strcmp(v->name, name)) return v;
    return NULL;
}
