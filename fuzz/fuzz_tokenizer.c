/* fuzz_tokenizer.c: the first byte picks the target:
 *   0: the rest is a tokenizer.json to load (and, when it loads, to encode "hello");
 *   1: the rest is text to encode with conformance/fixtures/tiny_tokenizer.json, and
 *      the ids must decode back to the lossy-UTF-8 repair of the text;
 *   2: the rest is little-endian uint32 ids to decode (out-of-range ids are errors). */
#include <stdlib.h>
#include <string.h>

#include "common/data/tokenizer.h"
#include "fuzz/fuzz_util.h"

static Tokenizer *tiny(void) {
    static Tokenizer *t;
    if (!t && tok_load(VRL_SOURCE_DIR "/conformance/fixtures/tiny_tokenizer.json", &t) < 0) abort();
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n == 0) return 0;
    const int mode = data[0] % 3, skip_special = data[0] / 3 % 2;
    data++, n--;
    if (mode == 0) {
        Tokenizer *t;
        int rc = tok_load(fuzz_file("tokenizer.json", data, n), &t);
        fuzz_check_error(rc);
        if (rc < 0) return 0;
        TokIds ids = {0};
        fuzz_check_error(tok_encode(t, "hello", 5, &ids));
        tok_ids_free(&ids);
        tok_free(t);
    } else if (mode == 1) {
        TokIds ids = {0};
        int rc = tok_encode(tiny(), (const char *)data, n, &ids);
        fuzz_check_error(rc);
        if (rc < 0) return 0;
        char *text, *fixed;
        size_t len, flen;
        if (tok_decode(tiny(), ids.ids, ids.n, 0, &text, &len) < 0) abort();
        if (tok_utf8_lossy((const char *)data, n, &fixed, &flen) < 0) abort();
        /* the tiny tokenizer has no normalizer: decode(encode(x)) is x made valid UTF-8 */
        if (len != flen || memcmp(text, fixed, len)) abort();
        free(text), free(fixed);
        tok_ids_free(&ids);
    } else {
        size_t k = n / 4;
        uint32_t *ids = malloc((k ? k : 1) * sizeof *ids);
        if (!ids) return 0;
        for (size_t i = 0; i < k; i++) {
            memcpy(&ids[i], data + 4 * i, 4);
            ids[i] %= tok_vocab_size(tiny()) + 2; /* mostly in range, sometimes not */
        }
        char *text;
        size_t len;
        int rc = tok_decode(tiny(), ids, k, skip_special, &text, &len);
        fuzz_check_error(rc);
        if (rc == 0) free(text);
        free(ids);
    }
    return 0;
}
