/* args.h: strict parsing of `--flag VALUE` / `--flag=VALUE` command lines.
 * A malformed number or an unknown flag is an error naming the flag, never a guess. */
#ifndef VRL_ARGS_H
#define VRL_ARGS_H

#include <stdint.h>

typedef struct {
    int argc;
    char **argv;
    int i;               /* next argument to read */
    const char *cmd;     /* "vrl train", for messages */
} Args;

/* If argv[i] is `flag` (or `flag=...`), consume it and its value into *value. */
int args_take(Args *a, const char *flag, const char **value);
/* If argv[i] is `flag` (a switch without value), consume it. */
int args_switch(Args *a, const char *flag);

/* Parse a whole string as a number (the flag names the value in errors). */
int parse_long(const char *flag, const char *s, long lo, long hi, long *out);
int parse_int(const char *flag, const char *s, int lo, int hi, int *out);
int parse_double(const char *flag, const char *s, double *out);
int parse_u64(const char *flag, const char *s, uint64_t *out);

/* Every --variant name (variant_info, common/model/variant.h), one line each, for --help. */
#include <stdio.h>
void args_print_variants(FILE *f);

#endif
