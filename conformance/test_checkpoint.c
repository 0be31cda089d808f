/* test_checkpoint.c: the safetensors container, model and training-state checkpoints,
 * every rejection the loader promises, the model/state pairing check, and that an old
 * checkpoint survives failed or interrupted saves. */
#include <math.h>

#include "common/model/spec.h"
#include "common/run/checkpoint.h"
#include "common/base/fsutil.h"
#include "common/base/hash.h"
#include "conformance/test_util.h"

/* ------------------------------------------------------------------ safetensors */

Test(safetensors, round_trip_dtypes) {
    const char *dir = test_tmpdir(), *p = test_path(dir, "t.safetensors");
    float f32[6] = {1.5f, -2.25f, 3e-38f, INFINITY, 0.0f, -0.0f};
    double f64[3] = {M_PI, -1e300, 5e-324};
    uint16_t bf16[4] = {0x3f80, 0xc040, 0x0000, 0x7f80}; /* 1, -3, 0, +inf */
    int64_t i64[2] = {INT64_MIN, 1234567890123LL};
    int64_t s6[2] = {2, 3}, s3[1] = {3}, s4[2] = {4, 1}, s2[1] = {2};
    StFile w;
    st_init(&w);
    cr_assert_eq(st_add(&w, "b.f32", DT_F32, 2, s6, f32), 0);
    cr_assert_eq(st_add(&w, "a.f64", DT_F64, 1, s3, f64), 0);
    cr_assert_eq(st_add(&w, "c.bf16", DT_BF16, 2, s4, bf16), 0);
    cr_assert_eq(st_add(&w, "d.i64", DT_I64, 1, s2, i64), 0);
    cr_assert_eq(st_add(&w, "scalar", DT_F32, 0, NULL, f32), 0);
    expect_error(st_add(&w, "a.f64", DT_F64, 1, s3, f64), "added twice");
    cr_assert_eq(st_set_metadata(&w, "{\"format\":\"pt\",\"note\":\"h\\u00e9\"}"), 0, "%s", vrl_last_error());
    expect_error(st_set_metadata(&w, "{\"n\": 3}"), "must be a string");
    cr_assert_eq(st_write(&w, p), 0, "%s", vrl_last_error());
    st_free(&w);

    size_t n;
    unsigned char *raw = test_read(p, &n);
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)raw[i] << (8 * i);
    cr_assert_eq(hlen % 8, 0, "data section starts 8-byte aligned");
    cr_assert_eq(n, 8 + hlen + 24 + 24 + 8 + 16 + 4);
    cr_assert_eq(raw[8], '{');
    free(raw);

    StFile r;
    cr_assert_eq(st_read(p, &r), 0, "%s", vrl_last_error());
    cr_assert_eq(r.n, 5);
    cr_assert_str_eq(r.t[0].name, "b.f32"); /* file order is the order added */
    cr_assert_str_eq(r.t[1].name, "a.f64");
    const StTensor *t = st_find(&r, "b.f32");
    cr_assert_eq(t->dtype, DT_F32);
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[0], 2);
    cr_assert_eq(t->shape[1], 3);
    cr_assert_eq(memcmp(t->data, f32, sizeof f32), 0);
    cr_assert_eq(memcmp(st_find(&r, "a.f64")->data, f64, sizeof f64), 0);
    cr_assert_eq(memcmp(st_find(&r, "c.bf16")->data, bf16, sizeof bf16), 0);
    cr_assert_eq(memcmp(st_find(&r, "d.i64")->data, i64, sizeof i64), 0);
    cr_assert_eq(st_find(&r, "scalar")->ndim, 0);
    cr_assert_eq(st_find(&r, "scalar")->nbytes, 4);
    cr_assert_null(st_find(&r, "nope"));
    cr_assert_str_eq(r.metadata_json, "{\"format\":\"pt\",\"note\":\"h\xc3\xa9\"}"); /* UTF-8 kept as UTF-8 */
    double out[4];
    cr_assert_eq(st_to_f64(st_find(&r, "c.bf16"), out, 4), 0);
    cr_assert_eq(out[0], 1.0);
    cr_assert_eq(out[1], -3.0);
    cr_assert_eq(out[2], 0.0);
    cr_assert(isinf(out[3]) && out[3] > 0);
    cr_assert_eq(st_to_f64(st_find(&r, "d.i64"), out, 2), 0);
    cr_assert_eq(out[1], 1234567890123.0);
    expect_error(st_to_f64(st_find(&r, "d.i64"), out, 3), "has 2 elements, expected 3");
    st_free(&r);
}

/* A hand-built file: header text h, then `data_len` zero bytes of data. */
static void write_st(const char *p, const char *h, size_t data_len) {
    size_t hl = strlen(h), n = 8 + hl + data_len;
    unsigned char *b = calloc(1, n);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, h, hl);
    test_write(p, b, n);
    free(b);
}

Test(safetensors, reads_unaligned_foreign_file) {
    /* 7-byte-misaligned data section, as another writer may produce */
    const char *p = test_path(test_tmpdir(), "u.safetensors");
    const char *h = "{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}";
    size_t hl = strlen(h);
    unsigned char b[128] = {0};
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, h, hl);
    double v = -7.125;
    memcpy(b + 8 + hl, &v, 8);
    test_write(p, b, 8 + hl + 8);
    StFile r;
    cr_assert_eq(st_read(p, &r), 0, "%s", vrl_last_error());
    cr_assert_eq((uintptr_t)r.t[0].data % 8, 0);
    cr_assert_eq(*(double *)r.t[0].data, -7.125);
    st_free(&r);
}

Test(safetensors, rejects) {
    const char *dir = test_tmpdir(), *p = test_path(dir, "bad.safetensors");
    StFile r;
    test_write(p, "\x10\0\0", 3);
    expect_error(st_read(p, &r), "truncated file");
    const unsigned char big[16] = {0xff, 0xff, 0xff, 0x00, 0, 0, 0, 0, '{', '}'};
    test_write(p, big, sizeof big);
    expect_error(st_read(p, &r), "larger than the file");
    const unsigned char huge[16] = {0, 0, 0, 0, 0, 1, 0, 0};
    test_write(p, huge, sizeof huge);
    expect_error(st_read(p, &r), "100 MB");
    write_st(p, "{\"a\": [1, 2,, ]}", 0);
    expect_error(st_read(p, &r), "bad JSON header");
    write_st(p, "\x89PNG\r\n\x1a\n", 0);
    expect_error(st_read(p, &r), "bad JSON header");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8);
    expect_error(st_read(p, &r), "outside the data section");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]}}", 16);
    expect_error(st_read(p, &r), "dtype x shape needs 16");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
             12);
    expect_error(st_read(p, &r), "overlap");
    write_st(p, "{\"x\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1);
    expect_error(st_read(p, &r), "unsupported dtype \"Q4\"");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4);
    expect_error(st_read(p, &r), "non-negative");
    /* bytes that belong to no tensor: trailing, or a hole between two tensors */
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 7);
    expect_error(st_read(p, &r), "data section of 7 bytes has bytes in no tensor from offset 4");
    write_st(p, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
             12);
    expect_error(st_read(p, &r), "a hole or trailing bytes");
    write_st(p, "{\"__metadata__\":{\"step\":3}}", 0);
    expect_error(st_read(p, &r), "__metadata__ value \"step\" must be a string");
    cr_assert_eq(r.n, 0, "a failed read leaves the file empty");
}

/* ------------------------------------------------------------------ checkpoints */

typedef struct {
    ModelConfig c;
    ParamTable t;
} Model;

static void tiny(Model *m) {
    cr_assert_eq(config_preset("tiny", &m->c), 0);
    cr_assert_eq(model_spec_table(&m->c, &m->t), 0, "%s", vrl_last_error());
}

static double *init_params(const Model *m, uint64_t seed) {
    double *x = malloc(m->t.total * sizeof *x);
    params_init_f64(&m->t, seed, x);
    return x;
}

static float *to_f32(const double *x, size_t n) {
    float *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
    return y;
}

Test(checkpoint, model_round_trip_f64_f32) {
    const char *dir = test_tmpdir();
    Model m;
    tiny(&m);
    double *x = init_params(&m, 1), *y = calloc(m.t.total, sizeof *y);
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0, "%s", vrl_last_error());
    cr_assert_eq(checkpoint_load_model(dir, &m.t, DT_F64, y), 0, "%s", vrl_last_error());
    cr_assert_eq(memcmp(x, y, m.t.total * sizeof *x), 0, "F64 round trip is bit-exact");

    /* The file holds HF names, HF shapes and the metadata transformers needs. */
    StFile r;
    cr_assert_eq(st_read(test_path(dir, "model.safetensors"), &r), 0);
    cr_assert_eq(r.n, m.t.n);
    const StTensor *q = st_find(&r, "model.layers.1.self_attn.q_proj.weight");
    cr_assert_not_null(q);
    cr_assert_eq(q->dtype, DT_F64);
    cr_assert_eq(q->shape[0], 16);
    cr_assert_eq(q->shape[1], 16);
    cr_assert_eq(st_find(&r, "lm_head.weight")->shape[0], 64);
    cr_assert(strstr(r.metadata_json, "\"format\":\"pt\""));
    st_free(&r);

    float *xf = to_f32(x, m.t.total), *yf = calloc(m.t.total, sizeof *yf);
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F32, xf), 0, "%s", vrl_last_error());
    cr_assert_eq(checkpoint_load_model(dir, &m.t, DT_F32, yf), 0, "%s", vrl_last_error());
    cr_assert_eq(memcmp(xf, yf, m.t.total * sizeof *xf), 0, "F32 round trip is bit-exact");
    /* F32 file into an F64 run: exact widening */
    cr_assert_eq(checkpoint_load_model(dir, &m.t, DT_F64, y), 0);
    for (size_t i = 0; i < m.t.total; i++) cr_assert_eq(y[i], (double)xf[i]);
    cr_assert_eq(test_count_files(dir, ".tmp."), 0);
    free(x), free(y), free(xf), free(yf);
    param_table_free(&m.t);
}

Test(checkpoint, model_from_bf16) {
    const char *dir = test_tmpdir();
    Model m;
    tiny(&m);
    /* A BF16 model file (as torch might save): each value 1 + (i mod 8)/8, exact in bf16 */
    uint16_t *b = malloc(m.t.total * sizeof *b);
    for (size_t i = 0; i < m.t.total; i++) {
        float f = 1.0f + (float)(i % 8) / 8.0f;
        uint32_t u;
        memcpy(&u, &f, 4);
        b[i] = (uint16_t)(u >> 16);
    }
    StFile w;
    st_init(&w);
    for (int i = 0; i < m.t.n; i++)
        cr_assert_eq(st_add(&w, m.t.p[i].name, DT_BF16, m.t.p[i].ndim, m.t.p[i].shape, b + m.t.p[i].offset), 0);
    cr_assert_eq(st_write(&w, test_path(dir, "model.safetensors")), 0);
    st_free(&w);
    float *y = malloc(m.t.total * sizeof *y);
    cr_assert_eq(checkpoint_load_model(dir, &m.t, DT_F32, y), 0, "%s", vrl_last_error());
    /* the tensors' elements; the padding gaps (params.h: lm_head's rows past the vocabulary)
     * are in no file and load as zero */
    for (int k = 0; k < m.t.n; k++)
        for (size_t i = m.t.p[k].offset; i < m.t.p[k].offset + m.t.p[k].slot; i++)
            cr_assert_eq(y[i], i < m.t.p[k].offset + m.t.p[k].numel ? 1.0f + (float)(i % 8) / 8.0f : 0.0f);
    free(b), free(y);
    param_table_free(&m.t);
}

/* Write a model file from the table with one tensor changed by `edit`. */
static void write_edited(const char *dir, const Model *m, const double *x, const char *drop, const char *extra,
                         const char *reshape) {
    StFile w;
    st_init(&w);
    int64_t bad[2] = {8, 32};
    for (int i = 0; i < m->t.n; i++) {
        const ParamInfo *p = &m->t.p[i];
        if (drop && !strcmp(p->name, drop)) continue;
        const int64_t *shape = reshape && !strcmp(p->name, reshape) ? bad : p->shape;
        cr_assert_eq(st_add(&w, p->name, DT_F64, p->ndim, shape, x + p->offset), 0);
    }
    int64_t one[1] = {1};
    if (extra) cr_assert_eq(st_add(&w, extra, DT_F64, 1, one, x), 0);
    cr_assert_eq(st_write(&w, test_path(dir, "model.safetensors")), 0);
    st_free(&w);
}

Test(checkpoint, model_rejects) {
    const char *dir = test_tmpdir(), *mp = test_path(dir, "model.safetensors");
    Model m;
    tiny(&m);
    double *x = init_params(&m, 2), *y = malloc(m.t.total * sizeof *y);
    char want[600];

    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y), "cannot open");

    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    size_t n;
    unsigned char *raw = test_read(mp, &n);
    test_write(mp, raw, n - 1);
    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y), "outside the data section");
    test_write(mp, raw, 100);
    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y), "larger than the file");
    memset(raw + 8, '#', 40); /* garbage where the JSON header starts */
    test_write(mp, raw, n);
    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y), "bad JSON header");
    free(raw);

    write_edited(dir, &m, x, "model.layers.1.mlp.up_proj.weight", NULL, NULL);
    snprintf(want, sizeof want, "%s: missing tensor model.layers.1.mlp.up_proj.weight", mp);
    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y), want);

    write_edited(dir, &m, x, NULL, "model.layers.0.self_attn.v_lambda", NULL);
    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y), "unexpected tensor model.layers.0.self_attn.v_lambda");

    write_edited(dir, &m, x, NULL, NULL, "model.layers.0.self_attn.k_proj.weight");
    expect_error(checkpoint_load_model(dir, &m.t, DT_F64, y),
                 "tensor model.layers.0.self_attn.k_proj.weight has shape [8, 32], the model needs [16, 16]");

    /* a table from another shape (more layers) finds tensors missing */
    ModelConfig c2 = m.c;
    c2.n_layers = 3;
    ParamTable t2;
    cr_assert_eq(model_spec_table(&c2, &t2), 0);
    double *y2 = malloc(t2.total * sizeof *y2);
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    expect_error(checkpoint_load_model(dir, &t2, DT_F64, y2), "missing tensor model.layers.2.");
    expect_error(checkpoint_load_model(dir, &m.t, DT_BF16, y), "not a run precision");
    free(x), free(y), free(y2);
    param_table_free(&t2);
    param_table_free(&m.t);
}

static TrainState sample_state(void) {
    TrainState s;
    memset(&s, 0, sizeof s);
    s.step = 4321;
    rng_seed(&s.rng, 77);
    for (int i = 0; i < 5; i++) rng_u64(&s.rng);
    s.rng.s[3] = UINT64_MAX; /* the largest word must survive the decimal text */
    s.n_data_pos = 3;
    s.data_pos[0] = 2;
    s.data_pos[1] = 123456789012345ULL;
    s.data_pos[2] = 0;
    snprintf(s.train_args_json, sizeof s.train_args_json,
             "{\"lr\": 0.0006, \"schedule\": \"cosine\", \"batch\": 8, \"note\": \"quote \\\" ok\"}");
    return s;
}

Test(checkpoint, state_round_trip) {
    const char *dir = test_tmpdir();
    Model m;
    tiny(&m);
    double *x = init_params(&m, 3), *mo = init_params(&m, 4), *v = init_params(&m, 5);
    for (size_t i = 0; i < m.t.total; i++) v[i] = v[i] * v[i];
    TrainState s = sample_state(), r;
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    cr_assert_eq(checkpoint_save_state(dir, &m.t, DT_F64, mo, v, &s), 0, "%s", vrl_last_error());
    double *m2 = calloc(m.t.total, sizeof *m2), *v2 = calloc(m.t.total, sizeof *v2);
    cr_assert_eq(checkpoint_load_state(dir, &m.t, DT_F64, m2, v2, &r), 0, "%s", vrl_last_error());
    cr_assert_eq(memcmp(mo, m2, m.t.total * sizeof *mo), 0);
    cr_assert_eq(memcmp(v, v2, m.t.total * sizeof *v), 0);
    cr_assert_eq(r.step, 4321);
    for (int i = 0; i < 4; i++) cr_assert_eq(r.rng.s[i], s.rng.s[i]);
    cr_assert_eq(r.n_data_pos, 3);
    for (int i = 0; i < 3; i++) cr_assert_eq(r.data_pos[i], s.data_pos[i]);
    cr_assert_str_eq(r.train_args_json, s.train_args_json);

    StFile f;
    cr_assert_eq(st_read(test_path(dir, "train_state.safetensors"), &f), 0);
    cr_assert_eq(f.n, 2 * m.t.n);
    cr_assert_not_null(st_find(&f, "exp_avg.lm_head.weight"));
    cr_assert_not_null(st_find(&f, "exp_avg_sq.model.norm.weight"));
    st_free(&f);
    free(x), free(mo), free(v), free(m2), free(v2);
    param_table_free(&m.t);
}

Test(checkpoint, state_pairing_hash) {
    const char *dir = test_tmpdir();
    Model m;
    tiny(&m);
    double *x = init_params(&m, 3), *mo = init_params(&m, 4);
    TrainState s = sample_state(), r;
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    cr_assert_eq(checkpoint_save_state(dir, &m.t, DT_F64, mo, mo, &s), 0);
    /* A later model save without its state: a crash between the two renames. */
    x[5] += 1.0;
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    char want[2 * PATH_MAX + 100];
    snprintf(want, sizeof want, "%s/train_state.safetensors: does not belong to %s/model.safetensors (interrupted save?)",
             dir, dir);
    expect_error(checkpoint_load_state(dir, &m.t, DT_F64, mo, mo, &r), want);
    cr_assert_eq(r.step, 0, "a failed load leaves no half state");
    /* Saving the state again re-pairs them. */
    cr_assert_eq(checkpoint_save_state(dir, &m.t, DT_F64, mo, mo, &s), 0);
    cr_assert_eq(checkpoint_load_state(dir, &m.t, DT_F64, mo, mo, &r), 0, "%s", vrl_last_error());
    /* state without its model */
    const char *d2 = test_tmpdir();
    expect_error(checkpoint_save_state(d2, &m.t, DT_F64, mo, mo, &s), "model.safetensors: cannot open");
    free(x), free(mo);
    param_table_free(&m.t);
}

Test(checkpoint, old_checkpoint_survives) {
    const char *dir = test_tmpdir(), *mp = test_path(dir, "model.safetensors");
    Model m;
    tiny(&m);
    double *x = init_params(&m, 8), *y = malloc(m.t.total * sizeof *y);
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    size_t n0;
    unsigned char *before = test_read(mp, &n0);
    uint64_t h0 = fnv1a64(before, n0, FNV1A64_INIT);

    /* A crashed writer's leftover temp file does not disturb loading the real one. */
    test_write(test_path(dir, "model.safetensors.tmp.99999"), before, n0 / 2);
    cr_assert_eq(checkpoint_load_model(dir, &m.t, DT_F64, y), 0, "%s", vrl_last_error());
    cr_assert_eq(memcmp(x, y, m.t.total * sizeof *x), 0);

    /* A save that cannot even start (no such folder) fails cleanly... */
    expect_error(checkpoint_save_model(test_path(dir, "missing/run"), &m.c, &m.t, DT_F64, x), "cannot create");
    /* ...and a save into a path that is a directory is refused before any temp is made
     * (a folder, block device or socket is never renamed over). */
    cr_assert_eq(make_dirs(test_path(dir, "sub/model.safetensors")), 0);
    expect_error(checkpoint_save_model(test_path(dir, "sub"), &m.c, &m.t, DT_F64, x),
                 "not a regular file (a folder); refusing to replace it");
    cr_assert_eq(test_count_files(test_path(dir, "sub"), ".tmp."), 0);

    size_t n1;
    unsigned char *after = test_read(mp, &n1);
    cr_assert_eq(n1, n0);
    cr_assert_eq(fnv1a64(after, n1, FNV1A64_INIT), h0, "the old checkpoint is byte-for-byte intact");
    free(before), free(after), free(x), free(y);
    param_table_free(&m.t);
}

Test(checkpoint, corrupt_header_never_crashes) {
    /* Every byte of the length prefix and JSON header replaced by a few hostile values:
     * each load either succeeds or returns -1 with a message; none may crash (Criterion
     * runs the test in its own process, so a crash fails it). */
    const char *dir = test_tmpdir(), *mp = test_path(dir, "model.safetensors");
    Model m;
    tiny(&m);
    double *xd = init_params(&m, 9);
    float *x = to_f32(xd, m.t.total), *y = malloc(m.t.total * sizeof *y);
    free(xd);
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F32, x), 0);
    size_t n;
    unsigned char *raw = test_read(mp, &n);
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)raw[i] << (8 * i);
    const unsigned char vals[] = {0x00, 0xff, '"', '9', '-'};
    int failures = 0;
    for (size_t i = 0; i < 8 + hlen; i += 3) {
        for (size_t k = 0; k < sizeof vals; k++) {
            unsigned char old = raw[i];
            if (old == vals[k]) continue;
            raw[i] = vals[k];
            test_write(mp, raw, n);
            raw[i] = old;
            vrl_clear_error();
            int rc = checkpoint_load_model(dir, &m.t, DT_F32, y);
            cr_assert(rc == 0 || (rc == -1 && vrl_last_error()[0]), "byte %zu: rc %d without a message", i, rc);
            failures += rc == -1;
        }
    }
    cr_assert_gt(failures, 0);
    free(raw), free(x), free(y);
    param_table_free(&m.t);
}

/* A bit flip anywhere in the state (moments or metadata) fails its own checksum. */
Test(checkpoint, state_checksum) {
    const char *dir = test_tmpdir(), *sp = test_path(dir, "train_state.safetensors");
    Model m;
    tiny(&m);
    double *x = init_params(&m, 3), *mo = init_params(&m, 4);
    TrainState s = sample_state(), r;
    cr_assert_eq(checkpoint_save_model(dir, &m.c, &m.t, DT_F64, x), 0);
    cr_assert_eq(checkpoint_save_state(dir, &m.t, DT_F64, mo, mo, &s), 0, "%s", vrl_last_error());
    size_t n;
    unsigned char *good = test_read(sp, &n);
    const size_t at[2] = {n - 5, 8 + 40}; /* inside the last moment; inside the header's metadata */
    for (int k = 0; k < 2; k++) {
        unsigned char *b = malloc(n);
        memcpy(b, good, n);
        b[at[k]] ^= 0x04;
        test_write(sp, b, n);
        free(b);
        vrl_clear_error();
        cr_assert_eq(checkpoint_load_state(dir, &m.t, DT_F64, mo, mo, &r), -1, "flip at byte %zu accepted", at[k]);
        cr_assert(vrl_last_error()[0]);
    }
    test_write(sp, good, n);
    cr_assert_eq(checkpoint_load_state(dir, &m.t, DT_F64, mo, mo, &r), 0, "%s", vrl_last_error());
    free(good), free(x), free(mo);
    param_table_free(&m.t);
}
