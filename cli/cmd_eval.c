/* cmd_eval.c: `vrl eval` — a trained run's per-domain validation loss, WikiText and text
 * perplexity, zero-shot accuracies and LAMBADA (docs/evaluation.md), printed as a table
 * and written as a JSON summary (--out) and, on request, one JSON line per request
 * (--log-samples). The arithmetic is common/eval/lmeval.c, on the backend --device picks
 * (the reference, or fast/ through Backend.token_logprobs). */
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/run/run_folder.h"
#include "common/base/error.h"
#include "common/base/outfile.h"
#include "common/base/fsutil.h"
#include "common/data/mixture.h"
#include "common/data/shard.h"
#include "common/eval/lmeval.h"
#include "common/eval/zeroshot.h"
#include "common/base/clock.h"
#include "common/model/backends.h"

#ifndef VRL_DEFAULT_EVAL_DIR
#define VRL_DEFAULT_EVAL_DIR "../shared/data/eval"
#endif

/* The task folder when --eval-dir is not given: $VRL_EVAL_DIR, else the shared data
 * folder beside the source tree this binary was built from (an absolute path, so the
 * default does not depend on the current directory). */
static const char *default_eval_dir(void) {
    const char *e = getenv("VRL_EVAL_DIR");
    return e && *e ? e : VRL_DEFAULT_EVAL_DIR;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl eval --ckpt RUN [flags]\n"
            "\n"
            "Evaluate a run folder (config.json + model.safetensors) as lm-evaluation-harness\n"
            "0.4 does (docs/evaluation.md): per-domain validation loss, WikiText and text-file\n"
            "perplexity (word, byte, bits per byte; rolling windows over whole documents),\n"
            "zero-shot multiple choice (acc, acc_norm) and LAMBADA (acc, perplexity). Prints a\n"
            "table and writes a JSON summary.\n"
            "\n"
            "  --ckpt RUN          the run folder\n"
            "  --tasks LIST        all | none | comma-separated of\n"
            "                      %s\n"
            "                      (all: the tasks whose file is in --eval-dir, which must\n"
            "                      hold at least one) [all, or none when --data, --wikitext,\n"
            "                      --text or --tokens is given]\n"
            "  --eval-dir DIR      folder of the task files NAME.jsonl [$VRL_EVAL_DIR, else\n"
            "                      %s]\n"
            "  --data DIR          tokenized data folder (vrl data tokenize): per-domain loss\n"
            "  --wikitext FILE     WikiText raw file (wiki.test.raw of WikiText-2 or -103)\n"
            "  --text FILE         a UTF-8 text file scored whole (token/word/byte perplexity)\n"
            "  --tokens FILE       a token shard (vrl data tokenize, data bytes) scored whole\n"
            "                      (token perplexity; no tokenizer needed)\n"
            "  --tokenizer FILE    tokenizer.json (needed for tasks, --wikitext and --text)\n"
            "  --limit N           at most N documents per task, WikiText pages and\n"
            "                      validation chunks per domain [all]\n"
            "  --batch B           rows per forward at the full window; shorter requests go\n"
            "                      in shorter windows with more rows (B x window tokens) [4]\n"
            "  --seq T             window length [the model's max_position_embeddings]\n"
            "  --device D          cpu | cuda | cuda-cpu [cpu]: the reference on the CPU, the\n"
            "                      CUDA backend (bf16, fp32 statistics) on a GPU, or its code\n"
            "                      on the CPU (slow; for checks)\n"
            "  --precision P       fp32 | fp64 [fp32], --device cpu only\n"
            "  --attention A       mma | flash | wgmma | cudnn [mma], --device cuda / cuda-cpu\n"
            "                      only: fast/'s tensor-core kernels (mma), its CUDA-core flash\n"
            "                      kernels, its Hopper forward (wgmma: H100/H200 or cuda-cpu),\n"
            "                      or cuDNN's fused attention (a GPU and a build with cuDNN;\n"
            "                      docs/fast.md)\n"
            "  --fixed-shape       every forward at [B, T] in request order (the unbatched\n"
            "                      path: for checks and timing)\n"
            "  --out FILE          the JSON summary [RUN/eval.json]\n"
            "  --log-samples FILE  one JSON line per request (task, doc, request, context,\n"
            "                      continuation, loglikelihood, is_greedy, tokens, result)\n"
            "  --overwrite         replace existing --out / --log-samples files (else an\n"
            "                      existing file is an error)\n"
            "\n"
            "Task files (NAME.jsonl, one JSON object per line; fields):\n%s",
            "hellaswag,openbook_qa,winogrande,arc_easy,arc_challenge,piqa,lambada_openai", VRL_DEFAULT_EVAL_DIR,
            LMEVAL_TASK_SCHEMAS);
}

/* Per-domain loss: rolling windows of T over each whole validation chunk (no prefix:
 * chunk token 0 is context only), token mean per domain. */
static int eval_domains(Scorer *s, const char *dir, size_t limit, json_t *out) {
    Mixture *mx;
    if (mixture_open(dir, NULL, NULL, 0, 0, 0, &mx) < 0) return -1;
    const uint32_t C = mixture_chunk_len(mx);
    int rc = 0;
    double sum = 0;
    int nd = 0;
    printf("\nper-domain validation loss (token mean over whole validation chunks, windows of %d)\n", s->T);
    printf("  %-26s %10s %12s\n", "domain", "loss", "tokens");
    for (int d = 0; rc == 0 && d < mixture_n_domains(mx); d++) {
        uint64_t n = mixture_val_chunks(mx, d);
        if (limit && n > limit) n = limit;
        if (n == 0) continue;
        int32_t *chunk = malloc(C * sizeof *chunk);            /* [C] one chunk */
        uint32_t *all = malloc((size_t)n * C * sizeof *all);   /* [n, C] the domain's chunks */
        LLRequest *req = NULL;
        size_t k = 0, cap = 0;
        if (!chunk || !all) rc = vrl_error("out of memory for %llu chunks", (unsigned long long)n);
        for (uint64_t i = 0; rc == 0 && i < n; i++) {
            rc = mixture_val_chunk(mx, d, i, chunk);
            for (uint32_t j = 0; rc == 0 && j < C; j++) all[i * C + j] = (uint32_t)chunk[j];
            if (rc == 0) rc = rolling_requests(all + i * C, C, s->T, NULL, &req, &k, &cap);
        }
        if (rc == 0) rc = scorer_loglik(s, req, k);
        double nll = 0;
        size_t np = 0;
        for (size_t i = 0; rc == 0 && i < k; i++) nll -= req[i].logprob, np += req[i].n_scored;
        if (rc == 0) {
            const double loss = nll / (double)np;
            printf("  %-26s %10.4f %12zu\n", mixture_domain(mx, d), loss, np);
            json_object_set_new(out, mixture_domain(mx, d), json_pack("{s:f, s:I, s:I}", "loss", loss, "tokens",
                                                                      (json_int_t)np, "chunks", (json_int_t)n));
            sum += loss, nd++;
        }
        free(chunk), free(all), free(req);
    }
    if (rc == 0 && nd) {
        printf("  %-26s %10.4f\n", "mean of domains", sum / nd);
        json_object_set_new(out, "mean", json_real(sum / nd));
    }
    mixture_close(mx);
    return rc;
}

/* A perplexity result as printed and as stored. */
static json_t *ppl_report(const char *title, const char *what, const PplResult *w) {
    printf("\n%s (%s)\n", title, what);
    printf("  word perplexity  %.6g  (%zu words)\n  byte perplexity  %.6g  (%zu bytes)\n  bits per byte    %.6g\n"
           "  token perplexity %.6g  (%zu tokens)\n",
           w->word_ppl, w->words, w->byte_ppl, w->bytes, w->bits_per_byte, w->token_ppl, w->tokens);
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I}", "word_perplexity", w->word_ppl,
                     "byte_perplexity", w->byte_ppl, "bits_per_byte", w->bits_per_byte, "token_perplexity",
                     w->token_ppl, "nll", w->nll, "tokens", (json_int_t)w->tokens, "words", (json_int_t)w->words,
                     "bytes", (json_int_t)w->bytes, "documents", (json_int_t)w->docs);
}

/* A token shard scored whole: rolling windows, the first token context only. */
static json_t *eval_tokens(Scorer *s, const char *path) {
    Shard sh;
    if (shard_read(path, &sh) < 0) return NULL;
    double nll;
    size_t np;
    json_t *o = NULL;
    if (sh.n_tokens < 2) vrl_error("%s: fewer than 2 tokens, nothing to score", path);
    else if (scorer_rolling(s, sh.tokens, sh.n_tokens, -1, &nll, &np) == 0) {
        printf("\ntoken file %s (%llu tokens, rolling windows of %d, the first token context only)\n", path,
               (unsigned long long)sh.n_tokens, s->T);
        printf("  token perplexity %.6g  (%zu predictions)\n", exp(nll / (double)np), np);
        o = json_pack("{s:s, s:f, s:f, s:I}", "file", path, "token_perplexity", exp(nll / (double)np), "nll", nll,
                      "tokens", (json_int_t)np);
    }
    shard_free(&sh);
    return o;
}

/* An output file that already exists is an error unless --overwrite (a device or FIFO
 * named there, /dev/null, holds no earlier evaluation). */
static int check_output(const char *flag, const char *path, int overwrite) {
    struct stat st;
    if (!overwrite && stat(path, &st) == 0 && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
        return vrl_error("%s: %s exists (an earlier evaluation?); choose another file or pass --overwrite", flag, path);
    return 0;
}

/* An output never lands on the run's own files: not in its checkpoints/ (RUN/latest/...
 * resolves there), not over config.json, the weights, the state or the log. */
static int outside_run(const char *flag, const char *path, const char *ckpt) {
    char dir[4200], real_dir[PATH_MAX], real_ckpts[PATH_MAX], own[4200];
    snprintf(dir, sizeof dir, "%s", path);
    if (run_path(own, sizeof own, ckpt, RUN_CHECKPOINTS) < 0) return -1;
    const size_t n = realpath(own, real_ckpts) ? strlen(real_ckpts) : 0;
    if (n && realpath(dirname(dir), real_dir) && !strncmp(real_dir, real_ckpts, n) &&
        (real_dir[n] == '/' || real_dir[n] == '\0'))
        return vrl_error("%s %s: inside the run's checkpoints/ (%s); choose a file outside it", flag, path, own);
    struct stat out_st, st;
    if (stat(path, &out_st) != 0) return 0;
    static const char *const files[] = {RUN_CONFIG, RUN_MODEL, RUN_TRAIN_STATE, RUN_METRICS};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (run_path(own, sizeof own, ckpt, files[i]) == 0 && stat(own, &st) == 0 && st.st_dev == out_st.st_dev &&
            st.st_ino == out_st.st_ino)
            return vrl_error("%s %s: is the run's own %s; choose another file", flag, path, own);
    return 0;
}

/* Open every output before the work: an output that cannot be written (a read-only folder,
 * /proc, a FIFO nobody reads, a link) fails now, not after the evaluation. */
static int open_output(const char *flag, const char *path, int named, const char *ckpt, OutFile *o) {
    if (outside_run(flag, path, ckpt) < 0) return -1;
    if ((named ? outfile_open_named(o, path) : outfile_open(o, path)) == 0) return 0;
    char why[VRL_ERROR_LEN];
    snprintf(why, sizeof why, "%s", vrl_last_error());
    return vrl_error("%s: %s", flag, why);
}


/* What one `vrl eval` reads besides the zero-shot tasks (NULL: not asked). */
typedef struct {
    const char *data, *wiki, *text, *tokens;
    size_t limit; /* documents per set, 0: all */
    int seq;      /* the scoring window */
    uint32_t prefix; /* the id each rolling window starts after (<|endoftext|>, or 0) */
    const char *prefix_name; /* how the report names it */
} EvalInputs;

/* Every evaluation asked, in eval.json's order, each adding its key to out. */
static int eval_sections(const EvalInputs *in, Scorer *sc, const Tokenizer *tok, FILE *log, ZeroShot *zs, json_t *out) {
    if (in->data) {
        json_t *jd = json_object();
        sc->label = "per-domain validation";
        if (!jd || eval_domains(sc, in->data, in->limit, jd) < 0) {
            json_decref(jd);
            return -1;
        }
        json_object_set_new(out, "domains", jd);
    }
    if (in->wiki) {
        PplResult w;
        sc->label = "wikitext";
        if (wikitext_evaluate(sc, tok, in->wiki, in->prefix, in->limit, "wikitext", log, &w) < 0) return -1;
        char what[256];
        snprintf(what, sizeof what, "%zu pages, rolling windows of %d after %s", w.docs, in->seq, in->prefix_name);
        json_t *o = ppl_report("WikiText", what, &w);
        json_object_set_new(o, "file", json_string(in->wiki));
        json_object_set_new(out, "wikitext", o);
    }
    if (in->text) {
        PplResult w;
        sc->label = "text";
        if (text_evaluate(sc, tok, in->text, in->prefix, log, &w) < 0) return -1;
        char what[256];
        snprintf(what, sizeof what, "the whole file, rolling windows after %s", in->prefix_name);
        json_t *o = ppl_report(in->text, what, &w);
        json_object_set_new(o, "file", json_string(in->text));
        json_object_set_new(out, "text", o);
    }
    if (in->tokens) {
        sc->label = "tokens";
        json_t *o = eval_tokens(sc, in->tokens);
        if (!o) return -1;
        json_object_set_new(out, "tokens", o);
    }
    if (zs->n_loaded) {
        json_t *jt = zeroshot_run(zs, sc, tok, log);
        if (!jt) return -1;
        json_object_set_new(out, "zero_shot", jt);
    }
    return 0;
}

int cmd_eval(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl eval"};
    const char *ckpt = NULL, *tasks = NULL, *eval_dir = default_eval_dir(), *data = NULL, *wiki = NULL,
               *text = NULL, *tokens = NULL, *tokfile = NULL, *device = "cpu", *precision = NULL,
               *attention = NULL, *out_path = NULL, *log_path = NULL, *v;
    long limit = 0;
    int batch = 4, seq = 0, fixed = 0, overwrite = 0, r;
    static OutFile out_file, log_file; /* temp + rename; a named device in place. static: 8 KiB each */
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
        if (args_switch(&p, "--fixed-shape")) {
            fixed = 1;
            continue;
        }
        if (args_switch(&p, "--overwrite")) {
            overwrite = 1;
            continue;
        }
#define FLAG(name, action)                                                                                  \
    if ((r = args_take(&p, name, &v)) != 0) {                                                               \
        if (r < 0 || (action) < 0) goto fail;                                                               \
        continue;                                                                                           \
    }
        FLAG("--ckpt", (ckpt = v, 0));
        FLAG("--tasks", (tasks = v, 0));
        FLAG("--eval-dir", (eval_dir = v, 0));
        FLAG("--data", (data = v, 0));
        FLAG("--wikitext", (wiki = v, 0));
        FLAG("--text", (text = v, 0));
        FLAG("--tokens", (tokens = v, 0));
        FLAG("--tokenizer", (tokfile = v, 0));
        FLAG("--device", (device = v, 0));
        FLAG("--precision", (precision = v, 0));
        FLAG("--attention", (attention = v, 0));
        FLAG("--out", (out_path = v, 0));
        FLAG("--log-samples", (log_path = v, 0));
        FLAG("--limit", parse_long("--limit", v, 1, 1L << 40, &limit));
        FLAG("--batch", parse_int("--batch", v, 1, 4096, &batch));
        FLAG("--seq", parse_int("--seq", v, 2, 1 << 20, &seq));
#undef FLAG
        fprintf(stderr, "vrl eval: unknown argument \"%s\" (see vrl eval --help)\n", argv[p.i]);
        return 2;
    }
    if (!ckpt) {
        fprintf(stderr, "vrl eval: --ckpt RUN is required (see vrl eval --help)\n");
        return 2;
    }
    if (precision && strcmp(device, "cpu")) {
        fprintf(stderr, "vrl eval: --precision %s: applies to --device cpu only (--device %s has its own)\n", precision,
                device);
        return 2;
    }
    const BackendEntry *chosen = backend_select(device, precision ? precision : "fp32");
    if (!chosen || (attention && backend_set_option(chosen, "attention", attention) < 0)) {
        fprintf(stderr, "vrl eval: %s\n", vrl_last_error());
        return 2;
    }
    const Backend *be = chosen->be;
    if (!tasks) tasks = data || wiki || text || tokens ? "none" : "all";
    char default_out[4200];
    if (!out_path && run_path(default_out, sizeof default_out, ckpt, RUN_EVAL) < 0) goto fail;
    const int out_named = out_path != NULL; /* RUN/eval.json is a name vrl chose: no device there */
    if (!out_path) out_path = default_out;
    if (check_output("--out", out_path, overwrite) < 0) goto fail;
    if (log_path && check_output("--log-samples", log_path, overwrite) < 0) goto fail;

    /* which tasks: validated (folder and files exist, names known) before any model work */
    static ZeroShot zs; /* [16] task paths: static, not on the stack */
    if (zeroshot_select(tasks, eval_dir, &zs) < 0) goto fail;
    if ((zs.n || wiki || text) && !tokfile) {
        vrl_error("--tokenizer FILE is needed for tasks, --wikitext and --text");
        goto fail;
    }
    if (zeroshot_load(&zs, (size_t)limit) < 0) goto fail;

    RunFolder run;
    if (run_folder_open(ckpt, RUN_OPEN_PARAMS, be->dtype, &run) < 0) {
        zeroshot_free(&zs);
        goto fail;
    }
    if (!seq) seq = run.config.max_seq;
    Tokenizer *tok = NULL;
    Scorer sc = {0};
    json_t *out = json_object();
    int rc = -1;
    /* the run is there (its folder holds the default --out): every output is opened now */
    if (open_output("--out", out_path, out_named, ckpt, &out_file) < 0 ||
        (log_path && open_output("--log-samples", log_path, 1, ckpt, &log_file) < 0))
        goto done;
    FILE *log = log_file.f;
    if (run_folder_check_finite(&run, ckpt) < 0 || !backend_require(be, &run.spec, BACKEND_CAN_SCORE)) goto done;
    if (tokfile && tok_load(tokfile, &tok) < 0) goto done;
    if (tok && tok_vocab_size(tok) > (uint32_t)run.config.vocab_size) {
        vrl_error("%s: the tokenizer has %u ids, the model in %s only %d", tokfile, tok_vocab_size(tok), ckpt,
                  run.config.vocab_size);
        goto done;
    }
    if (scorer_init(&sc, be, &run.spec, run.params, batch, seq) < 0) goto done;
    sc.fixed_shape = fixed;
    const int64_t eos_id = tok ? tok_token_id(tok, "<|endoftext|>") : -1;
    const uint32_t prefix = eos_id < 0 ? 0 : (uint32_t)eos_id;
    /* what the rolling windows start after: a byte-level tokenizer has no <|endoftext|> */
    const char *prefix_name = eos_id < 0 ? "id 0" : "<|endoftext|>";
    const double t0 = now_seconds();
    printf("vrl eval: %s (%s, %s, %zu parameters), %s, window %d, batch %d%s%s\n", ckpt, run.config.preset,
           run.config.variant, param_table_count(&run.spec.table), be->name, seq, batch, fixed ? ", fixed shape" : "",
           limit ? " (--limit: partial sets)" : "");
    json_object_set_new(out, "run", json_string(ckpt));
    json_object_set_new(out, "backend", json_string(be->name));
    json_object_set_new(out, "window", json_integer(seq));
    json_object_set_new(out, "limit", json_integer(limit));

    const EvalInputs in = {data, wiki, text, tokens, (size_t)limit, seq, prefix, prefix_name};
    if (eval_sections(&in, &sc, tok, log, &zs, out) < 0) goto done;
    const double dt = now_seconds() - t0;
    printf("\n%zu forward passes in %.2f s\n", sc.forwards, dt);
    json_object_set_new(out, "seconds", json_real(dt));
    if (log && outfile_commit(&log_file) < 0) goto done;
    char *js = json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    rc = js ? outfile_write(&out_file, js, strlen(js)) : vrl_error("out of memory");
    free(js);
    if (rc == 0) rc = outfile_commit(&out_file);
    if (rc == 0) printf("wrote %s%s%s\n", out_path, log_path ? " and " : "", log_path ? log_path : "");
done:
    scorer_free(&sc);
    tok_free(tok);
    run_folder_close(&run);
    zeroshot_free(&zs);
    json_decref(out);
    if (rc == 0) return 0;
fail:
    outfile_abort(&log_file); /* failed before the end: no half file appears */
    outfile_abort(&out_file);
    fprintf(stderr, "vrl eval: %s\n", vrl_last_error()[0] ? vrl_last_error() : "failed (no reason recorded)");
    return 1;
}
