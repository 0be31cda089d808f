/* ckpt_folder.h: how a run folder keeps its checkpoints, so that a crash or a full disk
 * at any moment leaves the last published checkpoint whole.
 *
 *   RUN/checkpoints/step-000120/   model.safetensors + train_state.safetensors of step 120
 *   RUN/checkpoints/.stage-000140/ a checkpoint being written (never read)
 *   RUN/latest -> checkpoints/step-000120      the published checkpoint (a symlink)
 *   RUN/model.safetensors -> latest/model.safetensors         so that RUN loads as a
 *   RUN/train_state.safetensors -> latest/train_state.safetensors  Hugging Face folder
 *
 * A save writes the whole step into the stage folder, fsyncs it, renames it to step-N
 * and then publishes it with one rename of a fresh symlink over RUN/latest: before that
 * rename readers see the previous step, after it the new one, never a mix. The previous
 * `keep_previous` steps stay; older ones are removed after the publish. A folder written
 * before checkpoints/ existed (model and state as plain files in RUN) still loads. */
#ifndef VRL_CKPT_FOLDER_H
#define VRL_CKPT_FOLDER_H

#include <stddef.h>

/* Create an empty RUN/checkpoints/.stage-N folder for step `step` (a leftover is removed
 * first) and return its path in stage. */
int ckpt_stage(const char *run, long step, char *stage, size_t n);

/* Publish the staged step: stage -> step-N, RUN/latest -> step-N, the top-level links,
 * then remove steps older than the `keep_previous` before it. */
int ckpt_publish(const char *run, long step, int keep_previous);

/* Remove a stage folder after a failed save (best effort; the error stays the save's). */
void ckpt_discard(const char *stage);

/* The folder that holds the published checkpoint of RUN: RUN/checkpoints/step-N through
 * RUN/latest; without a usable latest (a copy made by `rsync -r`, `cp -rL`, `scp -r`) the
 * newest step folder; else RUN itself (a folder from before checkpoints/, or a plain one). */
int ckpt_resolve(const char *run, char *dir, size_t n);

/* 1 when RUN holds a checkpoint: a published one, any step folder, or an older folder's
 * model file. A fresh run refuses such a folder. */
int ckpt_exists(const char *run);

/* The step numbers of RUN/checkpoints/step-N folders, newest first (at most max); 0 for none. */
int ckpt_steps(const char *run, long *steps, int max);
/* RUN/checkpoints/step-N into dir. */
int ckpt_step_dir(const char *run, long step, char *dir, size_t n);
/* 1 when RUN has step folders but no RUN/latest link to one of them. */
int ckpt_needs_recovery(const char *run);
/* Make RUN/latest (whatever stands there: a copied folder, a file, a loop) and the top-level
 * links point at step N again. The caller has verified that step. */
int ckpt_republish(const char *run, long step);

/* At the start of a run, with the run lock held: remove stage folders, steps that were
 * renamed but never published, steps older than the `keep_previous` before the
 * latest (a save killed while pruning), and the temporary files of vrl's own names
 * (`config.json.vrl.tmp.PID`, ...) that killed writers left; nothing else. A step folder
 * holding a subfolder is left whole with a note.
 * Without a published latest no step folder is removed: only stages and temporary files. */
int ckpt_clean(const char *run, int keep_previous);

#endif
