/* metrics.h: what a run tells the world while it trains.
 *   - RUN/metrics.jsonl: one JSON object per line: training steps
 *     {"step","loss","lr","grad_norm","tokens_per_s","elapsed_s"} and evaluations
 *     {"step","split","val_loss"[,"domain"]}, and {"step","event":"resume","changed"} where
 *     a --resume changed a flag;
 *   - RUN/events.out.tfevents.vrl: the same scalars for TensorBoard (tensorboard.h), always
 *     written: tags loss, lr, grad_norm, tokens_per_s, elapsed_s at each step, and
 *     SPLIT_loss (val_loss) and SPLIT_loss/DOMAIN at each evaluation, each as the number
 *     metrics.jsonl holds (rounded to float32);
 *   - the terminal: a progress line with step, loss, lr, tokens/s and ETA. */
#ifndef VRL_METRICS_H
#define VRL_METRICS_H

#include <stdio.h>

#include "common/run/tensorboard.h"

typedef struct {
    FILE *f;                 /* metrics.jsonl, appended line by line and flushed */
    char path[4200];
    int tty;                 /* progress with \r on a terminal, one line per report otherwise */
    double t_start;          /* wall clock at open (seconds) */
    TbWriter tb;             /* the TensorBoard events file beside it */
} Metrics;

/* Open RUN/metrics.jsonl and the events file. keep_upto_step >= 0 (resume): lines of later steps, written
 * after the checkpoint being resumed, and lines that are not whole JSON objects (cut by a
 * full disk) are dropped so the log matches the state. A fresh run (keep_upto_step < 0)
 * moves an existing log aside to metrics.jsonl.restarted, never overwriting it. The events
 * file is cut and moved aside the same way (tb_open). */
int metrics_open(Metrics *m, const char *run_dir, long keep_upto_step);
void metrics_close(Metrics *m);

/* Each writes and flushes one line; -1 when it could not (a full disk), so the run stops.
 * A non-finite value is written as null: every line stays valid JSON. */
int metrics_log_step(Metrics *m, long step, double loss, double lr, double grad_norm, double tokens_per_s);
int metrics_log_eval(Metrics *m, long step, const char *split, const char *domain, double loss);
/* {"step":S,"event":"resume","changed":CHANGES}: flags a --resume changed (trainer.h). */
int metrics_log_resume(Metrics *m, long step, const char *changes_json);

/* Progress line on stderr. */
void progress_print(Metrics *m, long step, long total, double loss, double lr, double grad_norm,
                    double tokens_per_s, double seconds_per_step);
void progress_end(Metrics *m);


#endif
