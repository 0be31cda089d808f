/* args.c: command-line parsing helpers (args.h). */
#include "cli/args.h"

#include "common/model/variant_registry.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

int args_take(Args *a, const char *flag, const char **value) {
    if (a->i >= a->argc) return 0;
    const char *arg = a->argv[a->i];
    const size_t n = strlen(flag);
    if (strncmp(arg, flag, n)) return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        a->i++;
        return 1;
    }
    if (arg[n] != '\0') return 0;
    if (a->i + 1 >= a->argc) return vrl_error("%s: %s needs a value", a->cmd, flag), -1;
    *value = a->argv[a->i + 1];
    a->i += 2;
    return 1;
}

int args_switch(Args *a, const char *flag) {
    if (a->i < a->argc && !strcmp(a->argv[a->i], flag)) {
        a->i++;
        return 1;
    }
    return 0;
}

/* The one shape every integer flag accepts: an optional '-' (when allowed) and decimal
 * digits, nothing before or after (strtol alone would take " 1" and "+1"). */
static int all_digits(const char *s, int allow_minus) {
    if (allow_minus && *s == '-') s++;
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    if (!all_digits(s, 1)) return vrl_error("%s: \"%s\" is not an integer", flag, s);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno == ERANGE) return vrl_error("%s: \"%s\" is out of range [%ld, %ld]", flag, s, lo, hi);
    if (errno || end == s || *end) return vrl_error("%s: \"%s\" is not an integer", flag, s);
    if (v < lo || v > hi) return vrl_error("%s: %ld is out of range [%ld, %ld]", flag, v, lo, hi);
    *out = v;
    return 0;
}

int parse_int(const char *flag, const char *s, int lo, int hi, int *out) {
    long v;
    if (parse_long(flag, s, lo, hi, &v) < 0) return -1;
    *out = (int)v;
    return 0;
}

int parse_double(const char *flag, const char *s, double *out) {
    /* strtod skips leading space; a flag value must be the number and nothing else */
    if (!*s || !(strchr("0123456789-.", *s))) return vrl_error("%s: \"%s\" is not a finite number", flag, s);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return vrl_error("%s: \"%s\" is not a finite number", flag, s);
    *out = v;
    return 0;
}

int parse_u64(const char *flag, const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-') return vrl_error("%s: \"%s\" must not be negative", flag, s);
    if (!all_digits(s, 0)) return vrl_error("%s: \"%s\" is not an unsigned integer", flag, s);
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) return vrl_error("%s: \"%s\" is larger than %llu", flag, s, (unsigned long long)UINT64_MAX);
    if (errno || end == s || *end) return vrl_error("%s: \"%s\" is not an unsigned integer", flag, s);
    *out = v;
    return 0;
}

void args_print_variants(FILE *f) {
    fprintf(f, "variants (--variant NAME[:key=value,...], combined with '+'; docs/variants.md):\n");
    const VariantInfo *v;
    for (int i = 0; (v = variant_info(i)); i++) fprintf(f, "  %-20s %s\n", v->name, v->summary);
}
