/* cmd_data_tokenize.c: `vrl data tokenize` (formulas.md §3):
 *   SPLIT/DOMAIN.jsonl[.zst] -> SPLIT/DOMAIN-NNNNN.bin shards of fixed chunks.
 * The shards are written into a stage folder and published by rename (data_stage.h): a failing
 * run removes what it wrote and leaves a previous result whole. */
#include "cli/commands.h"
#include "cli/data_common.h"
#include "cli/data_stage.h"
#include "common/base/clock.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/shard.h"
#include "common/data/textio.h"
#include "common/data/tokenizer.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OUT/tokenizer.json: the tokenizer the shards were made with. */
static int copy_tokenizer(const char *tokp, const char *out) {
    void *text;
    size_t n;
    char path[4300];
    if (read_file_all(tokp, &text, &n) < 0) return -1;
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    int rc = write_file_atomic(path, text, n);
    free(text);
    return rc;
}

static const char TOKENIZE_USAGE[] =
    "usage: vrl data tokenize --in DIR --out DIR --tokenizer FILE [--chunk 2048]\n"
    "                         [--threads N] [--shard-chunks 65536] [--eos ID]\n"
    "  Encode every DIR/SPLIT/DOMAIN.jsonl[.zst] (SPLIT: train, validation, test), put\n"
    "  EOS (default: the id of <|endoftext|>, 0 for GPT-NeoX) after each document,\n"
    "  concatenate, cut into --chunk token chunks, drop the remainder and write shards\n"
    "  OUT/SPLIT/DOMAIN-NNNNN.bin of at most --shard-chunks chunks, tagged with DOMAIN.\n"
    "  The output does not depend on --threads.\n";

typedef struct {
    const char *out_dir, *domain;
    uint32_t vocab, chunk;
    uint64_t shard_tokens;     /* chunk * shard_chunks */
    TokIds pending;            /* tokens not yet in a shard */
    int next_shard;
    uint64_t tokens_written;
    Names *written;            /* every shard path written, for cleanup on failure */
} ShardSink;

static int sink_flush(ShardSink *s, uint64_t n) {
    char path[8400];
    snprintf(path, sizeof path, "%s/%s-%05d.bin", s->out_dir, s->domain, s->next_shard);
    char **v = realloc(s->written->v, (s->written->n + 1) * sizeof *v);
    if (!v) return vrl_error("%s: out of memory", path);
    s->written->v = v;
    if (!(v[s->written->n] = strdup(path))) return vrl_error("%s: out of memory", path);
    s->written->n++;
    if (shard_write(path, s->pending.ids, n, s->vocab, s->chunk, s->domain)) return -1;
    memmove(s->pending.ids, s->pending.ids + n, (s->pending.n - n) * sizeof *s->pending.ids);
    s->pending.n -= n;
    s->next_shard++;
    s->tokens_written += n;
    return 0;
}

static int tokenize_file(const char *path, const char *odir, const char *domain, const Tokenizer *tok,
                         uint32_t eos, uint32_t chunk, uint64_t shard_chunks, int threads, const char *split,
                         Names *written) {
    LineReader *r;
    if (lr_open(path, &r)) return -1;
    BatchBuf bb;
    int rc = batch_init(&bb, 4096, tok);
    bb.b.path = path;
    ShardSink s = {odir, domain, tok_vocab_size(tok), chunk, chunk * shard_chunks, {0}, 0, 0, written};
    uint64_t docs = 0, bytes = 0, all_tokens = 0;
    double t0 = now_seconds(), last = t0;
    int eof = 0;
    while (rc == 0 && !eof) {
        bb.b.n = 0;
        bb.arena_len = 0;
        /* a batch: up to 4096 documents or 64 MB of JSON */
        while (bb.b.n < bb.cap && bb.arena_len < (64u << 20)) {
            const char *line;
            size_t len;
            int got = lr_next(r, &line, &len);
            if (got < 0) { rc = -1; break; }
            if (got == 0) { eof = 1; break; }
            if (data_is_blank(line, len)) continue;
            if (batch_add_copy(&bb, line, len, lr_line(r))) { rc = -1; break; }
        }
        if (rc) break;
        batch_seal(&bb);
        if (data_encode_batch(&bb.b, threads)) { rc = -1; break; }
        for (size_t i = 0; i < bb.b.n && rc == 0; i++) {
            TokIds *d = &bb.b.ids[i];
            for (size_t k = 0; k < d->n && rc == 0; k++) rc = tok_ids_push(&s.pending, d->ids[k]);
            if (rc == 0) rc = tok_ids_push(&s.pending, eos);
            all_tokens += d->n + 1;
            bytes += bb.b.len[i] + 1;
            docs++;
            while (rc == 0 && s.pending.n >= s.shard_tokens) rc = sink_flush(&s, s.shard_tokens);
        }
        double t = now_seconds();
        if (t - last > 2.0 && rc == 0) {
            last = t;
            fprintf(stderr, "tokenize: %s: %llu documents, %.1f MB/s, %.0f tokens/s\n", path,
                    (unsigned long long)docs, bytes / 1e6 / (t - t0), all_tokens / (t - t0));
        }
    }
    uint64_t whole = s.pending.n / chunk * chunk, dropped = s.pending.n - whole;
    if (rc == 0 && whole > 0) rc = sink_flush(&s, whole);
    lr_close(r);
    if (rc == 0) {
        double dt = now_seconds() - t0;
        fprintf(stderr, "tokenize: %s: %.1f MB in %.2f s, %.2f MB/s, %.0f tokens/s\n", path, bytes / 1e6, dt,
                dt > 0 ? bytes / 1e6 / dt : 0.0, dt > 0 ? all_tokens / dt : 0.0);
        printf("%-10s %-24s %8llu documents %12llu tokens %8llu chunks %6llu dropped %3d shards\n", split, domain,
               (unsigned long long)docs, (unsigned long long)s.tokens_written,
               (unsigned long long)(s.tokens_written / chunk), (unsigned long long)dropped, s.next_shard);
        if (s.tokens_written == 0)
            fprintf(stderr, "tokenize: %s: fewer than %u tokens, no shard written\n", path, chunk);
    }
    tok_ids_free(&s.pending);
    batch_free(&bb);
    return rc;
}

int data_tokenize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *tokp = NULL;
    uint64_t chunk = 2048, th = (uint64_t)data_default_threads(), shard_chunks = 65536, eos = UINT64_MAX;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) { fputs(TOKENIZE_USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        if (strcmp(a, "--in") == 0 && has) in = argv[++i];
        else if (strcmp(a, "--out") == 0 && has) out = argv[++i];
        else if (strcmp(a, "--tokenizer") == 0 && has) tokp = argv[++i];
        else if (strcmp(a, "--chunk") == 0 && has) { if (data_parse_u64(a, argv[++i], &chunk)) return data_fail("tokenize"); }
        else if (strcmp(a, "--threads") == 0 && has) { if (data_parse_u64(a, argv[++i], &th)) return data_fail("tokenize"); }
        else if (strcmp(a, "--shard-chunks") == 0 && has) { if (data_parse_u64(a, argv[++i], &shard_chunks)) return data_fail("tokenize"); }
        else if (strcmp(a, "--eos") == 0 && has) { if (data_parse_u64(a, argv[++i], &eos)) return data_fail("tokenize"); }
        else { fprintf(stderr, "vrl data tokenize: unknown or incomplete option %s\n%s", a, TOKENIZE_USAGE); return 2; }
    }
    if (!in || !out || !tokp) { fprintf(stderr, "vrl data tokenize: --in, --out and --tokenizer are required\n%s", TOKENIZE_USAGE); return 2; }
    if (chunk < 1 || chunk > (1u << 24) || th < 1 || th > 256 || shard_chunks < 1 ||
        shard_chunks > (1ULL << 34) / chunk) { /* divided, not multiplied: no wrap-around */
        vrl_error("--chunk must be 1..%u, --threads 1..256, --shard-chunks >= 1 (at most 2^34 tokens a shard)", 1u << 24);
        return data_fail("tokenize");
    }
    Tokenizer *tok;
    if (tok_load(tokp, &tok)) return data_fail("tokenize");
    if (eos == UINT64_MAX) {
        int64_t e = tok_token_id(tok, "<|endoftext|>");
        if (e < 0) { tok_free(tok); vrl_error("%s: no <|endoftext|> token; give --eos ID", tokp); return data_fail("tokenize"); }
        eos = (uint64_t)e;
    }
    if (eos >= tok_vocab_size(tok)) { /* the message reads the size: free the tokenizer after it */
        vrl_error("--eos %llu is not below the vocabulary size %u", (unsigned long long)eos, tok_vocab_size(tok));
        tok_free(tok);
        return data_fail("tokenize");
    }
    Names written = {0};
    /* written into a stage folder, published by rename once whole: a rerun that fails
     * leaves the previous shards as they were (cli/data_stage.h) */
    static const char *const owned[] = {"train", "validation", "test", "tokenizer.json", NULL};
    DataStage stage;
    int rc = data_stage_open(&stage, out, owned), found = 0;
    for (int sp = 0; sp < 3 && rc == 0; sp++) {
        char sd[4200], od[4300];
        snprintf(sd, sizeof sd, "%s/%s", in, DATA_SPLITS[sp]);
        snprintf(od, sizeof od, "%s/%s", stage.dir, DATA_SPLITS[sp]);
        Names files;
        if (data_list_dir(sd, 0, ".jsonl", ".jsonl.zst", &files)) { rc = -1; break; }
        if (files.n) rc = make_dirs(od);
        for (size_t f = 0; f < files.n && rc == 0; f++) {
            char path[8400], domain[256];
            snprintf(path, sizeof path, "%s/%s", sd, files.v[f]);
            snprintf(domain, sizeof domain, "%s", files.v[f]);
            *strstr(domain, ".jsonl") = '\0';
            if (data_check_domain(path, 0, domain)) { rc = -1; break; }
            found = 1;
            rc = tokenize_file(path, od, domain, tok, (uint32_t)eos, (uint32_t)chunk, shard_chunks, (int)th,
                               DATA_SPLITS[sp], &written);
        }
        names_free(&files);
    }
    if (rc == 0 && !found) rc = vrl_error("%s: no SPLIT/DOMAIN.jsonl[.zst] files (run `vrl data reorganize` first)", in);
    if (rc == 0) rc = copy_tokenizer(tokp, stage.dir); /* runs trained on this folder carry it (common/run/hf_export.c) */
    if (rc == 0) rc = data_stage_publish(&stage);
    else if (stage.dir[0]) data_stage_discard(&stage); /* leave no shard of a failed run behind */
    names_free(&written);
    tok_free(tok);
    return rc ? data_fail("tokenize") : 0;
}
