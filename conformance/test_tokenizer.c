/* test_tokenizer.c: the C tokenizer against golden ids from HF `tokenizers`
 * (conformance/tokenizer/golden.json, made by make_golden.py), the decode round trip,
 * encoding from several threads, and refusal of unsupported tokenizer.json kinds. */
#include "common/base/error.h"
#include "common/data/textio.h"
#include "common/data/tokenizer.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *data_path(const char *rel) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", VRL_SHARED_DATA, rel);
    return p;
}

static int have_data(void) {
    return access(data_path("tokenizers/gpt-neox-20b.tokenizer.json"), R_OK) == 0 &&
           access(data_path("corpora/slimpajama-mini/validation/chunk1/example_holdout_0.jsonl.zst"), R_OK) == 0;
}

static unsigned char *from_hex(const char *h, size_t *n) {
    size_t l = strlen(h);
    unsigned char *b = malloc(l / 2 + 1);
    for (size_t i = 0; i < l / 2; i++) sscanf(h + 2 * i, "%2hhx", &b[i]);
    *n = l / 2;
    return b;
}

/* The bytes of one golden case: hand-written hex, or a byte range of a shared file
 * (of the "text" of line `line` when the file is JSONL). */
static char *case_bytes(json_t *c, size_t *n) {
    json_t *hex = json_object_get(c, "hex");
    if (hex) return (char *)from_hex(json_string_value(hex), n);
    const char *file = data_path(json_string_value(json_object_get(c, "file")));
    size_t off = (size_t)json_integer_value(json_object_get(c, "offset"));
    size_t len = (size_t)json_integer_value(json_object_get(c, "length"));
    char *out = malloc(len + 1);
    json_t *line = json_object_get(c, "line");
    if (!line) {
        FILE *f = fopen(file, "rb");
        cr_assert(f, "%s unreadable", file);
        fseek(f, (long)off, SEEK_SET);
        cr_assert_eq(fread(out, 1, len, f), len);
        fclose(f);
    } else {
        LineReader *r;
        cr_assert_eq(lr_open(file, &r), 0, "%s", vrl_last_error());
        const char *l;
        size_t ll;
        int found = 0;
        while (lr_next(r, &l, &ll) == 1)
            if (lr_line(r) == (uint64_t)json_integer_value(line) + 1) {
                JsonDoc d;
                cr_assert_eq(jsonl_parse(file, lr_line(r), l, ll, 0, &d), 0, "%s", vrl_last_error());
                cr_assert_leq(off + len, d.text_len);
                memcpy(out, d.text + off, len);
                jsonl_doc_free(&d);
                found = 1;
                break;
            }
        lr_close(r);
        cr_assert(found, "line missing in %s", file);
    }
    *n = len;
    return out;
}

Test(tokenizer, golden_ids_and_round_trip) {
    if (!have_data()) cr_skip_test("../shared/data (tokenizers, slimpajama-mini) absent: golden ids not checked");
    json_error_t je;
    json_t *g = json_load_file(VRL_SOURCE_DIR "/conformance/tokenizer/golden.json", 0, &je);
    cr_assert(g, "golden.json: %s", je.text);
    json_t *names = json_object_get(g, "tokenizers"), *cases = json_object_get(g, "cases"), *name;
    size_t ti, ci, checked = 0;
    json_array_foreach(names, ti, name) {
        char rel[256];
        snprintf(rel, sizeof rel, "tokenizers/%s.tokenizer.json", json_string_value(name));
        Tokenizer *t;
        cr_assert_eq(tok_load(data_path(rel), &t), 0, "%s", vrl_last_error());
        int nfc = strcmp(json_string_value(name), "gpt-neox-20b") == 0;   /* its normalizer is NFC */
        json_t *c;
        json_array_foreach(cases, ci, c) {
            const char *cname = json_string_value(json_object_get(c, "name"));
            size_t n;
            char *text = case_bytes(c, &n);
            json_t *want = json_object_get(json_object_get(c, "ids"), json_string_value(name));
            TokIds ids = {0};
            cr_assert_eq(tok_encode(t, text, n, &ids), 0, "%s", vrl_last_error());
            size_t first_diff = ids.n;
            for (size_t i = 0; i < ids.n && i < json_array_size(want); i++)
                if (ids.ids[i] != (uint32_t)json_integer_value(json_array_get(want, i))) { first_diff = i; break; }
            cr_expect(ids.n == json_array_size(want) && first_diff == ids.n,
                      "%s / %s: %zu ids, want %zu; first difference at %zu", json_string_value(name), cname,
                      ids.n, json_array_size(want), first_diff);
            /* decode(encode(x)) == normalise(lossy(x)) */
            char *fixed, *expect, *back;
            size_t fn, en, bn;
            cr_assert_eq(tok_utf8_lossy(text, n, &fixed, &fn), 0);
            if (nfc) cr_assert_eq(tok_nfc(fixed, fn, &expect, &en), 0);
            else { expect = fixed; en = fn; fixed = NULL; }
            cr_assert_eq(tok_decode(t, ids.ids, ids.n, 0, &back, &bn), 0, "%s", vrl_last_error());
            cr_expect(bn == en && memcmp(back, expect, en) == 0, "%s / %s: decode(encode(x)) differs",
                      json_string_value(name), cname);
            free(back);
            free(expect);
            free(fixed);
            free(text);
            tok_ids_free(&ids);
            checked++;
        }
        tok_free(t);
    }
    cr_assert_geq(checked, 2 * 40);
    json_decref(g);
}

typedef struct {
    const Tokenizer *t;
    const char *text;
    size_t n;
    TokIds out;
} Job;

static void *enc_thread(void *arg) {
    Job *j = arg;
    for (int rep = 0; rep < 3; rep++) {
        j->out.n = 0;
        if (tok_encode(j->t, j->text, j->n, &j->out)) return (void *)1;
    }
    return NULL;
}

Test(tokenizer, encode_from_threads) {
    if (!have_data()) cr_skip_test("../shared/data absent: no tokenizer.json to load");
    Tokenizer *t;
    cr_assert_eq(tok_load(data_path("tokenizers/gpt-neox-20b.tokenizer.json"), &t), 0, "%s", vrl_last_error());
    FILE *f = fopen(data_path("corpora/wikitext-2-raw/wiki.test.raw"), "rb");
    cr_assert(f);
    size_t n = 300000;
    char *text = malloc(n);
    n = fread(text, 1, n, f);
    fclose(f);
    TokIds ref = {0};
    cr_assert_eq(tok_encode(t, text, n, &ref), 0);
    enum { NT = 4 };
    Job jobs[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (Job){t, text, n, {0}};
        pthread_create(&th[i], NULL, enc_thread, &jobs[i]);
    }
    for (int i = 0; i < NT; i++) {
        void *r;
        pthread_join(th[i], &r);
        cr_expect_null(r);
        cr_expect(jobs[i].out.n == ref.n && memcmp(jobs[i].out.ids, ref.ids, ref.n * 4) == 0, "thread %d differs", i);
        tok_ids_free(&jobs[i].out);
    }
    tok_ids_free(&ref);
    free(text);
    tok_free(t);
}

/* Write `json` to a temp file and expect tok_load to fail with `needle` and the path. */
static void expect_refused(const char *json, const char *needle) {
    char path[] = "/tmp/vrl_tok_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    Tokenizer *t = (Tokenizer *)1;
    cr_expect_eq(tok_load(path, &t), -1);
    cr_expect_null(t);
    cr_expect(strstr(vrl_last_error(), needle) != NULL, "error \"%s\" lacks \"%s\"", vrl_last_error(), needle);
    cr_expect(strncmp(vrl_last_error(), path, strlen(path)) == 0, "error \"%s\" does not name the file", vrl_last_error());
    unlink(path);
}

Test(tokenizer, refuses_unsupported_kinds) {
    expect_refused("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},\"added_tokens\":[]}",
                   "unsupported tokenizer model \"WordPiece\"");
    expect_refused("{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",0.0]]}}", "unsupported tokenizer model \"Unigram\"");
    expect_refused("{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},\"pre_tokenizer\":{\"type\":\"Whitespace\"}}",
                   "unsupported tokenizer pre_tokenizer \"Whitespace\"");
    expect_refused("{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},\"normalizer\":{\"type\":\"Lowercase\"},"
                   "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}",
                   "unsupported tokenizer normalizer \"Lowercase\"");
    expect_refused("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
                   "\"decoder\":{\"type\":\"ByteLevel\"}}",
                   "without byte");
    expect_refused("{\"model\": [1, 2", "invalid tokenizer JSON");
    /* a type that is not a name was taken for BPE */
    expect_refused("{\"model\":{\"type\":5,\"vocab\":{},\"merges\":[]}}", "model \"type\" must be a string");
    expect_refused("{\"model\":{\"type\":null,\"vocab\":{},\"merges\":[]}}", "model \"type\" must be a string");
}

/* One added token with id 200,000,000 made the tables 940 MB; now refused at once. */
Test(tokenizer, refuses_sparse_huge_id) {
    json_error_t e;
    json_t *root = json_load_file(VRL_SOURCE_DIR "/conformance/fixtures/tiny_tokenizer.json", 0, &e);
    cr_assert(root, "%s", e.text);
    json_t *added = json_object_get(root, "added_tokens");
    json_object_set_new(json_array_get(added, 0), "id", json_integer(200000000));
    char *text = json_dumps(root, 0);
    json_decref(root);
    expect_refused(text, "id 200000000 is far beyond the 262 tokens in the file");
    free(text);
    Tokenizer *t;
    cr_assert_eq(tok_load(VRL_SOURCE_DIR "/conformance/fixtures/tiny_tokenizer.json", &t), 0, "%s", vrl_last_error());
    cr_assert_eq(tok_vocab_size(t), 262);
    tok_free(t);
}

Test(tokenizer, lossy_utf8_matches_python_replace) {
    /* b"\xf0\x9f\x98 a\xed\xa0\x80\xc3".decode("utf-8", "replace") */
    const char in[] = "\xf0\x9f\x98 a\xed\xa0\x80\xc3";
    char *out;
    size_t n;
    cr_assert_eq(tok_utf8_lossy(in, sizeof in - 1, &out, &n), 0);
    const char want[] = "\xEF\xBF\xBD a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD";
    cr_expect(n == sizeof want - 1 && memcmp(out, want, n) == 0);
    free(out);
}
