/* run_paths.h: the file names of a run folder (docs/run-folder.md "The run folder"; what
 * each holds: run_folder.h) and run_path, the one place that formats a path into one. */
#ifndef VRL_RUN_PATHS_H
#define VRL_RUN_PATHS_H

#include <stddef.h>

#define RUN_CONFIG "config.json"
#define RUN_CHECKPOINTS "checkpoints"
#define RUN_LATEST "latest"
#define RUN_MODEL "model.safetensors"
#define RUN_TRAIN_STATE "train_state.safetensors"
#define RUN_METRICS "metrics.jsonl"
#define RUN_TB_EVENTS "events.out.tfevents.vrl" /* TensorBoard reads files named *tfevents* */
#define RUN_TB_RESTARTED "tensorboard.restarted"
#define RUN_LOCK ".lock"
#define RUN_TOKENIZER "tokenizer.json"
#define RUN_TOKENIZER_CONFIG "tokenizer_config.json"
#define RUN_GENERATION_CONFIG "generation_config.json"
#define RUN_EVAL "eval.json"

/* out = "RUN/FILE" (FILE one of the names above, or a checkpoint file inside a step
 * folder). 0, or -1 with vrl_error when it does not fit in n. */
int run_path(char *out, size_t n, const char *run, const char *file);

/* 1 when `name` is a temporary file vrl made for one of the names above: NAME.vrl.tmp.DIGITS,
 * or NAME.tmp.DIGITS as vrl named them before VRL_TMP_INFIX. Never a pattern over the user's
 * names: notes.tmp.2024 is not one. What a run cleans at its start. */
int run_is_own_tmp(const char *name);

#endif
