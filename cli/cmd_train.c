/* cmd_train.c: `vrl train` — flags to TrainArgs, then the trainer. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/blas_threads.h"
#include "cli/commands.h"
#include "common/model/backends.h"
#include "common/model/config.h"
#include "common/base/error.h"
#include "common/data/mixture.h"
#include "common/run/dist.h"
#include "common/run/checkpoint.h"
#include "common/run/run_paths.h"
#include "common/run/trainer.h"
#include "common/model/spec.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl train [flags]\n"
            "\n"
            "Train a model and write a run folder (config.json, model.safetensors,\n"
            "train_state.safetensors, metrics.jsonl; one run per folder at a time; see\n"
            "docs/run-folder.md). With no flags: the `small` preset on\n"
            "vrl's own synthetic corpus, on the CPU, in a minute or two.\n"
            "\n"
            "model\n"
            "  --model PRESET|FILE   preset (%s) or a config.json [small]\n"
            "  --device cpu|cuda|cuda-cpu  where to train [cpu]; cuda-cpu runs the CUDA\n"
            "                        backend's own code on the CPU (slow: tests, gdb, teaching;\n"
            "                        VRL_CUDA_CPU_ORDER=forward|reverse|random[:SEED], docs/fast.md)\n"
            "  --precision fp32|fp64 reference precision on cpu [fp32]\n"
            "  --attention mma|flash|wgmma|cudnn  cuda, cuda-cpu: fast/'s tensor-core kernels\n"
            "                        (mma; not yet checked on a GPU), its CUDA-core flash kernels,\n"
            "                        its Hopper forward with mma's backward (wgmma: H100/H200 or\n"
            "                        cuda-cpu; not yet checked on a GPU), or cuDNN's fused\n"
            "                        attention (GPU only, a build with cuDNN; docs/fast.md) [mma]\n"
            "  --gemm cublaslt|wgmma cuda, cuda-cpu: the layers' forward GEMMs on cuBLASLt, or on\n"
            "                        fast/'s own wgmma GEMM with SwiGLU in its epilogue (H100/H200\n"
            "                        or cuda-cpu; not yet checked on a GPU) [cublaslt]\n"
            "  --threads N           reference threads on cpu; results do not depend on N\n"
            "                        [OPENBLAS_NUM_THREADS if set, else all cores; recorded with the run]\n"
            "  --variant SPEC        model variant, e.g. resformer or svformer:anchors=1,5 [baseline]\n"
            "data\n"
            "  --data SHARDS|DIR     comma-separated token shards, or a folder written by\n"
            "                        `vrl data tokenize` (train/, validation/: the formulas.md §3\n"
            "                        domain mixture, per-domain validation) [synthetic corpus]\n"
            "  --mixture NAME=W,...  with --data DIR: domain weights instead of formulas.md §3's, names\n"
            "                        as in the shards' domain tags, e.g.\n"
            "                        RedPajamaC4=0.5,RedPajamaGithub=0.5 (W >= 0, normalised;\n"
            "                        W = 0: validation only; domains not named are not read;\n"
            "                        kept by --resume) [formulas.md §3: all 7 RedPajama domains]\n"
            "  --val-data SHARDS     validation shards [synthetic validation set]\n"
            "  --synthetic-tokens N  size of the synthetic training corpus [2000000]\n"
            "batch\n"
            "  --steps N             optimizer updates in the whole run [300]\n"
            "  --batch B             sequences per micro-batch [16]\n"
            "  --seq T               tokens per sequence [128, or the model's\n"
            "                        max_position_embeddings when smaller]\n"
            "  --accum K             micro-batches per update, on each process [1]\n"
            "optimizer (formulas.md §2)\n"
            "  --lr X                peak learning rate [3e-3]\n"
            "  --lr-end X            final learning rate [3e-4]\n"
            "  --warmup W            warm-up steps from 1e-7 to the peak [30]\n"
            "  --decay-end S         step where decay ends [= --steps]; stored: a resume\n"
            "                        to a larger --steps keeps it (lr-end after S)\n"
            "  --schedule KIND       cosine | linear | exponential [cosine]\n"
            "  --schedule-offset N   update u trains at lr(u - 1 + N) [0: the first update at\n"
            "                        1e-7, as the paper's code; 1: warm-up starts at lr / W]\n"
            "  --wd X                AdamW weight decay on weights [0.1]\n"
            "  --clip X              global gradient-norm clip, 0 = off [1.0]\n"
            "  --seed N              initialisation and data order [1337]\n"
            "run\n"
            "  --out DIR             run folder: missing, empty, or a vrl run folder without a\n"
            "                        checkpoint [runs/DATE-TIME]\n"
            "  --resume DIR          continue the run in DIR with its stored flags. Given again,\n"
            "                        --steps, --eval-every, --eval-batches, --save-every may\n"
            "                        change (recorded in metrics.jsonl); --data, --val-data,\n"
            "                        --synthetic-tokens, --batch, --seq, --accum, --lr, --lr-end,\n"
            "                        --warmup, --decay-end, --schedule(-offset), --wd, --clip, --seed must\n"
            "                        equal the stored value, --model the stored shape; --variant,\n"
            "                        --mixture are refused; --device, --precision: the run's\n"
            "  --eval-every N        validation every N steps, 0 = at the end [100]\n"
            "  --eval-batches N      validation batches per evaluation [8]\n"
            "  --save-every N        checkpoint every N steps, 0 = at the end [500]\n"
            "  --keep-previous K     checkpoints kept before the latest, in DIR/checkpoints/ [1]\n"
            "  --quiet               no progress line\n"
            "data parallel (docs/distributed.md)\n"
            "  mpirun -np N vrl train ...          N processes; 8 GPUs in one node:\n"
            "                                      mpirun -np 8 vrl train --device cuda ...\n"
            "  mpirun -np 16 --hostfile FILE ...   several nodes (FILE: \"node1 slots=8\" lines)\n"
            "  srun --mpi=pmix vrl train ...       the same under SLURM\n"
            "                        An update then holds K x N micro-batches (K = --accum): the\n"
            "                        tokens of one process with --accum K*N, and on cpu the same\n"
            "                        bits. Rank 0 writes the run folder; --resume may change N\n"
            "                        when N divides the run's micro-batches per update.\n\n",
            config_preset_names());
    args_print_variants(f);
}

/* The backend of --device / --precision; --resume without either: the run's own. */
static const BackendEntry *choose_backend(const TrainArgs *a, const char *resume, const char *device,
                                          const char *precision) {
    if (resume && !train_args_flag_given(a, "--device") && !train_args_flag_given(a, "--precision")) {
        char stored[64];
        if (checkpoint_stored_backend(resume, stored, sizeof stored) < 0) return NULL;
        /* a name this build lacks (or none: no state yet) keeps the defaults; the trainer says why */
        const BackendEntry *run_be = backend_named(stored);
        if (run_be) device = run_be->device;
        if (run_be && run_be->precision) precision = run_be->precision;
    }
    return backend_select(device, precision);
}

/* The flags that say which run: a new one or --resume. */
typedef struct {
    const char *model, *variant, *mixture, *out, *resume;
    int model_given, steps_given, seq_given;
} RunFlags;

/* --resume DIR: the run continues in DIR with its stored model, variant and mixture. */
static int resume_run(TrainArgs *a, const RunFlags *f) {
    if (f->out && strcmp(f->out, f->resume))
        return vrl_error("--out and --resume name different folders; a resumed run continues in its own folder");
    /* --model again: the trainer checks it names the run's own shape */
    if (f->model_given && config_from_arg(f->model, &a->model) < 0) return -1;
    char kept[sizeof a->out + 32];
    if (f->variant)
        return run_path(kept, sizeof kept, f->resume, RUN_CONFIG) < 0
                   ? -1
                   : vrl_error("--variant: a resumed run keeps the variant in %s", kept);
    if (f->mixture)
        return run_path(kept, sizeof kept, f->resume, RUN_TRAIN_STATE) < 0
                   ? -1
                   : vrl_error("--mixture: a resumed run keeps the weights stored in %s", kept);
    snprintf(a->out, sizeof a->out, "%s", f->resume);
    a->resume = 1;
    if (!f->steps_given) a->steps = 0;
    return 0;
}

/* A new run: its folder, and its model built once into *spec (handed to train_run). */
static int new_run(TrainArgs *a, const RunFlags *f, ModelSpec *spec) {
    if (f->out) snprintf(a->out, sizeof a->out, "%s", f->out);
    else {
        /* A fresh folder per run, so running `vrl train` twice never collides. */
        time_t now = time(NULL);
        strftime(a->out, sizeof a->out, "runs/%Y%m%d-%H%M%S", localtime(&now));
    }
    if (config_from_arg(f->model, &a->model) < 0) return -1;
    /* recorded in config.json as vrl_variant, so the run folder rebuilds the model */
    if (model_spec_set_variant(&a->model, f->variant, f->variant ? "--variant" : f->model, spec) < 0) return -1;
    a->spec = spec; /* built once: train_run takes it over */
    /* the default length must fit every model, tiny's 64 positions included */
    if (!f->seq_given && a->seq > a->model.max_seq) a->seq = a->model.max_seq;
    return 0;
}

/* --mixture NAME=W,...: parsed here; the names are checked against the folder by the
 * trainer, before anything is written. */
static int mixture_flag(TrainArgs *a, const char *mixture) {
    if (!mixture) return 0;
    MixtureWeights w;
    if (mixture_weights_parse(mixture, &w) < 0) {
        char why[VRL_ERROR_LEN];
        snprintf(why, sizeof why, "%s", vrl_last_error());
        return vrl_error("--mixture: %s", why);
    }
    if (snprintf(a->mixture, sizeof a->mixture, "%s", mixture) >= (int)sizeof a->mixture)
        return vrl_error("--mixture: longer than %zu characters", sizeof a->mixture - 1);
    return 0;
}

/* The reference's thread count: results do not depend on it (test_thread_bits), so a
 * resumed run may use another; the count in use is recorded with the run. */
static void fit_blas_threads(TrainArgs *a, int threads) { a->threads = blas_threads_apply(threads); }

int cmd_train(int argc, char **argv) {
    TrainArgs a;
    ModelSpec spec = {0}; /* a new run's model, built once here (errors name --variant or --model) */
    train_args_defaults(&a);
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl train"};
    const char *model = "small", *device = "cpu", *precision = "fp32", *v, *resume = NULL, *out = NULL, *variant = NULL,
               *mixture = NULL, *attention = NULL, *gemm = NULL;
    int steps_given = 0, model_given = 0, seq_given = 0, threads = 0, r;
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
        if (args_switch(&p, "--quiet")) {
            a.quiet = 1;
            continue;
        }
#define FLAG(name, action)                                                                                  \
    if ((r = args_take(&p, name, &v)) != 0) {                                                               \
        if (r < 0 || (action) < 0) goto fail;                                                               \
        train_args_note_flag(&a, name); /* --resume compares these with the stored run */                   \
        continue;                                                                                           \
    }
        FLAG("--model", (model = v, model_given = 1, 0));
        FLAG("--device", (device = v, 0));
        FLAG("--precision", (precision = v, 0));
        FLAG("--attention", (attention = v, 0)); /* a device option, not stored: a resumed run may change it */
        FLAG("--gemm", (gemm = v, 0));           /* likewise */
        FLAG("--variant", (variant = v, 0));
        FLAG("--threads", parse_int("--threads", v, 1, 1024, &threads));
        FLAG("--data", snprintf(a.data, sizeof a.data, "%s", v) >= (int)sizeof a.data ? vrl_error("--data: too long") : 0);
        FLAG("--mixture", (mixture = v, 0));
        FLAG("--val-data", snprintf(a.val_data, sizeof a.val_data, "%s", v) >= (int)sizeof a.val_data ? vrl_error("--val-data: too long") : 0);
        FLAG("--synthetic-tokens", parse_long("--synthetic-tokens", v, 1024, 1L << 34, &a.synthetic_tokens));
        FLAG("--steps", (steps_given = 1, parse_long("--steps", v, 0, 1L << 40, &a.steps)));
        FLAG("--batch", parse_int("--batch", v, 1, 1 << 20, &a.batch));
        FLAG("--seq", (seq_given = 1, parse_int("--seq", v, 2, 1 << 20, &a.seq)));
        FLAG("--accum", parse_int("--accum", v, 1, 1 << 20, &a.accum));
        FLAG("--lr", parse_double("--lr", v, &a.sched.peak));
        FLAG("--lr-end", parse_double("--lr-end", v, &a.sched.end));
        FLAG("--warmup", parse_long("--warmup", v, 0, 1L << 40, &a.sched.warmup));
        FLAG("--decay-end", parse_long("--decay-end", v, 0, 1L << 40, &a.sched.decay_end));
        FLAG("--schedule-offset", parse_long("--schedule-offset", v, 0, 1, &a.sched.offset));
        FLAG("--schedule", schedule_kind_parse(v, &a.sched.kind) < 0
                               ? vrl_error("--schedule: \"%s\" is not cosine, linear or exponential", v)
                               : 0);
        FLAG("--wd", parse_double("--wd", v, &a.opt.weight_decay));
        FLAG("--clip", parse_double("--clip", v, &a.opt.clip));
        FLAG("--seed", parse_u64("--seed", v, &a.seed));
        FLAG("--out", (out = v, 0));
        FLAG("--resume", (resume = v, 0));
        FLAG("--eval-every", parse_long("--eval-every", v, 0, 1L << 40, &a.eval_every));
        FLAG("--eval-batches", parse_int("--eval-batches", v, 1, 1 << 20, &a.eval_batches));
        FLAG("--save-every", parse_long("--save-every", v, 0, 1L << 40, &a.save_every));
        FLAG("--keep-previous", parse_int("--keep-previous", v, 0, 1000, &a.keep_previous));
#undef FLAG
        fprintf(stderr, "vrl train: unknown argument \"%s\" (see vrl train --help)\n", argv[p.i]);
        return 2;
    }
    const BackendEntry *chosen = choose_backend(&a, resume, device, precision);
    if (!chosen || (attention && backend_set_option(chosen, "attention", attention) < 0) ||
        (gemm && backend_set_option(chosen, "gemm", gemm) < 0))
        goto fail;
    a.backend = chosen->be;
    if (a.sched.warmup > 0 && a.sched.decay_end >= 0 && a.sched.decay_end <= a.sched.warmup) {
        vrl_error("--decay-end %ld must be after --warmup %ld", a.sched.decay_end, a.sched.warmup);
        goto fail;
    }
    const RunFlags rf = {model, variant, mixture, out, resume, model_given, steps_given, seq_given};
    if ((resume ? resume_run(&a, &rf) : new_run(&a, &rf, &spec)) < 0 || mixture_flag(&a, mixture) < 0) goto fail;
    /* Under mpirun/srun: every process from here on is one rank of the job. */
    if (dist_init() < 0) goto fail;
    if (!resume) a.accum *= dist_world(); /* the update of the whole job; a resumed run keeps its own */
    dist_broadcast(a.out, sizeof a.out);  /* rank 0's folder (a default name holds the time) */
    if (!strcmp(chosen->device, "cpu")) fit_blas_threads(&a, threads);
    const int rc = train_run(&a); /* 0, -1, or 128 + signal after a stop that saved */
    if (rc < 0) goto fail;
    model_spec_free(&spec);
    dist_finalize();
    return rc;
fail:
    model_spec_free(&spec);
    dist_abort("vrl train", vrl_last_error()); /* with other ranks: print with the rank, stop them all */
    fprintf(stderr, "vrl train: %s\n", vrl_last_error());
    dist_finalize();
    return 1;
}
