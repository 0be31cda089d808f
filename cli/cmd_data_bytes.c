/* cmd_data_bytes.c: `vrl data bytes` — a text file as byte-level token shards (vocab 256).
 *
 * For small CPU experiments (reproduce/small_value_variants.sh): with a 256-id vocabulary a
 * tiny model's parameters go to its layers rather than to a 50277-row embedding. The last
 * --val-fraction of the file (a contiguous tail, so no text leaks between the splits) becomes
 * the validation shard. Both shards are plain streams (chunk_len 0) tagged "bytes". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/shard.h"
#include "common/data/tokenizer.h"

static const char USAGE[] =
    "usage: vrl data bytes --in FILE --out DIR [--val-fraction 0.1]\n"
    "       vrl data bytes --tokenizer-only --out DIR\n"
    "  Write DIR/train.bin and DIR/val.bin: every byte of FILE is one token (vocab 256);\n"
    "  the last --val-fraction of the file is the validation split. Both forms write\n"
    "  DIR/tokenizer.json, the byte tokenizer (`vrl data tokenize --tokenizer` takes it).\n";

int data_bytes(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl data bytes"};
    const char *in = NULL, *out = NULL, *v;
    double frac = 0.1;
    int r, tokenizer_only = 0;
    uint32_t *tok = NULL;
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (args_switch(&p, "--tokenizer-only")) {
            tokenizer_only = 1;
            continue;
        }
        if ((r = args_take(&p, "--in", &v)) != 0) {
            if (r < 0) goto fail;
            in = v;
            continue;
        }
        if ((r = args_take(&p, "--out", &v)) != 0) {
            if (r < 0) goto fail;
            out = v;
            continue;
        }
        if ((r = args_take(&p, "--val-fraction", &v)) != 0) {
            if (r < 0 || parse_double("--val-fraction", v, &frac) < 0) goto fail;
            continue;
        }
        fprintf(stderr, "vrl data bytes: unknown argument \"%s\"\n%s", argv[p.i], USAGE);
        return 2;
    }
    if (tokenizer_only) { /* the tokenizer alone: for corpora `vrl data tokenize` cuts (reproduce/lib.sh) */
        char path[4096];
        if (in) {
            vrl_error("--tokenizer-only takes no --in (it writes the tokenizer alone)");
            goto fail;
        }
        if (!out) {
            fprintf(stderr, "vrl data bytes: --out is required\n%s", USAGE);
            return 2;
        }
        if (snprintf(path, sizeof path, "%s/tokenizer.json", out) >= (int)sizeof path) {
            vrl_error("--out: path too long");
            goto fail;
        }
        if (make_dirs(out) < 0 || tok_write_bytes_json(path) < 0) goto fail;
        printf("wrote %s\n", path);
        return 0;
    }
    if (!in || !out) {
        fprintf(stderr, "vrl data bytes: --in and --out are required\n%s", USAGE);
        return 2;
    }
    if (!(frac > 0 && frac < 1)) {
        vrl_error("--val-fraction %g must lie in (0, 1)", frac);
        goto fail;
    }
    FILE *f = fopen_regular(in);
    if (!f) {
        goto fail;
    }
    size_t cap = 1 << 20, n = 0;
    tok = malloc(cap * sizeof *tok);
    for (int ch; tok && (ch = fgetc(f)) != EOF;) {
        if (n == cap) {
            uint32_t *t2 = realloc(tok, 2 * cap * sizeof *tok);
            if (!t2) break;
            tok = t2;
            cap *= 2;
        }
        tok[n++] = (uint32_t)ch;
    }
    int rd_err = ferror(f) || !tok;
    fclose(f);
    if (rd_err) {
        vrl_error("%s: read error or out of memory", in);
        goto fail;
    }
    size_t n_val = (size_t)(frac * (double)n);
    if (n_val < 2 || n - n_val < 2) {
        vrl_error("%s: %zu bytes are too few for a %g validation split", in, n, frac);
        goto fail;
    }
    char path[4096];
    if (make_dirs(out) < 0) goto fail;
    if (snprintf(path, sizeof path, "%s/train.bin", out) >= (int)sizeof path) {
        vrl_error("--out: path too long");
        goto fail;
    }
    if (shard_write(path, tok, n - n_val, 256, 0, "bytes") < 0) goto fail;
    snprintf(path, sizeof path, "%s/val.bin", out);
    if (shard_write(path, tok + (n - n_val), n_val, 256, 0, "bytes") < 0) goto fail;
    /* the tokenizer of these ids, so runs trained on them carry it (common/run/hf_export.c) */
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    if (tok_write_bytes_json(path) < 0) goto fail;
    printf("%s: %zu train and %zu validation byte tokens in %s/{train,val}.bin (+ tokenizer.json)\n", in, n - n_val,
           n_val, out);
    free(tok);
    return 0;
fail:
    free(tok);
    fprintf(stderr, "vrl data bytes: %s\n", vrl_last_error());
    return 1;
}
