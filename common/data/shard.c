/* shard.c: token shards (layout in shard.h). The reader trusts nothing in the file:
 * every header field, the size, the checksum and each id is checked before the tokens
 * are handed out, and every error names the file and what is wrong with it. */
#include "common/data/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/shard_guard.h"

/* Explicit little-endian access: the format is LE whatever the host is. */
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(unsigned char *p, uint32_t x) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(x >> (8 * i));
}
static void wr64(unsigned char *p, uint64_t x) {
    wr32(p, (uint32_t)x);
    wr32(p + 4, (uint32_t)(x >> 32));
}

/* A character allowed at position i of a domain tag. */
static int domain_char(char c, int i) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           (c == '.' && i > 0);
}

/* Bytes of the mapping verified per window before the window is released (madvise). */
#define VERIFY_WINDOW ((size_t)16 << 20)

/* The streamed pass: checksum and id range over the ids, one window at a time; each
 * window's pages are dropped from the resident set once read, so a multi-GB shard is
 * verified in a bounded amount of memory (the pages stay in the kernel's page cache). */
static int verify_ids(const ShardMap *s, uint64_t checksum, uint32_t version) {
    const uint64_t bytes = s->n_tokens * s->token_bytes;
    const unsigned char *base = s->map;
    /* version 2 covers the header fields too; version 1 only the ids (its chunk_len and
     * vocab_size are range-checked by shard_map, nothing more) */
    uint64_t sum = version >= 2 ? fnv1a64(base, 56, FNV1A64_INIT) : FNV1A64_INIT;
    uint64_t first_bad = UINT64_MAX;
    uint32_t bad_id = 0;
    /* windows are page-aligned in the mapping (VERIFY_WINDOW is a multiple of any page size) */
    for (uint64_t w = 0; w < SHARD_HEADER_BYTES + bytes; w += VERIFY_WINDOW) {
        uint64_t lo = w < SHARD_HEADER_BYTES ? SHARD_HEADER_BYTES : w;
        uint64_t hi = w + VERIFY_WINDOW < SHARD_HEADER_BYTES + bytes ? w + VERIFY_WINDOW : SHARD_HEADER_BYTES + bytes;
        sum = fnv1a64(base + lo, hi - lo, sum);
        if (first_bad == UINT64_MAX) {
            /* windows start at even (and multiple-of-4) offsets from the ids, so no id straddles two */
            for (uint64_t b = lo; b < hi; b += s->token_bytes) {
                uint32_t id = s->token_bytes == 2 ? (uint32_t)base[b] | (uint32_t)base[b + 1] << 8 : rd32(base + b);
                if (id >= s->vocab_size) {
                    first_bad = (b - SHARD_HEADER_BYTES) / s->token_bytes;
                    bad_id = id;
                    break;
                }
            }
        }
        madvise((void *)(base + w), hi - w, MADV_DONTNEED);
    }
    if (sum != checksum)
        return vrl_error("%s: checksum mismatch (stored %016llx, computed %016llx): corrupt file", s->path,
                         (unsigned long long)checksum, (unsigned long long)sum);
    if (first_bad != UINT64_MAX)
        return vrl_error("%s: token %llu has id %u >= vocab_size %u", s->path, (unsigned long long)first_bad, bad_id,
                         s->vocab_size);
    return 0;
}

int shard_map(const char *path, ShardMap *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    uint64_t size;
    int fd = open_regular(path, &size); /* a FIFO would hang the open itself */
    if (fd < 0) return -1;
    if (size == 0) {
        close(fd);
        return vrl_error("%s: empty file (not a vrl token shard)", path);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps the file */
    if (map == MAP_FAILED) return vrl_error("%s: cannot map: %s", path, strerror(e));
    s->map = map;
    s->map_bytes = size;
    shard_guard_add(map, size, path); /* a truncation under us is then named, not a bare SIGBUS */
    const unsigned char *h = map;
    uint32_t version, tb, chunk, vocab;
    uint64_t n, checksum, data;
    /* Check the magic on whatever bytes exist, so a short foreign file is named as such. */
    if (memcmp(h, SHARD_MAGIC, size < 8 ? size : 8) != 0) {
        vrl_error("%s: not a vrl token shard (bad magic)", path);
        goto fail;
    }
    if (size < SHARD_HEADER_BYTES) {
        vrl_error("%s: truncated header (%llu of %d bytes)", path, (unsigned long long)size, SHARD_HEADER_BYTES);
        goto fail;
    }
    version = rd32(h + 8), tb = rd32(h + 12), chunk = rd32(h + 24), vocab = rd32(h + 28);
    n = rd64(h + 16), checksum = rd64(h + 56);
    if (version != 1 && version != SHARD_VERSION) {
        vrl_error("%s: unsupported shard version %u (this build reads 1 and %d)", path, version, SHARD_VERSION);
        goto fail;
    }
    /* The domain tag names files and JSON keys downstream: NUL-padded [A-Za-z0-9_.-],
     * not starting with '.', so it can be neither a path nor break a quote. */
    for (int i = 0, ended = 0; i < SHARD_DOMAIN_LEN; i++) {
        const unsigned char c = h[32 + i];
        ended |= c == 0;
        if (ended ? c != 0 : !domain_char((char)c, i)) {
            vrl_error("%s: domain tag has byte 0x%02x at position %d (letters, digits, '_', '-', '.' only)", path, c, i);
            goto fail;
        }
    }
    if (tb != 2 && tb != 4) {
        vrl_error("%s: token_bytes %u (must be 2 or 4)", path, tb);
        goto fail;
    }
    if (vocab == 0 || (tb == 2 && vocab > 65536)) {
        vrl_error("%s: vocab_size %u does not fit %u-byte ids", path, vocab, tb);
        goto fail;
    }
    data = size - SHARD_HEADER_BYTES;
    /* Compare counts, not n * tb, so a huge n_tokens cannot overflow the check. */
    if (n > data / tb) {
        vrl_error("%s: truncated data (header says %llu tokens, file holds %llu)", path, (unsigned long long)n,
                  (unsigned long long)(data / tb));
        goto fail;
    }
    if (data != n * tb) {
        vrl_error("%s: %llu trailing bytes after %llu tokens", path, (unsigned long long)(data - n * tb),
                  (unsigned long long)n);
        goto fail;
    }
    if (chunk && n % chunk) {
        vrl_error("%s: chunk_len %u does not divide n_tokens %llu", path, chunk, (unsigned long long)n);
        goto fail;
    }
    s->token_bytes = tb;
    s->n_tokens = n;
    s->chunk_len = chunk;
    s->vocab_size = vocab;
    memcpy(s->domain, h + 32, SHARD_DOMAIN_LEN);
    s->domain[SHARD_DOMAIN_LEN] = '\0';
    s->ids = h + SHARD_HEADER_BYTES;
    madvise(map, size, MADV_SEQUENTIAL);
    if (verify_ids(s, checksum, version) < 0) goto fail;
    madvise(map, size, MADV_RANDOM); /* training reads chunks in a shuffled order */
    return 0;
fail:
    shard_guard_remove(map);
    munmap(map, size);
    memset(s, 0, sizeof *s);
    return -1;
}

int shard_map_tokens(const uint32_t *tokens, uint64_t n, const char *name, ShardMap *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", name);
    s->owned = malloc(n ? n * 4 : 1);
    if (!s->owned) return vrl_error("%s: out of memory for %llu tokens", name, (unsigned long long)n);
    uint32_t vocab = 0;
    for (uint64_t i = 0; i < n; i++) {
        wr32(s->owned + 4 * i, tokens[i]);
        if (tokens[i] >= vocab) vocab = tokens[i] + 1;
    }
    s->token_bytes = 4;
    s->n_tokens = n;
    s->vocab_size = vocab;
    s->ids = s->owned;
    return 0;
}

void shard_unmap(ShardMap *s) {
    if (s->map) {
        shard_guard_remove(s->map);
        munmap(s->map, s->map_bytes);
    }
    free(s->owned);
    memset(s, 0, sizeof *s);
}

void shard_map_copy(const ShardMap *s, uint64_t first, uint64_t n, int32_t *out) {
    if (s->token_bytes == 2) {
        const unsigned char *p = s->ids + 2 * first;
        for (uint64_t i = 0; i < n; i++) out[i] = (int32_t)((uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8);
    } else {
        const unsigned char *p = s->ids + 4 * first;
        for (uint64_t i = 0; i < n; i++) out[i] = (int32_t)rd32(p + 4 * i);
    }
}

void shard_map_release(const ShardMap *s, uint64_t first, uint64_t n) {
    if (!s->map || n == 0) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)(s->ids + first * s->token_bytes) & ~(page - 1);
    const uintptr_t hi = (uintptr_t)(s->ids + (first + n) * s->token_bytes);
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

int shard_read(const char *path, Shard *s) {
    memset(s, 0, sizeof *s);
    ShardMap m;
    if (shard_map(path, &m) < 0) return -1;
    uint32_t *t = malloc((m.n_tokens ? m.n_tokens : 1) * sizeof *t);
    if (!t) {
        vrl_error("%s: out of memory for %llu tokens", path, (unsigned long long)m.n_tokens);
        shard_unmap(&m);
        return -1;
    }
    shard_map_copy(&m, 0, m.n_tokens, (int32_t *)t); /* ids < 2^32 fit; stored back as uint32 */
    snprintf(s->path, sizeof s->path, "%s", path);
    s->token_bytes = m.token_bytes;
    s->n_tokens = m.n_tokens;
    s->chunk_len = m.chunk_len;
    s->vocab_size = m.vocab_size;
    memcpy(s->domain, m.domain, sizeof s->domain);
    s->tokens = t;
    shard_unmap(&m);
    return 0;
}

void shard_free(Shard *s) {
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

int shard_write(const char *path, const uint32_t *tokens, uint64_t n_tokens, uint32_t vocab_size,
                uint32_t chunk_len, const char *domain) {
    if (vocab_size == 0) return vrl_error("%s: vocab_size must be > 0", path);
    if (chunk_len && n_tokens % chunk_len)
        return vrl_error("%s: chunk_len %u does not divide n_tokens %llu", path, chunk_len,
                         (unsigned long long)n_tokens);
    if (domain && strlen(domain) > SHARD_DOMAIN_LEN)
        return vrl_error("%s: domain tag \"%s\" longer than %d bytes", path, domain, SHARD_DOMAIN_LEN);
    for (int i = 0; domain && domain[i]; i++)
        if (!domain_char(domain[i], i))
            return vrl_error("%s: domain tag \"%s\": letters, digits, '_', '-', '.' only", path, domain);
    const uint32_t tb = vocab_size <= 65536 ? 2 : 4;
    unsigned char *body = malloc(n_tokens ? n_tokens * tb : 1);
    if (!body) return vrl_error("%s: out of memory for %llu tokens", path, (unsigned long long)n_tokens);
    for (uint64_t i = 0; i < n_tokens; i++) {
        if (tokens[i] >= vocab_size) {
            free(body);
            return vrl_error("%s: token %llu has id %u >= vocab_size %u", path, (unsigned long long)i, tokens[i],
                             vocab_size);
        }
        if (tb == 2) {
            body[2 * i] = (unsigned char)tokens[i];
            body[2 * i + 1] = (unsigned char)(tokens[i] >> 8);
        } else wr32(body + 4 * i, tokens[i]);
    }
    unsigned char h[SHARD_HEADER_BYTES] = {0};
    memcpy(h, SHARD_MAGIC, sizeof SHARD_MAGIC); /* 7 chars + NUL = 8 bytes */
    wr32(h + 8, SHARD_VERSION);
    wr32(h + 12, tb);
    wr64(h + 16, n_tokens);
    wr32(h + 24, chunk_len);
    wr32(h + 28, vocab_size);
    if (domain) memcpy(h + 32, domain, strlen(domain));
    wr64(h + 56, fnv1a64(body, n_tokens * tb, fnv1a64(h, 56, FNV1A64_INIT)));
    const void *parts[2] = {h, body};
    size_t sizes[2] = {SHARD_HEADER_BYTES, n_tokens * tb};
    int rc = write_file_atomic_parts(path, parts, sizes, 2);
    free(body);
    return rc;
}
