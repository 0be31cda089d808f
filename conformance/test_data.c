/* test_data.c: `vrl data` end to end on ../shared/data slimpajama-mini (reorganize,
 * select, tokenize twice with different thread counts: byte-identical shards), and
 * bad input: invalid JSON, a missing "text", corrupt and truncated .zst, an
 * unsupported tokenizer -- each a non-zero exit, an error naming file and line, and no
 * output file left behind. */
#include "cli/commands.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define TOK VRL_SHARED_DATA "/tokenizers/gpt-neox-20b.tokenizer.json"
#define MINI VRL_SHARED_DATA "/corpora/slimpajama-mini"

static char tmp[64];

static void setup(void) {
    strcpy(tmp, "/tmp/vrl_data_XXXXXX");
    cr_assert(mkdtemp(tmp));
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(data, .init = setup, .fini = teardown);

/* Run `vrl data ARGS...` in-process; stdout is kept quiet. */
static int run(const char *a0, ...) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = "data";
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a; a = va_arg(ap, const char *)) argv[argc++] = (char *)a;
    va_end(ap);
    vrl_clear_error();
    fflush(stdout);
    return cmd_data(argc, argv);
}

static char *pathf(const char *fmt, const char *a) {
    static char bufs[4][4096];
    static int k;
    char *p = bufs[k++ % 4];
    snprintf(p, 4096, fmt, tmp, a);
    return p;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    cr_assert(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* Number of regular files under dir (recursively). */
static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        stat(p, &st);
        n += S_ISDIR(st.st_mode) ? count_files(p) : 1;
    }
    closedir(d);
    return n;
}

static int same_tree(const char *a, const char *b) {
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "diff -r %s %s > /dev/null", a, b);
    return system(cmd) == 0;
}

Test(data, pipeline_is_reproducible) {
    if (access(TOK, R_OK) || access(MINI, R_OK)) cr_skip_test("../shared/data slimpajama-mini or tokenizer absent");
    cr_assert_eq(run("reorganize", "--in", MINI, "--out", pathf("%s/reorg%s", ""), NULL), 0, "%s", vrl_last_error());
    cr_assert(file_exists(pathf("%s/reorg/train/%s.jsonl", "RedPajamaC4")));
    cr_assert(file_exists(pathf("%s/reorg/validation/%s.jsonl", "RedPajamaGithub")));
    /* a sample of 30k tokens per domain (1e-5 of C4's budget gives 40k) */
    cr_assert_eq(run("select", "--in", pathf("%s/reorg%s", ""), "--out", pathf("%s/sel%s", ""), "--tokenizer", TOK,
                     "--scale", "1e-5", "--seed", "5", NULL), 0, "%s", vrl_last_error());
    cr_assert_eq(run("select", "--in", pathf("%s/reorg%s", ""), "--out", pathf("%s/sel2%s", ""), "--tokenizer", TOK,
                     "--scale", "1e-5", "--seed", "5", "--threads", "1", NULL), 0, "%s", vrl_last_error());
    cr_expect(same_tree(pathf("%s/sel%s", ""), pathf("%s/sel2%s", "")), "select differs between runs");
    cr_assert_eq(run("tokenize", "--in", pathf("%s/sel%s", ""), "--out", pathf("%s/s1%s", ""), "--tokenizer", TOK,
                     "--threads", "1", NULL), 0, "%s", vrl_last_error());
    cr_assert_eq(run("tokenize", "--in", pathf("%s/sel%s", ""), "--out", pathf("%s/s2%s", ""), "--tokenizer", TOK,
                     "--threads", "3", NULL), 0, "%s", vrl_last_error());
    cr_expect(same_tree(pathf("%s/s1%s", ""), pathf("%s/s2%s", "")), "shards differ between runs / thread counts");
    const char *doms[7] = {"RedPajamaCommonCrawl", "RedPajamaC4", "RedPajamaGithub", "RedPajamaStackExchange",
                           "RedPajamaWikipedia", "RedPajamaBook", "RedPajamaArXiv"};
    for (int i = 0; i < 7; i++)
        cr_expect(file_exists(pathf("%s/s1/train/%s-00000.bin", doms[i])), "no train shard for %s", doms[i]);
    cr_expect(file_exists(pathf("%s/s1/validation/%s-00000.bin", "RedPajamaC4")));
    cr_expect_eq(run("inspect", "--in", pathf("%s/s1%s", ""), NULL), 0, "%s", vrl_last_error());
    cr_expect_eq(run("inspect", "--in", pathf("%s/s1/train/%s-00000.bin", "RedPajamaC4"), "--tokenizer", TOK, "--n", "8", NULL), 0);
}

/* reorganize on one bad line: the error names file:line and no output is left. */
static void expect_reorg_fails(const char *fname, const void *bytes, size_t n, const char *needle) {
    make_dirs(pathf("%s/in/train/chunk1%s", ""));
    char *p = pathf("%s/in/train/chunk1/%s", fname);
    FILE *f = fopen(p, "wb");
    cr_assert(f);
    fwrite(bytes, 1, n, f);
    fclose(f);
    cr_expect_neq(run("reorganize", "--in", pathf("%s/in%s", ""), "--out", pathf("%s/out%s", ""), NULL), 0);
    cr_expect(strstr(vrl_last_error(), needle) != NULL, "error \"%s\" lacks \"%s\"", vrl_last_error(), needle);
    cr_expect(strstr(vrl_last_error(), fname) != NULL, "error \"%s\" does not name %s", vrl_last_error(), fname);
    cr_expect_eq(count_files(pathf("%s/out%s", "")), 0, "output left behind");
}

static const char GOOD[] = "{\"text\":\"fine\",\"meta\":{\"redpajama_set_name\":\"RedPajamaC4\"}}\n";

Test(data, invalid_json_line) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s{\"text\": \"oops\",\n", GOOD, GOOD);
    expect_reorg_fails("a.jsonl", buf, strlen(buf), "a.jsonl:3: invalid JSON");
}

Test(data, missing_text_field) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s{\"txt\":\"x\",\"meta\":{\"redpajama_set_name\":\"RedPajamaC4\"}}\n", GOOD);
    expect_reorg_fails("b.jsonl", buf, strlen(buf), "b.jsonl:2: missing \"text\"");
}

Test(data, missing_domain) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s%s{\"text\":\"x\",\"meta\":{}}\n", GOOD, GOOD);
    expect_reorg_fails("c.jsonl", buf, strlen(buf), "c.jsonl:3: missing \"meta\"");
}

static size_t compressed(char *dst, size_t cap) {
    char src[8192] = "";
    for (int i = 0; i < 100; i++) strcat(src, GOOD);
    /* with a content checksum, as the zstd command line writes by default */
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    size_t n = ZSTD_compress2(c, dst, cap, src, strlen(src));
    ZSTD_freeCCtx(c);
    cr_assert(!ZSTD_isError(n));
    return n;
}

Test(data, corrupt_zst) {
    char z[8192];
    size_t n = compressed(z, sizeof z);
    for (size_t i = n / 2; i < n / 2 + 8 && i < n; i++) z[i] ^= 0x5a;
    expect_reorg_fails("d.jsonl.zst", z, n, "zstd");
}

Test(data, zst_bad_magic) {
    char z[8192];
    size_t n = compressed(z, sizeof z);
    z[0] ^= 0x11;
    expect_reorg_fails("f.jsonl.zst", z, n, "zstd");
}

Test(data, truncated_zst) {
    char z[8192];
    size_t n = compressed(z, sizeof z);
    expect_reorg_fails("e.jsonl.zst", z, n - 5, "zstd");
}

Test(data, tokenize_bad_line_leaves_no_shard) {
    if (access(TOK, R_OK)) cr_skip_test("../shared/data tokenizer absent");
    make_dirs(pathf("%s/in/train%s", ""));
    /* enough text for several 4-token chunks and shards before the bad line */
    char buf[8192] = "";
    for (int i = 0; i < 40; i++) strcat(buf, "{\"text\":\"hello there world, again\"}\n");
    strcat(buf, "{\"text\": 17}\n");
    write_text(pathf("%s/in/train/%s.jsonl", "Dom"), buf);
    cr_expect_neq(run("tokenize", "--in", pathf("%s/in%s", ""), "--out", pathf("%s/out%s", ""), "--tokenizer", TOK,
                      "--chunk", "4", "--shard-chunks", "2", NULL), 0);
    cr_expect(strstr(vrl_last_error(), "Dom.jsonl:41: missing \"text\"") != NULL, "%s", vrl_last_error());
    cr_expect_eq(count_files(pathf("%s/out%s", "")), 0, "a shard of the failed run was left behind");
}

Test(data, unsupported_tokenizer) {
    make_dirs(pathf("%s/in/train%s", ""));
    write_text(pathf("%s/in/train/%s.jsonl", "Dom"), GOOD);
    write_text(pathf("%s/%s", "wp.json"), "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}");
    cr_expect_neq(run("tokenize", "--in", pathf("%s/in%s", ""), "--out", pathf("%s/out%s", ""), "--tokenizer",
                      pathf("%s/%s", "wp.json"), NULL), 0);
    cr_expect(strstr(vrl_last_error(), "wp.json: unsupported tokenizer model \"WordPiece\"") != NULL, "%s", vrl_last_error());
    cr_expect_eq(count_files(pathf("%s/out%s", "")), 0);
}

/* --eos beyond the vocabulary: the message read the tokenizer after freeing it (ASan:
 * heap use-after-free); the check runs on the repository's tiny tokenizer. */
Test(data, eos_beyond_vocab) {
    make_dirs(pathf("%s/in/train%s", ""));
    write_text(pathf("%s/in/train/%s.jsonl", "Dom"), GOOD);
    cr_expect_neq(run("tokenize", "--in", pathf("%s/in%s", ""), "--out", pathf("%s/out%s", ""), "--tokenizer",
                      VRL_SOURCE_DIR "/conformance/fixtures/tiny_tokenizer.json", "--eos", "999999", NULL), 0);
    cr_expect(strstr(vrl_last_error(), "--eos 999999 is not below the vocabulary size 262") != NULL, "%s",
              vrl_last_error());
    cr_expect_eq(count_files(pathf("%s/out%s", "")), 0);
}
