/* data_common.c: helpers of the `vrl data` subcommands (data_common.h). */
#include "cli/data_common.h"
#include "cli/args.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/data/shard.h"
#include "common/data/textio.h"

const char *const DATA_SPLITS[3] = {"train", "validation", "test"};

const DataBudget DATA_BUDGETS[7] = {
    {"RedPajamaCommonCrawl", 10e9}, {"RedPajamaC4", 4e9}, {"RedPajamaGithub", 2e9},
    {"RedPajamaStackExchange", 1e9}, {"RedPajamaWikipedia", 1e9}, {"RedPajamaBook", 1e9},
    {"RedPajamaArXiv", 1e9}};

int data_fail(const char *sub) {
    fprintf(stderr, "vrl data %s: %s\n", sub, vrl_last_error());
    return 1;
}

int data_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* A non-negative integer option value, through the one strict parser of numeric flags
 * (cli/args.c: digits only, overflow named). */
int data_parse_u64(const char *opt, const char *s, uint64_t *v) { return parse_u64(opt, s, v); }

int data_ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* ------------------------------------------------------------------ sorted directory listing */

void names_free(Names *n) {
    for (size_t i = 0; i < n->n; i++) free(n->v[i]);
    free(n->v);
    n->v = NULL;
    n->n = 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Entries of dir (no dot files) that are directories (want_dir) or regular files
 * ending in one of the suffixes, sorted. A missing dir gives an empty list. */
int data_list_dir(const char *dir, int want_dir, const char *suf1, const char *suf2, Names *out) {
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
                     : !S_ISREG(st.st_mode) || !(data_ends_with(e->d_name, suf1) || (suf2 && data_ends_with(e->d_name, suf2))))
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
int data_check_domain(const char *path, uint64_t line, const char *dom) {
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
int data_encode_batch(Batch *b, int threads) {
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

int batch_init(BatchBuf *bb, size_t cap, const Tokenizer *tok) {
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

void batch_free(BatchBuf *bb) {
    for (size_t i = 0; i < bb->cap && bb->b.ids; i++) tok_ids_free(&bb->b.ids[i]);
    free(bb->b.line);
    free(bb->b.len);
    free(bb->b.line_no);
    free(bb->b.ids);
    free(bb->arena);
    free(bb->arena_off);
}

/* Copy a line into the arena as document b.n. */
int batch_add_copy(BatchBuf *bb, const char *line, size_t len, uint64_t line_no) {
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
void batch_seal(BatchBuf *bb) {
    for (size_t i = 0; i < bb->b.n; i++) bb->b.line[i] = bb->arena + bb->arena_off[i];
}

int data_is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}
