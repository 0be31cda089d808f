/* out_folder.h: the folders a new `vrl train --out DIR` may write into. A folder is vrl's
 * only if vrl made it: DIR missing or empty, or a run folder (config.json written by vrl,
 * holding `vrl_variant`, or a checkpoints/ folder of step-N / .stage-N entries only, or
 * nothing but .lock and vrl's temporary files: a run killed before its config.json).
 * Anything else holds someone's files, which a run would replace or clean: refused, as
 * Hugging Face's Trainer refuses a non-empty output folder. */
#ifndef VRL_OUT_FOLDER_H
#define VRL_OUT_FOLDER_H

/* 0 when a new run may use `dir`, else -1 with "--out DIR: not empty and not a vrl run
 * folder (...)". */
int out_folder_check(const char *dir);

#endif
