/* config.h: the model's shape, read and written as a Hugging Face style config.json.
 *
 * Field names follow transformers' LlamaConfig / GPT2Config where one exists, so a
 * vrl checkpoint folder loads in transformers for the baseline. Everything vrl adds
 * (the variant, the [A] knobs of formulas.md) is prefixed "vrl_". Unknown keys and
 * impossible shapes are errors, never silently ignored. */
#ifndef VRL_CONFIG_H
#define VRL_CONFIG_H

#include <stddef.h>

typedef enum { ARCH_LLAMA = 0, ARCH_GPT2 = 1 } Arch;

#define VRL_NAME_LEN 64
#define VRL_VARIANT_LEN 512

/* Bounds beyond any model vrl can train (the largest preset has d 2048, ffn 7168, L 24): a
 * value past them is a typo or a crafted file, and keeping every width below 2^20 keeps
 * each tensor's size product far from overflow (param_table_add checks it all the same). */
#define CONFIG_MAX_WIDTH (1 << 20)   /* hidden_size, intermediate_size */
#define CONFIG_MAX_LAYERS 4096       /* num_hidden_layers */
#define CONFIG_MAX_POSITIONS (1 << 24) /* max_position_embeddings */

typedef struct {
    char preset[VRL_NAME_LEN];   /* preset it came from, or "custom" */
    Arch arch;                   /* llama (formulas.md §1) or gpt2 (formulas.md §1, GPT-2 baseline) */
    int n_layers;                /* L */
    int n_heads;                 /* query heads */
    int n_kv_heads;              /* key/value heads (GQA: < n_heads; MQA: 1) */
    int d_model;                 /* d = n_heads * head_dim */
    int d_ffn;                   /* SwiGLU width (llama) or MLP width (gpt2) */
    int vocab_size;              /* V */
    int max_seq;                 /* max_position_embeddings */
    double norm_eps;             /* RMSNorm / LayerNorm eps, 1e-5 */
    double rope_theta;           /* 10000 */
    double init_std;             /* 0.02 */
    double dropout;              /* gpt2 only; 0 for llama */
    char variant[VRL_VARIANT_LEN]; /* "NAME[:key=value,...]", "baseline" by default */
    int bos_id, eos_id;          /* bos_token_id / eos_token_id: the end token of the tokenizer the run was
                                    trained with (hf_export_end_tokens), 0 when a file names none
                                    (formulas.md §3), -1 for null (no such token) */
} ModelConfig;

static inline int config_head_dim(const ModelConfig *c) { return c->d_model / c->n_heads; }

/* The name a config's errors carry when no file is at hand: its preset, else "config". */
static inline const char *config_origin(const ModelConfig *c) { return c->preset[0] ? c->preset : "config"; }

/* Fill *c with a named preset ("tiny", "small", "2M", "82M", "180M", "468M", "1.6B").
 * Returns -1 with an error naming the unknown preset. */
int config_preset(const char *name, ModelConfig *c);

/* Space-separated list of preset names, for --help. */
const char *config_preset_names(void);

/* Check that the shape is possible (d divisible by heads, heads by kv heads, even
 * head_dim for RoPE, positive sizes). `origin` names the file or preset in the error. */
int config_validate(const ModelConfig *c, const char *origin);

/* Read a config.json (Hugging Face keys plus vrl_ keys). Errors name the file and the
 * offending key or line. */
int config_load_json(const char *path, ModelConfig *c);

/* The same from JSON text in memory (e.g. a safetensors file's "config" metadata);
 * `origin` names the source in errors. */
int config_parse_json(const char *text, ModelConfig *c, const char *origin);

/* Write config.json atomically (temp file, fsync, rename), torch_dtype "float32". */
int config_save_json(const char *path, const ModelConfig *c);
/* The same with torch_dtype naming the dtype model.safetensors holds ("float32", "float64"):
 * transformers' dtype="auto" (lm-eval's default) then loads the model in that dtype. */
int config_save_json_dtype(const char *path, const ModelConfig *c, const char *torch_dtype);

/* "--model PRESET|path/config.json": a preset name, else a config file. */
int config_from_arg(const char *arg, ModelConfig *c);

/* 1 when a and b describe the same network shape and numerics (preset name and variant
 * aside): what `vrl train --resume DIR --model X` must match. */
int config_same_shape(const ModelConfig *a, const ModelConfig *b);

#endif
