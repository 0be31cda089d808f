/* cmd_data_select.c: `vrl data select` (formulas.md §3):
 *   OUT/SPLIT/DOMAIN.jsonl -> a seeded sample of N tokens per train domain.
 * Every output file appears atomically; a failing run removes what it wrote. */
#include "cli/args.h" /* parse_double */
#include "cli/commands.h"
#include "cli/data_common.h"
#include "cli/data_stage.h"
#include "common/base/clock.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/base/outfile.h"
#include "common/base/rng.h"
#include "common/data/shard.h"
#include "common/data/tokenizer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char SELECT_USAGE[] =
    "usage: vrl data select --in DIR --out DIR --tokenizer FILE [--seed N]\n"
    "                       [--scale S | --tokens DOMAIN=N[,DOMAIN=N...]] [--threads N]\n"
    "  From a reorganized DIR/train/DOMAIN.jsonl, write a seeded random sample of whole\n"
    "  documents holding at least N tokens (EOS included) per domain to\n"
    "  OUT/train/DOMAIN.jsonl, in sampled order. N: the formulas.md §3 budgets (CommonCrawl 10B, C4 4B,\n"
    "  Github 2B, the others 1B) times --scale (default 1), or --tokens. A domain with\n"
    "  fewer tokens is taken whole. DIR/validation and DIR/test are copied unchanged.\n";

/* A read-only mapping of a file and the offsets of its non-blank lines. */
typedef struct {
    char *data;
    size_t size;
    uint64_t *start, *len, *line_no;   /* [n] */
    uint64_t n;
} MappedLines;

static void mapped_free(MappedLines *m) {
    if (m->data && m->size) munmap(m->data, m->size);
    free(m->start);
    free(m->len);
    free(m->line_no);
    memset(m, 0, sizeof *m);
}

static int map_lines(const char *path, MappedLines *m) {
    memset(m, 0, sizeof *m);
    int fd = open_regular(path, NULL);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) { close(fd); return vrl_error("%s: cannot stat", path); }
    m->size = (size_t)st.st_size;
    if (m->size) {
        m->data = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m->data == MAP_FAILED) { close(fd); m->data = NULL; return vrl_error("%s: cannot map", path); }
    }
    close(fd);
    uint64_t cap = 0, line = 0;
    for (size_t p = 0; p < m->size;) {
        char *nl = memchr(m->data + p, '\n', m->size - p);
        size_t e = nl ? (size_t)(nl - m->data) : m->size;
        line++;
        if (!data_is_blank(m->data + p, e - p)) {
            if (m->n == cap) {
                cap = cap ? cap * 2 : 1024;
                uint64_t *a = realloc(m->start, cap * 8), *b = a ? realloc(m->len, cap * 8) : NULL;
                if (a) m->start = a;
                if (b) m->len = b;
                uint64_t *c = b ? realloc(m->line_no, cap * 8) : NULL;
                if (!c) { mapped_free(m); return vrl_error("%s: out of memory", path); }
                m->line_no = c;
            }
            m->start[m->n] = p;
            m->len[m->n] = e - p;
            m->line_no[m->n++] = line;
        }
        p = e + 1;
    }
    return 0;
}

static int copy_file_atomic(const char *src, const char *dst) {
    FILE *f = fopen_regular(src);
    if (!f) return -1;
    OutFile o;
    if (outfile_open(&o, dst)) { fclose(f); return -1; }
    char buf[1 << 16];
    size_t got;
    int rc = 0;
    while (rc == 0 && (got = fread(buf, 1, sizeof buf, f)) > 0) rc = outfile_write(&o, buf, got);
    if (rc == 0 && ferror(f)) { outfile_abort(&o); rc = vrl_error("%s: read error", src); }
    fclose(f);
    return rc ? -1 : outfile_commit(&o);
}

static int select_domain(const char *in_path, const char *out_path, const char *domain, uint64_t budget,
                         uint64_t seed, const Tokenizer *tok, int threads) {
    MappedLines ml;
    if (map_lines(in_path, &ml)) return -1;
    uint64_t *perm = malloc((ml.n ? ml.n : 1) * sizeof *perm);
    if (!perm) { mapped_free(&ml); return vrl_error("%s: out of memory", in_path); }
    /* the sample is a prefix of a seeded permutation, one stream per domain name */
    Rng r;
    rng_seed_stream(&r, seed, fnv1a64(domain, strlen(domain), FNV1A64_INIT));
    for (uint64_t i = 0; i < ml.n; i++) perm[i] = i;
    for (uint64_t i = ml.n; i > 1; i--) {
        uint64_t j = rng_below(&r, i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    BatchBuf bb;
    int rc = batch_init(&bb, 1024, tok);
    bb.b.path = in_path;
    OutFile o;
    if (rc == 0) rc = outfile_open(&o, out_path);
    uint64_t tokens = 0, docs = 0, bytes = 0;
    double t0 = now_seconds();
    for (uint64_t k = 0; rc == 0 && k < ml.n && tokens < budget;) {
        bb.b.n = 0;
        for (; k < ml.n && bb.b.n < bb.cap; k++) {
            uint64_t d = perm[k];
            bb.b.line[bb.b.n] = ml.data + ml.start[d];
            bb.b.len[bb.b.n] = ml.len[d];
            bb.b.line_no[bb.b.n++] = ml.line_no[d];
        }
        if (data_encode_batch(&bb.b, threads)) { rc = -1; break; }
        for (size_t i = 0; i < bb.b.n && tokens < budget && rc == 0; i++) {
            tokens += bb.b.ids[i].n + 1;          /* + EOS */
            docs++;
            bytes += bb.b.len[i] + 1;
            rc = outfile_write(&o, bb.b.line[i], bb.b.len[i]);
            if (rc == 0) rc = outfile_write(&o, "\n", 1);
        }
    }
    if (rc == 0) rc = outfile_commit(&o);
    else outfile_abort(&o);
    if (rc == 0) {
        double dt = now_seconds() - t0;
        fprintf(stderr, "select: %s: %.1f MB, %.2f MB/s, %.0f tokens/s\n", domain, bytes / 1e6,
                dt > 0 ? bytes / 1e6 / dt : 0.0, dt > 0 ? tokens / dt : 0.0);
        printf("train      %-24s %8llu of %8llu documents %12llu tokens (budget %llu)%s\n", domain,
               (unsigned long long)docs, (unsigned long long)ml.n, (unsigned long long)tokens,
               (unsigned long long)budget, tokens < budget ? " short: whole domain taken" : "");
    }
    batch_free(&bb);
    free(perm);
    mapped_free(&ml);
    return rc;
}

int data_select(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *tokp = NULL, *tokens = NULL;
    double scale = 1.0;
    uint64_t seed = 1234, th = (uint64_t)data_default_threads();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) { fputs(SELECT_USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        if (strcmp(a, "--in") == 0 && has) in = argv[++i];
        else if (strcmp(a, "--out") == 0 && has) out = argv[++i];
        else if (strcmp(a, "--tokenizer") == 0 && has) tokp = argv[++i];
        else if (strcmp(a, "--tokens") == 0 && has) tokens = argv[++i];
        else if (strcmp(a, "--scale") == 0 && has) {
            if (parse_double(a, argv[++i], &scale) < 0) return data_fail("select");
            if (!(scale > 0) || scale > 1e6) { vrl_error("--scale: \"%s\" is not a positive number", argv[i]); return data_fail("select"); }
        } else if (strcmp(a, "--seed") == 0 && has) { if (data_parse_u64(a, argv[++i], &seed)) return data_fail("select"); }
        else if (strcmp(a, "--threads") == 0 && has) { if (data_parse_u64(a, argv[++i], &th) || th < 1) { vrl_error("--threads: need >= 1"); return data_fail("select"); } }
        else { fprintf(stderr, "vrl data select: unknown or incomplete option %s\n%s", a, SELECT_USAGE); return 2; }
    }
    if (!in || !out || !tokp) { fprintf(stderr, "vrl data select: --in, --out and --tokenizer are required\n%s", SELECT_USAGE); return 2; }
    /* budgets: domain name -> tokens */
    char names[64][SHARD_DOMAIN_LEN + 1];
    uint64_t budget[64];
    int nb = 0;
    if (tokens) {
        char *copy = strdup(tokens), *save = NULL;
        if (!copy) { vrl_error("out of memory"); return data_fail("select"); }
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(p, '=');
            if (!eq || eq == p || eq - p > SHARD_DOMAIN_LEN || nb == 64) {
                vrl_error("--tokens: \"%s\" is not DOMAIN=N", p);
                free(copy);
                return data_fail("select");
            }
            *eq = '\0';
            if (data_parse_u64("--tokens", eq + 1, &budget[nb])) { free(copy); return data_fail("select"); }
            snprintf(names[nb++], sizeof names[0], "%s", p);
        }
        free(copy);
    } else {
        for (int i = 0; i < 7; i++) {
            snprintf(names[nb], sizeof names[0], "%s", DATA_BUDGETS[i].domain);
            budget[nb++] = (uint64_t)(DATA_BUDGETS[i].tokens * scale + 0.5);
        }
    }
    Tokenizer *tok;
    if (tok_load(tokp, &tok)) return data_fail("select");
    /* written into a stage folder, published by rename once whole (cli/data_stage.h) */
    static const char *const owned[] = {"train", "validation", "test", NULL};
    DataStage stage;
    char tdir[4200], odir[4300];
    snprintf(tdir, sizeof tdir, "%s/train", in);
    int rc = data_stage_open(&stage, out, owned);
    snprintf(odir, sizeof odir, "%s/train", stage.dir);
    if (rc == 0) rc = make_dirs(odir);
    for (int i = 0; i < nb && rc == 0; i++) {
        char ip[8400], op[8400];
        snprintf(ip, sizeof ip, "%s/%s.jsonl", tdir, names[i]);
        snprintf(op, sizeof op, "%s/%s.jsonl", odir, names[i]);
        if (!file_exists(ip)) {
            if (tokens) rc = vrl_error("%s: no such domain file", ip);
            else fprintf(stderr, "select: %s: absent, skipped\n", ip);
            continue;
        }
        rc = select_domain(ip, op, names[i], budget[i], seed, tok, (int)th);
    }
    for (int s = 1; s < 3 && rc == 0; s++) {       /* held-out splits are kept whole */
        char sd[4200], od[4300];
        snprintf(sd, sizeof sd, "%s/%s", in, DATA_SPLITS[s]);
        snprintf(od, sizeof od, "%s/%s", stage.dir, DATA_SPLITS[s]);
        Names files;
        if (data_list_dir(sd, 0, ".jsonl", NULL, &files)) { rc = -1; break; }
        if (files.n) rc = make_dirs(od);
        for (size_t f = 0; f < files.n && rc == 0; f++) {
            char a[8400], b[8400];
            snprintf(a, sizeof a, "%s/%s", sd, files.v[f]);
            snprintf(b, sizeof b, "%s/%s", od, files.v[f]);
            rc = copy_file_atomic(a, b);
        }
        names_free(&files);
    }
    if (rc == 0) rc = data_stage_publish(&stage);
    else if (stage.dir[0]) data_stage_discard(&stage);
    tok_free(tok);
    return rc ? data_fail("select") : 0;
}
