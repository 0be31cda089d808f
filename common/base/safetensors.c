/* safetensors.c: the safetensors container (https://github.com/huggingface/safetensors):
 *   u64 little-endian N | N bytes of JSON header | data section
 * The header maps each tensor name to {dtype, shape, data_offsets: [begin, end]} with
 * offsets relative to the data section, plus an optional "__metadata__" map of strings.
 * The reader checks all of it before handing out a pointer; the writer emits tensors in
 * the order they were added and pads the header with spaces so the data section starts
 * on an 8-byte boundary (which the format allows and readers rely on for mmap). */
#include "common/base/safetensors.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"

#define ST_MAX_HEADER (100u * 1000u * 1000u) /* the reference implementation's limit */

static const char *const dtype_names[] = {"F32", "F64", "BF16", "I32", "I64", "U64", "F16"};
static const size_t dtype_sizes[] = {4, 8, 2, 4, 8, 8, 2};
#define N_DTYPES ((int)(sizeof dtype_names / sizeof dtype_names[0]))

size_t dtype_size(DType t) { return (unsigned)t < (unsigned)N_DTYPES ? dtype_sizes[t] : 0; }
const char *dtype_name(DType t) { return (unsigned)t < (unsigned)N_DTYPES ? dtype_names[t] : "?"; }

static int dtype_parse(const char *s, DType *out) {
    for (int i = 0; i < N_DTYPES; i++)
        if (!strcmp(s, dtype_names[i])) {
            *out = (DType)i;
            return 0;
        }
    return -1;
}

/* numel * elem_size with overflow detection (a hostile shape must not wrap around). */
static int shape_bytes(int ndim, const int64_t *shape, size_t elem, size_t *out) {
    size_t n = elem;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] && n > SIZE_MAX / (size_t)shape[i]) return -1;
        n *= (size_t)shape[i];
    }
    *out = n;
    return 0;
}

void st_init(StFile *f) { memset(f, 0, sizeof *f); }

void st_free(StFile *f) {
    free(f->t);
    free(f->metadata_json);
    free(f->buffer);
    memset(f, 0, sizeof *f);
}

const StTensor *st_find(const StFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name)) return &f->t[i];
    return NULL;
}

static StTensor *push(StFile *f) {
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 32;
        StTensor *t = realloc(f->t, (size_t)cap * sizeof *t);
        if (!t) return NULL;
        f->t = t;
        f->cap = cap;
    }
    StTensor *t = &f->t[f->n++];
    memset(t, 0, sizeof *t);
    return t;
}

/* ------------------------------------------------------------------ reader */

typedef struct {
    size_t begin, end;
    int idx;
} Range;

static int cmp_range(const void *a, const void *b) {
    const Range *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int metadata_check(const char *path, json_t *m) {
    if (!json_is_object(m)) return vrl_error("%s: __metadata__ must be an object of strings", path);
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) if (!json_is_string(v))
        return vrl_error("%s: __metadata__ value \"%s\" must be a string", path, k);
    return 0;
}

/* One tensor entry of the header; offsets are checked against data_len. */
static int parse_entry(const char *path, const char *name, json_t *e, size_t data_len, StTensor *t, Range *r) {
    if (strlen(name) >= sizeof t->name) return vrl_error("%s: tensor name too long: %.60s...", path, name);
    snprintf(t->name, sizeof t->name, "%s", name);
    if (!json_is_object(e)) return vrl_error("%s: tensor %s: entry must be an object", path, name);
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
        return vrl_error("%s: tensor %s: unknown field \"%s\"", path, name, k);
    json_t *dt = json_object_get(e, "dtype"), *sh = json_object_get(e, "shape"),
           *off = json_object_get(e, "data_offsets");
    if (!json_is_string(dt)) return vrl_error("%s: tensor %s: missing or non-string dtype", path, name);
    if (dtype_parse(json_string_value(dt), &t->dtype) < 0)
        return vrl_error("%s: tensor %s: unsupported dtype \"%s\"", path, name, json_string_value(dt));
    if (!json_is_array(sh)) return vrl_error("%s: tensor %s: missing or non-array shape", path, name);
    if (json_array_size(sh) > ST_MAX_DIM)
        return vrl_error("%s: tensor %s: %zu dimensions (at most %d)", path, name, json_array_size(sh), ST_MAX_DIM);
    t->ndim = (int)json_array_size(sh);
    for (int i = 0; i < t->ndim; i++) {
        json_t *d = json_array_get(sh, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return vrl_error("%s: tensor %s: shape entries must be non-negative integers", path, name);
        t->shape[i] = json_integer_value(d);
    }
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(json_array_get(off, 0)) ||
        !json_is_integer(json_array_get(off, 1)))
        return vrl_error("%s: tensor %s: data_offsets must be [begin, end]", path, name);
    json_int_t b = json_integer_value(json_array_get(off, 0)), en = json_integer_value(json_array_get(off, 1));
    if (b < 0 || en < b || (uint64_t)en > data_len)
        return vrl_error("%s: tensor %s: data_offsets [%lld, %lld] outside the data section (%zu bytes)", path, name,
                         (long long)b, (long long)en, data_len);
    size_t want = 0;
    if (shape_bytes(t->ndim, t->shape, dtype_size(t->dtype), &want) < 0 || want != (size_t)(en - b))
        return vrl_error("%s: tensor %s: data_offsets span %lld bytes, dtype x shape needs %zu", path, name,
                         (long long)(en - b), want);
    t->nbytes = want;
    r->begin = (size_t)b;
    r->end = (size_t)en;
    return 0;
}

int st_read(const char *path, StFile *f) {
    st_init(f);
    void *raw;
    size_t size;
    if (read_file_all(path, &raw, &size) < 0) return -1;
    unsigned char *buf = raw;
    json_t *root = NULL;
    Range *ranges = NULL;
    if (size < 8) {
        vrl_error("%s: truncated file (%zu bytes, no header length)", path, size);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)buf[i] << (8 * i);
    if (hlen > ST_MAX_HEADER) {
        vrl_error("%s: header length %llu exceeds the 100 MB limit (not a safetensors file?)", path,
                  (unsigned long long)hlen);
        goto fail;
    }
    if (hlen > size - 8) {
        vrl_error("%s: header length %llu is larger than the file (%zu bytes): truncated?", path,
                  (unsigned long long)hlen, size);
        goto fail;
    }
    json_error_t err;
    root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        vrl_error("%s: bad JSON header: %s (header line %d)", path, err.text, err.line);
        goto fail;
    }
    if (!json_is_object(root)) {
        vrl_error("%s: bad JSON header: not an object", path);
        goto fail;
    }
    const size_t data_off = 8 + (size_t)hlen, data_len = size - data_off;
    ranges = malloc((json_object_size(root) + 1) * sizeof *ranges);
    if (!ranges) {
        vrl_error("%s: out of memory", path);
        goto fail;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__")) {
            if (metadata_check(path, v) < 0) goto fail;
            f->metadata_json = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
            if (!f->metadata_json) {
                vrl_error("%s: out of memory", path);
                goto fail;
            }
            continue;
        }
        StTensor *t = push(f);
        if (!t) {
            vrl_error("%s: out of memory", path);
            goto fail;
        }
        if (parse_entry(path, key, v, data_len, t, &ranges[f->n - 1]) < 0) goto fail;
        ranges[f->n - 1].idx = f->n - 1;
    }
    /* No two tensors may share bytes: sort by start and compare neighbours. */
    qsort(ranges, (size_t)f->n, sizeof *ranges, cmp_range);
    for (int i = 1; i < f->n; i++)
        if (ranges[i].begin < ranges[i - 1].end) {
            vrl_error("%s: tensors %s and %s overlap in the data section", path, f->t[ranges[i - 1].idx].name,
                      f->t[ranges[i].idx].name);
            goto fail;
        }
    /* The tensors must tile the data section exactly, as the format requires: a hole
     * or trailing bytes mean a damaged or foreign file. */
    size_t covered = 0;
    for (int i = 0; i < f->n; i++) {
        if ((size_t)ranges[i].begin != covered) break;
        covered = (size_t)ranges[i].end;
    }
    if (covered != data_len) {
        vrl_error("%s: data section of %zu bytes has bytes in no tensor from offset %zu (a hole or trailing bytes)",
                  path, data_len, covered);
        goto fail;
    }
    /* Other writers may leave the data section unaligned; move it to an 8-byte boundary
     * so callers can read F64/I64 tensors in place. */
    size_t aligned = (data_off + 7) & ~(size_t)7;
    if (aligned != data_off) {
        unsigned char *nb = realloc(buf, aligned + data_len + 1);
        if (!nb) {
            vrl_error("%s: out of memory", path);
            goto fail;
        }
        buf = nb;
        memmove(buf + aligned, buf + data_off, data_len);
    }
    for (int i = 0; i < f->n; i++) f->t[ranges[i].idx].data = buf + aligned + ranges[i].begin;
    json_decref(root);
    free(ranges);
    f->buffer = buf;
    return 0;
fail:
    json_decref(root);
    free(ranges);
    free(buf);
    free(f->t);
    free(f->metadata_json);
    memset(f, 0, sizeof *f);
    return -1;
}

/* ------------------------------------------------------------------ writer */

int st_add(StFile *f, const char *name, DType dtype, int ndim, const int64_t *shape, const void *data) {
    if (strlen(name) >= sizeof f->t[0].name || !strcmp(name, "__metadata__"))
        return vrl_error("safetensors: bad tensor name \"%s\"", name);
    if ((unsigned)dtype >= (unsigned)N_DTYPES) return vrl_error("safetensors: tensor %s: bad dtype %d", name, dtype);
    if (ndim < 0 || ndim > ST_MAX_DIM) return vrl_error("safetensors: tensor %s: %d dimensions", name, ndim);
    if (st_find(f, name)) return vrl_error("safetensors: tensor %s added twice", name);
    size_t nbytes;
    if (shape_bytes(ndim, shape, dtype_size(dtype), &nbytes) < 0)
        return vrl_error("safetensors: tensor %s: bad shape", name);
    StTensor *t = push(f);
    if (!t) return vrl_error("safetensors: out of memory");
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->nbytes = nbytes;
    t->data = (void *)data; /* not owned: the caller keeps it alive until st_write */
    return 0;
}

int st_read_metadata(const char *path, char **metadata_json) {
    *metadata_json = NULL;
    FILE *f = fopen_regular(path);
    if (!f) return -1;
    unsigned char len8[8];
    uint64_t hlen = 0;
    char *header = NULL;
    int rc = -1;
    if (fread(len8, 1, 8, f) != 8) {
        vrl_error("%s: truncated file (no header length)", path);
        goto out;
    }
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)len8[i] << (8 * i);
    if (hlen > ST_MAX_HEADER) {
        vrl_error("%s: header length %llu exceeds the 100 MB limit (not a safetensors file?)", path,
                  (unsigned long long)hlen);
        goto out;
    }
    if (!(header = malloc((size_t)hlen + 1))) {
        vrl_error("%s: out of memory", path);
        goto out;
    }
    if (fread(header, 1, (size_t)hlen, f) != (size_t)hlen) {
        vrl_error("%s: header length %llu is larger than the file: truncated?", path, (unsigned long long)hlen);
        goto out;
    }
    json_error_t err;
    json_t *root = json_loadb(header, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
    json_t *m = json_object_get(root, "__metadata__");
    if (!json_is_object(root)) vrl_error("%s: bad JSON header", path);
    else if (m && metadata_check(path, m) < 0) (void)0;
    else if (!(*metadata_json = m ? json_dumps(m, JSON_COMPACT) : strdup("{}"))) vrl_error("%s: out of memory", path);
    else rc = 0;
    json_decref(root);
out:
    free(header);
    fclose(f);
    return rc;
}

int st_set_metadata(StFile *f, const char *json_object_text) {
    json_error_t err;
    json_t *m = json_loads(json_object_text, 0, &err);
    if (!m) return vrl_error("safetensors metadata: bad JSON: %s", err.text);
    int rc = metadata_check("safetensors metadata", m);
    char *text = rc ? NULL : json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(m);
    if (rc) return -1;
    if (!text) return vrl_error("safetensors metadata: out of memory");
    free(f->metadata_json);
    f->metadata_json = text;
    return 0;
}

int st_write(const StFile *f, const char *path) {
    json_t *root = json_object();
    if (!root) return vrl_error("%s: out of memory", path);
    int rc = 0;
    if (f->metadata_json) {
        json_error_t err;
        json_t *m = json_loads(f->metadata_json, 0, &err);
        rc |= m ? json_object_set_new(root, "__metadata__", m) : -1;
    }
    size_t off = 0;
    for (int i = 0; i < f->n && !rc; i++) {
        const StTensor *t = &f->t[i];
        json_t *e = json_object(), *sh = json_array(), *o = json_array();
        rc |= !e || !sh || !o;
        for (int d = 0; d < t->ndim && !rc; d++) rc |= json_array_append_new(sh, json_integer(t->shape[d]));
        rc |= json_array_append_new(o, json_integer((json_int_t)off));
        rc |= json_array_append_new(o, json_integer((json_int_t)(off + t->nbytes)));
        rc |= json_object_set_new(e, "dtype", json_string(dtype_name(t->dtype)));
        rc |= json_object_set_new(e, "shape", sh);
        rc |= json_object_set_new(e, "data_offsets", o);
        rc |= json_object_set_new(root, t->name, e);
        off += t->nbytes;
    }
    char *hdr = rc ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!hdr) return vrl_error("%s: out of memory building the header", path);
    size_t hlen = strlen(hdr), padded = (hlen + 7) & ~(size_t)7;
    char *h = realloc(hdr, padded);
    if (!h) {
        free(hdr);
        return vrl_error("%s: out of memory", path);
    }
    memset(h + hlen, ' ', padded - hlen); /* trailing spaces are valid JSON whitespace */
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    const void **parts = malloc((size_t)(f->n + 2) * sizeof *parts);
    size_t *sizes = malloc((size_t)(f->n + 2) * sizeof *sizes);
    if (!parts || !sizes) {
        free(parts);
        free(sizes);
        free(h);
        return vrl_error("%s: out of memory", path);
    }
    parts[0] = len8;
    sizes[0] = 8;
    parts[1] = h;
    sizes[1] = padded;
    for (int i = 0; i < f->n; i++) {
        parts[i + 2] = f->t[i].data;
        sizes[i + 2] = f->t[i].nbytes;
    }
    rc = write_file_atomic_parts(path, (const void *const *)parts, sizes, f->n + 2);
    free(parts);
    free(sizes);
    free(h);
    return rc;
}

/* ------------------------------------------------------------------ conversion */

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0) v = ldexp((double)m, -24);                      /* subnormal */
    else if (e == 31) v = m ? (double)NAN : (double)INFINITY;   /* inf / nan */
    else v = ldexp((double)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

int st_to_f64(const StTensor *t, double *out, size_t n) {
    size_t es = dtype_size(t->dtype), numel = es ? t->nbytes / es : 0;
    if (numel != n) return vrl_error("tensor %s: has %zu elements, expected %zu", t->name, numel, n);
    const unsigned char *p = t->data;
    /* memcpy per element: the data may come from caller memory of any alignment */
    for (size_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case DT_F32: { float x; memcpy(&x, p + 4 * i, 4); out[i] = x; break; }
        case DT_F64: memcpy(&out[i], p + 8 * i, 8); break;
        case DT_BF16: {
            uint16_t b;
            memcpy(&b, p + 2 * i, 2);
            uint32_t u = (uint32_t)b << 16; /* bf16 is the top half of an f32 */
            float x;
            memcpy(&x, &u, 4);
            out[i] = x;
            break;
        }
        case DT_F16: { uint16_t b; memcpy(&b, p + 2 * i, 2); out[i] = half_to_double(b); break; }
        case DT_I32: { int32_t x; memcpy(&x, p + 4 * i, 4); out[i] = x; break; }
        case DT_I64: { int64_t x; memcpy(&x, p + 8 * i, 8); out[i] = (double)x; break; }
        case DT_U64: { uint64_t x; memcpy(&x, p + 8 * i, 8); out[i] = (double)x; break; }
        default: return vrl_error("tensor %s: cannot convert dtype %s", t->name, dtype_name(t->dtype));
        }
    }
    return 0;
}
