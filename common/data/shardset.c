/* shardset.c: mapped shards as one sequence (shardset.h). */
#include "common/data/shardset.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"

int shardset_add(ShardSet *set, ShardMap *m) {
    ShardMap *grown = realloc(set->shard, (size_t)(set->n + 1) * sizeof *grown);
    if (grown) set->shard = grown;
    uint64_t *first = grown ? realloc(set->first, (size_t)(set->n + 2) * sizeof *first) : NULL;
    if (!first) {
        vrl_error("%s: out of memory", m->path);
        shard_unmap(m);
        return -1;
    }
    set->first = first;
    set->first[set->n] = set->n_tokens;
    set->shard[set->n++] = *m;
    set->n_tokens += m->n_tokens;
    set->first[set->n] = set->n_tokens;
    memset(m, 0, sizeof *m);
    return 0;
}

/* The shard holding id i: the last k with first[k] <= i (binary search; empty shards skipped). */
static int shard_of(const ShardSet *set, uint64_t i) {
    int lo = 0, hi = set->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (set->first[mid] <= i) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

void shardset_read(const ShardSet *set, uint64_t first, uint64_t n, int32_t *out) {
    int k = shard_of(set, first);
    while (n > 0) {
        const ShardMap *s = &set->shard[k];
        uint64_t at = first - set->first[k];
        uint64_t take = s->n_tokens - at < n ? s->n_tokens - at : n;
        shard_map_copy(s, at, take, out);
        shard_map_release(s, at, take);
        out += take;
        first += take;
        n -= take;
        k++;
    }
}

void shardset_free(ShardSet *set) {
    for (int i = 0; i < set->n; i++) shard_unmap(&set->shard[i]);
    free(set->shard);
    free(set->first);
    memset(set, 0, sizeof *set);
}
