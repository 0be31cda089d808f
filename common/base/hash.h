/* hash.h: FNV-1a 64, used for shard checksums, checkpoint pairing and per-name RNG streams. */
#ifndef VRL_HASH_H
#define VRL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A64_INIT 0xcbf29ce484222325ULL

/* Continue hash h over n bytes (start with FNV1A64_INIT). */
static inline uint64_t fnv1a64(const void *data, size_t n, uint64_t h) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#endif
