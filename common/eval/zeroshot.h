/* zeroshot.h: the zero-shot tasks of one `vrl eval` (docs/evaluation.md): which task files
 * to read, every one loaded before the model is touched, and the scored table, printed and
 * returned as the JSON of eval.json's "zero_shot". The scoring itself is lmeval.h's. */
#ifndef VRL_ZEROSHOT_H
#define VRL_ZEROSHOT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "common/eval/lmeval.h"

#define ZEROSHOT_MAX_TASKS 16

typedef struct {
    int n;                                /* tasks selected */
    const TaskInfo *info[ZEROSHOT_MAX_TASKS]; /* [n] in LMEVAL_TASKS or --tasks order */
    char path[ZEROSHOT_MAX_TASKS][4200];  /* [n] their files */
    int n_loaded;
    TaskSet sets[ZEROSHOT_MAX_TASKS];     /* [n_loaded] the files read */
} ZeroShot;

/* Select the tasks: "all" (every task file of eval_dir present; absent ones are reported
 * on stderr and skipped), "none", or a comma list of names (each file must exist). Errors
 * name the folder, the file or the task. */
int zeroshot_select(const char *tasks, const char *eval_dir, ZeroShot *z);
/* Read every selected file, `limit` documents each (0: all), before the model is touched. */
int zeroshot_load(ZeroShot *z, size_t limit);
void zeroshot_free(ZeroShot *z);

/* Score every task with s, print the table on stdout and return its JSON ({TASK:{acc,
 * acc_norm|perplexity, n}, "average":{acc, tasks}}); NULL with vrl_error on failure. */
json_t *zeroshot_run(ZeroShot *z, Scorer *s, const Tokenizer *tok, FILE *log);

#endif
