/* hf_export.h: the static files that make a run folder a Hugging Face model folder.
 *
 * Written once when a run starts, beside config.json (common/model/config_json.c writes its
 * model_type: "llama" for the baseline, "vrl" with an auto_map for every other variant):
 *   configuration_vrl.py, modeling_vrl.py   python/vrl_hf/, for non-baseline llama variants,
 *                                           so AutoModelForCausalLM.from_pretrained(RUN,
 *                                           trust_remote_code=True) builds the right model
 *   generation_config.json                  bos/eos_token_id as config.json has them, so
 *                                           generate() stops at the tokenizer's end token
 *   tokenizer.json, tokenizer_config.json   when the training data folder carries the
 *                                           tokenizer.json it was made with (vrl data tokenize
 *                                           copies it there), so AutoTokenizer.from_pretrained(RUN)
 *                                           works; the synthetic corpus has none (ids only). */
#ifndef VRL_HF_EXPORT_H
#define VRL_HF_EXPORT_H

#include <stddef.h>

#include "common/model/config.h"

typedef struct {
    const char *name;
    const unsigned char *data;
    size_t size;
} HfFile;

/* python/vrl_hf's model files, embedded at build time (cmake/embed_files.cmake). */
extern const HfFile hf_files[];
extern const int hf_n_files;

/* Set c's bos_id / eos_id to the end token of the tokenizer of `data` (a data folder, comma-separated
 * shard files, or "" for the synthetic corpus): its <|endoftext|> (GPT-2 50256, GPT-NeoX 0: the EOS
 * `vrl data tokenize` puts after each document). A tokenizer without one (`vrl data bytes`'s) and
 * the synthetic corpus keep c's (0 unless the --model config.json names another: the byte 0, which
 * text does not contain, where `vrl eval` starts its rolling windows). Call before config.json is
 * written. 0, or -1 with vrl_error naming the tokenizer file. */
int hf_export_end_tokens(const char *data, ModelConfig *c);

/* Write the files above into run_dir for model c trained on `data` (a data folder, comma-separated
 * shard files, or "" for the synthetic corpus). 0, or -1 with vrl_error naming the file. */
int hf_export_static(const char *run_dir, const ModelConfig *c, const char *data);

#endif
