/* fuzz_shard.c: shard_read on arbitrary bytes; an accepted shard's ids are all below
 * its vocab_size. */
#include <stdlib.h>

#include "common/data/shard.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    Shard s;
    int rc = shard_read(fuzz_file("x.tok", data, n), &s);
    fuzz_check_error(rc);
    if (rc < 0) return 0;
    for (uint64_t i = 0; i < s.n_tokens; i++)
        if (s.tokens[i] >= s.vocab_size) abort();
    shard_free(&s);
    return 0;
}
