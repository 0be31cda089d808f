/* data_common.h: what the `vrl data` subcommands share (cmd_data_*.c): the split names,
 * the formulas.md §3 budgets, sorted directory listings, and documents encoded in parallel
 * but consumed in input order (so results do not depend on the thread count). */
#ifndef VRL_DATA_COMMON_H
#define VRL_DATA_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/error.h"
#include "common/data/tokenizer.h"

extern const char *const DATA_SPLITS[3]; /* train, validation, test */

/* formulas.md §3 token budgets of the 20B subset. */
typedef struct {
    const char *domain;
    double tokens;
} DataBudget;
extern const DataBudget DATA_BUDGETS[7];

/* Print "vrl data SUB: <last error>" on stderr; returns 1 (the exit status). */
int data_fail(const char *sub);
/* Online cores, the default --threads. */
int data_default_threads(void);
/* Parse a non-negative integer option value. */
int data_parse_u64(const char *opt, const char *s, uint64_t *v);
int data_ends_with(const char *s, const char *suf);

typedef struct { char **v; size_t n; } Names;
void names_free(Names *n);
/* The entries of dir (directories if want_dir, else files ending in suf1 or suf2), sorted. */
int data_list_dir(const char *dir, int want_dir, const char *suf1, const char *suf2, Names *out);
/* A document's domain tag must name a file: no '/', not empty. */
int data_check_domain(const char *path, uint64_t line, const char *dom);

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
/* Encode every document of b on `threads` threads; the first failing document's error. */
int data_encode_batch(Batch *b, int threads);

/* Batch storage reused across batches: arrays sized for `cap` documents. */
typedef struct {
    Batch b;
    size_t cap;
    char *arena;               /* copies of the lines for readers that reuse buffers */
    size_t arena_len, arena_cap;
    size_t *arena_off;         /* [cap] */
} BatchBuf;
int batch_init(BatchBuf *bb, size_t cap, const Tokenizer *tok);
void batch_free(BatchBuf *bb);
int batch_add_copy(BatchBuf *bb, const char *line, size_t len, uint64_t line_no);
void batch_seal(BatchBuf *bb);
/* 1 if the n bytes at s are all whitespace. */
int data_is_blank(const char *s, size_t n);

#endif
