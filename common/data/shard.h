/* shard.h: token shards, the only training-data format vrl reads.
 *
 * Layout (little-endian), a fixed 64-byte header then the tokens:
 *   0  char     magic[8]     "VRLTOKS\0"
 *   8  uint32   version      2 (1: older shards, read too)
 *   12 uint32   token_bytes  2 (uint16 ids) or 4 (uint32 ids)
 *   16 uint64   n_tokens
 *   24 uint32   chunk_len    length of the fixed chunks the stream is cut into (0: a plain stream)
 *   28 uint32   vocab_size   every id is < vocab_size
 *   32 char     domain[24]   NUL-padded tag of [A-Za-z0-9_.-], e.g. "RedPajamaC4" ("" if none)
 *   56 uint64   checksum     FNV-1a 64 of header bytes 0..55 then the token bytes
 *                            (version 1: of the token bytes only)
 *   64 tokens
 * The reader checks every field, the file size, the checksum and the id range, and
 * names the file and the problem when something is off. */
#ifndef VRL_SHARD_H
#define VRL_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/hash.h"

#define SHARD_MAGIC "VRLTOKS"
#define SHARD_VERSION 2
#define SHARD_HEADER_BYTES 64
#define SHARD_DOMAIN_LEN 24

typedef struct {
    char path[4096];
    uint32_t token_bytes;
    uint64_t n_tokens;
    uint32_t chunk_len;
    uint32_t vocab_size;
    char domain[SHARD_DOMAIN_LEN + 1];
    uint32_t *tokens;          /* [n_tokens], widened to uint32 in memory */
} Shard;

/* Read and validate a whole shard. On error *s is left empty (nothing to free). */
int shard_read(const char *path, Shard *s);
void shard_free(Shard *s);

/* Write a shard atomically (temp file, fsync, rename): a crash leaves either the old
 * file or the new one. token_bytes is 2 when vocab_size <= 65536, else 4. */
int shard_write(const char *path, const uint32_t *tokens, uint64_t n_tokens,
                uint32_t vocab_size, uint32_t chunk_len, const char *domain);

#endif
