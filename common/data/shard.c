/* shard.c: token shards (layout in shard.h). The reader trusts nothing in the file:
 * every header field, the size, the checksum and each id is checked before the tokens
 * are handed out, and every error names the file and what is wrong with it. */
#include "common/data/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"

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

int shard_read(const char *path, Shard *s) {
    memset(s, 0, sizeof *s);
    void *buf;
    size_t size;
    if (read_file_all(path, &buf, &size) < 0) return -1;
    const unsigned char *h = buf;
    int rc = -1;
    if (size == 0) {
        vrl_error("%s: empty file (not a vrl token shard)", path);
        goto out;
    }
    /* Check the magic on whatever bytes exist, so a short foreign file is named as such. */
    if (memcmp(h, SHARD_MAGIC, size < 8 ? size : 8) != 0) {
        vrl_error("%s: not a vrl token shard (bad magic)", path);
        goto out;
    }
    if (size < SHARD_HEADER_BYTES) {
        vrl_error("%s: truncated header (%zu of %d bytes)", path, size, SHARD_HEADER_BYTES);
        goto out;
    }
    uint32_t version = rd32(h + 8), tb = rd32(h + 12), chunk = rd32(h + 24), vocab = rd32(h + 28);
    uint64_t n = rd64(h + 16), checksum = rd64(h + 56);
    if (version != 1 && version != SHARD_VERSION) {
        vrl_error("%s: unsupported shard version %u (this build reads 1 and %d)", path, version, SHARD_VERSION);
        goto out;
    }
    /* The domain tag names files and JSON keys downstream: NUL-padded [A-Za-z0-9_.-],
     * not starting with '.', so it can be neither a path nor break a quote. */
    for (int i = 0, ended = 0; i < SHARD_DOMAIN_LEN; i++) {
        const unsigned char c = h[32 + i];
        ended |= c == 0;
        const int ok = ended ? c == 0
                             : ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                                c == '-' || (c == '.' && i > 0));
        if (!ok) {
            vrl_error("%s: domain tag has byte 0x%02x at position %d (letters, digits, '_', '-', '.' only)", path, c, i);
            goto out;
        }
    }
    if (tb != 2 && tb != 4) {
        vrl_error("%s: token_bytes %u (must be 2 or 4)", path, tb);
        goto out;
    }
    if (vocab == 0 || (tb == 2 && vocab > 65536)) {
        vrl_error("%s: vocab_size %u does not fit %u-byte ids", path, vocab, tb);
        goto out;
    }
    uint64_t data = size - SHARD_HEADER_BYTES;
    /* Compare counts, not n * tb, so a huge n_tokens cannot overflow the check. */
    if (n > data / tb) {
        vrl_error("%s: truncated data (header says %llu tokens, file holds %llu)", path, (unsigned long long)n,
                  (unsigned long long)(data / tb));
        goto out;
    }
    if (data != n * tb) {
        vrl_error("%s: %llu trailing bytes after %llu tokens", path, (unsigned long long)(data - n * tb),
                  (unsigned long long)n);
        goto out;
    }
    if (chunk && n % chunk) {
        vrl_error("%s: chunk_len %u does not divide n_tokens %llu", path, chunk, (unsigned long long)n);
        goto out;
    }
    const unsigned char *tok = h + SHARD_HEADER_BYTES;
    /* version 2 covers the header fields too; version 1 only the tokens (its chunk_len
     * and vocab_size are range-checked above and below, nothing more) */
    uint64_t sum = fnv1a64(tok, n * tb, version >= 2 ? fnv1a64(h, 56, FNV1A64_INIT) : FNV1A64_INIT);
    if (sum != checksum) {
        vrl_error("%s: checksum mismatch (stored %016llx, computed %016llx): corrupt file", path,
                  (unsigned long long)checksum, (unsigned long long)sum);
        goto out;
    }
    uint32_t *t = malloc((n ? n : 1) * sizeof *t);
    if (!t) {
        vrl_error("%s: out of memory for %llu tokens", path, (unsigned long long)n);
        goto out;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t id = tb == 2 ? (uint32_t)tok[2 * i] | (uint32_t)tok[2 * i + 1] << 8 : rd32(tok + 4 * i);
        if (id >= vocab) {
            vrl_error("%s: token %llu has id %u >= vocab_size %u", path, (unsigned long long)i, id, vocab);
            free(t);
            goto out;
        }
        t[i] = id;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    s->token_bytes = tb;
    s->n_tokens = n;
    s->chunk_len = chunk;
    s->vocab_size = vocab;
    memcpy(s->domain, h + 32, SHARD_DOMAIN_LEN);
    s->domain[SHARD_DOMAIN_LEN] = '\0';
    s->tokens = t;
    rc = 0;
out:
    free(buf);
    return rc;
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
    for (const char *c = domain; c && *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || (*c == '.' && c != domain)))
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
