/* cmd_data_inspect.c: `vrl data inspect`: a shard or a shard directory of formulas.md §3's
 * data: token, chunk and shard counts per split and domain, and a decoded sample. */
#include "cli/commands.h"
#include "cli/data_common.h"
#include "common/base/error.h"
#include "common/data/shard.h"
#include "common/data/tokenizer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char INSPECT_USAGE[] =
    "usage: vrl data inspect --in PATH [--tokenizer FILE] [--chunk K] [--n N] [--entropy]\n"
    "  --in PATH is a shard or a directory of SPLIT/*.bin shards: print token, chunk and\n"
    "  shard counts per split and domain. For a shard with --tokenizer, also decode the\n"
    "  first N (default 64) tokens of chunk K (default 0).\n"
    "  --entropy (directory): also each domain's and each split's unigram entropy in nats,\n"
    "  -sum p log p over its own token frequencies, and for the other splits' domains the\n"
    "  cross-entropy under the train split's unigram model (add-one smoothed over the\n"
    "  vocabulary): the loss of a context-free model of the training tokens, the mark a\n"
    "  language model trained on them has to get well below.\n";

static int inspect_shard(const char *path, const char *tokp, uint64_t chunk_i, uint64_t n) {
    Shard s;
    if (shard_read(path, &s)) return -1;
    uint64_t chunks = s.chunk_len ? s.n_tokens / s.chunk_len : 0;
    printf("%s: domain \"%s\", %llu tokens, chunk_len %u, %llu chunks, vocab_size %u, %u-byte ids\n", path, s.domain,
           (unsigned long long)s.n_tokens, s.chunk_len, (unsigned long long)chunks, s.vocab_size, s.token_bytes);
    int rc = 0;
    if (tokp) {
        uint64_t len = s.chunk_len ? s.chunk_len : s.n_tokens, start = chunk_i * len;
        if (start >= s.n_tokens) rc = vrl_error("%s: no chunk %llu", path, (unsigned long long)chunk_i);
        Tokenizer *t = NULL;
        if (rc == 0) rc = tok_load(tokp, &t);
        if (rc == 0) {
            if (n > len) n = len;
            if (start + n > s.n_tokens) n = s.n_tokens - start;
            char *text;
            size_t tn;
            rc = tok_decode(t, s.tokens + start, n, 0, &text, &tn);
            if (rc == 0) {
                printf("chunk %llu, first %llu tokens:\n", (unsigned long long)chunk_i, (unsigned long long)n);
                for (uint64_t i = 0; i < n; i++) printf(i ? " %u" : "%u", s.tokens[start + i]);
                printf("\n---\n%.*s\n---\n", (int)tn, text);
                free(text);
            }
            tok_free(t);
        }
    }
    shard_free(&s);
    return rc;
}

/* -sum p log p of the frequencies in counts [n], in nats (0 for no tokens). */
static double unigram_entropy(const uint64_t *counts, size_t n) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += counts[i];
    double h = 0;
    for (size_t i = 0; i < n; i++)
        if (counts[i]) {
            const double p = (double)counts[i] / (double)total;
            h -= p * log(p);
        }
    return h;
}

/* Add the shard's ids to counts [*n] (grown to its vocab_size, zero-filled). */
static int count_tokens(const Shard *s, uint64_t **counts, size_t *n) {
    if (s->vocab_size > *n) {
        uint64_t *c = realloc(*counts, s->vocab_size * sizeof *c);
        if (!c) return vrl_error("out of memory for %u token counts", s->vocab_size);
        memset(c + *n, 0, (s->vocab_size - *n) * sizeof *c);
        *counts = c, *n = s->vocab_size;
    }
    for (uint64_t i = 0; i < s->n_tokens; i++) (*counts)[s->tokens[i]]++; /* ids < vocab_size: shard_read checks */
    return 0;
}

/* -1/n sum_v c_v log q_v with q_v = (t_v + 1) / (T + V): the tokens counted in c [nc] scored by
 * the add-one unigram model of the counts t [nt] (T their sum) over a vocabulary of V ids. */
static double unigram_cross_entropy(const uint64_t *c, size_t nc, const uint64_t *t, size_t nt) {
    const size_t V = nc > nt ? nc : nt;
    uint64_t T = 0, n = 0;
    for (size_t i = 0; i < nt; i++) T += t[i];
    double sum = 0;
    for (size_t i = 0; i < nc; i++)
        if (c[i]) {
            const double q = ((double)(i < nt ? t[i] : 0) + 1.0) / ((double)T + (double)V);
            sum -= (double)c[i] * log(q);
            n += c[i];
        }
    return n ? sum / (double)n : 0;
}

static int inspect_dir(const char *dir, int entropy) {
    uint64_t *train_counts = NULL; /* [n_train] the train split's token frequencies */
    size_t n_train = 0;
    int found = 0;
    for (int sp = 0; sp < 3; sp++) {
        char sd[4200];
        snprintf(sd, sizeof sd, "%s/%s", dir, DATA_SPLITS[sp]);
        Names files;
        if (data_list_dir(sd, 0, ".bin", NULL, &files)) { free(train_counts); return -1; }
        /* files are DOMAIN-NNNNN.bin sorted, so one domain's shards are adjacent */
        char cur[SHARD_DOMAIN_LEN + 1] = "";
        uint64_t tok = 0, ch = 0, total = 0;
        int shards = 0;
        uint64_t *dom_counts = NULL, *split_counts = NULL; /* [vocab] token frequencies */
        size_t n_dom = 0, n_split = 0;
        for (size_t f = 0; f <= files.n; f++) {
            Shard s = {0};
            if (f < files.n) {
                char p[8400];
                snprintf(p, sizeof p, "%s/%s", sd, files.v[f]);
                if (shard_read(p, &s)) {
                    names_free(&files), free(dom_counts), free(split_counts), free(train_counts);
                    return -1;
                }
            }
            if (shards && (f == files.n || strcmp(cur, s.domain) != 0)) {
                printf("%-10s %-24s %12llu tokens %8llu chunks %3d shards", DATA_SPLITS[sp], cur,
                       (unsigned long long)tok, (unsigned long long)ch, shards);
                if (entropy) printf("   unigram entropy %.4f nats", unigram_entropy(dom_counts, n_dom));
                if (entropy && sp > 0 && train_counts)
                    printf(", %.4f under train's", unigram_cross_entropy(dom_counts, n_dom, train_counts, n_train));
                printf("\n");
                if (dom_counts) memset(dom_counts, 0, n_dom * sizeof *dom_counts);
                tok = ch = 0;
                shards = 0;
            }
            if (f < files.n && entropy &&
                (count_tokens(&s, &dom_counts, &n_dom) || count_tokens(&s, &split_counts, &n_split))) {
                shard_free(&s), names_free(&files), free(dom_counts), free(split_counts), free(train_counts);
                return -1;
            }
            if (f < files.n) {
                snprintf(cur, sizeof cur, "%s", s.domain);
                tok += s.n_tokens;
                total += s.n_tokens;
                ch += s.chunk_len ? s.n_tokens / s.chunk_len : 0;
                shards++;
                found = 1;
                shard_free(&s);
            }
        }
        if (files.n) {
            printf("%-10s %-24s %12llu tokens", DATA_SPLITS[sp], "(all)", (unsigned long long)total);
            if (entropy) printf("%30s unigram entropy %.4f nats", "", unigram_entropy(split_counts, n_split));
            if (entropy && sp > 0 && train_counts)
                printf(", %.4f under train's", unigram_cross_entropy(split_counts, n_split, train_counts, n_train));
            printf("\n");
        }
        free(dom_counts);
        if (sp == 0 && files.n) train_counts = split_counts, n_train = n_split; /* DATA_SPLITS[0] is train */
        else free(split_counts);
        names_free(&files);
    }
    free(train_counts);
    if (!found) return vrl_error("%s: no SPLIT/*.bin shards", dir);
    return 0;
}

int data_inspect(int argc, char **argv) {
    const char *path = NULL, *tokp = NULL;
    uint64_t chunk = 0, n = 64;
    int entropy = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) { fputs(INSPECT_USAGE, stdout); return 0; }
        int has = i + 1 < argc;
        if (strcmp(a, "--in") == 0 && has) path = argv[++i];
        else if (strcmp(a, "--tokenizer") == 0 && has) tokp = argv[++i];
        else if (strcmp(a, "--entropy") == 0) entropy = 1;
        else if (strcmp(a, "--chunk") == 0 && has) { if (data_parse_u64(a, argv[++i], &chunk)) return data_fail("inspect"); }
        else if (strcmp(a, "--n") == 0 && has) { if (data_parse_u64(a, argv[++i], &n)) return data_fail("inspect"); }
        else { fprintf(stderr, "vrl data inspect: unknown or incomplete option %s\n%s", a, INSPECT_USAGE); return 2; }
    }
    if (!path) { fprintf(stderr, "vrl data inspect: --in PATH is required\n%s", INSPECT_USAGE); return 2; }
    struct stat st;
    if (stat(path, &st) != 0) { vrl_error("%s: %s", path, strerror(errno)); return data_fail("inspect"); }
    if (entropy && !S_ISDIR(st.st_mode)) {
        vrl_error("%s: --entropy needs a directory of SPLIT/*.bin shards, not one shard", path);
        return data_fail("inspect");
    }
    int rc = S_ISDIR(st.st_mode) ? inspect_dir(path, entropy) : inspect_shard(path, tokp, chunk, n);
    return rc ? data_fail("inspect") : 0;
}
