/* cmd_tokenize.c: `vrl tokenize` -- text to ids, or ids to text with --decode. */
#include "cli/commands.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: vrl tokenize --tokenizer FILE [--in FILE] [--decode] [--skip-special] [TEXT...]\n"
    "  Encode TEXT (the arguments joined by spaces; else the file --in; else stdin) and\n"
    "  print the ids separated by spaces, then a newline. With --decode the input is ids\n"
    "  (separated by spaces, commas or newlines) and the decoded text is printed exactly,\n"
    "  with no newline added, so encoding a file and decoding the ids gives the file back\n"
    "  byte for byte. --skip-special drops special tokens when decoding.\n";

/* Read all of stdin into a malloc'd buffer. */
static int read_stdin(char **out, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    if (!b) return vrl_error("stdin: out of memory");
    size_t got;
    while ((got = fread(b + len, 1, cap - len, stdin)) > 0) {
        len += got;
        if (len == cap) {
            char *p = realloc(b, cap *= 2);
            if (!p) { free(b); return vrl_error("stdin: out of memory"); }
            b = p;
        }
    }
    if (ferror(stdin)) { free(b); return vrl_error("stdin: read error"); }
    *out = b;
    *n = len;
    return 0;
}

/* Parse whitespace-separated ids from s. */
static int parse_ids(const char *s, uint32_t vocab, TokIds *ids) {
    while (*s) {
        while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r' || *s == ',') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || errno || v >= vocab || (*end && !strchr(" \n\t\r,", *end)))
            return vrl_error("--decode: \"%.20s\" is not an id below %u", s, vocab);
        if (tok_ids_push(ids, (uint32_t)v)) return -1;
        s = end;
    }
    return 0;
}

int cmd_tokenize(int argc, char **argv) {
    const char *tok_path = NULL;
    const char *in_path = NULL;
    int decode = 0, skip = 0, first = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { fputs(USAGE, stdout); return 0; }
        if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc) tok_path = argv[++i];
        else if (strcmp(argv[i], "--in") == 0 && i + 1 < argc) in_path = argv[++i];
        else if (strcmp(argv[i], "--decode") == 0) decode = 1;
        else if (strcmp(argv[i], "--skip-special") == 0) skip = 1;
        else if (strcmp(argv[i], "--") == 0) { first = i + 1; break; }
        else if (strncmp(argv[i], "--", 2) == 0) {
            fprintf(stderr, "vrl tokenize: unknown or incomplete option %s\n%s", argv[i], USAGE);
            return 2;
        } else { first = i; break; }
    }
    if (!tok_path) { fprintf(stderr, "vrl tokenize: --tokenizer FILE is required\n%s", USAGE); return 2; }
    if (in_path && first < argc) {
        fprintf(stderr, "vrl tokenize: give the input as TEXT arguments or as --in FILE, not both\n");
        return 2;
    }
    /* the input: the remaining arguments joined by single spaces, the file --in, or stdin */
    char *in = NULL;
    size_t n = 0;
    if (in_path) {
        void *data;
        if (read_file_all(in_path, &data, &n)) {
            fprintf(stderr, "vrl tokenize: %s\n", vrl_last_error());
            return 1;
        }
        in = data;
    } else if (first < argc) {
        size_t total = 1;
        for (int i = first; i < argc; i++) total += strlen(argv[i]) + 1;
        if (!(in = malloc(total))) { fprintf(stderr, "vrl tokenize: out of memory\n"); return 1; }
        for (int i = first; i < argc; i++) {
            if (i > first) in[n++] = ' ';
            memcpy(in + n, argv[i], strlen(argv[i]));
            n += strlen(argv[i]);
        }
        in[n] = '\0';
    } else if (read_stdin(&in, &n)) {
        fprintf(stderr, "vrl tokenize: %s\n", vrl_last_error());
        return 1;
    }
    Tokenizer *t;
    if (tok_load(tok_path, &t)) {
        fprintf(stderr, "vrl tokenize: %s\n", vrl_last_error());
        free(in);
        return 1;
    }
    TokIds ids = {0};
    int rc = 0;
    if (decode) {
        in[n] = '\0';
        char *text;
        size_t tn;
        if (strlen(in) != n) rc = vrl_error("--decode: NUL byte in the ids");
        if (rc == 0) rc = parse_ids(in, tok_vocab_size(t), &ids);
        if (rc == 0) rc = tok_decode(t, ids.ids, ids.n, skip, &text, &tn);
        if (rc == 0) {
            fwrite(text, 1, tn, stdout); /* exactly the text: see USAGE */
            free(text);
        }
    } else {
        rc = tok_encode(t, in, n, &ids);
        for (size_t i = 0; rc == 0 && i < ids.n; i++) printf(i ? " %u" : "%u", ids.ids[i]);
        if (rc == 0) fputc('\n', stdout);
    }
    if (rc) fprintf(stderr, "vrl tokenize: %s\n", vrl_last_error());
    tok_ids_free(&ids);
    tok_free(t);
    free(in);
    return rc ? 1 : 0;
}
