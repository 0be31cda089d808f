/* test_shard.c: token shards round trip at both widths, and every way a file can be
 * wrong is rejected with a message naming the file and the problem. */
#include "common/base/fsutil.h"
#include "common/data/shard.h"
#include "common/data/shardset.h"
#include "conformance/test_util.h"

static void round_trip(uint32_t vocab, uint32_t expect_width) {
    const char *dir = test_tmpdir(), *path = test_path(dir, "a.tok");
    enum { N = 4096 };
    static uint32_t tok[N];
    for (uint32_t i = 0; i < N; i++) tok[i] = (i * 2654435761u) % vocab; /* spread over the id range */
    tok[0] = vocab - 1;                                                   /* the largest legal id */
    tok[1] = 0;                                                           /* EOS */
    cr_assert_eq(shard_write(path, tok, N, vocab, 512, "RedPajamaC4"), 0, "%s", vrl_last_error());
    cr_assert_eq(test_count_files(dir, ".tmp."), 0, "a temp file was left behind");
    size_t n;
    free(test_read(path, &n));
    cr_assert_eq(n, SHARD_HEADER_BYTES + (size_t)N * expect_width);
    Shard s;
    cr_assert_eq(shard_read(path, &s), 0, "%s", vrl_last_error());
    cr_assert_eq(s.token_bytes, expect_width);
    cr_assert_eq(s.n_tokens, N);
    cr_assert_eq(s.chunk_len, 512);
    cr_assert_eq(s.vocab_size, vocab);
    cr_assert_str_eq(s.domain, "RedPajamaC4");
    cr_assert_str_eq(s.path, path);
    cr_assert_eq(memcmp(s.tokens, tok, sizeof tok), 0);
    shard_free(&s);
    cr_assert_null(s.tokens);
}

/* The mapped reader hands out the same ids at the stored width, from any offset. */
static void map_round_trip(uint32_t vocab, uint32_t expect_width) {
    const char *dir = test_tmpdir(), *path = test_path(dir, "m.tok");
    enum { N = 3000 };
    static uint32_t tok[N];
    static int32_t got[N];
    for (uint32_t i = 0; i < N; i++) tok[i] = (i * 2654435761u + 7) % vocab;
    tok[N - 1] = vocab - 1;
    cr_assert_eq(shard_write(path, tok, N, vocab, 1000, "RedPajamaBook"), 0, "%s", vrl_last_error());
    ShardMap m;
    cr_assert_eq(shard_map(path, &m), 0, "%s", vrl_last_error());
    cr_assert_eq(m.token_bytes, expect_width);
    cr_assert_eq(m.n_tokens, N);
    cr_assert_eq(m.chunk_len, 1000);
    cr_assert_str_eq(m.domain, "RedPajamaBook");
    shard_map_copy(&m, 0, N, got);
    for (int i = 0; i < N; i++) cr_assert_eq((uint32_t)got[i], tok[i], "id %d", i);
    shard_map_release(&m, 0, N);
    shard_map_copy(&m, 1234, 5, got); /* after a release the pages come back from the file */
    for (int i = 0; i < 5; i++) cr_assert_eq((uint32_t)got[i], tok[1234 + i]);
    shard_unmap(&m);
    cr_assert_null(m.map);
}
Test(shard, map_u16) { map_round_trip(50277, 2); }
Test(shard, map_u32) { map_round_trip(100000, 4); }

/* A ShardSet reads across shard boundaries (and past an empty shard) as one sequence. */
Test(shard, set_reads_across_shards) {
    const char *dir = test_tmpdir();
    const uint64_t sizes[4] = {5, 0, 3, 9};
    const uint32_t vocab[4] = {50277, 50277, 100000, 50277}; /* mixed widths: uint16, uint32 */
    ShardSet set = {0};
    uint32_t next = 0;
    for (int k = 0; k < 4; k++) {
        uint32_t tok[9];
        for (uint64_t i = 0; i < sizes[k]; i++) tok[i] = next++;
        char name[32];
        snprintf(name, sizeof name, "s%d.tok", k);
        const char *p = test_path(dir, name);
        cr_assert_eq(shard_write(p, tok, sizes[k], vocab[k], 0, NULL), 0, "%s", vrl_last_error());
        ShardMap m;
        cr_assert_eq(shard_map(p, &m), 0, "%s", vrl_last_error());
        cr_assert_eq(shardset_add(&set, &m), 0);
        cr_assert_null(m.map, "the set took the mapping");
    }
    cr_assert_eq(set.n_tokens, 17);
    for (uint64_t first = 0; first < 17; first++)
        for (uint64_t n = 1; first + n <= 17; n++) {
            int32_t got[17];
            shardset_read(&set, first, n, got);
            for (uint64_t i = 0; i < n; i++) cr_assert_eq(got[i], (int32_t)(first + i), "read %llu+%llu", (unsigned long long)first, (unsigned long long)i);
        }
    shardset_free(&set);
}

Test(shard, round_trip_u16) { round_trip(50277, 2); }
Test(shard, round_trip_u16_edge) { round_trip(65536, 2); } /* ids up to 65535 still fit */
Test(shard, round_trip_u32) { round_trip(100000, 4); }

Test(shard, empty_stream) {
    const char *path = test_path(test_tmpdir(), "e.tok");
    cr_assert_eq(shard_write(path, NULL, 0, 64, 0, NULL), 0, "%s", vrl_last_error());
    Shard s;
    cr_assert_eq(shard_read(path, &s), 0, "%s", vrl_last_error());
    cr_assert_eq(s.n_tokens, 0);
    cr_assert_str_eq(s.domain, "");
    shard_free(&s);
}

/* A valid 100-token uint16 shard, returned as bytes to be damaged by each case. */
static unsigned char *good(const char *dir, size_t *n) {
    uint32_t tok[100];
    for (int i = 0; i < 100; i++) tok[i] = (uint32_t)i * 3 % 1000;
    const char *p = test_path(dir, "good.tok");
    cr_assert_eq(shard_write(p, tok, 100, 1000, 10, "x"), 0);
    return test_read(p, n);
}

static void put32(unsigned char *p, uint32_t x) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(x >> (8 * i));
}

Test(shard, rejects) {
    const char *dir = test_tmpdir(), *p = test_path(dir, "bad.tok");
    size_t n;
    unsigned char *g = good(dir, &n), *b = malloc(n + 16);
    Shard s;
    char want[600];

    test_write(p, "", 0);
    expect_error(shard_read(p, &s), "empty file");
    snprintf(want, sizeof want, "%s: ", p);
    expect_error(shard_read(p, &s), want); /* errors start with the file name */

    test_write(p, g, 40);
    expect_error(shard_read(p, &s), "truncated header");

    const unsigned char png[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    test_write(p, png, sizeof png);
    expect_error(shard_read(p, &s), "not a vrl token shard");

    memcpy(b, g, n);
    put32(b + 8, 3);
    test_write(p, b, n);
    expect_error(shard_read(p, &s), "unsupported shard version 3");

    memcpy(b, g, n);
    put32(b + 12, 3);
    test_write(p, b, n);
    expect_error(shard_read(p, &s), "token_bytes 3");

    test_write(p, g, n - 1);
    expect_error(shard_read(p, &s), "truncated data");

    memcpy(b, g, n);
    memset(b + n, 0, 6);
    test_write(p, b, n + 6);
    expect_error(shard_read(p, &s), "6 trailing bytes");

    memcpy(b, g, n);
    b[SHARD_HEADER_BYTES + 11] ^= 0x01; /* one flipped bit in token 5 */
    test_write(p, b, n);
    expect_error(shard_read(p, &s), "checksum mismatch");

    memcpy(b, g, n);
    put32(b + 24, 7); /* 100 tokens do not split into chunks of 7 */
    test_write(p, b, n);
    expect_error(shard_read(p, &s), "chunk_len 7 does not divide");

    /* out-of-range id with a correct checksum, so the id check itself is what fires */
    memcpy(b, g, n);
    b[SHARD_HEADER_BYTES + 2 * 42] = 0xe8, b[SHARD_HEADER_BYTES + 2 * 42 + 1] = 0x03; /* id 1000 */
    uint64_t h = fnv1a64(b + SHARD_HEADER_BYTES, 200, fnv1a64(b, 56, FNV1A64_INIT));
    for (int i = 0; i < 8; i++) b[56 + i] = (unsigned char)(h >> (8 * i));
    test_write(p, b, n);
    expect_error(shard_read(p, &s), "token 42 has id 1000 >= vocab_size 1000");
    cr_assert_null(s.tokens, "a failed read leaves the shard empty");

    expect_error(shard_read(test_path(dir, "missing.tok"), &s), "cannot open");
    free(g);
    free(b);
}

Test(shard, write_rejects) {
    const char *dir = test_tmpdir();
    uint32_t tok[4] = {1, 2, 3, 64};
    expect_error(shard_write(test_path(dir, "w.tok"), tok, 4, 64, 0, NULL), "id 64 >= vocab_size 64");
    expect_error(shard_write(test_path(dir, "w.tok"), tok, 3, 64, 2, NULL), "chunk_len 2 does not divide");
    cr_assert(!file_exists(test_path(dir, "w.tok")));
    cr_assert_eq(test_count_files(dir, ".tmp."), 0);
}

Test(shard, atomic_replace) {
    const char *dir = test_tmpdir(), *p = test_path(dir, "r.tok");
    uint32_t a[4] = {1, 2, 3, 4}, b[2] = {9, 9};
    cr_assert_eq(shard_write(p, a, 4, 16, 0, "a"), 0);
    cr_assert_eq(shard_write(p, b, 2, 16, 0, "b"), 0);
    cr_assert_eq(test_count_files(dir, ".tmp."), 0, "after a successful write no .tmp. file remains");
    Shard s;
    cr_assert_eq(shard_read(p, &s), 0);
    cr_assert_eq(s.n_tokens, 2);
    cr_assert_str_eq(s.domain, "b");
    shard_free(&s);
    /* a failed write (no such directory) touches nothing */
    expect_error(shard_write(test_path(dir, "no/such/dir/r.tok"), a, 4, 16, 0, NULL), "cannot create");
}

Test(shard, corrupt_bytes_never_crash) {
    /* Each header byte and a sample of token bytes set to hostile values: the reader
     * returns -1 with a message, never crashes, and accepts none of them: since version
     * 2 the checksum covers the header (chunk_len, vocab_size and the domain tag were
     * outside it and a changed value was read as valid). */
    const char *dir = test_tmpdir(), *p = test_path(dir, "c.tok");
    size_t n;
    unsigned char *g = good(dir, &n);
    const unsigned char vals[] = {0x00, 0xff, 0x80};
    for (size_t i = 0; i < n; i += (i < SHARD_HEADER_BYTES ? 1 : 7)) {
        for (size_t k = 0; k < sizeof vals; k++) {
            unsigned char old = g[i];
            if (old == vals[k]) continue;
            g[i] = vals[k];
            test_write(p, g, n);
            g[i] = old;
            Shard s;
            vrl_clear_error();
            int rc = shard_read(p, &s);
            cr_assert(rc == -1 && vrl_last_error()[0], "byte %zu = 0x%02x was accepted", i, vals[k]);
        }
    }
    free(g);
}

/* Version 1 shards (checksum over the tokens only) still read; their domain tag is
 * checked byte by byte, since no checksum protects it. */
Test(shard, version1_reads_and_checks_domain) {
    const char *dir = test_tmpdir(), *p = test_path(dir, "v1.tok");
    size_t n;
    unsigned char *g = good(dir, &n);
    put32(g + 8, 1);
    uint64_t h = fnv1a64(g + SHARD_HEADER_BYTES, n - SHARD_HEADER_BYTES, FNV1A64_INIT);
    for (int i = 0; i < 8; i++) g[56 + i] = (unsigned char)(h >> (8 * i));
    test_write(p, g, n);
    Shard s;
    cr_assert_eq(shard_read(p, &s), 0, "%s", vrl_last_error());
    cr_assert_str_eq(s.domain, "x");
    shard_free(&s);
    const char *tags[] = {"a\"b", "\xff", "../x", ".x"};
    for (int t = 0; t < 4; t++) {
        memset(g + 32, 0, SHARD_DOMAIN_LEN);
        memcpy(g + 32, tags[t], strlen(tags[t]));
        test_write(p, g, n);
        expect_error(shard_read(p, &s), "domain tag has byte");
    }
    uint32_t tok[2] = {1, 2};
    expect_error(shard_write(test_path(dir, "w.tok"), tok, 2, 16, 0, "../up"), "letters, digits");
    free(g);
}
