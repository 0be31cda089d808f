/* train_args.h: the training flags of `vrl train` (TrainArgs), their checks, their JSON
 * form stored in the training state, and the --resume merge. The flags are checked in
 * train_args_check.c and stored by trainer.c; the run folder (run_folder.h) reads them back. */
#ifndef VRL_TRAIN_ARGS_H
#define VRL_TRAIN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/model/backend.h"
#include "common/model/config.h"
#include "common/model/spec.h"
#include "common/run/schedule.h"

#define TRAIN_PATH_LEN 4096

typedef struct {
    ModelConfig model;
    const Backend *backend;
    char data[TRAIN_PATH_LEN];     /* comma-separated shards; "" = the synthetic corpus */
    char val_data[TRAIN_PATH_LEN]; /* comma-separated shards; "" = synthetic val (or none) */
    char mixture[1024];            /* with a data folder: "NAME=W,..." (mixture.h); "" = formulas.md §3 weights */
    long steps;                    /* total optimizer updates of the run */
    int batch, seq, accum;         /* accum: micro-batches per update of the whole job (all ranks) */
    Schedule sched;
    AdamWConfig opt;
    uint64_t seed;                 /* initialisation and data order */
    long eval_every;               /* 0: only at the end */
    int eval_batches;              /* validation batches per evaluation */
    int threads;                   /* CPU (BLAS) threads the ref backend runs with; 0 = not recorded */
    char data_fingerprint[40];     /* data_fingerprint.h of --data[,--val-data]; "" = synthetic or not recorded */
    long save_every;               /* 0: only at the end */
    long synthetic_tokens;         /* size of the synthetic training corpus */
    char out[TRAIN_PATH_LEN];      /* the run folder */
    int resume;                    /* continue the run in `out` */
    int quiet;                     /* no progress line */
    int keep_previous;             /* published checkpoints kept before the latest (ckpt_folder.h) */
    char given[512];               /* " --lr  --steps ": flags on the command line (train_args_note_flag) */
    ModelSpec *spec;               /* a new run: the spec of `model` its caller built (train_run takes
                                      it over, leaving it empty), or NULL: train_run builds it */
} TrainArgs;

/* Longest train_args JSON a training state stores (checkpoint.h). */
#define TRAIN_ARGS_JSON_LEN 4096

/* Defaults for everything but the model and backend. */
void train_args_defaults(TrainArgs *a);

/* The training flags as JSON (stored in the training state) and back. Every key is
 * required and unknown keys are refused, except "mixture": a state written before
 * --mixture existed has none, and its run trained on the formulas.md §3 weights, which is
 * what "" means. */
int train_args_to_json(const TrainArgs *a, char *buf, size_t n);
int train_args_from_json(const char *json, TrainArgs *a, const char *origin);

/* Every value in range. origin NULL: they came from the command line (errors name the
 * flag); else the stored state they were read from (errors name the file). */
int train_args_check(const TrainArgs *a, const char *origin);

/* Record that `flag` was given on the command line; and ask. */
void train_args_note_flag(TrainArgs *a, const char *flag);
int train_args_flag_given(const TrainArgs *a, const char *flag);

/* --resume: out = the stored flags (stored_json, read from origin) merged with those
 * given again in cli. A given flag that would change the trajectory (data, batch, seq,
 * accum, schedule, optimizer, seed) and differs is refused; --steps, --eval-every,
 * --eval-batches and --save-every may change, and each change is returned in
 * `changes` as JSON {"key":{"from":X,"to":Y}} ("" when nothing changed). The stored
 * backend must be cli's. cli->steps > 0 counts as --steps given (library callers). */
int train_args_resume(const char *stored_json, const char *origin, const TrainArgs *cli, TrainArgs *out,
                      char *changes, size_t n);

#endif
