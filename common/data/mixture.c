/* mixture.c: seeded, resumable domain mixture over per-domain token shards. */
#include "common/data/mixture.h"
#include "common/base/error.h"
#include "common/base/rng.h"
#include "common/data/shard.h"
#include "common/data/shardset.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const MIXTURE_DEFAULT_DOMAINS[7] = {
    "RedPajamaCommonCrawl", "RedPajamaC4", "RedPajamaGithub", "RedPajamaStackExchange",
    "RedPajamaWikipedia", "RedPajamaBook", "RedPajamaArXiv"};
const double MIXTURE_DEFAULT_WEIGHTS[7] = {0.50, 0.20, 0.10, 0.05, 0.05, 0.05, 0.05};

#define STATE_MAGIC 0x4d58u        /* "MX" */
#define STATE_VERSION 1u
#define POS_BITS 40

typedef struct {
    char name[SHARD_DOMAIN_LEN + 1];
    double weight;
    ShardSet train;            /* mapped shards: n_train chunks of chunk_len ids */
    uint64_t n_train;
    ShardSet val;              /* mapped shards: n_val chunks */
    uint64_t n_val;
    uint64_t *perm;            /* [n_train] this epoch's chunk order */
    uint64_t epoch, pos;       /* next chunk = perm[pos] */
    int present;               /* some shard in train/ or validation/ carries this tag */
} Domain;

struct Mixture {
    char dir[4096];
    uint64_t seed;
    uint32_t chunk_len, seq_len;
    uint32_t vocab_size;        /* the largest vocab_size of any shard read: ids are below it */
    int n;
    Domain dom[MIXTURE_MAX_DOMAINS];
    double cum[MIXTURE_MAX_DOMAINS];   /* cumulative normalised weights */
    Rng pick;
    uint32_t fingerprint;
    char found[64][SHARD_DOMAIN_LEN + 1]; /* domain tags seen in train/ and validation/, for messages */
    int n_found;
};

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append every shard in DIR/split to its domain (unknown domains are ignored). */
static int load_split(Mixture *m, const char *split, int is_val) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", m->dir, split);
    DIR *d = opendir(path);
    if (!d) {
        if (is_val) return 0;              /* validation is optional */
        return vrl_error("%s: cannot open the train shard directory", path);
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".bin") != 0) continue;
        if (nn == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) { rc = vrl_error("%s: out of memory", path); break; }
            names = p;
        }
        if (!(names[nn] = strdup(e->d_name))) { rc = vrl_error("%s: out of memory", path); break; }
        nn++;
    }
    closedir(d);
    if (rc == 0 && nn > 1) qsort(names, nn, sizeof *names, cmp_str); /* an empty folder: names is NULL */
    for (size_t i = 0; i < nn && rc == 0; i++) {
        char file[8400];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        ShardMap s;
        if (shard_map(file, &s)) { rc = -1; break; }
        if (s.vocab_size > m->vocab_size) m->vocab_size = s.vocab_size;
        int k = -1, seen = 0;
        for (int j = 0; j < m->n; j++)
            if (strcmp(m->dom[j].name, s.domain) == 0) k = j;
        for (int j = 0; j < m->n_found; j++) seen |= strcmp(m->found[j], s.domain) == 0;
        if (!seen && m->n_found < (int)(sizeof m->found / sizeof m->found[0]))
            snprintf(m->found[m->n_found++], sizeof m->found[0], "%s", s.domain);
        if (k >= 0) {
            m->dom[k].present = 1;
            if (s.chunk_len == 0 || s.n_tokens % s.chunk_len != 0)
                rc = vrl_error("%s: not a chunked shard (chunk_len %u, %llu tokens)", file, s.chunk_len,
                               (unsigned long long)s.n_tokens);
            else if (m->chunk_len && s.chunk_len != m->chunk_len)
                rc = vrl_error("%s: chunk_len %u differs from %u in the other shards", file, s.chunk_len,
                               m->chunk_len);
            if (rc == 0) {
                m->chunk_len = s.chunk_len;
                Domain *dm = &m->dom[k];
                uint64_t add = s.n_tokens / s.chunk_len;
                if (shardset_add(is_val ? &dm->val : &dm->train, &s) < 0) rc = -1;
                else *(is_val ? &dm->n_val : &dm->n_train) += add;
            }
        }
        shard_unmap(&s); /* no-op when the set took it */
    }
    for (size_t i = 0; i < nn; i++) free(names[i]);
    free(names);
    return rc;
}

static void shuffle(Mixture *m, Domain *d) {
    Rng r;
    rng_seed_stream(&r, m->seed ^ fnv1a64(d->name, strlen(d->name), FNV1A64_INIT), d->epoch + 1);
    rng_permutation(&r, d->perm, d->n_train);
}

int is_mixture_dir(const char *path) {
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/train", path);
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    snprintf(p, sizeof p, "%s/validation", path);
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int mixture_open(const char *dir, const char *const *domains, const double *weights, int n_domains,
                 uint32_t seq_len, uint64_t seed, Mixture **out) {
    *out = NULL;
    if (!domains) {
        domains = MIXTURE_DEFAULT_DOMAINS;
        weights = MIXTURE_DEFAULT_WEIGHTS;
        n_domains = 7;
    }
    if (n_domains < 1 || n_domains > MIXTURE_MAX_DOMAINS)
        return vrl_error("%s: %d domains given, the mixture takes 1 to %d", dir, n_domains, MIXTURE_MAX_DOMAINS);
    Mixture *m = calloc(1, sizeof *m);
    if (!m) return vrl_error("%s: out of memory", dir);
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    m->seed = seed;
    m->n = n_domains;
    double total = 0;
    for (int i = 0; i < n_domains; i++) {
        if (strlen(domains[i]) == 0 || strlen(domains[i]) > SHARD_DOMAIN_LEN) {
            mixture_close(m);
            return vrl_error("%s: bad domain name \"%s\"", dir, domains[i]);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(domains[i], domains[j]) == 0) {
                mixture_close(m);
                return vrl_error("%s: domain \"%s\" given twice", dir, domains[i]);
            }
        if (!(weights[i] >= 0) || weights[i] > 1e300) {
            mixture_close(m);
            return vrl_error("%s: weight of \"%s\" must be a finite number >= 0", dir, domains[i]);
        }
        snprintf(m->dom[i].name, sizeof m->dom[i].name, "%s", domains[i]);
        m->dom[i].weight = weights[i];
        total += weights[i];
    }
    if (!(total > 0)) { mixture_close(m); return vrl_error("%s: all domain weights are zero", dir); }
    if (load_split(m, "train", 0) || load_split(m, "validation", 1)) { mixture_close(m); return -1; }
    double c = 0;
    for (int i = 0; i < m->n; i++) {
        Domain *d = &m->dom[i];
        if (!d->present) {
            char list[64 * (SHARD_DOMAIN_LEN + 4)] = "";
            for (int j = 0; j < m->n_found; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", j ? ", " : "",
                         m->found[j][0] ? m->found[j] : "(untagged)");
            vrl_error("%s: no shards of domain \"%s\"; the folder holds %s", dir, d->name,
                      m->n_found ? list : "no shards");
            mixture_close(m);
            return -1;
        }
        if (d->weight > 0 && d->n_train == 0) {
            mixture_close(m);
            return vrl_error("%s/train: no chunks for domain \"%s\"", dir, d->name);
        }
        if (d->n_train >= (1ULL << POS_BITS)) {
            mixture_close(m);
            return vrl_error("%s/train: too many chunks in domain \"%s\"", dir, d->name);
        }
        c += d->weight / total;
        m->cum[i] = c;
        d->perm = malloc((d->n_train ? d->n_train : 1) * sizeof *d->perm);
        if (!d->perm) { mixture_close(m); return vrl_error("%s: out of memory", dir); }
        shuffle(m, d);
    }
    m->seq_len = seq_len ? seq_len : m->chunk_len;
    if (m->seq_len > m->chunk_len) {
        uint32_t cl = m->chunk_len;
        mixture_close(m);
        return vrl_error("%s: sequence length %u exceeds the shards' chunk length %u", dir, seq_len, cl);
    }
    rng_seed_stream(&m->pick, seed, 0);
    /* fingerprint: the arguments and the data shape a saved position depends on */
    uint64_t h = fnv1a64(&seed, sizeof seed, FNV1A64_INIT);
    h = fnv1a64(&m->seq_len, sizeof m->seq_len, h);
    for (int i = 0; i < m->n; i++) {
        h = fnv1a64(m->dom[i].name, strlen(m->dom[i].name) + 1, h);
        h = fnv1a64(&m->dom[i].weight, sizeof(double), h);
        h = fnv1a64(&m->dom[i].n_train, sizeof(uint64_t), h);
    }
    m->fingerprint = (uint32_t)(h ^ (h >> 32));
    *out = m;
    return 0;
}

int mixture_weights_parse(const char *spec, MixtureWeights *w) {
    memset(w, 0, sizeof *w);
    const char *p = spec;
    if (!*p) return vrl_error("empty list; expected NAME=W,NAME=W,...");
    for (;;) {
        const char *end = strchr(p, ','), *eq = strchr(p, '=');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!eq || eq >= p + len) return vrl_error("\"%.*s\" is not NAME=W", (int)len, p);
        const size_t nl = (size_t)(eq - p);
        if (nl == 0 || nl > SHARD_DOMAIN_LEN)
            return vrl_error("domain name \"%.*s\" must be 1 to %d characters", (int)nl, p, SHARD_DOMAIN_LEN);
        if (w->n == MIXTURE_MAX_DOMAINS) return vrl_error("more than %d domains", MIXTURE_MAX_DOMAINS);
        char num[64];
        const size_t wl = len - nl - 1;
        if (wl == 0 || wl >= sizeof num) return vrl_error("weight of \"%.*s\" is missing or too long", (int)nl, p);
        memcpy(num, eq + 1, wl);
        num[wl] = '\0';
        char *stop;
        errno = 0;
        const double x = strtod(num, &stop);
        if (errno || stop == num || *stop || !isfinite(x) || x < 0)
            return vrl_error("weight \"%s\" of \"%.*s\" is not a finite number >= 0", num, (int)nl, p);
        memcpy(w->name[w->n], p, nl);
        w->name[w->n][nl] = '\0';
        for (int i = 0; i < w->n; i++)
            if (!strcmp(w->name[i], w->name[w->n])) return vrl_error("domain \"%s\" given twice", w->name[i]);
        w->weight[w->n++] = x;
        if (!end) break;
        p = end + 1;
    }
    double total = 0;
    for (int i = 0; i < w->n; i++) total += w->weight[i];
    return total > 0 ? 0 : vrl_error("all weights are zero");
}

void mixture_close(Mixture *m) {
    if (!m) return;
    for (int i = 0; i < MIXTURE_MAX_DOMAINS; i++) {
        shardset_free(&m->dom[i].train);
        shardset_free(&m->dom[i].val);
        free(m->dom[i].perm);
    }
    free(m);
}

int mixture_n_domains(const Mixture *m) { return m->n; }
const char *mixture_domain(const Mixture *m, int d) { return m->dom[d].name; }
uint32_t mixture_seq_len(const Mixture *m) { return m->seq_len; }
uint32_t mixture_chunk_len(const Mixture *m) { return m->chunk_len; }
uint32_t mixture_vocab_size(const Mixture *m) { return m->vocab_size; }
uint64_t mixture_train_chunks(const Mixture *m, int d) { return m->dom[d].n_train; }
uint64_t mixture_val_chunks(const Mixture *m, int d) { return m->dom[d].n_val; }

int mixture_next_batch(Mixture *m, int B, int32_t *tokens, int *domains) {
    for (int b = 0; b < B; b++) {
        double u = rng_uniform(&m->pick);
        int k = 0;
        while (k < m->n - 1 && (u >= m->cum[k] || m->dom[k].weight == 0)) k++;
        while (m->dom[k].weight == 0) k--;   /* rounding left u past the last weighted one */
        Domain *d = &m->dom[k];
        if (d->pos == d->n_train) {          /* epoch done: a new permutation */
            d->epoch++;
            d->pos = 0;
            if (d->epoch >= (1ULL << (64 - POS_BITS)))
                return vrl_error("%s: domain \"%s\" passed its epoch limit", m->dir, d->name);
            shuffle(m, d);
        }
        shardset_read(&d->train, d->perm[d->pos++] * m->chunk_len, m->seq_len, tokens + (size_t)b * m->seq_len);
        if (domains) domains[b] = k;
    }
    return 0;
}

void mixture_state_export(const Mixture *m, uint64_t words[MIXTURE_STATE_WORDS], int *n_words) {
    words[0] = (uint64_t)STATE_MAGIC << 48 | (uint64_t)STATE_VERSION << 40 | (uint64_t)m->n << 32 | m->fingerprint;
    for (int i = 0; i < 4; i++) words[1 + i] = m->pick.s[i];
    for (int i = 0; i < m->n; i++) words[5 + i] = m->dom[i].epoch << POS_BITS | m->dom[i].pos;
    *n_words = 5 + m->n;
}

int mixture_state_import(Mixture *m, const uint64_t *words, int n_words) {
    if (n_words != 5 + m->n || words[0] >> 48 != STATE_MAGIC || (words[0] >> 40 & 0xff) != STATE_VERSION ||
        (int)(words[0] >> 32 & 0xff) != m->n)
        return vrl_error("%s: saved data position does not belong to a %d-domain mixture", m->dir, m->n);
    if ((uint32_t)words[0] != m->fingerprint)
        return vrl_error("%s: saved data position was made with other data, seed, weights or length", m->dir);
    for (int i = 0; i < m->n; i++)
        if ((words[5 + i] & ((1ULL << POS_BITS) - 1)) > m->dom[i].n_train)
            return vrl_error("%s: saved data position is past the end of domain \"%s\"", m->dir, m->dom[i].name);
    for (int i = 0; i < 4; i++) m->pick.s[i] = words[1 + i];
    for (int i = 0; i < m->n; i++) {
        Domain *d = &m->dom[i];
        d->epoch = words[5 + i] >> POS_BITS;
        d->pos = words[5 + i] & ((1ULL << POS_BITS) - 1);
        shuffle(m, d);
    }
    return 0;
}

int mixture_val_chunk(const Mixture *m, int d, uint64_t i, int32_t *tokens) {
    if (d < 0 || d >= m->n || i >= m->dom[d].n_val)
        return vrl_error("%s: no validation chunk %llu in domain %d", m->dir, (unsigned long long)i, d);
    shardset_read(&m->dom[d].val, i * m->chunk_len, m->seq_len, tokens);
    return 0;
}
