/* variant_registry.h: every variant name vrl knows: the baseline, then each family's table
 * (value_path.c, stream.c), where each name sits beside the function that turns it into a
 * plan. The parser (variant.h) is handed variant_lookup by spec.c; `--help` lists
 * variant_info. docs/variants.md gives the formulas. */
#ifndef VRL_VARIANT_REGISTRY_H
#define VRL_VARIANT_REGISTRY_H

#include "common/model/variant.h"

/* Every variant, i = 0, 1, ...: the baseline, the value family's, the stream family's;
 * NULL past the end. */
const VariantInfo *variant_info(int i);

/* The entry named name, or NULL (a VariantLookup). */
const VariantInfo *variant_lookup(const char *name);

#endif
