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
 * names the file and the problem when something is off.
 *
 * Two ways to read: shard_map() maps the file and hands out the ids at their stored
 * width through the mapping (training data: a 20B-token set never sits in memory
 * whole); shard_read() widens a whole shard into uint32 memory (small files, tools). */
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

/* A shard mapped read-only: ids stay in the file's pages at token_bytes each. */
typedef struct {
    char path[4096];
    uint32_t token_bytes;
    uint64_t n_tokens;
    uint32_t chunk_len;
    uint32_t vocab_size;
    char domain[SHARD_DOMAIN_LEN + 1];
    const unsigned char *ids;  /* [n_tokens * token_bytes] little-endian ids */
    void *map;                 /* the mapping (NULL: ids point into `owned`) */
    size_t map_bytes;
    unsigned char *owned;      /* ids held in memory instead (shard_map_tokens) */
} ShardMap;

/* Map and validate a shard. The checksum and id range are verified at open by one
 * streamed pass over the mapping (16 MiB windows, each released from the process's
 * resident set after it is read: the pass costs disk/page-cache reads, not memory).
 * On error *s is left empty. */
int shard_map(const char *path, ShardMap *s);
/* A ShardMap over ids already in memory (uint32, copied), for in-memory corpora. */
int shard_map_tokens(const uint32_t *tokens, uint64_t n, const char *name, ShardMap *s);
void shard_unmap(ShardMap *s);
/* ids [first, first + n) as int32 (the caller keeps first + n <= n_tokens). */
void shard_map_copy(const ShardMap *s, uint64_t first, uint64_t n, int32_t *out);
/* Drop the pages holding ids [first, first + n) from the process's resident set (they
 * stay in the kernel's page cache; a later read faults them back in). Training reads a
 * chunk once per epoch, so releasing after each read keeps the resident set at a batch,
 * whatever the size of the set: the kernel otherwise maps whole large folios around
 * each random read and they would pile up in RSS. */
void shard_map_release(const ShardMap *s, uint64_t first, uint64_t n);

/* Read and validate a whole shard. On error *s is left empty (nothing to free). */
int shard_read(const char *path, Shard *s);
void shard_free(Shard *s);

/* Write a shard atomically (temp file, fsync, rename): a crash leaves either the old
 * file or the new one. token_bytes is 2 when vocab_size <= 65536, else 4. */
int shard_write(const char *path, const uint32_t *tokens, uint64_t n_tokens,
                uint32_t vocab_size, uint32_t chunk_len, const char *domain);

#endif
