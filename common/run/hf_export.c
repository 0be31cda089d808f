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

/* tokenizer.json as is, and a tokenizer_config.json whose EOS is id 0's token (formulas.md §3). */
static int export_tokenizer(const char *run_dir, const ModelConfig *c, const char *src) {
    Tokenizer *tok;
    if (tok_load(src, &tok) < 0) return -1;
    char *eos = NULL;
    size_t n_eos;
    const uint32_t zero = 0;
    int rc = tok_decode(tok, &zero, 1, 0, &eos, &n_eos);
    tok_free(tok);
    if (rc < 0) return -1;
    void *text = NULL;
    size_t n;
    char path[4300];
    rc = read_file_all(src, &text, &n);
    if (rc == 0) rc = run_path(path, sizeof path, run_dir, RUN_TOKENIZER);
    if (rc == 0) rc = write_file_atomic(path, text, n);
    free(text);
    if (rc == 0) {
        json_t *cfg = json_pack("{s:s, s:s%, s:s%, s:b, s:b, s:i, s:b}", "tokenizer_class", "PreTrainedTokenizerFast",
                                "eos_token", eos, n_eos, "bos_token", eos, n_eos, "add_bos_token", 0, "add_eos_token", 0,
                                "model_max_length", c->max_seq, "clean_up_tokenization_spaces", 0);
        char *text = cfg ? json_dumps(cfg, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(cfg);
        rc = run_path(path, sizeof path, run_dir, RUN_TOKENIZER_CONFIG);
        if (rc == 0) rc = text ? write_file_atomic(path, text, strlen(text)) : vrl_error("%s: out of memory", path);
        free(text);
    }
    free(eos);
    return rc;
}

int hf_export_static(const char *run_dir, const ModelConfig *c, const char *data) {
    char path[4300];
    if (c->arch == ARCH_LLAMA && strcmp(c->variant, "baseline"))
        for (int i = 0; i < hf_n_files; i++) {
            if (run_path(path, sizeof path, run_dir, hf_files[i].name) < 0) return -1;
            if (write_file_atomic(path, hf_files[i].data, hf_files[i].size) < 0) return -1;
        }
    char tok[4200];
    tokenizer_path(data, tok, sizeof tok);
    return tok[0] ? export_tokenizer(run_dir, c, tok) : 0;
}
