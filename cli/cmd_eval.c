/* cmd_eval.c: `vrl eval` — a trained run's per-domain validation loss, WikiText-2
 * perplexity and zero-shot accuracies (SPEC.md §7), printed as a Table-1-style table
 * and written to RUN/eval.json. The arithmetic is common/eval/lmeval.c. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/eval/lmeval.h"
#include "common/data/mixture.h"
#include "ref/model.h"
#include "cli/runload.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl eval --ckpt RUN [flags]\n"
            "\n"
            "Evaluate a run folder (config.json + model.safetensors) as lm-evaluation-harness\n"
            "does: per-domain validation loss, WikiText-2 perplexity (token and word level,\n"
            "rolling windows over whole documents) and zero-shot multiple choice (acc,\n"
            "acc_norm). Prints a table and writes RUN/eval.json.\n"
            "\n"
            "  --ckpt RUN          the run folder\n"
            "  --tasks LIST        all | comma-separated of %s [all]\n"
            "                      (all: the tasks whose file exists in --eval-dir)\n"
            "  --eval-dir DIR      folder of the task files NAME.jsonl [../shared/data/eval]\n"
            "  --data DIR          tokenized data folder (vrl data tokenize): per-domain loss\n"
            "  --wikitext FILE     WikiText-2 raw test file (wiki.test.raw)\n"
            "  --tokenizer FILE    tokenizer.json (needed for tasks and WikiText)\n"
            "  --limit N           at most N documents per task, WikiText documents and\n"
            "                      validation chunks per domain [all]\n"
            "  --batch B           sequences per forward [4]\n"
            "  --seq T             window length [the model's max_position_embeddings]\n"
            "  --precision P       fp32 | fp64 [fp32]\n",
            "hellaswag,openbook_qa,winogrande,arc_easy,arc_challenge,piqa");
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

int cmd_eval(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl eval"};
    const char *ckpt = NULL, *tasks = "all", *eval_dir = "../shared/data/eval", *data = NULL, *wiki = NULL,
               *tokfile = NULL, *precision = "fp32", *v;
    long limit = 0;
    int batch = 4, seq = 0, r;
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
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
        FLAG("--tokenizer", (tokfile = v, 0));
        FLAG("--precision", (precision = v, 0));
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
    const Backend *be = NULL;
    if (!strcmp(precision, "fp32")) be = &ref_backend_f32;
    else if (!strcmp(precision, "fp64")) be = &ref_backend_f64;
    else {
        fprintf(stderr, "vrl eval: --precision: \"%s\" is not fp32 or fp64\n", precision);
        return 2;
    }

    /* which tasks: validated (files exist, names known) before any model work */
    const TaskInfo *sel[16];
    char task_path[16][4200];
    int n_sel = 0;
    if (!strcmp(tasks, "all")) {
        for (const TaskInfo *t = LMEVAL_TASKS; t->name; t++) {
            snprintf(task_path[n_sel], sizeof task_path[0], "%s/%s", eval_dir, t->file);
            if (file_exists(task_path[n_sel])) sel[n_sel++] = t;
            else fprintf(stderr, "vrl eval: %s: absent, task %s skipped\n", task_path[n_sel], t->name);
        }
    } else if (strcmp(tasks, "none")) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", tasks);
        for (char *save, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            const TaskInfo *t = lmeval_task(name);
            if (!t) {
                vrl_error("--tasks: unknown task \"%s\"", name);
                goto fail;
            }
            if (n_sel == 16) {
                vrl_error("--tasks: too many tasks");
                goto fail;
            }
            snprintf(task_path[n_sel], sizeof task_path[0], "%s/%s", eval_dir, t->file);
            if (!file_exists(task_path[n_sel])) {
                vrl_error("%s: no such task file (task %s; see --eval-dir)", task_path[n_sel], name);
                goto fail;
            }
            sel[n_sel++] = t;
        }
    }
    if ((n_sel || wiki) && !tokfile) {
        vrl_error("--tokenizer FILE is needed for zero-shot tasks and WikiText");
        goto fail;
    }
    /* every task file is read and checked before the model is touched */
    static TaskSet sets[16];
    for (int i = 0; i < n_sel; i++)
        if (task_load(sel[i], task_path[i], (size_t)limit, &sets[i]) < 0) {
            for (int j = 0; j < i; j++) task_free(&sets[j]);
            goto fail;
        }

    RunModel run;
    if (run_load(ckpt, be->dtype, &run) < 0) {
        for (int i = 0; i < n_sel; i++) task_free(&sets[i]);
        goto fail;
    }
    if (!seq) seq = run.config.max_seq;
    Tokenizer *tok = NULL;
    void *model = NULL;
    Scorer sc = {0};
    json_t *out = json_object(), *jt = json_object(), *jd = json_object();
    int rc = -1;
    if (tokfile && tok_load(tokfile, &tok) < 0) goto done;
    if (tok && tok_vocab_size(tok) > (uint32_t)run.config.vocab_size) {
        vrl_error("%s: the tokenizer has %u ids, the model in %s only %d", tokfile, tok_vocab_size(tok), ckpt,
                  run.config.vocab_size);
        goto done;
    }
    if (!(model = be->create(&run.spec, batch, seq))) goto done;
    be->set_state(model, run.params, NULL, NULL);
    if (scorer_init(&sc, be, model, batch, seq, run.config.vocab_size) < 0) goto done;
    printf("vrl eval: %s (%s, %s, %zu parameters), %s, window %d, batch %d%s\n", ckpt, run.config.preset,
           run.config.variant, run.spec.table.total, be->name, seq, batch, limit ? " (--limit: partial sets)" : "");
    json_object_set_new(out, "run", json_string(ckpt));
    json_object_set_new(out, "window", json_integer(seq));
    json_object_set_new(out, "limit", json_integer(limit));

    if (data) {
        sc.label = "per-domain validation";
        if (eval_domains(&sc, data, (size_t)limit, jd) < 0) goto done;
        json_object_set(out, "domains", jd);
    }
    if (wiki) {
        int64_t eos = tok_token_id(tok, "<|endoftext|>");
        WikiResult w;
        sc.label = "WikiText-2";
        if (wikitext_evaluate(&sc, tok, wiki, eos < 0 ? 0 : eos, (size_t)limit, &w) < 0) goto done;
        printf("\nWikiText-2 (%zu documents, rolling windows of %d, EOS prefix)\n", w.docs, seq);
        printf("  token perplexity %.3f  (%zu tokens)\n  word perplexity  %.3f  (%zu words)\n", w.token_ppl, w.tokens,
               w.word_ppl, w.words);
        json_object_set_new(out, "wikitext", json_pack("{s:f, s:f, s:f, s:I, s:I, s:I}", "token_perplexity",
                                                       w.token_ppl, "word_perplexity", w.word_ppl, "nll", w.nll,
                                                       "tokens", (json_int_t)w.tokens, "words", (json_int_t)w.words,
                                                       "documents", (json_int_t)w.docs));
    }
    if (n_sel) {
        printf("\nzero-shot (lm-eval-harness style; acc_norm divides by the choice's characters)\n");
        printf("  %-14s %8s %9s %7s\n", "task", "acc", "acc_norm", "n");
        double sa = 0, sn = 0;
        for (int i = 0; i < n_sel; i++) {
            TaskResult tr;
            sc.label = sel[i]->name;
            if (task_evaluate(&sc, tok, &sets[i], &tr) < 0) goto done;
            printf("  %-14s %8.4f %9.4f %7zu\n", sel[i]->name, tr.acc, tr.acc_norm, tr.n);
            fflush(stdout);
            json_object_set_new(jt, sel[i]->name,
                                json_pack("{s:f, s:f, s:I}", "acc", tr.acc, "acc_norm", tr.acc_norm, "n", (json_int_t)tr.n));
            sa += tr.acc, sn += tr.acc_norm;
        }
        printf("  %-14s %8.4f %9.4f\n", "average", sa / n_sel, sn / n_sel);
        json_object_set_new(jt, "average", json_pack("{s:f, s:f}", "acc", sa / n_sel, "acc_norm", sn / n_sel));
        json_object_set(out, "zero_shot", jt);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/eval.json", ckpt);
    char *text = json_dumps(out, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    rc = text ? write_file_atomic(path, text, strlen(text)) : vrl_error("out of memory");
    free(text);
    if (rc == 0) printf("\nwrote %s\n", path);
done:
    scorer_free(&sc);
    if (model) be->destroy(model);
    tok_free(tok);
    run_free(&run);
    for (int i = 0; i < n_sel; i++) task_free(&sets[i]);
    json_decref(out), json_decref(jt), json_decref(jd);
    if (rc == 0) return 0;
fail:
    fprintf(stderr, "vrl eval: %s\n", vrl_last_error());
    return 1;
}
