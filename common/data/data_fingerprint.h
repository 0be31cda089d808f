/* data_fingerprint.h: a short identity of the token shards a run reads.
 * A data folder regenerated at the same path (another tokenizer, another selection) must
 * not pass as the one a run started on: the resume compares this fingerprint. It covers
 * every shard's name, size and 64-byte header, which holds the checksum of its ids
 * (shard.h), so it costs one small read per shard, not a pass over the tokens. */
#ifndef VRL_DATA_FINGERPRINT_H
#define VRL_DATA_FINGERPRINT_H

#include <stddef.h>

/* `data`: comma-separated shard files and/or folders (a folder's *.bin files, and those of
 * its sub-folders, in name order). out: 16 hex digits. "" data gives "". */
int data_fingerprint(const char *data, char *out, size_t n);

#endif
