/* test_mixture.c: the mixture loader on synthetic shards -- seeded determinism, one
 * visit per chunk per epoch, domain frequencies, exact resume from exported state,
 * refusal of a foreign state, and validation access. */
#include "common/base/error.h"
#include "common/data/mixture.h"
#include "common/data/shard.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL 8                       /* chunk length */
static const char *DOMS[3] = {"DomA", "DomB", "DomC"};
static const int NCH[3] = {37, 11, 5};   /* train chunks per domain */
static char dir[64];

/* Chunk c of domain d holds d*10000 + c*10 + t at position t, so a row names its source. */
static void make_data(void) {
    strcpy(dir, "/tmp/vrl_mix_XXXXXX");
    cr_assert(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof p, "%s/train", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/validation", dir);
    mkdir(p, 0755);
    for (int d = 0; d < 3; d++) {
        /* split the train chunks over two shards to exercise concatenation */
        int c0 = 0;
        for (int s = 0; s < 2; s++) {
            int c1 = s == 0 ? NCH[d] / 2 : NCH[d];
            uint32_t *tok = malloc((size_t)(c1 - c0) * CL * 4);
            for (int c = c0; c < c1; c++)
                for (int t = 0; t < CL; t++) tok[(c - c0) * CL + t] = (uint32_t)(d * 10000 + c * 10 + t);
            snprintf(p, sizeof p, "%s/train/%s-%05d.bin", dir, DOMS[d], s);
            cr_assert_eq(shard_write(p, tok, (uint64_t)(c1 - c0) * CL, 50277, CL, DOMS[d]), 0, "%s", vrl_last_error());
            free(tok);
            c0 = c1;
        }
        uint32_t val[2 * CL];
        for (int t = 0; t < 2 * CL; t++) val[t] = (uint32_t)(d * 10000 + 5000 + t);
        snprintf(p, sizeof p, "%s/validation/%s-00000.bin", dir, DOMS[d]);
        cr_assert_eq(shard_write(p, val, 2 * CL, 50277, CL, DOMS[d]), 0);
    }
}

static void remove_data(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static Mixture *open_mix(const double *w, uint64_t seed, uint32_t T) {
    Mixture *m;
    cr_assert_eq(mixture_open(dir, DOMS, w, 3, T, seed, &m), 0, "%s", vrl_last_error());
    return m;
}

TestSuite(mixture, .init = make_data, .fini = remove_data);

Test(mixture, seeded_and_deterministic) {
    const double w[3] = {0.6, 0.3, 0.1};
    Mixture *a = open_mix(w, 7, CL), *b = open_mix(w, 7, CL), *c = open_mix(w, 8, CL);
    int32_t x[4 * CL], y[4 * CL], z[4 * CL];
    int same_c = 1;
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(mixture_next_batch(a, 4, x, NULL), 0);
        cr_assert_eq(mixture_next_batch(b, 4, y, NULL), 0);
        cr_assert_eq(mixture_next_batch(c, 4, z, NULL), 0);
        cr_assert_eq(memcmp(x, y, sizeof x), 0, "same seed, batch %d differs", i);
        same_c &= memcmp(x, z, sizeof x) == 0;
    }
    cr_expect(!same_c, "another seed gave the same stream");
    mixture_close(a);
    mixture_close(b);
    mixture_close(c);
}

Test(mixture, every_chunk_once_per_epoch) {
    const double w[3] = {1, 0, 0};
    Mixture *m = open_mix(w, 3, CL);
    cr_assert_eq(mixture_train_chunks(m, 0), (uint64_t)NCH[0]);
    int32_t row[CL];
    for (int epoch = 0; epoch < 3; epoch++) {
        int seen[64] = {0}, order_is_identity = 1;
        for (int i = 0; i < NCH[0]; i++) {
            int dom;
            cr_assert_eq(mixture_next_batch(m, 1, row, &dom), 0);
            cr_assert_eq(dom, 0);
            int c = (row[0] % 10000) / 10;
            for (int t = 0; t < CL; t++) cr_assert_eq(row[t], c * 10 + t);   /* a whole chunk */
            seen[c]++;
            order_is_identity &= c == i;
        }
        for (int c = 0; c < NCH[0]; c++) cr_expect_eq(seen[c], 1, "epoch %d: chunk %d seen %d times", epoch, c, seen[c]);
        cr_expect(!order_is_identity, "chunks were not shuffled");
    }
    mixture_close(m);
}

Test(mixture, domain_frequencies_follow_weights) {
    const double w[3] = {0.5, 0.3, 0.2};
    Mixture *m = open_mix(w, 11, 4);
    cr_assert_eq(mixture_seq_len(m), 4u);
    enum { N = 20000 };
    int cnt[3] = {0};
    static int32_t rows[N * 4];
    static int dom[N];
    cr_assert_eq(mixture_next_batch(m, N, rows, dom), 0);
    for (int i = 0; i < N; i++) {
        cnt[dom[i]]++;
        cr_assert_eq(rows[i * 4] / 10000, dom[i], "row %d came from another domain", i);
    }
    for (int d = 0; d < 3; d++)
        cr_expect(abs(cnt[d] - (int)(w[d] * N)) < 400, "domain %d drawn %d times of %d", d, cnt[d], N);
    mixture_close(m);
}

Test(mixture, export_import_resumes_exactly) {
    const double w[3] = {0.2, 0.5, 0.3};
    Mixture *a = open_mix(w, 99, CL);
    int32_t x[3 * CL], y[3 * CL];
    for (int i = 0; i < 23; i++) cr_assert_eq(mixture_next_batch(a, 3, x, NULL), 0);   /* past epoch ends */
    uint64_t st[MIXTURE_STATE_WORDS];
    int nw;
    mixture_state_export(a, st, &nw);
    cr_assert_eq(nw, 5 + 3);
    Mixture *b = open_mix(w, 99, CL);
    cr_assert_eq(mixture_state_import(b, st, nw), 0, "%s", vrl_last_error());
    for (int i = 0; i < 40; i++) {
        cr_assert_eq(mixture_next_batch(a, 3, x, NULL), 0);
        cr_assert_eq(mixture_next_batch(b, 3, y, NULL), 0);
        cr_assert_eq(memcmp(x, y, sizeof x), 0, "resumed stream differs at batch %d", i);
    }
    Mixture *c = open_mix(w, 100, CL);          /* another seed: refused */
    cr_expect_eq(mixture_state_import(c, st, nw), -1);
    cr_expect(strstr(vrl_last_error(), "position") != NULL, "%s", vrl_last_error());
    cr_expect_eq(mixture_state_import(c, st, nw - 1), -1);
    mixture_close(a);
    mixture_close(b);
    mixture_close(c);
}

Test(mixture, validation_and_errors) {
    const double w[3] = {1, 1, 1};
    Mixture *m = open_mix(w, 1, CL);
    int32_t row[CL];
    for (int d = 0; d < 3; d++) {
        cr_assert_eq(mixture_val_chunks(m, d), 2u);
        cr_assert_eq(mixture_val_chunk(m, d, 1, row), 0);
        cr_expect_eq(row[0], d * 10000 + 5000 + CL);
    }
    cr_expect_eq(mixture_val_chunk(m, 0, 2, row), -1);
    mixture_close(m);
    Mixture *bad;
    const char *missing[1] = {"DomZ"};
    const double one[1] = {1};
    cr_expect_eq(mixture_open(dir, missing, one, 1, 0, 1, &bad), -1);
    cr_expect(strstr(vrl_last_error(), "DomZ") != NULL, "%s", vrl_last_error());
    cr_expect_eq(mixture_open(dir, DOMS, w, 3, CL + 1, 1, &bad), -1);    /* T > chunk_len */
    cr_expect_eq(mixture_open(dir, NULL, NULL, 0, 0, 1, &bad), -1);     /* formulas.md domains absent */
}
