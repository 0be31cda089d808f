/* variant.h: the `--variant` string, recorded in config.json as "vrl_variant".
 *
 * Grammar:   variant := part ('+' part)*        part := NAME [':' key=value (',' key=value)*]
 * e.g. "resformer", "resformer:mode=constant,lambda=2", "attnres:mode=block,size=2+resformer".
 * A piece without '=' continues the previous value as a comma list, so
 * "svformer:anchors=1,3" gives anchors = "1,3". Values may not hold '+'.
 *
 * Parts come in two families, each turning its parts into data for the model code:
 *   - value-path variants (formulas.md §4): per-layer coefficient tables (value_path.h);
 *   - residual-stream variants (formulas.md §5): depth-mixing plans (stream.h).
 * Every name is listed once, in its family's table (value_path.c, stream.c) beside the
 * function that builds its plan, with a summary; variant_registry.h walks them all, and
 * the parser asks it for each name, so an unknown name or a second part of one family is
 * rejected here, before any model is built. This file is only the grammar and the option
 * getters the families read: it calls neither family. */
#ifndef VRL_VARIANT_H
#define VRL_VARIANT_H

#define VARIANT_MAX_PARTS 4
#define VARIANT_MAX_OPTS 16

typedef enum { FAMILY_NONE = 0, FAMILY_VALUE = 1, FAMILY_STREAM = 2 } VariantFamily;

typedef struct {
    char key[32];
    char value[128];
    int used;                   /* set by the getters: unused keys are errors */
} VariantOpt;

typedef struct {
    char name[48];
    VariantFamily family;
    int n_opts;
    VariantOpt opts[VARIANT_MAX_OPTS];
} VariantPart;

typedef struct {
    int n_parts;
    VariantPart parts[VARIANT_MAX_PARTS];
} VariantSpec;

typedef struct {
    const char *name;
    VariantFamily family;
    const char *summary;        /* one line for --help and docs */
} VariantInfo;

/* A variant's entry by name, or NULL (variant_lookup, variant_registry.h). */
typedef const VariantInfo *(*VariantLookup)(const char *name);

/* Parse and check names with lookup (the registry); `origin` (a file or "--variant")
 * names the source in errors. "baseline" parses to zero parts. */
int variant_parse(const char *text, VariantLookup lookup, VariantSpec *out, const char *origin);

/* The part of a family, or NULL (the baseline of that family). */
VariantPart *variant_part(VariantSpec *s, VariantFamily f);

/* Option getters: return 1 if present (and parsed), 0 if absent (out keeps its default),
 * -1 on a malformed value (error names origin, part and key). List values ("0.3,0.7")
 * come back whole from variant_opt_str; the family code splits them. */
int variant_opt_str(VariantPart *p, const char *key, const char **out);
int variant_opt_double(VariantPart *p, const char *key, double *out, const char *origin);
int variant_opt_int(VariantPart *p, const char *key, int *out, const char *origin);
/* Fail if any option of the spec was never read: catches typos like "lamda=2". */
int variant_check_used(const VariantSpec *s, const char *origin);

#endif
