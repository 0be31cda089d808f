/* textio.h: reading line-oriented text corpora: plain or zstd-compressed files read
 * line by line with streaming decompression, and SlimPajama-style JSONL records
 * ({"text": ..., "meta": {"redpajama_set_name": ...}}) checked field by field.
 * Errors name the file and the 1-based line. */
#ifndef VRL_TEXTIO_H
#define VRL_TEXTIO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct LineReader LineReader;

/* Open a file; names ending in ".zst" are decompressed as a zstd stream. */
int lr_open(const char *path, LineReader **out);

/* The next line without its '\n' (valid until the next call). Returns 1 for a line,
 * 0 at end of file, -1 on error (corrupt or truncated zstd data, read failure). */
int lr_next(LineReader *r, const char **line, size_t *len);

/* 1-based number of the line last returned. */
uint64_t lr_line(const LineReader *r);

/* Compressed (or plain) bytes consumed so far, for progress reports. */
uint64_t lr_bytes_in(const LineReader *r);

void lr_close(LineReader *r);

/* A parsed JSONL document. `text` and `domain` point into `root`. */
typedef struct {
    json_t *root;
    const char *text;          /* UTF-8, text_len bytes (may contain NULs) */
    size_t text_len;
    const char *domain;        /* meta.redpajama_set_name, or NULL when not asked for */
} JsonDoc;

/* Parse one line of `path` (line number `line`). need_domain: also require
 * meta.redpajama_set_name. On error nothing needs freeing. */
int jsonl_parse(const char *path, uint64_t line, const char *buf, size_t len, int need_domain,
                JsonDoc *doc);
void jsonl_doc_free(JsonDoc *doc);

#endif
