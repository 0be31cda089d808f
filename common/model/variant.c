/* variant.c: parsing `--variant` strings and reading their options (variant.h); the names
 * are variant_registry.c's. */
#include "common/model/variant.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

static int parse_part(char *text, VariantPart *p, VariantLookup lookup, const char *origin) {
    memset(p, 0, sizeof *p);
    char *colon = strchr(text, ':');
    if (colon) *colon = '\0';
    if (!*text || strlen(text) >= sizeof p->name) return vrl_error("%s: bad variant name \"%s\"", origin, text);
    snprintf(p->name, sizeof p->name, "%s", text);
    const VariantInfo *info = lookup(p->name);
    if (!info) return vrl_error("%s: unknown variant \"%s\" (vrl train --help lists them)", origin, p->name);
    p->family = info->family;
    if (!colon) return 0;
    char *save = NULL;
    for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq && p->n_opts) {
            /* A piece without '=' continues the previous value as a list: lambda1=0.3,0.7 */
            VariantOpt *prev = &p->opts[p->n_opts - 1];
            size_t len = strlen(prev->value);
            if (len + 1 + strlen(kv) >= sizeof prev->value)
                return vrl_error("%s: variant %s: option %s too long", origin, p->name, prev->key);
            snprintf(prev->value + len, sizeof prev->value - len, ",%s", kv);
            continue;
        }
        if (!eq || eq == kv || !eq[1]) return vrl_error("%s: variant %s: \"%s\" is not key=value", origin, p->name, kv);
        *eq = '\0';
        if (p->n_opts == VARIANT_MAX_OPTS) return vrl_error("%s: variant %s: too many options", origin, p->name);
        if (strlen(kv) >= sizeof p->opts[0].key || strlen(eq + 1) >= sizeof p->opts[0].value)
            return vrl_error("%s: variant %s: option \"%s\" too long", origin, p->name, kv);
        for (int i = 0; i < p->n_opts; i++)
            if (!strcmp(p->opts[i].key, kv)) return vrl_error("%s: variant %s: %s given twice", origin, p->name, kv);
        VariantOpt *o = &p->opts[p->n_opts++];
        snprintf(o->key, sizeof o->key, "%s", kv);
        snprintf(o->value, sizeof o->value, "%s", eq + 1);
    }
    return 0;
}

int variant_parse(const char *text, VariantLookup lookup, VariantSpec *out, const char *origin) {
    memset(out, 0, sizeof *out);
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf) return vrl_error("%s: variant string too long", origin);
    const size_t len = strlen(buf);
    if (len && (buf[0] == '+' || buf[len - 1] == '+' || strstr(buf, "++")))
        return vrl_error("%s: variant \"%s\" has an empty part around '+'", origin, text);
    char *save = NULL;
    for (char *part = strtok_r(buf, "+", &save); part; part = strtok_r(NULL, "+", &save)) {
        VariantPart p;
        if (parse_part(part, &p, lookup, origin) < 0) return -1;
        if (p.family == FAMILY_NONE) {
            if (p.n_opts) return vrl_error("%s: variant %s takes no options", origin, p.name);
            continue;
        }
        if (variant_part(out, p.family))
            return vrl_error("%s: variant \"%s\" combines two %s variants", origin, text,
                             p.family == FAMILY_VALUE ? "value-path" : "residual-stream");
        if (out->n_parts == VARIANT_MAX_PARTS) return vrl_error("%s: too many variant parts", origin);
        out->parts[out->n_parts++] = p;
    }
    return 0;
}

VariantPart *variant_part(VariantSpec *s, VariantFamily f) {
    for (int i = 0; i < s->n_parts; i++)
        if (s->parts[i].family == f) return &s->parts[i];
    return NULL;
}

static VariantOpt *find_opt(VariantPart *p, const char *key) {
    if (!p) return NULL;
    for (int i = 0; i < p->n_opts; i++)
        if (!strcmp(p->opts[i].key, key)) {
            p->opts[i].used = 1;
            return &p->opts[i];
        }
    return NULL;
}

int variant_opt_str(VariantPart *p, const char *key, const char **out) {
    VariantOpt *o = find_opt(p, key);
    if (!o) return 0;
    *out = o->value;
    return 1;
}

int variant_opt_double(VariantPart *p, const char *key, double *out, const char *origin) {
    VariantOpt *o = find_opt(p, key);
    if (!o) return 0;
    char *end;
    errno = 0;
    double v = strtod(o->value, &end);
    if (errno || end == o->value || *end)
        return vrl_error("%s: variant %s: %s=\"%s\" is not a number", origin, p->name, key, o->value);
    if (!isfinite(v))
        return vrl_error("%s: variant %s: %s=\"%s\" is not a finite number", origin, p->name, key, o->value);
    *out = v;
    return 1;
}

int variant_opt_int(VariantPart *p, const char *key, int *out, const char *origin) {
    VariantOpt *o = find_opt(p, key);
    if (!o) return 0;
    char *end;
    errno = 0;
    long v = strtol(o->value, &end, 10);
    if (errno || end == o->value || *end || v < -1000000 || v > 1000000)
        return vrl_error("%s: variant %s: %s=\"%s\" is not an integer", origin, p->name, key, o->value);
    *out = (int)v;
    return 1;
}

int variant_check_used(const VariantSpec *s, const char *origin) {
    for (int i = 0; i < s->n_parts; i++)
        for (int j = 0; j < s->parts[i].n_opts; j++)
            if (!s->parts[i].opts[j].used)
                return vrl_error("%s: variant %s has no option \"%s\"", origin, s->parts[i].name,
                                 s->parts[i].opts[j].key);
    return 0;
}
