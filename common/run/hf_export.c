/* hf_export.c: Hugging Face model-folder files of a run (hf_export.h). */
#include "common/run/hf_export.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/tokenizer.h"
#include "common/run/run_paths.h"

/* The folder holding the training data's tokenizer.json: the data folder itself, or the folder
 * of the first shard file; "" when there is none (the synthetic corpus). */
static void tokenizer_path(const char *data, char *out, size_t n) {
    out[0] = '\0';
    if (!data[0]) return;
    char first[4096];
    snprintf(first, sizeof first, "%s", data);
    char *comma = strchr(first, ',');
    if (comma) *comma = '\0';
    snprintf(out, n, "%s/tokenizer.json", first);
    if (file_exists(out)) return;
    char *slash = strrchr(first, '/');
    if (slash) *slash = '\0';
    else snprintf(first, sizeof first, ".");
    snprintf(out, n, "%s/tokenizer.json", first);
    if (!file_exists(out)) out[0] = '\0';
}

int hf_export_end_tokens(const char *data, ModelConfig *c) {
    char src[4200];
    tokenizer_path(data, src, sizeof src);
    if (!src[0]) return 0;
    Tokenizer *tok;
    if (tok_load(src, &tok) < 0) return -1;
    const int64_t eot = tok_token_id(tok, "<|endoftext|>");
    tok_free(tok);
    if (eot >= 0) c->bos_id = c->eos_id = (int)eot;
    return 0;
}

/* The text tokenizer_config.json names token `id` by (NULL for none, or an id the tokenizer lacks);
 * *plain 1 when it is a vocabulary entry rather than an added token. */
static json_t *token_name(const Tokenizer *tok, int id, int *plain) {
    size_t n;
    int added;
    const char *s = id < 0 ? NULL : tok_token_text(tok, (uint32_t)id, &n, &added);
    if (!s) return NULL;
    if (!added) *plain = 1;
    return json_stringn(s, n);
}

/* tokenizer.json as is, and a tokenizer_config.json naming c's BOS / EOS (hf_export_end_tokens) by
 * their text, so transformers and lm-evaluation-harness read the ids config.json gives: GPT-2 and
 * GPT-NeoX `<|endoftext|>`, an added token; the byte tokenizer's id 0 by its vocabulary entry "\u0100"
 * (naming the raw "\u0000" made transformers add a 257th id past the embedding). A vocabulary entry
 * named as a special token would be matched in text as one: split_special_tokens keeps text
 * tokenized as vrl tokenizes it (the characters "\u0100" stay the two bytes C4 80). */
static int export_tokenizer(const char *run_dir, const ModelConfig *c, const char *src) {
    Tokenizer *tok;
    if (tok_load(src, &tok) < 0) return -1;
    int plain = 0;
    json_t *bos = token_name(tok, c->bos_id, &plain), *eos = token_name(tok, c->eos_id, &plain);
    tok_free(tok);
    void *text = NULL;
    size_t n;
    char path[4300];
    int rc = read_file_all(src, &text, &n);
    if (rc == 0) rc = run_path(path, sizeof path, run_dir, RUN_TOKENIZER);
    if (rc == 0) rc = write_file_atomic(path, text, n);
    free(text);
    if (rc == 0) {
        json_t *cfg = json_pack("{s:s}", "tokenizer_class", "PreTrainedTokenizerFast");
        if (cfg) {
            if (bos) json_object_set(cfg, "bos_token", bos);
            if (eos) json_object_set(cfg, "eos_token", eos);
            json_object_set_new(cfg, "add_bos_token", json_false());
            json_object_set_new(cfg, "add_eos_token", json_false());
            if (plain) json_object_set_new(cfg, "split_special_tokens", json_true());
            json_object_set_new(cfg, "model_max_length", json_integer(c->max_seq));
            json_object_set_new(cfg, "clean_up_tokenization_spaces", json_false());
        }
        char *out = cfg ? json_dumps(cfg, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(cfg);
        rc = run_path(path, sizeof path, run_dir, RUN_TOKENIZER_CONFIG);
        if (rc == 0) rc = out ? write_file_atomic(path, out, strlen(out)) : vrl_error("%s: out of memory", path);
        free(out);
    }
    json_decref(bos);
    json_decref(eos);
    return rc;
}

/* generation_config.json: the token ids generate() starts and stops with, as config.json has them
 * (transformers reads generation defaults from this file when a folder has one). */
static int export_generation_config(const char *run_dir, const ModelConfig *c) {
    char path[4300];
    json_t *cfg = json_pack("{s:o, s:o}", "bos_token_id", c->bos_id < 0 ? json_null() : json_integer(c->bos_id),
                            "eos_token_id", c->eos_id < 0 ? json_null() : json_integer(c->eos_id));
    char *out = cfg ? json_dumps(cfg, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(cfg);
    int rc = run_path(path, sizeof path, run_dir, RUN_GENERATION_CONFIG);
    if (rc == 0) rc = out ? write_file_atomic(path, out, strlen(out)) : vrl_error("%s: out of memory", path);
    free(out);
    return rc;
}

int hf_export_static(const char *run_dir, const ModelConfig *c, const char *data) {
    char path[4300];
    if (c->arch == ARCH_LLAMA && strcmp(c->variant, "baseline"))
        for (int i = 0; i < hf_n_files; i++) {
            if (run_path(path, sizeof path, run_dir, hf_files[i].name) < 0) return -1;
            if (write_file_atomic(path, hf_files[i].data, hf_files[i].size) < 0) return -1;
        }
    if (export_generation_config(run_dir, c) < 0) return -1;
    char tok[4200];
    tokenizer_path(data, tok, sizeof tok);
    return tok[0] ? export_tokenizer(run_dir, c, tok) : 0;
}
