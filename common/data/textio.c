/* textio.c: line reading over plain and zstd files, and JSONL document parsing. */
#include "common/data/textio.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

struct LineReader {
    char path[4096];
    FILE *f;
    ZSTD_DStream *zs;          /* NULL for plain files */
    char *in;                  /* [in_cap] compressed input */
    size_t in_cap;
    ZSTD_inBuffer zin;
    size_t last_ret;           /* last ZSTD_decompressStream return: 0 = frame complete */
    char *buf;                 /* [cap] decompressed bytes; [start, end) not yet returned */
    size_t cap, start, end;
    int eof;
    uint64_t line, bytes_in;
};

int lr_open(const char *path, LineReader **out) {
    *out = NULL;
    LineReader *r = calloc(1, sizeof *r);
    if (!r) return vrl_error("%s: out of memory", path);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->f = fopen_regular(path); /* a FIFO would hang the reader */
    if (!r->f) {
        free(r);
        return -1;
    }
    size_t n = strlen(path);
    if (n > 4 && strcmp(path + n - 4, ".zst") == 0) {
        r->zs = ZSTD_createDStream();
        r->in_cap = ZSTD_DStreamInSize();
        r->in = malloc(r->in_cap);
        if (!r->zs || !r->in) { lr_close(r); return vrl_error("%s: out of memory", path); }
        ZSTD_initDStream(r->zs);
        r->zin = (ZSTD_inBuffer){r->in, 0, 0};
    }
    r->cap = 1 << 20;
    r->buf = malloc(r->cap);
    if (!r->buf) { lr_close(r); return vrl_error("%s: out of memory", path); }
    *out = r;
    return 0;
}

/* Append more decompressed bytes after r->end; sets r->eof when the input is done. */
static int refill(LineReader *r) {
    if (r->start > 0) {                      /* slide unread bytes to the front */
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        char *p = realloc(r->buf, r->cap * 2);
        if (!p) return vrl_error("%s: out of memory (line longer than %zu bytes)", r->path, r->cap);
        r->buf = p;
        r->cap *= 2;
    }
    if (!r->zs) {
        size_t got = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
        if (got == 0) {
            if (ferror(r->f)) return vrl_error("%s: read error", r->path);
            r->eof = 1;
        }
        r->end += got;
        r->bytes_in += got;
        return 0;
    }
    for (;;) {
        if (r->zin.pos == r->zin.size) {
            size_t got = fread(r->in, 1, r->in_cap, r->f);
            if (got == 0) {
                if (ferror(r->f)) return vrl_error("%s: read error", r->path);
                if (r->last_ret != 0)
                    return vrl_error("%s: truncated zstd stream (near line %llu)", r->path,
                                     (unsigned long long)r->line + 1);
                if (r->bytes_in == 0) /* not even a frame header: no zstd file holds 0 bytes */
                    return vrl_error("%s: empty file (a .zst file holds at least one zstd frame)", r->path);
                r->eof = 1;
                return 0;
            }
            r->bytes_in += got;
            r->zin = (ZSTD_inBuffer){r->in, got, 0};
        }
        ZSTD_outBuffer zout = {r->buf + r->end, r->cap - r->end, 0};
        size_t ret = ZSTD_decompressStream(r->zs, &zout, &r->zin);
        if (ZSTD_isError(ret))
            return vrl_error("%s: corrupt zstd stream (near line %llu): %s", r->path,
                             (unsigned long long)r->line + 1, ZSTD_getErrorName(ret));
        r->last_ret = ret;
        r->end += zout.pos;
        if (zout.pos > 0) return 0;
    }
}

int lr_next(LineReader *r, const char **line, size_t *len) {
    size_t scanned = r->start;
    for (;;) {
        char *nl = memchr(r->buf + scanned, '\n', r->end - scanned);
        if (nl) {
            *line = r->buf + r->start;
            *len = (size_t)(nl - (r->buf + r->start));
            r->start = (size_t)(nl - r->buf) + 1;
            r->line++;
            return 1;
        }
        if (r->eof) {
            if (r->end == r->start) return 0;
            *line = r->buf + r->start;         /* last line without '\n' */
            *len = r->end - r->start;
            r->start = r->end;
            r->line++;
            return 1;
        }
        size_t off = r->end - r->start;       /* bytes already searched */
        if (refill(r)) return -1;
        scanned = r->start + off;
    }
}

uint64_t lr_line(const LineReader *r) { return r->line; }
uint64_t lr_bytes_in(const LineReader *r) { return r->bytes_in; }

void lr_close(LineReader *r) {
    if (!r) return;
    if (r->f) fclose(r->f);
    if (r->zs) ZSTD_freeDStream(r->zs);
    free(r->in);
    free(r->buf);
    free(r);
}

int jsonl_parse(const char *path, uint64_t line, const char *buf, size_t len, int need_domain,
                JsonDoc *doc) {
    memset(doc, 0, sizeof *doc);
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
    if (!root)
        return vrl_error("%s:%llu: invalid JSON: %s", path, (unsigned long long)line, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return vrl_error("%s:%llu: not a JSON object", path, (unsigned long long)line);
    }
    json_t *text = json_object_get(root, "text");
    if (!json_is_string(text)) {
        json_decref(root);
        return vrl_error("%s:%llu: missing \"text\" string field", path, (unsigned long long)line);
    }
    doc->root = root;
    doc->text = json_string_value(text);
    doc->text_len = json_string_length(text);
    if (need_domain) {
        json_t *d = json_object_get(json_object_get(root, "meta"), "redpajama_set_name");
        if (!json_is_string(d)) {
            json_decref(root);
            memset(doc, 0, sizeof *doc);
            return vrl_error("%s:%llu: missing \"meta\".\"redpajama_set_name\" string field", path,
                             (unsigned long long)line);
        }
        doc->domain = json_string_value(d);
    }
    return 0;
}

void jsonl_doc_free(JsonDoc *doc) {
    if (doc->root) json_decref(doc->root);
    memset(doc, 0, sizeof *doc);
}
