/* tokenizer.c: byte-level BPE compatible with Hugging Face `tokenizers` (see
 * tokenizer.h for the pipeline and the invalid-UTF-8 rule). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "common/data/tokenizer.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"

#include <jansson.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* The GPT-2 pre-tokenizer regex, as in HF's ByteLevel pre-tokenizer. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef struct {
    char *content;             /* UTF-8, len bytes */
    size_t len;
    uint32_t id;
    int special, single_word, lstrip, rstrip, normalized;
} AddedToken;

/* Open-addressing string -> id map over a shared byte pool. */
typedef struct {
    uint32_t *slots;           /* [cap] entry index + 1, 0 = empty */
    size_t cap;
} StrMap;

/* (left id, right id) -> (rank, new id) */
typedef struct {
    uint64_t key;              /* left << 32 | right, UINT64_MAX = empty */
    uint32_t rank, new_id;
} MergeSlot;

struct Tokenizer {
    char path[1024];
    uint64_t gen;              /* distinguishes tokenizers in the per-thread caches */
    uint32_t vocab_size;
    /* token strings, indexed by id: [vocab_size] offsets into pool (UINT32_MAX = hole) */
    char *pool;
    size_t pool_len;
    uint32_t *tok_off, *tok_len;
    StrMap vmap;               /* vocab string -> id */
    MergeSlot *merges;         /* [merge_cap] */
    size_t merge_cap;
    uint32_t byte_id[256];     /* id of the single-byte token for each byte */
    uint16_t byte_cp[256];     /* byte -> code point of the byte-level alphabet */
    int16_t cp_byte[324];      /* code point -> byte, -1 if not in the alphabet */
    AddedToken *added;         /* [n_added], sorted by (first byte, length desc) */
    int n_added;
    int first_added[257];      /* added[first_added[b] .. first_added[b+1]) start with byte b */
    int has_raw_added, has_norm_added;
    uint8_t *is_special;       /* [vocab_size] */
    uint8_t *is_added;         /* [vocab_size] */
    int nfc;                   /* normalizer is NFC */
    int add_prefix_space, use_regex;
    pcre2_code *re;
};

/* ------------------------------------------------------------------ id buffers */

int tok_ids_push(TokIds *b, uint32_t id) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        uint32_t *p = realloc(b->ids, cap * sizeof *p);
        if (!p) return vrl_error("tokenizer: out of memory");
        b->ids = p;
        b->cap = cap;
    }
    b->ids[b->n++] = id;
    return 0;
}

void tok_ids_free(TokIds *b) {
    free(b->ids);
    b->ids = NULL;
    b->n = b->cap = 0;
}

/* ------------------------------------------------------------------ hashing */

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= s[i]; h *= 0x100000001b3ULL; }
    return h ^ (h >> 29);
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static int64_t vmap_get(const Tokenizer *t, const char *s, size_t n) {
    if (!t->vmap.cap) return -1;
    size_t mask = t->vmap.cap - 1, i = hash_bytes(s, n) & mask;
    for (;;) {
        uint32_t e = t->vmap.slots[i];
        if (!e) return -1;
        uint32_t id = e - 1;
        if (t->tok_len[id] == n && memcmp(t->pool + t->tok_off[id], s, n) == 0) return id;
        i = (i + 1) & mask;
    }
}

static void vmap_put(Tokenizer *t, uint32_t id) {
    const char *s = t->pool + t->tok_off[id];
    size_t mask = t->vmap.cap - 1, i = hash_bytes(s, t->tok_len[id]) & mask;
    while (t->vmap.slots[i]) i = (i + 1) & mask;
    t->vmap.slots[i] = id + 1;
}

static const MergeSlot *merge_get(const Tokenizer *t, uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t)a << 32 | b;
    size_t mask = t->merge_cap - 1, i = mix64(key) & mask;
    for (;;) {
        const MergeSlot *m = &t->merges[i];
        if (m->key == key) return m;
        if (m->key == UINT64_MAX) return NULL;
        i = (i + 1) & mask;
    }
}

/* ------------------------------------------------------------------ UTF-8 helpers */

/* Length of the valid UTF-8 sequence at s (Unicode Table 3-7), or 0 with *bad set to
 * the length of the maximal invalid subpart (>= 1). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) { need = 2; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) { need = 2; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) { need = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) { need = 3; hi = 0x8F; }
    else { *bad = 1; return 0; }
    size_t i = 1;
    for (; i <= need; i++) {
        if (i >= n) break;
        unsigned b = s[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) break;
    }
    if (i == need + 1) return need + 1;
    *bad = i;
    return 0;
}

int tok_utf8_lossy(const char *s, size_t n, char **out, size_t *n_out) {
    char *o = malloc(n * 3 + 1);           /* each bad byte grows to at most 3 bytes */
    if (!o) return vrl_error("tokenizer: out of memory");
    const unsigned char *u = (const unsigned char *)s;
    size_t j = 0;
    for (size_t i = 0; i < n;) {
        size_t bad = 0, k = utf8_seq(u + i, n - i, &bad);
        if (k) { memcpy(o + j, u + i, k); j += k; i += k; }
        else { memcpy(o + j, "\xEF\xBF\xBD", 3); j += 3; i += bad; }
    }
    o[j] = '\0';
    *out = o;
    *n_out = j;
    return 0;
}

static int utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x80) { i++; continue; }
        size_t bad, k = utf8_seq(u + i, n - i, &bad);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

int tok_nfc(const char *s, size_t n, char **out, size_t *n_out) {
    /* Code points below U+0300 (bytes < 0xCC) are NFC on their own and never compose
     * with what precedes them, so such text needs no work. */
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0xCC) i++;
    if (i == n) {
        char *o = malloc(n + 1);
        if (!o) return vrl_error("tokenizer: out of memory");
        memcpy(o, s, n);
        o[n] = '\0';
        *out = o;
        *n_out = n;
        return 0;
    }
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (r < 0) return vrl_error("tokenizer: NFC failed: %s", utf8proc_errmsg(r));
    *out = (char *)dst;
    *n_out = (size_t)r;
    return 0;
}

static int is_ws_cp(utf8proc_int32_t c) {
    /* Rust's char::is_whitespace: the Unicode White_Space property. */
    switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return c >= 0x2000 && c <= 0x200A;
    }
}

static int is_alnum_cp(utf8proc_int32_t c) {
    utf8proc_category_t k = utf8proc_category(c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

/* The code point ending just before s+end (s valid UTF-8), with its start in *start. */
static utf8proc_int32_t cp_before(const char *s, size_t end, size_t *start) {
    size_t i = end;
    do i--; while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    utf8proc_int32_t c;
    utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(end - i), &c);
    *start = i;
    return c;
}

static utf8proc_int32_t cp_at(const char *s, size_t n, size_t *len) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &c);
    *len = k > 0 ? (size_t)k : 1;
    return c;
}

/* ------------------------------------------------------------------ per-thread word cache */

#define CACHE_SLOTS (1u << 14)
#define CACHE_KEY 24               /* words longer than this are not cached */
#define CACHE_IDS 8

typedef struct {
    uint64_t gen, hash;
    uint8_t klen, nids;
    char key[CACHE_KEY];
    uint32_t ids[CACHE_IDS];
} CacheEntry;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t next_gen = 1;

static void cache_key_init(void) { pthread_key_create(&cache_key, free); }

/* This thread's cache ([CACHE_SLOTS]), or NULL when it cannot be allocated. */
static CacheEntry *thread_cache(void) {
    pthread_once(&cache_once, cache_key_init);
    CacheEntry *c = pthread_getspecific(cache_key);
    if (!c) {
        c = calloc(CACHE_SLOTS, sizeof *c);
        if (c && pthread_setspecific(cache_key, c)) { free(c); c = NULL; }
    }
    return c;
}

/* ------------------------------------------------------------------ BPE */

typedef struct { uint32_t rank, pos, new_id; } HeapItem;

static int heap_less(const HeapItem *a, const HeapItem *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(HeapItem *h, size_t *n, HeapItem x) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static HeapItem heap_pop(HeapItem *h, size_t *n) {
    HeapItem top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = x;
    return top;
}

/* BPE-merge the bytes of one pre-token and append the ids: lowest merge rank first,
 * leftmost on ties, exactly HF's Word::merge_all. */
static int bpe_word(const Tokenizer *t, const unsigned char *w, size_t n, TokIds *out) {
    if (n == 1) return tok_ids_push(out, t->byte_id[w[0]]);
    CacheEntry *cache = n <= CACHE_KEY ? thread_cache() : NULL, *ce = NULL;
    uint64_t h = 0;
    if (cache) {
        h = hash_bytes(w, n);
        ce = &cache[h & (CACHE_SLOTS - 1)];
        if (ce->gen == t->gen && ce->hash == h && ce->klen == n && memcmp(ce->key, w, n) == 0) {
            for (int i = 0; i < ce->nids; i++)
                if (tok_ids_push(out, ce->ids[i])) return -1;
            return 0;
        }
    }
    /* symbols: id[n], prev[n], next[n] (-1 = none, id UINT32_MAX = merged away) */
    enum { SMALL = 128 };
    uint32_t s_id[SMALL];
    int32_t s_prev[SMALL], s_next[SMALL];
    HeapItem s_heap[SMALL];
    uint32_t *id = s_id;
    int32_t *prev = s_prev, *next = s_next;
    HeapItem *heap = s_heap;
    void *big = NULL;
    if (n > SMALL) {
        big = malloc(n * (sizeof *id + sizeof *prev + sizeof *next + sizeof *heap));
        if (!big) return vrl_error("tokenizer: out of memory");
        heap = big;
        id = (uint32_t *)(heap + n);
        prev = (int32_t *)(id + n);
        next = prev + n;
    }
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        id[i] = t->byte_id[w[i]];
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    /* The heap never holds more than one live entry per adjacent pair plus stale ones;
     * each merge pushes at most two, and there are at most n-1 merges: bound 3n. Keep
     * it simple by compacting when full. */
    for (size_t i = 0; i + 1 < n; i++) {
        const MergeSlot *m = merge_get(t, id[i], id[i + 1]);
        if (m) heap_push(heap, &nh, (HeapItem){m->rank, (uint32_t)i, m->new_id});
    }
    while (nh) {
        HeapItem top = heap_pop(heap, &nh);
        uint32_t p = top.pos;
        if (id[p] == UINT32_MAX || next[p] < 0) continue;
        uint32_t r = (uint32_t)next[p];
        const MergeSlot *m = merge_get(t, id[p], id[r]);
        if (!m || m->new_id != top.new_id) continue;   /* stale entry */
        id[p] = top.new_id;
        id[r] = UINT32_MAX;
        next[p] = next[r];
        if (next[r] >= 0) prev[next[r]] = (int32_t)p;
        /* Room: after removing one item the heap has nh <= n-1 entries ... pushes are
         * bounded because every push follows a pop of a live pair; see below. */
        if (nh + 2 > n) {
            /* drop stale entries so the pushes below fit */
            size_t k = 0;
            for (size_t i = 0; i < nh; i++) {
                uint32_t q = heap[i].pos;
                if (id[q] == UINT32_MAX || next[q] < 0) continue;
                const MergeSlot *mm = merge_get(t, id[q], id[next[q]]);
                if (mm && mm->new_id == heap[i].new_id) heap[k++] = heap[i];
            }
            size_t old = k;
            nh = 0;
            for (size_t i = 0; i < old; i++) heap_push(heap, &nh, heap[i]);
        }
        if (prev[p] >= 0) {
            const MergeSlot *ml = merge_get(t, id[prev[p]], id[p]);
            if (ml) heap_push(heap, &nh, (HeapItem){ml->rank, (uint32_t)prev[p], ml->new_id});
        }
        if (next[p] >= 0) {
            const MergeSlot *mr = merge_get(t, id[p], id[next[p]]);
            if (mr) heap_push(heap, &nh, (HeapItem){mr->rank, p, mr->new_id});
        }
    }
    size_t start = out->n;
    int rc = 0;
    for (int32_t i = 0; i >= 0 && rc == 0; i = next[i]) rc = tok_ids_push(out, id[i]);
    free(big);
    if (rc) return -1;
    size_t k = out->n - start;
    if (ce && k <= CACHE_IDS) {
        ce->gen = t->gen;
        ce->hash = h;
        ce->klen = (uint8_t)n;
        ce->nids = (uint8_t)k;
        memcpy(ce->key, w, n);
        memcpy(ce->ids, out->ids + start, k * sizeof *out->ids);
    }
    return 0;
}

/* ------------------------------------------------------------------ encode */

/* Pre-tokenize one piece with the GPT-2 regex and BPE each part. */
static int encode_plain(const Tokenizer *t, const char *s, size_t n, pcre2_match_data *md,
                        TokIds *out) {
    if (n == 0) return 0;
    char *tmp = NULL;
    if (t->add_prefix_space && s[0] != ' ') {
        tmp = malloc(n + 1);
        if (!tmp) return vrl_error("tokenizer: out of memory");
        tmp[0] = ' ';
        memcpy(tmp + 1, s, n);
        s = tmp;
        n++;
    }
    int rc = 0;
    if (!t->use_regex) {
        rc = bpe_word(t, (const unsigned char *)s, n, out);
        free(tmp);
        return rc;
    }
    size_t pos = 0;
    while (pos < n && rc == 0) {
        int m = pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (m == PCRE2_ERROR_NOMATCH) {
            rc = bpe_word(t, (const unsigned char *)s + pos, n - pos, out);
            break;
        }
        if (m < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(m, msg, sizeof msg);
            rc = vrl_error("tokenizer: regex match failed: %s", (char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (a > pos) rc = bpe_word(t, (const unsigned char *)s + pos, a - pos, out);  /* gap */
        if (rc == 0 && b > a) rc = bpe_word(t, (const unsigned char *)s + a, b - a, out);
        pos = b > a ? b : a + 1;   /* the pattern has no empty matches; guard anyway */
    }
    free(tmp);
    return rc;
}

/* Stage two: split normalized text on added tokens with normalized=true. */
static int encode_normalized(const Tokenizer *t, const char *s, size_t n, pcre2_match_data *md,
                             TokIds *out);

/* Find added tokens (of the given `normalized` kind) in s[0..n), leftmost-longest like
 * HF's Aho-Corasick pass, honouring single_word / lstrip / rstrip; the text between
 * matches goes to `rest`. */
static int split_added(const Tokenizer *t, const char *s, size_t n, int normalized,
                       pcre2_match_data *md, TokIds *out,
                       int (*rest)(const Tokenizer *, const char *, size_t, pcre2_match_data *,
                                   TokIds *)) {
    size_t done = 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        const AddedToken *hit = NULL;
        for (int k = t->first_added[c]; k < t->first_added[c + 1]; k++) {
            const AddedToken *a = &t->added[k];
            if (a->normalized == normalized && a->len <= n - i && memcmp(s + i, a->content, a->len) == 0) {
                hit = a;                       /* sorted longest first */
                break;
            }
        }
        if (!hit) { i++; continue; }
        size_t start = i, stop = i + hit->len;
        if (hit->single_word) {
            size_t st, cl;
            int left_ok = start == 0 || !is_alnum_cp(cp_before(s, start, &st));
            int right_ok = stop == n || !is_alnum_cp(cp_at(s + stop, n - stop, &cl));
            if (!left_ok || !right_ok) { i++; continue; }
        }
        if (hit->lstrip) {
            size_t st;
            while (start > done && is_ws_cp(cp_before(s, start, &st))) start = st;
        }
        if (hit->rstrip) {
            size_t cl;
            while (stop < n && is_ws_cp(cp_at(s + stop, n - stop, &cl))) stop += cl;
        }
        if (start > done && rest(t, s + done, start - done, md, out)) return -1;
        if (tok_ids_push(out, hit->id)) return -1;
        done = i = stop;
    }
    if (n > done) return rest(t, s + done, n - done, md, out);
    return 0;
}

static int encode_normalized(const Tokenizer *t, const char *s, size_t n, pcre2_match_data *md,
                             TokIds *out) {
    if (!t->has_norm_added) return encode_plain(t, s, n, md, out);
    return split_added(t, s, n, 1, md, out, encode_plain);
}

/* Stage one's gaps: normalise, then stage two. */
static int encode_raw_gap(const Tokenizer *t, const char *s, size_t n, pcre2_match_data *md,
                          TokIds *out) {
    if (!t->nfc) return encode_normalized(t, s, n, md, out);
    char *norm;
    size_t nn;
    if (tok_nfc(s, n, &norm, &nn)) return -1;
    int rc = encode_normalized(t, norm, nn, md, out);
    free(norm);
    return rc;
}

int tok_encode(const Tokenizer *t, const char *text, size_t n, TokIds *out) {
    char *fixed = NULL;
    if (!utf8_valid(text, n)) {
        if (tok_utf8_lossy(text, n, &fixed, &n)) return -1;
        text = fixed;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
    if (!md) { free(fixed); return vrl_error("tokenizer: out of memory"); }
    int rc = t->has_raw_added ? split_added(t, text, n, 0, md, out, encode_raw_gap)
                              : encode_raw_gap(t, text, n, md, out);
    pcre2_match_data_free(md);
    free(fixed);
    return rc;
}

/* ------------------------------------------------------------------ decode */

int tok_decode(const Tokenizer *t, const uint32_t *ids, size_t n, int skip_special,
               char **out, size_t *n_out) {
    size_t cap = 64, len = 0;
    char *buf = malloc(cap);                     /* raw bytes before lossy repair */
    if (!buf) return vrl_error("tokenizer: out of memory");
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id >= t->vocab_size || t->tok_off[id] == UINT32_MAX) {
            free(buf);
            return vrl_error("%s: id %u is not in the vocabulary", t->path, id);
        }
        if (skip_special && t->is_special[id]) continue;
        const char *s = t->pool + t->tok_off[id];
        size_t sl = t->tok_len[id];
        if (len + sl + 1 > cap) {
            while (len + sl + 1 > cap) cap *= 2;
            char *p = realloc(buf, cap);
            if (!p) { free(buf); return vrl_error("tokenizer: out of memory"); }
            buf = p;
        }
        /* HF's ByteLevel decoder: map every char back to its byte; a token with a char
         * outside the byte alphabet (e.g. an added token of plain spaces) is copied as is. */
        size_t j = 0, w = len;
        int mapped = 1;
        while (j < sl) {
            size_t cl;
            utf8proc_int32_t c = cp_at(s + j, sl - j, &cl);
            if (c < 0 || c >= 324 || t->cp_byte[c] < 0) { mapped = 0; break; }
            buf[w++] = (char)t->cp_byte[c];
            j += cl;
        }
        if (mapped) len = w;
        else { memcpy(buf + len, s, sl); len += sl; }
    }
    int rc = tok_utf8_lossy(buf, len, out, n_out);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------ load */

uint32_t tok_vocab_size(const Tokenizer *t) { return t->vocab_size; }

int64_t tok_token_id(const Tokenizer *t, const char *content) {
    size_t n = strlen(content);
    for (int i = 0; i < t->n_added; i++)
        if (t->added[i].len == n && memcmp(t->added[i].content, content, n) == 0) return t->added[i].id;
    return vmap_get(t, content, n);
}

const char *tok_token_text(const Tokenizer *t, uint32_t id, size_t *len, int *added) {
    if (id >= t->vocab_size || t->tok_off[id] == UINT32_MAX) return NULL;
    *len = t->tok_len[id];
    *added = t->is_added[id];
    return t->pool + t->tok_off[id];
}

void tok_free(Tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    free(t->pool);
    free(t->tok_off);
    free(t->tok_len);
    free(t->vmap.slots);
    free(t->merges);
    free(t->is_special);
    free(t->is_added);
    if (t->re) pcre2_code_free(t->re);
    free(t);
}

static const char *type_of(json_t *o) {
    json_t *ty = json_object_get(o, "type");
    return json_is_string(ty) ? json_string_value(ty) : "(no type)";
}

static int flag(json_t *o, const char *k, int dflt) {
    json_t *v = json_object_get(o, k);
    return v && json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* Null, NFC, or a Sequence made only of NFC. */
static int check_normalizer(const char *path, json_t *n, int *nfc) {
    *nfc = 0;
    if (!n || json_is_null(n)) return 0;
    const char *ty = type_of(n);
    if (strcmp(ty, "NFC") == 0) { *nfc = 1; return 0; }
    if (strcmp(ty, "Sequence") == 0) {
        json_t *list = json_object_get(n, "normalizers"), *x;
        size_t i;
        json_array_foreach(list, i, x) {
            if (strcmp(type_of(x), "NFC") != 0)
                return vrl_error("%s: unsupported tokenizer normalizer \"%s\"", path, type_of(x));
            *nfc = 1;
        }
        return 0;
    }
    return vrl_error("%s: unsupported tokenizer normalizer \"%s\"", path, ty);
}

static int pool_add(Tokenizer *t, size_t *pool_cap, const char *s, size_t n, uint32_t *off) {
    if (t->pool_len + n + 1 > *pool_cap) {
        size_t cap = *pool_cap ? *pool_cap : 1 << 20;
        while (t->pool_len + n + 1 > cap) cap *= 2;
        char *p = realloc(t->pool, cap);
        if (!p) return vrl_error("%s: out of memory", t->path);
        t->pool = p;
        *pool_cap = cap;
    }
    memcpy(t->pool + t->pool_len, s, n);
    t->pool[t->pool_len + n] = '\0';
    *off = (uint32_t)t->pool_len;
    t->pool_len += n + 1;
    return 0;
}

static int cmp_added(const void *a, const void *b) {
    const AddedToken *x = a, *y = b;
    unsigned char cx = (unsigned char)x->content[0], cy = (unsigned char)y->content[0];
    if (cx != cy) return cx < cy ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Fill the byte-level alphabet (GPT-2's bytes_to_unicode). */
static void byte_alphabet(Tokenizer *t) {
    int n = 0;
    for (int i = 0; i < 324; i++) t->cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        t->byte_cp[b] = (uint16_t)(printable ? b : 256 + n++);
        t->cp_byte[t->byte_cp[b]] = (int16_t)b;
    }
}

static int load_json(Tokenizer *t, json_t *root) {
    const char *path = t->path;
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return vrl_error("%s: no \"model\" object", path);
    json_t *mty = json_object_get(model, "type");
    /* older files leave "type" out (BPE when there are merges); present, it must be a name */
    if (mty && !json_is_string(mty)) return vrl_error("%s: model \"type\" must be a string", path);
    const char *mtype = mty ? json_string_value(mty) : (json_object_get(model, "merges") ? "BPE" : "(no type)");
    if (strcmp(mtype, "BPE") != 0) return vrl_error("%s: unsupported tokenizer model \"%s\"", path, mtype);
    json_t *v = json_object_get(model, "dropout");
    if (v && !json_is_null(v) && json_number_value(v) != 0.0)
        return vrl_error("%s: unsupported tokenizer model \"BPE\" with dropout", path);
    if (flag(model, "byte_fallback", 0))
        return vrl_error("%s: unsupported tokenizer model \"BPE\" with byte_fallback", path);
    if (flag(model, "ignore_merges", 0))
        return vrl_error("%s: unsupported tokenizer model \"BPE\" with ignore_merges", path);
    const char *affix[2] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        v = json_object_get(model, affix[i]);
        if (v && json_is_string(v) && json_string_length(v) > 0)
            return vrl_error("%s: unsupported tokenizer model \"BPE\" with %s", path, affix[i]);
    }
    if (check_normalizer(path, json_object_get(root, "normalizer"), &t->nfc)) return -1;

    json_t *pre = json_object_get(root, "pre_tokenizer");
    if (pre && json_is_object(pre) && strcmp(type_of(pre), "Sequence") == 0) {
        json_t *list = json_object_get(pre, "pretokenizers");
        if (json_array_size(list) != 1)
            return vrl_error("%s: unsupported tokenizer pre_tokenizer \"Sequence\"", path);
        pre = json_array_get(list, 0);
    }
    if (!pre || !json_is_object(pre) || strcmp(type_of(pre), "ByteLevel") != 0)
        return vrl_error("%s: unsupported tokenizer pre_tokenizer \"%s\"", path,
                         pre && json_is_object(pre) ? type_of(pre) : "null");
    t->add_prefix_space = flag(pre, "add_prefix_space", 0);
    t->use_regex = flag(pre, "use_regex", 1);
    json_t *dec = json_object_get(root, "decoder");
    if (!dec || !json_is_object(dec) || strcmp(type_of(dec), "ByteLevel") != 0)
        return vrl_error("%s: unsupported tokenizer decoder \"%s\"", path,
                         dec && json_is_object(dec) ? type_of(dec) : "null");
    json_t *post = json_object_get(root, "post_processor");
    if (post && !json_is_null(post) && strcmp(type_of(post), "ByteLevel") != 0)
        return vrl_error("%s: unsupported tokenizer post_processor \"%s\"", path, type_of(post));

    /* vocabulary: ids may have holes; size = 1 + the largest id anywhere */
    json_t *vocab = json_object_get(model, "vocab"), *added = json_object_get(root, "added_tokens");
    if (!json_is_object(vocab)) return vrl_error("%s: model has no \"vocab\" object", path);
    uint64_t max_id = 0;
    const char *key;
    json_t *val;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= (1LL << 31))
            return vrl_error("%s: vocab entry \"%s\" has a bad id", path, key);
        if ((uint64_t)json_integer_value(val) > max_id) max_id = (uint64_t)json_integer_value(val);
    }
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a) {
        json_t *id = json_object_get(a, "id"), *c = json_object_get(a, "content");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= (1LL << 31) ||
            !json_is_string(c) || json_string_length(c) == 0)
            return vrl_error("%s: added_tokens[%zu] needs an id and non-empty content", path, i);
        if ((uint64_t)json_integer_value(id) > max_id) max_id = (uint64_t)json_integer_value(id);
    }
    /* Tables are sized by the largest id: a lone huge id would cost gigabytes for nothing.
     * Real vocabularies have few holes (padding to a multiple of 64 or 128 at most). */
    const uint64_t n_ids = json_object_size(vocab) + json_array_size(added);
    if (max_id >= 2 * n_ids + 65536)
        return vrl_error("%s: id %llu is far beyond the %llu tokens in the file (ids must be nearly dense)", path,
                         (unsigned long long)max_id, (unsigned long long)n_ids);
    t->vocab_size = (uint32_t)max_id + 1;
    t->tok_off = malloc(t->vocab_size * sizeof *t->tok_off);
    t->tok_len = calloc(t->vocab_size, sizeof *t->tok_len);
    t->is_special = calloc(t->vocab_size, 1);
    t->is_added = calloc(t->vocab_size, 1);
    t->vmap.cap = 1;
    while (t->vmap.cap < 2 * (size_t)json_object_size(vocab) + 2) t->vmap.cap *= 2;
    t->vmap.slots = calloc(t->vmap.cap, sizeof *t->vmap.slots);
    if (!t->tok_off || !t->tok_len || !t->is_special || !t->is_added || !t->vmap.slots)
        return vrl_error("%s: out of memory", path);
    memset(t->tok_off, 0xff, t->vocab_size * sizeof *t->tok_off);
    size_t pool_cap = 0;
    json_object_foreach(vocab, key, val) {
        uint32_t id = (uint32_t)json_integer_value(val);
        if (t->tok_off[id] != UINT32_MAX) return vrl_error("%s: vocab id %u appears twice", path, id);
        size_t kl = strlen(key);
        if (pool_add(t, &pool_cap, key, kl, &t->tok_off[id])) return -1;
        t->tok_len[id] = (uint32_t)kl;
        vmap_put(t, id);
    }

    /* every byte must have a token, or encode could not represent it */
    byte_alphabet(t);
    for (int b = 0; b < 256; b++) {
        char u[4];
        utf8proc_ssize_t k = utf8proc_encode_char(t->byte_cp[b], (utf8proc_uint8_t *)u);
        int64_t id = vmap_get(t, u, (size_t)k);
        /* C0, C1 and F5..FF never occur in valid UTF-8 (and input is made valid first) */
        int can_occur = !(b == 0xC0 || b == 0xC1 || b >= 0xF5);
        if (id < 0 && can_occur)
            return vrl_error("%s: unsupported tokenizer model \"BPE\" without byte %d in its vocab", path, b);
        t->byte_id[b] = id < 0 ? UINT32_MAX : (uint32_t)id;
    }

    /* merges: "a b" strings or [a, b] pairs; rank = position */
    json_t *merges = json_object_get(model, "merges");
    if (!json_is_array(merges)) return vrl_error("%s: model has no \"merges\" array", path);
    size_t nm = json_array_size(merges);
    t->merge_cap = 1;
    while (t->merge_cap < 2 * nm + 2) t->merge_cap *= 2;
    t->merges = malloc(t->merge_cap * sizeof *t->merges);
    if (!t->merges) return vrl_error("%s: out of memory", path);
    for (size_t k = 0; k < t->merge_cap; k++) t->merges[k].key = UINT64_MAX;
    size_t jcap = 256;
    char *joined = malloc(jcap);          /* scratch for the merged token's text */
    if (!joined) return vrl_error("%s: out of memory", path);
    json_t *m;
    json_array_foreach(merges, i, m) {
        const char *l, *r;
        size_t ll, rl;
        if (json_is_string(m)) {
            l = json_string_value(m);
            const char *sp = strchr(l, ' ');
            if (!sp) { free(joined); return vrl_error("%s: merge %zu \"%s\" is not \"a b\"", path, i, l); }
            ll = (size_t)(sp - l);
            r = sp + 1;
            rl = strlen(r);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1))) {
            l = json_string_value(json_array_get(m, 0));
            r = json_string_value(json_array_get(m, 1));
            ll = strlen(l);
            rl = strlen(r);
        } else {
            free(joined);
            return vrl_error("%s: merge %zu is neither \"a b\" nor [a, b]", path, i);
        }
        if (ll + rl > jcap) {
            while (ll + rl > jcap) jcap *= 2;
            char *p = realloc(joined, jcap);
            if (!p) { free(joined); return vrl_error("%s: out of memory", path); }
            joined = p;
        }
        int64_t a_id = vmap_get(t, l, ll), b_id = vmap_get(t, r, rl);
        memcpy(joined, l, ll);
        memcpy(joined + ll, r, rl);
        int64_t n_id = vmap_get(t, joined, ll + rl);
        if (a_id < 0 || b_id < 0 || n_id < 0) {
            free(joined);
            return vrl_error("%s: merge %zu uses a token missing from the vocab", path, i);
        }
        uint64_t mk = (uint64_t)a_id << 32 | (uint64_t)b_id;
        size_t mask = t->merge_cap - 1, s = mix64(mk) & mask;
        while (t->merges[s].key != UINT64_MAX && t->merges[s].key != mk) s = (s + 1) & mask;
        if (t->merges[s].key == mk) continue;    /* duplicate merge: the first rank wins */
        t->merges[s] = (MergeSlot){mk, (uint32_t)i, (uint32_t)n_id};
    }
    free(joined);

    /* added tokens */
    t->n_added = (int)json_array_size(added);
    t->added = calloc(t->n_added ? (size_t)t->n_added : 1, sizeof *t->added);
    if (!t->added) return vrl_error("%s: out of memory", path);
    json_array_foreach(added, i, a) {
        AddedToken *x = &t->added[i];
        json_t *c = json_object_get(a, "content");
        x->len = json_string_length(c);
        x->content = malloc(x->len + 1);
        if (!x->content) return vrl_error("%s: out of memory", path);
        memcpy(x->content, json_string_value(c), x->len + 1);
        x->id = (uint32_t)json_integer_value(json_object_get(a, "id"));
        x->special = flag(a, "special", 0);
        x->single_word = flag(a, "single_word", 0);
        x->lstrip = flag(a, "lstrip", 0);
        x->rstrip = flag(a, "rstrip", 0);
        /* HF: special tokens default to normalized=false, others to true */
        x->normalized = flag(a, "normalized", !x->special);
        if (x->normalized) t->has_norm_added = 1;
        else t->has_raw_added = 1;
        t->is_special[x->id] = (uint8_t)x->special;
        t->is_added[x->id] = 1;
        /* decode of an added token uses its content */
        if (pool_add(t, &pool_cap, x->content, x->len, &t->tok_off[x->id])) return -1;
        t->tok_len[x->id] = (uint32_t)x->len;
    }
    qsort(t->added, (size_t)t->n_added, sizeof *t->added, cmp_added);
    int k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < t->n_added && (unsigned char)t->added[k].content[0] < b) k++;
        t->first_added[b] = k;
    }
    t->first_added[256] = t->n_added;

    int err;
    PCRE2_SIZE eoff;
    t->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL);
    if (!t->re) return vrl_error("%s: cannot compile the GPT-2 regex (PCRE2 error %d)", path, err);
    pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);  /* falls back to the interpreter if JIT is absent */
    return 0;
}

int tok_load(const char *path, Tokenizer **out) {
    *out = NULL;
    Tokenizer *t = calloc(1, sizeof *t);
    if (!t) return vrl_error("%s: out of memory", path);
    snprintf(t->path, sizeof t->path, "%s", path);
    t->gen = atomic_fetch_add(&next_gen, 1);
    json_error_t je;
    FILE *f = fopen_regular(path); /* a FIFO would hang the reader */
    if (!f) {
        tok_free(t);
        return -1;
    }
    json_t *root = json_loadf(f, 0, &je);
    fclose(f);
    if (!root) {
        tok_free(t);
        return vrl_error("%s:%d: invalid tokenizer JSON: %s", path, je.line, je.text);
    }
    int rc = load_json(t, root);
    json_decref(root);
    if (rc) { tok_free(t); return -1; }
    *out = t;
    return 0;
}

int tok_write_bytes_json(const char *path) {
    Tokenizer t; /* only its byte alphabet */
    byte_alphabet(&t);
    json_t *vocab = json_object();
    for (int b = 0; vocab && b < 256; b++) {
        const int cp = t.byte_cp[b];
        char key[3] = {0};
        if (cp < 0x80) key[0] = (char)cp;
        else key[0] = (char)(0xC0 | (cp >> 6)), key[1] = (char)(0x80 | (cp & 0x3F));
        json_object_set_new(vocab, key, json_integer(b));
    }
    json_t *root = vocab ? json_pack("{s:s, s:n, s:n, s:[], s:n, s:{s:s, s:b, s:b, s:b}, s:n, s:{s:s, s:b, s:b, s:b},"
                                     " s:{s:s, s:n, s:n, s:n, s:n, s:b, s:b, s:b, s:o, s:[]}}",
                                     "version", "1.0", "truncation", "padding", "added_tokens", "normalizer",
                                     "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1,
                                     "use_regex", 1, "post_processor", "decoder", "type", "ByteLevel",
                                     "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1, "model", "type", "BPE",
                                     "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                                     "fuse_unk", 0, "byte_fallback", 0, "ignore_merges", 0, "vocab", vocab, "merges")
                           : NULL;
    if (!root) return vrl_error("%s: out of memory", path);
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) return vrl_error("%s: out of memory", path);
    int rc = write_file_atomic(path, text, strlen(text));
    free(text);
    return rc;
}
