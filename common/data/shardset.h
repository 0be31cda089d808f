/* shardset.h: several mapped shards read as one long sequence of token ids.
 *
 * The loaders (loader.c: windows of the concatenation; mixture.c: each domain's chunks)
 * keep their data as a ShardSet: the shards stay mapped at their stored width and a read
 * copies just the ids asked for, so memory holds the window order and a batch, never the
 * corpus. A read may cross from one shard into the next. */
#ifndef VRL_SHARDSET_H
#define VRL_SHARDSET_H

#include <stdint.h>

#include "common/data/shard.h"

typedef struct {
    int n;               /* shards held */
    ShardMap *shard;     /* [n] */
    uint64_t *first;     /* [n + 1] index of each shard's first id in the sequence; first[n] = n_tokens */
    uint64_t n_tokens;
} ShardSet;

/* Append *m (taken over: *m is left empty, the set unmaps it). On error *m is unmapped. */
int shardset_add(ShardSet *set, ShardMap *m);
/* ids [first, first + n) of the sequence as int32; first + n <= n_tokens. */
void shardset_read(const ShardSet *set, uint64_t first, uint64_t n, int32_t *out);
void shardset_free(ShardSet *set);

#endif
