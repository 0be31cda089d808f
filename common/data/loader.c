/* loader.c: seeded, resumable batches of windows over token shards (loader.h). */
#include "common/data/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/rng.h"
#include "common/data/shard.h"
#include "common/data/shardset.h"
#include "common/data/synthetic.h"

struct DataLoader {
    ShardSet data;        /* every shard, mapped, concatenated in the order given */
    uint64_t n_tokens;
    int batch, seq;
    uint64_t seed;
    uint64_t n_windows;   /* n_tokens / seq: non-overlapping windows */
    uint64_t *order;      /* [n_windows] this epoch's permutation of windows */
    uint64_t epoch, index;/* the position: next window is order[index] of `epoch` */
};

/* The permutation of an epoch depends only on (seed, epoch): Fisher-Yates (rng.h). */
static void shuffle_epoch(DataLoader *l) {
    Rng r;
    rng_seed_stream(&r, l->seed, l->epoch);
    rng_permutation(&r, l->order, l->n_windows);
}

static DataLoader *finish_open(DataLoader *l, const char *name) {
    l->n_windows = l->n_tokens / (uint64_t)l->seq;
    if (l->n_windows == 0) {
        vrl_error("%s: %llu tokens is less than one sequence of %d", name, (unsigned long long)l->n_tokens, l->seq);
        loader_close(l);
        return NULL;
    }
    l->order = malloc(l->n_windows * sizeof *l->order);
    if (!l->order) {
        vrl_error("%s: out of memory for the window order", name);
        loader_close(l);
        return NULL;
    }
    shuffle_epoch(l);
    return l;
}

DataLoader *loader_open(const char *spec, int batch, int seq, int vocab_size, uint64_t seed) {
    DataLoader *l = calloc(1, sizeof *l);
    char *list = strdup(spec);
    if (!l || !list) {
        free(l);
        free(list);
        vrl_error("out of memory opening %s", spec);
        return NULL;
    }
    l->batch = batch;
    l->seq = seq;
    l->seed = seed;
    char *save = NULL;
    for (char *path = strtok_r(list, ",", &save); path; path = strtok_r(NULL, ",", &save)) {
        ShardMap s;
        if (shard_map(path, &s) < 0) goto fail;
        if ((int64_t)s.vocab_size > vocab_size) {
            vrl_error("%s: token ids go up to %u but the model's vocab_size is %d", path, s.vocab_size - 1,
                      vocab_size);
            shard_unmap(&s);
            goto fail;
        }
        if (shardset_add(&l->data, &s) < 0) goto fail;
    }
    l->n_tokens = l->data.n_tokens;
    free(list);
    return finish_open(l, spec);
fail:
    free(list);
    loader_close(l);
    return NULL;
}

DataLoader *loader_from_tokens(const uint32_t *tokens, uint64_t n, const char *name, int batch, int seq,
                               uint64_t seed) {
    DataLoader *l = calloc(1, sizeof *l);
    if (!l) {
        vrl_error("%s: out of memory", name);
        return NULL;
    }
    ShardMap s;
    if (shard_map_tokens(tokens, n, name, &s) < 0 || shardset_add(&l->data, &s) < 0) {
        loader_close(l);
        return NULL;
    }
    l->n_tokens = n;
    l->batch = batch;
    l->seq = seq;
    l->seed = seed;
    return finish_open(l, name);
}

DataLoader *loader_synthetic(int vocab, uint64_t stream, uint64_t n, int batch, int seq, uint64_t seed) {
    uint32_t *tok = malloc(n * sizeof *tok);
    if (!tok) {
        vrl_error("synthetic corpus: out of memory for %llu tokens", (unsigned long long)n);
        return NULL;
    }
    DataLoader *l = NULL;
    if (synthetic_corpus(tok, n, vocab, SYNTHETIC_LANGUAGE_SEED, stream) == 0)
        l = loader_from_tokens(tok, n, "synthetic corpus", batch, seq, seed);
    free(tok);
    return l;
}

void loader_close(DataLoader *l) {
    if (!l) return;
    shardset_free(&l->data);
    free(l->order);
    free(l);
}

uint64_t loader_windows(const DataLoader *l) { return l->n_windows; }

void loader_window(const DataLoader *l, uint64_t i, int32_t *tokens) {
    shardset_read(&l->data, i * (uint64_t)l->seq, (uint64_t)l->seq, tokens);
}

void loader_next(DataLoader *l, int32_t *tokens) {
    for (int b = 0; b < l->batch; b++) {
        if (l->index == l->n_windows) {
            l->epoch++;
            l->index = 0;
            shuffle_epoch(l);
        }
        loader_window(l, l->order[l->index++], tokens + (size_t)b * l->seq);
    }
}

int loader_get_pos(const DataLoader *l, uint64_t *words) {
    words[0] = l->epoch;
    words[1] = l->index;
    return 2;
}

int loader_set_pos(DataLoader *l, const uint64_t *words, int n) {
    if (n != 2 || words[1] > l->n_windows)
        return vrl_error("data position (%d words) does not fit this data (%llu windows)", n,
                         (unsigned long long)l->n_windows);
    l->epoch = words[0];
    l->index = words[1];
    shuffle_epoch(l);
    return 0;
}
