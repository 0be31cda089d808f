/* cmd_data.c: `vrl data reorganize|select|tokenize|inspect` -- from SlimPajama's
 * layout to per-domain token shards (formulas.md §3).
 *
 *   reorganize  IN/{train,validation,test}/chunkN/NAME.jsonl[.zst] -> OUT/SPLIT/DOMAIN.jsonl
 *   select      OUT/SPLIT/DOMAIN.jsonl -> a seeded sample of N tokens per train domain
 *   tokenize    SPLIT/DOMAIN.jsonl[.zst] -> SPLIT/DOMAIN-NNNNN.bin shards of fixed chunks
 *   inspect     a shard or a shard directory: counts, domains, a decoded sample
 *
 * Every output file appears atomically; a failing run removes what it wrote. Results
 * do not depend on the thread count: documents are encoded in parallel but always
 * consumed in input order. */
#include "cli/args.h" /* parse_u64: the one strict parser of numeric flags */
#include "cli/commands.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/base/outfile.h"
#include "common/base/rng.h"
#include "common/data/shard.h"
#include "common/data/textio.h"
#include "common/data/tokenizer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const SPLITS[3] = {"train", "validation", "test"};

/* formulas.md §3 token budgets of the 20B subset. */
static const struct { const char *domain; double tokens; } BUDGETS[7] = {
    {"RedPajamaCommonCrawl", 10e9}, {"RedPajamaC4", 4e9}, {"RedPajamaGithub", 2e9},
    {"RedPajamaStackExchange", 1e9}, {"RedPajamaWikipedia", 1e9}, {"RedPajamaBook", 1e9},
    {"RedPajamaArXiv", 1e9}};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *sub) {
    fprintf(stderr, "vrl data %s: %s\n", sub, vrl_last_error());
    return 1;
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* ------------------------------------------------------------------ sorted directory listing */

typedef struct { char **v; size_t n; } Names;

static void names_free(Names *n) {
    for (size_t i = 0; i < n->n; i++) free(n->v[i]);
    free(n->v);
    n->v = NULL;
    n->n = 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Entries of dir (no dot files) that are directories (want_dir) or regular files
 * ending in one of the suffixes, sorted. A missing dir gives an empty list. */
static int list_dir(const char *dir, int want_dir, const char *suf1, const char *suf2, Names *out) {
    out->v = NULL;
    out->n = 0;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : vrl_error("%s: cannot open: %s", dir, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (want_dir ? !S_ISDIR(st.st_mode)
                     : !S_ISREG(st.st_mode) || !(ends_with(e->d_name, suf1) || (suf2 && ends_with(e->d_name, suf2))))
            continue;
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            char **v = realloc(out->v, cap * sizeof *v);
            if (!v) { closedir(d); names_free(out); return vrl_error("%s: out of memory", dir); }
            out->v = v;
        }
        if (!(out->v[out->n] = strdup(e->d_name))) { closedir(d); names_free(out); return vrl_error("%s: out of memory", dir); }
        out->n++;
    }
    closedir(d);
    if (out->n > 1) qsort(out->v, out->n, sizeof *out->v, cmp_name); /* an empty folder: v is NULL */
    return 0;
}

/* A domain name becomes a file name and a shard tag: keep it short and plain. */
static int check_domain(const char *path, uint64_t line, const char *dom) {
    size_t n = strlen(dom);
    int ok = n > 0 && n <= SHARD_DOMAIN_LEN;
    for (size_t i = 0; ok && i < n; i++)
        ok = (dom[i] >= 'A' && dom[i] <= 'Z') || (dom[i] >= 'a' && dom[i] <= 'z') ||
             (dom[i] >= '0' && dom[i] <= '9') || dom[i] == '_' || dom[i] == '-';
    if (!ok)
        return vrl_error("%s:%llu: domain \"%.40s\" must be 1-%d letters, digits, '_' or '-'", path,
                         (unsigned long long)line, dom, SHARD_DOMAIN_LEN);
    return 0;
}

/* ------------------------------------------------------------------ parallel encoding */

/* One batch of documents: raw JSONL lines in, ids out, in order. */
typedef struct {
    const Tokenizer *tok;
    const char *path;          /* for error messages */
    const char **line;         /* [n] */
    size_t *len;               /* [n] */
    uint64_t *line_no;         /* [n] */
    TokIds *ids;               /* [n] */
    size_t n;
    atomic_size_t next;
    pthread_mutex_t mu;
    size_t err_at;             /* lowest failing document, n if none */
    char err[VRL_ERROR_LEN];
} Batch;

static void *encode_worker(void *arg) {
    Batch *b = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n) break;
        JsonDoc doc;
        b->ids[i].n = 0;
        int rc = jsonl_parse(b->path, b->line_no[i], b->line[i], b->len[i], 0, &doc);
        if (rc == 0) {
            rc = tok_encode(b->tok, doc.text, doc.text_len, &b->ids[i]);
            jsonl_doc_free(&doc);
        }
        if (rc) {                      /* keep the first error in document order */
            pthread_mutex_lock(&b->mu);
            if (i < b->err_at) {
                b->err_at = i;
                snprintf(b->err, sizeof b->err, "%s", vrl_last_error());
            }
            pthread_mutex_unlock(&b->mu);
        }
    }
    return NULL;
}

/* Encode b->n documents with `threads` threads. */
static int encode_batch(Batch *b, int threads) {
    atomic_store(&b->next, 0);
    b->err_at = b->n;
    pthread_mutex_init(&b->mu, NULL);
    if (threads > (int)b->n) threads = b->n ? (int)b->n : 1;
    pthread_t th[256];
    if (threads > 256) threads = 256;
    int started = 0;
    for (int i = 1; i < threads; i++, started++)
        if (pthread_create(&th[i - 1], NULL, encode_worker, b) != 0) break;
    encode_worker(b);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&b->mu);
    if (b->err_at < b->n) return vrl_error("%s", b->err);
    return 0;
}

/* Batch storage reused across batches: arrays sized for `cap` documents. */
typedef struct {
    Batch b;
    size_t cap;
    char *arena;               /* copies of the lines for readers that reuse buffers */
    size_t arena_len, arena_cap;
    size_t *arena_off;         /* [cap] */
} BatchBuf;

static int batch_init(BatchBuf *bb, size_t cap, const Tokenizer *tok) {
    memset(bb, 0, sizeof *bb);
    bb->cap = cap;
    bb->b.tok = tok;
    bb->b.line = calloc(cap, sizeof *bb->b.line);
    bb->b.len = calloc(cap, sizeof *bb->b.len);
    bb->b.line_no = calloc(cap, sizeof *bb->b.line_no);
    bb->b.ids = calloc(cap, sizeof *bb->b.ids);
    bb->arena_off = calloc(cap, sizeof *bb->arena_off);
    if (!bb->b.line || !bb->b.len || !bb->b.line_no || !bb->b.ids || !bb->arena_off)
        return vrl_error("out of memory");
    return 0;
}

static void batch_free(BatchBuf *bb) {
    for (size_t i = 0; i < bb->cap && bb->b.ids; i++) tok_ids_free(&bb->b.ids[i]);
    free(bb->b.line);
    free(bb->b.len);
    free(bb->b.line_no);
    free(bb->b.ids);
    free(bb->arena);
    free(bb->arena_off);
}

/* Copy a line into the arena as document b.n. */
static int batch_add_copy(BatchBuf *bb, const char *line, size_t len, uint64_t line_no) {
    if (bb->arena_len + len > bb->arena_cap) {
        size_t cap = bb->arena_cap ? bb->arena_cap : 1 << 20;
        while (bb->arena_len + len > cap) cap *= 2;
        char *p = realloc(bb->arena, cap);
        if (!p) return vrl_error("out of memory");
        bb->arena = p;
        bb->arena_cap = cap;
    }
    memcpy(bb->arena + bb->arena_len, line, len);
    size_t i = bb->b.n++;
    bb->arena_off[i] = bb->arena_len;
    bb->b.len[i] = len;
    bb->b.line_no[i] = line_no;
    bb->arena_len += len;
    return 0;
}

/* Point the batch's lines into the arena (after it stopped moving). */
static void batch_seal(BatchBuf *bb) {
    for (size_t i = 0; i < bb->b.n; i++) bb->b.line[i] = bb->arena + bb->arena_off[i];
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

/* ------------------------------------------------------------------ reorganize */

static const char REORG_USAGE[] =
    "usage: vrl data reorganize --in DIR --out DIR\n"
    "  Read SlimPajama's DIR/{train,validation,test}/chunk*/*.jsonl[.zst] (lines\n"
    "  {\"text\":..., \"meta\":{\"redpajama_set_name\":...}}) and write one\n"
    "  OUT/SPLIT/DOMAIN.jsonl per domain and split, lines kept as they are.\n";

typedef struct {
    char name[SHARD_DOMAIN_LEN + 1];
    OutFile f;
    uint64_t docs, bytes;
} DomOut;

static int reorganize_split(const char *in, const char *out, const char *split, int *found) {
    char sdir[4200], odir[4200];
    snprintf(sdir, sizeof sdir, "%s/%s", in, split);
    snprintf(odir, sizeof odir, "%s/%s", out, split);
    Names chunks;
    if (list_dir(sdir, 1, NULL, NULL, &chunks)) return -1;
    DomOut dom[64];
    int nd = 0, rc = 0;
    double t0 = now_s();
    uint64_t total_in = 0;
    for (size_t c = 0; c < chunks.n && rc == 0; c++) {
        if (strncmp(chunks.v[c], "chunk", 5) != 0) continue;
        char cdir[8400];
        snprintf(cdir, sizeof cdir, "%s/%s", sdir, chunks.v[c]);
        Names files;
        if (list_dir(cdir, 0, ".jsonl", ".jsonl.zst", &files)) { rc = -1; break; }
        for (size_t f = 0; f < files.n && rc == 0; f++) {
            char path[12800];
            snprintf(path, sizeof path, "%s/%s", cdir, files.v[f]);
            LineReader *r;
            if (lr_open(path, &r)) { rc = -1; break; }
            if (nd == 0 && make_dirs(odir)) { lr_close(r); rc = -1; break; }
            *found = 1;
            const char *line;
            size_t len;
            int got;
            uint64_t docs = 0;
            while (rc == 0 && (got = lr_next(r, &line, &len)) == 1) {
                if (is_blank(line, len)) continue;
                JsonDoc doc;
                if (jsonl_parse(path, lr_line(r), line, len, 1, &doc)) { rc = -1; break; }
                int k = -1;
                for (int i = 0; i < nd; i++)
                    if (strcmp(dom[i].name, doc.domain) == 0) k = i;
                if (k < 0) {
                    if (check_domain(path, lr_line(r), doc.domain)) rc = -1;
                    else if (nd == 64) rc = vrl_error("%s:%llu: more than 64 domains", path, (unsigned long long)lr_line(r));
                    else {
                        k = nd;
                        memset(&dom[k], 0, sizeof dom[k]);
                        snprintf(dom[k].name, sizeof dom[k].name, "%s", doc.domain);
                        char op[8400];
                        snprintf(op, sizeof op, "%s/%s.jsonl", odir, doc.domain);
                        if (outfile_open(&dom[k].f, op)) rc = -1;
                        else nd++;
                    }
                }
                jsonl_doc_free(&doc);
                if (rc == 0 && (outfile_write(&dom[k].f, line, len) || outfile_write(&dom[k].f, "\n", 1))) rc = -1;
                if (rc == 0) { dom[k].docs++; dom[k].bytes += len + 1; docs++; }
            }
            if (rc == 0 && got < 0) rc = -1;
            total_in += lr_bytes_in(r);
            lr_close(r);
            if (rc == 0) {
                double dt = now_s() - t0;
                fprintf(stderr, "reorganize: %s: %llu documents; %.1f MB read, %.1f MB/s\n", path,
                        (unsigned long long)docs, total_in / 1e6, dt > 0 ? total_in / 1e6 / dt : 0.0);
            }
        }
        names_free(&files);
    }
    names_free(&chunks);
    for (int i = 0; i < nd; i++) {
        if (rc == 0) {
            if (outfile_commit(&dom[i].f)) rc = -1;
            else printf("%-10s %-24s %8llu documents %12llu bytes\n", split, dom[i].name,
                        (unsigned long long)dom[i].docs, (unsigned long long)dom[i].bytes);
        } else {
            outfile_abort(&dom[i].f);
        }
    }
    return rc;
}

static int data_reorganize(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) { fputs(REORG_USAGE, stdout); return 0; }
        if (strcmp(argv[i], "--in") == 0 && i + 1 < argc) in = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else { fprintf(stderr, "vrl data reorganize: unknown or incomplete option %s\n%s", argv[i], REORG_USAGE); return 2; }
    }
    if (!in || !out) { fprintf(stderr, "vrl data reorganize: --in and --out are required\n%s", REORG_USAGE); return 2; }
    int found = 0;
    for (int s = 0; s < 3; s++)
        if (reorganize_split(in, out, SPLITS[s], &found)) return fail("reorganize");
    if (!found) {
        vrl_error("%s: no SPLIT/chunk*/*.jsonl[.zst] files", in);
        return fail("reorganize");
    }
    return 0;
}

/* ------------------------------------------------------------------ select */

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
        if (!is_blank(m->data + p, e - p)) {
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
    double t0 = now_s();
    for (uint64_t k = 0; rc == 0 && k < ml.n && tokens < budget;) {
        bb.b.n = 0;
        for (; k < ml.n && bb.b.n < bb.cap; k++) {
            uint64_t d = perm[k];
            bb.b.line[bb.b.n] = ml.data + ml.start[d];
            bb.b.len[bb.b.n] = ml.len[d];
            bb.b.line_no[bb.b.n++] = ml.line_no[d];
        }
        if (encode_batch(&bb.b, threads)) { rc = -1; break; }
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
        double dt = now_s() - t0;
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

static int data_select(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *tokp = NULL, *tokens = NULL;
    double scale = 1.0;
    uint64_t seed = 1234, th = (uint64_t)default_threads();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) { fputs(SELECT_USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        if (strcmp(a, "--in") == 0 && has) in = argv[++i];
        else if (strcmp(a, "--out") == 0 && has) out = argv[++i];
        else if (strcmp(a, "--tokenizer") == 0 && has) tokp = argv[++i];
        else if (strcmp(a, "--tokens") == 0 && has) tokens = argv[++i];
        else if (strcmp(a, "--scale") == 0 && has) {
            if (parse_double(a, argv[++i], &scale) < 0) return fail("select");
            if (!(scale > 0) || scale > 1e6) { vrl_error("--scale: \"%s\" is not a positive number", argv[i]); return fail("select"); }
        } else if (strcmp(a, "--seed") == 0 && has) { if (parse_u64(a, argv[++i], &seed)) return fail("select"); }
        else if (strcmp(a, "--threads") == 0 && has) { if (parse_u64(a, argv[++i], &th) || th < 1) { vrl_error("--threads: need >= 1"); return fail("select"); } }
        else { fprintf(stderr, "vrl data select: unknown or incomplete option %s\n%s", a, SELECT_USAGE); return 2; }
    }
    if (!in || !out || !tokp) { fprintf(stderr, "vrl data select: --in, --out and --tokenizer are required\n%s", SELECT_USAGE); return 2; }
    /* budgets: domain name -> tokens */
    char names[64][SHARD_DOMAIN_LEN + 1];
    uint64_t budget[64];
    int nb = 0;
    if (tokens) {
        char *copy = strdup(tokens), *save = NULL;
        if (!copy) { vrl_error("out of memory"); return fail("select"); }
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(p, '=');
            if (!eq || eq == p || eq - p > SHARD_DOMAIN_LEN || nb == 64) {
                vrl_error("--tokens: \"%s\" is not DOMAIN=N", p);
                free(copy);
                return fail("select");
            }
            *eq = '\0';
            if (parse_u64("--tokens", eq + 1, &budget[nb])) { free(copy); return fail("select"); }
            snprintf(names[nb++], sizeof names[0], "%s", p);
        }
        free(copy);
    } else {
        for (int i = 0; i < 7; i++) {
            snprintf(names[nb], sizeof names[0], "%s", BUDGETS[i].domain);
            budget[nb++] = (uint64_t)(BUDGETS[i].tokens * scale + 0.5);
        }
    }
    Tokenizer *tok;
    if (tok_load(tokp, &tok)) return fail("select");
    char tdir[4200], odir[4200];
    snprintf(tdir, sizeof tdir, "%s/train", in);
    snprintf(odir, sizeof odir, "%s/train", out);
    int rc = make_dirs(odir);
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
        char sd[4200], od[4200];
        snprintf(sd, sizeof sd, "%s/%s", in, SPLITS[s]);
        snprintf(od, sizeof od, "%s/%s", out, SPLITS[s]);
        Names files;
        if (list_dir(sd, 0, ".jsonl", NULL, &files)) { rc = -1; break; }
        if (files.n) rc = make_dirs(od);
        for (size_t f = 0; f < files.n && rc == 0; f++) {
            char a[8400], b[8400];
            snprintf(a, sizeof a, "%s/%s", sd, files.v[f]);
            snprintf(b, sizeof b, "%s/%s", od, files.v[f]);
            rc = copy_file_atomic(a, b);
        }
        names_free(&files);
    }
    tok_free(tok);
    return rc ? fail("select") : 0;
}

/* ------------------------------------------------------------------ tokenize */

/* OUT/tokenizer.json: the tokenizer the shards were made with. */
static int copy_tokenizer(const char *tokp, const char *out) {
    void *text;
    size_t n;
    char path[4200];
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
    double t0 = now_s(), last = t0;
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
            if (is_blank(line, len)) continue;
            if (batch_add_copy(&bb, line, len, lr_line(r))) { rc = -1; break; }
        }
        if (rc) break;
        batch_seal(&bb);
        if (encode_batch(&bb.b, threads)) { rc = -1; break; }
        for (size_t i = 0; i < bb.b.n && rc == 0; i++) {
            TokIds *d = &bb.b.ids[i];
            for (size_t k = 0; k < d->n && rc == 0; k++) rc = tok_ids_push(&s.pending, d->ids[k]);
            if (rc == 0) rc = tok_ids_push(&s.pending, eos);
            all_tokens += d->n + 1;
            bytes += bb.b.len[i] + 1;
            docs++;
            while (rc == 0 && s.pending.n >= s.shard_tokens) rc = sink_flush(&s, s.shard_tokens);
        }
        double t = now_s();
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
        double dt = now_s() - t0;
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

static int data_tokenize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *tokp = NULL;
    uint64_t chunk = 2048, th = (uint64_t)default_threads(), shard_chunks = 65536, eos = UINT64_MAX;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) { fputs(TOKENIZE_USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        if (strcmp(a, "--in") == 0 && has) in = argv[++i];
        else if (strcmp(a, "--out") == 0 && has) out = argv[++i];
        else if (strcmp(a, "--tokenizer") == 0 && has) tokp = argv[++i];
        else if (strcmp(a, "--chunk") == 0 && has) { if (parse_u64(a, argv[++i], &chunk)) return fail("tokenize"); }
        else if (strcmp(a, "--threads") == 0 && has) { if (parse_u64(a, argv[++i], &th)) return fail("tokenize"); }
        else if (strcmp(a, "--shard-chunks") == 0 && has) { if (parse_u64(a, argv[++i], &shard_chunks)) return fail("tokenize"); }
        else if (strcmp(a, "--eos") == 0 && has) { if (parse_u64(a, argv[++i], &eos)) return fail("tokenize"); }
        else { fprintf(stderr, "vrl data tokenize: unknown or incomplete option %s\n%s", a, TOKENIZE_USAGE); return 2; }
    }
    if (!in || !out || !tokp) { fprintf(stderr, "vrl data tokenize: --in, --out and --tokenizer are required\n%s", TOKENIZE_USAGE); return 2; }
    if (chunk < 1 || chunk > (1u << 24) || th < 1 || th > 256 || shard_chunks < 1 ||
        shard_chunks > (1ULL << 34) / chunk) { /* divided, not multiplied: no wrap-around */
        vrl_error("--chunk must be 1..%u, --threads 1..256, --shard-chunks >= 1 (at most 2^34 tokens a shard)", 1u << 24);
        return fail("tokenize");
    }
    Tokenizer *tok;
    if (tok_load(tokp, &tok)) return fail("tokenize");
    if (eos == UINT64_MAX) {
        int64_t e = tok_token_id(tok, "<|endoftext|>");
        if (e < 0) { tok_free(tok); vrl_error("%s: no <|endoftext|> token; give --eos ID", tokp); return fail("tokenize"); }
        eos = (uint64_t)e;
    }
    if (eos >= tok_vocab_size(tok)) { /* the message reads the size: free the tokenizer after it */
        vrl_error("--eos %llu is not below the vocabulary size %u", (unsigned long long)eos, tok_vocab_size(tok));
        tok_free(tok);
        return fail("tokenize");
    }
    Names written = {0};
    int rc = 0, found = 0;
    for (int sp = 0; sp < 3 && rc == 0; sp++) {
        char sd[4200], od[4200];
        snprintf(sd, sizeof sd, "%s/%s", in, SPLITS[sp]);
        snprintf(od, sizeof od, "%s/%s", out, SPLITS[sp]);
        Names files;
        if (list_dir(sd, 0, ".jsonl", ".jsonl.zst", &files)) { rc = -1; break; }
        if (files.n) rc = make_dirs(od);
        for (size_t f = 0; f < files.n && rc == 0; f++) {
            char path[8400], domain[256];
            snprintf(path, sizeof path, "%s/%s", sd, files.v[f]);
            snprintf(domain, sizeof domain, "%s", files.v[f]);
            *strstr(domain, ".jsonl") = '\0';
            if (check_domain(path, 0, domain)) { rc = -1; break; }
            found = 1;
            rc = tokenize_file(path, od, domain, tok, (uint32_t)eos, (uint32_t)chunk, shard_chunks, (int)th,
                               SPLITS[sp], &written);
        }
        names_free(&files);
    }
    if (rc == 0 && !found) rc = vrl_error("%s: no SPLIT/DOMAIN.jsonl[.zst] files (run `vrl data reorganize` first)", in);
    if (rc == 0) rc = copy_tokenizer(tokp, out); /* runs trained on this folder carry it (common/run/hf_export.c) */
    if (rc) {                                 /* leave no shard of a failed run behind */
        for (size_t i = 0; i < written.n; i++) unlink(written.v[i]);
    }
    names_free(&written);
    tok_free(tok);
    return rc ? fail("tokenize") : 0;
}

/* ------------------------------------------------------------------ inspect */

static const char INSPECT_USAGE[] =
    "usage: vrl data inspect --in PATH [--tokenizer FILE] [--chunk K] [--n N]\n"
    "  --in PATH is a shard or a directory of SPLIT/*.bin shards: print token, chunk and\n"
    "  shard counts per split and domain. For a shard with --tokenizer, also decode the\n"
    "  first N (default 64) tokens of chunk K (default 0).\n";

static int inspect_shard(const char *path, const char *tokp, uint64_t chunk_i, uint64_t n) {
    Shard s;
    if (shard_read(path, &s)) return -1;
    uint64_t chunks = s.chunk_len ? s.n_tokens / s.chunk_len : 0;
    printf("%s: domain \"%s\", %llu tokens, chunk_len %u, %llu chunks, vocab_size %u, %u-byte ids\n", path, s.domain,
           (unsigned long long)s.n_tokens, s.chunk_len, (unsigned long long)chunks, s.vocab_size, s.token_bytes);
    int rc = 0;
    if (tokp) {
        uint64_t len = s.chunk_len ? s.chunk_len : s.n_tokens, start = chunk_i * len;
        if (start >= s.n_tokens) rc = vrl_error("%s: no chunk %llu", path, (unsigned long long)chunk_i);
        Tokenizer *t = NULL;
        if (rc == 0) rc = tok_load(tokp, &t);
        if (rc == 0) {
            if (n > len) n = len;
            if (start + n > s.n_tokens) n = s.n_tokens - start;
            char *text;
            size_t tn;
            rc = tok_decode(t, s.tokens + start, n, 0, &text, &tn);
            if (rc == 0) {
                printf("chunk %llu, first %llu tokens:\n", (unsigned long long)chunk_i, (unsigned long long)n);
                for (uint64_t i = 0; i < n; i++) printf(i ? " %u" : "%u", s.tokens[start + i]);
                printf("\n---\n%.*s\n---\n", (int)tn, text);
                free(text);
            }
            tok_free(t);
        }
    }
    shard_free(&s);
    return rc;
}

static int inspect_dir(const char *dir) {
    int found = 0;
    for (int sp = 0; sp < 3; sp++) {
        char sd[4200];
        snprintf(sd, sizeof sd, "%s/%s", dir, SPLITS[sp]);
        Names files;
        if (list_dir(sd, 0, ".bin", NULL, &files)) return -1;
        /* files are DOMAIN-NNNNN.bin sorted, so one domain's shards are adjacent */
        char cur[SHARD_DOMAIN_LEN + 1] = "";
        uint64_t tok = 0, ch = 0, total = 0;
        int shards = 0;
        for (size_t f = 0; f <= files.n; f++) {
            Shard s = {0};
            if (f < files.n) {
                char p[8400];
                snprintf(p, sizeof p, "%s/%s", sd, files.v[f]);
                if (shard_read(p, &s)) { names_free(&files); return -1; }
            }
            if (shards && (f == files.n || strcmp(cur, s.domain) != 0)) {
                printf("%-10s %-24s %12llu tokens %8llu chunks %3d shards\n", SPLITS[sp], cur,
                       (unsigned long long)tok, (unsigned long long)ch, shards);
                tok = ch = 0;
                shards = 0;
            }
            if (f < files.n) {
                snprintf(cur, sizeof cur, "%s", s.domain);
                tok += s.n_tokens;
                total += s.n_tokens;
                ch += s.chunk_len ? s.n_tokens / s.chunk_len : 0;
                shards++;
                found = 1;
                shard_free(&s);
            }
        }
        if (files.n) printf("%-10s %-24s %12llu tokens\n", SPLITS[sp], "(all)", (unsigned long long)total);
        names_free(&files);
    }
    if (!found) return vrl_error("%s: no SPLIT/*.bin shards", dir);
    return 0;
}

static int data_inspect(int argc, char **argv) {
    const char *path = NULL, *tokp = NULL;
    uint64_t chunk = 0, n = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) { fputs(INSPECT_USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        if (strcmp(a, "--in") == 0 && has) path = argv[++i];
        else if (strcmp(a, "--tokenizer") == 0 && has) tokp = argv[++i];
        else if (strcmp(a, "--chunk") == 0 && has) { if (parse_u64(a, argv[++i], &chunk)) return fail("inspect"); }
        else if (strcmp(a, "--n") == 0 && has) { if (parse_u64(a, argv[++i], &n)) return fail("inspect"); }
        else { fprintf(stderr, "vrl data inspect: unknown or incomplete option %s\n%s", a, INSPECT_USAGE); return 2; }
    }
    if (!path) { fprintf(stderr, "vrl data inspect: --in PATH is required\n%s", INSPECT_USAGE); return 2; }
    struct stat st;
    if (stat(path, &st) != 0) { vrl_error("%s: %s", path, strerror(errno)); return fail("inspect"); }
    int rc = S_ISDIR(st.st_mode) ? inspect_dir(path) : inspect_shard(path, tokp, chunk, n);
    return rc ? fail("inspect") : 0;
}

/* ------------------------------------------------------------------ dispatch */

static const char DATA_USAGE[] =
    "usage: vrl data SUBCOMMAND [ARGS]   (each takes --help)\n"
    "  reorganize  SlimPajama chunk files -> one JSONL per domain and split\n"
    "  select      a seeded sample of N tokens per domain (formulas.md §3 budgets, --scale)\n"
    "  tokenize    JSONL -> EOS-separated, chunked token shards per domain\n"
    "  inspect     counts, domains and a decoded sample of shards\n"
    "  bytes       a text file -> byte-level train/val shards (vocab 256, small CPU runs)\n";

int cmd_data(int argc, char **argv) {
    if (argc < 2) { fputs(DATA_USAGE, stderr); return 2; }
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) { fputs(DATA_USAGE, stdout); return 0; }
    if (strcmp(sub, "reorganize") == 0) return data_reorganize(argc - 1, argv + 1);
    if (strcmp(sub, "select") == 0) return data_select(argc - 1, argv + 1);
    if (strcmp(sub, "tokenize") == 0) return data_tokenize(argc - 1, argv + 1);
    if (strcmp(sub, "inspect") == 0) return data_inspect(argc - 1, argv + 1);
    if (strcmp(sub, "bytes") == 0) return data_bytes(argc - 1, argv + 1); /* cmd_data_bytes.c */
    fprintf(stderr, "vrl data: unknown subcommand \"%s\"\n%s", sub, DATA_USAGE);
    return 2;
}
