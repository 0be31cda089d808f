/* model_record.c: the model-defining keys recorded in model.safetensors (model_record.h). */
#include "common/run/model_record.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/safetensors.h"
#include "common/run/ckpt_folder.h"

/* One key: its config.json name per architecture and its value as text. init_std and the
 * preset name are left out: they do not change what loaded weights compute. */
typedef enum { F_INT, F_REAL, F_ARCH, F_TEXT } FieldKind;
typedef struct {
    const char *llama, *gpt2; /* config.json names */
    FieldKind kind;
    size_t off;
} Field;

#define AT(f) offsetof(ModelConfig, f)
static const Field fields[] = {
    {"model_type", "model_type", F_ARCH, AT(arch)},
    {"hidden_size", "n_embd", F_INT, AT(d_model)},
    {"intermediate_size", "n_inner", F_INT, AT(d_ffn)},
    {"num_hidden_layers", "n_layer", F_INT, AT(n_layers)},
    {"num_attention_heads", "n_head", F_INT, AT(n_heads)},
    {"num_key_value_heads", "num_key_value_heads", F_INT, AT(n_kv_heads)},
    {"vocab_size", "vocab_size", F_INT, AT(vocab_size)},
    {"max_position_embeddings", "n_positions", F_INT, AT(max_seq)},
    {"rms_norm_eps", "layer_norm_epsilon", F_REAL, AT(norm_eps)},
    {"rope_theta", "rope_theta", F_REAL, AT(rope_theta)},
    {"dropout", "resid_pdrop", F_REAL, AT(dropout)},
    {"vrl_variant", "vrl_variant", F_TEXT, AT(variant)},
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

static const char *field_name(const Field *f, const ModelConfig *c) { return c->arch == ARCH_GPT2 ? f->gpt2 : f->llama; }

/* The metadata key: "vrl_variant" keeps the name older checkpoints already wrote. */
static void meta_key(const Field *f, char *buf, size_t n) {
    if (f->kind == F_TEXT) snprintf(buf, n, "%s", f->llama);
    else snprintf(buf, n, "vrl.%s", f->llama);
}

/* Reals in the fewest digits that read back bit for bit ("1e-05", "10000"), so equal text
 * means equal value and a message shows what config.json said. */
static void value_text(const Field *f, const ModelConfig *c, char *buf, size_t n) {
    const char *p = (const char *)c + f->off;
    if (f->kind == F_INT) snprintf(buf, n, "%d", *(const int *)p);
    else if (f->kind == F_REAL)
        for (int digits = 6; digits <= 17; digits++) { /* 6: "20000", never "2e+04" */
            snprintf(buf, n, "%.*g", digits, *(const double *)p);
            if (strtod(buf, NULL) == *(const double *)p) break;
        }
    else if (f->kind == F_ARCH) snprintf(buf, n, "%s", *(const Arch *)p == ARCH_GPT2 ? "gpt2" : "llama");
    else snprintf(buf, n, "%s", p);
}

int model_record_add(json_t *meta, const ModelConfig *c) {
    char key[64], val[VRL_VARIANT_LEN + 8];
    for (int i = 0; i < N_FIELDS; i++) {
        meta_key(&fields[i], key, sizeof key);
        value_text(&fields[i], c, val, sizeof val);
        if (json_object_set_new(meta, key, json_string(val)) < 0) return vrl_error("out of memory recording the config");
    }
    return 0;
}

int model_record_check(const char *run, const ModelConfig *c, const char *config_path) {
    char dir[PATH_MAX], path[PATH_MAX + 32], *text;
    if (ckpt_resolve(run, dir, sizeof dir) < 0) return -1;
    if (snprintf(path, sizeof path, "%s/model.safetensors", dir) >= (int)sizeof path)
        return vrl_error("%s: path too long", dir);
    if (st_read_metadata(path, &text) < 0) { /* damaged or absent: the load (or a resume's recovery) says so */
        vrl_clear_error();
        return 0;
    }
    json_t *meta = json_loads(text, 0, NULL);
    free(text);
    if (!meta) return vrl_error("%s: out of memory reading __metadata__", path);
    int rc = 0;
    char key[64], want[VRL_VARIANT_LEN + 8];
    for (int i = 0; i < N_FIELDS && !rc; i++) {
        meta_key(&fields[i], key, sizeof key);
        const char *have = json_string_value(json_object_get(meta, key));
        if (!have) continue; /* not recorded by an older vrl */
        value_text(&fields[i], c, want, sizeof want);
        if (strcmp(have, want))
            rc = vrl_error("%s: %s is %s but %s was trained with %s; the config does not describe these weights",
                           config_path, field_name(&fields[i], c), want, path, have);
    }
    json_decref(meta);
    return rc;
}
