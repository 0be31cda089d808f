/* cmd_generate.c: `vrl generate` — text from a trained run, one token at a time through the
 * reference's KV cache (ref/decode.c), sampled by common/eval/sample.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/runload.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/tokenizer.h"
#include "common/eval/sample.h"
#include "common/run/metrics.h"
#include "ref/model.h"

enum { EOS_ID = 0 }; /* formulas.md §3; config.json's eos_token_id */

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl generate --ckpt RUN (--prompt TEXT | --ids 1,2,3) [flags]\n"
            "\n"
            "Continue a prompt with a trained run (config.json + model.safetensors), streaming\n"
            "each token as it is chosen; stops at EOS (id 0) or after --max-new tokens. Prints\n"
            "tokens/s to stderr at the end. Runs on the reference (CPU) with a KV cache.\n"
            "\n"
            "  --ckpt RUN          the run folder\n"
            "  --prompt TEXT       prompt text (needs a tokenizer)\n"
            "  --ids LIST          prompt token ids, comma-separated\n"
            "  --tokenizer FILE    tokenizer.json [RUN/tokenizer.json when present]\n"
            "  --max-new N         tokens to generate at most [64]\n"
            "  --temperature T     0 = greedy [0]\n"
            "  --top-k K           keep the K most likely (0 = all) [0]\n"
            "  --top-p P           keep the most likely set of mass P [1]\n"
            "  --seed S            seed of the draws [0]\n"
            "  --output KIND       text | ids [text with a tokenizer, else ids]\n"
            "  --precision P       fp32 | fp64 [fp32]\n"
            "  --device D          cpu [cpu] (cuda and cuda-cpu: the CUDA backend has no decoder yet)\n");
}

/* "1,2,3" -> ids; -1 on a bad number. */
static int parse_ids(const char *s, TokIds *out) {
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff || (*end && *end != ','))
            return vrl_error("--ids: \"%s\" is not a comma-separated list of token ids", s);
        if (tok_ids_push(out, (uint32_t)v) < 0) return -1;
        p = *end ? end + 1 : end;
    }
    if (out->n == 0) return vrl_error("--ids: empty list");
    return 0;
}

/* Streaming text: decode everything generated so far and print what is new, holding back a
 * trailing U+FFFD (a UTF-8 character whose bytes are split across tokens). */
typedef struct {
    const Tokenizer *tok;
    size_t printed;
} TextOut;

static int emit(TextOut *o, const uint32_t *ids, size_t n, int final) {
    char *text;
    size_t len;
    if (tok_decode(o->tok, ids, n, 1, &text, &len) < 0) return -1;
    size_t upto = len;
    if (!final && upto >= 3 && !memcmp(text + upto - 3, "\xEF\xBF\xBD", 3)) upto -= 3;
    if (upto > o->printed) {
        fwrite(text + o->printed, 1, upto - o->printed, stdout);
        fflush(stdout);
        o->printed = upto;
    }
    free(text);
    return 0;
}

int cmd_generate(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl generate"};
    const char *ckpt = NULL, *prompt = NULL, *ids_arg = NULL, *tokp = NULL, *output = NULL, *prec = "fp32",
               *device = "cpu", *v;
    int max_new = 64, r;
    uint64_t seed = 0;
    SampleParams sp = {0, 0, 1};
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
#define TAKE(flag, stmt)                                                                                              \
    if ((r = args_take(&p, flag, &v)) != 0) {                                                                         \
        if (r < 0) goto fail;                                                                                         \
        stmt;                                                                                                         \
        continue;                                                                                                     \
    }
        TAKE("--ckpt", ckpt = v);
        TAKE("--prompt", prompt = v);
        TAKE("--ids", ids_arg = v);
        TAKE("--tokenizer", tokp = v);
        TAKE("--output", output = v);
        TAKE("--precision", prec = v);
        TAKE("--device", device = v);
        TAKE("--max-new", if (parse_int("--max-new", v, 1, 1 << 20, &max_new) < 0) goto fail);
        TAKE("--temperature", if (parse_double("--temperature", v, &sp.temperature) < 0) goto fail);
        TAKE("--top-k", if (parse_int("--top-k", v, 0, 1 << 30, &sp.top_k) < 0) goto fail);
        TAKE("--top-p", if (parse_double("--top-p", v, &sp.top_p) < 0) goto fail);
        TAKE("--seed", if (parse_u64("--seed", v, &seed) < 0) goto fail);
#undef TAKE
        fprintf(stderr, "vrl generate: unknown argument \"%s\" (see vrl generate --help)\n", argv[p.i]);
        return 2;
    }
    if (!ckpt || (!prompt == !ids_arg)) {
        fprintf(stderr, "vrl generate: --ckpt and one of --prompt / --ids are required (see vrl generate --help)\n");
        return 2;
    }
    if (strcmp(device, "cpu")) {
        if (!strcmp(device, "cuda") || !strcmp(device, "cuda-cpu"))
            vrl_error("--device %s: generation runs on the reference (CPU) only; the CUDA decoder is not "
                      "written yet (docs/generate.md)", device);
        else vrl_error("--device: \"%s\" is not cpu", device);
        goto fail;
    }
    if (sp.temperature < 0 || !(sp.top_p > 0 && sp.top_p <= 1)) {
        vrl_error("--temperature must be >= 0 and --top-p in (0, 1] (got %g, %g)", sp.temperature, sp.top_p);
        goto fail;
    }
    if (output && strcmp(output, "text") && strcmp(output, "ids")) {
        vrl_error("--output: \"%s\" is not text or ids", output);
        goto fail;
    }
    const Backend *be;
    if (!strcmp(prec, "fp32")) be = &ref_backend_f32;
    else if (!strcmp(prec, "fp64")) be = &ref_backend_f64;
    else {
        vrl_error("--precision: \"%s\" is not fp32 or fp64", prec);
        goto fail;
    }

    /* tokenizer: --tokenizer, else the run folder's own (written at run start when known) */
    char runtok[4200];
    snprintf(runtok, sizeof runtok, "%s/tokenizer.json", ckpt);
    if (!tokp && file_exists(runtok)) tokp = runtok;
    Tokenizer *tok = NULL;
    if (tokp && tok_load(tokp, &tok) < 0) goto fail;
    if (prompt && !tok) {
        vrl_error("--prompt needs a tokenizer: %s has no tokenizer.json; give --tokenizer FILE or --ids", ckpt);
        goto fail;
    }
    const int as_text = output ? !strcmp(output, "text") : tok != NULL;
    if (as_text && !tok) {
        vrl_error("--output text needs a tokenizer: give --tokenizer FILE");
        tok_free(tok);
        goto fail;
    }

    RunModel rm;
    TokIds ids = {0};
    void *m = NULL, *kv = NULL, *logits = NULL;
    double *row = NULL;
    SampleScratch *ss = NULL;
    int rc = 1;
    if (run_load(ckpt, be->dtype, &rm) < 0) {
        tok_free(tok);
        goto fail;
    }
    if (!backend_require(be, &rm.spec, BACKEND_CAN_GENERATE)) goto done;
    const int V = rm.config.vocab_size;
    if (prompt ? tok_encode(tok, prompt, strlen(prompt), &ids) < 0 : parse_ids(ids_arg, &ids) < 0) goto done;
    for (size_t i = 0; i < ids.n; i++)
        if (ids.ids[i] >= (uint32_t)V) {
            vrl_error("prompt token %u at position %zu is outside the model's vocabulary [0, %d)", ids.ids[i], i, V);
            goto done;
        }
    if (ids.n >= (size_t)rm.config.max_seq) {
        vrl_error("the prompt has %zu tokens; the model holds %d positions", ids.n, rm.config.max_seq);
        goto done;
    }
    const int prompt_n = (int)ids.n;
    const int total = prompt_n + max_new < rm.config.max_seq ? prompt_n + max_new : rm.config.max_seq;
    const size_t esz = dtype_size(be->dtype);
    if (!(m = be->create(&rm.spec, 1, 2))) goto done;
    be->set_state(m, rm.params, NULL, NULL);
    if (!(kv = be->kv_create(m, 1, total))) goto done;
    logits = malloc((size_t)prompt_n * V * esz);
    row = malloc((size_t)V * sizeof *row);
    ss = sample_alloc(V);
    if (!logits || !row || !ss) {
        vrl_error("out of memory");
        goto done;
    }
    int32_t *in = malloc((size_t)prompt_n * sizeof *in);
    if (!in) {
        vrl_error("out of memory");
        goto done;
    }
    for (int i = 0; i < prompt_n; i++) in[i] = (int32_t)ids.ids[i];
    TextOut to = {tok, 0};
    if (as_text && emit(&to, ids.ids, ids.n, 1) < 0) goto done_in;
    const double t0 = now_seconds();
    if (be->decode(m, kv, in, prompt_n, logits) < 0) goto done_in;
    const double t_prompt = now_seconds() - t0;
    const void *last = (const char *)logits + (size_t)(prompt_n - 1) * V * esz;
    /* text out: draw only ids the tokenizer can decode (a model's vocabulary may be larger,
     * e.g. the `small` preset's 512 rows trained on 256 byte ids) */
    const int Vs = as_text && tok_vocab_size(tok) < (uint32_t)V ? (int)tok_vocab_size(tok) : V;
    Rng g;
    rng_seed(&g, seed);
    int made = 0;
    for (int pos = prompt_n; pos < total; pos++) {
        for (int v = 0; v < V; v++)
            row[v] = be->dtype == DT_F64 ? ((const double *)last)[v] : ((const float *)last)[v];
        const int32_t next = sample_next(row, Vs, &sp, &g, ss);
        if (next == EOS_ID) break;
        made++;
        if (tok_ids_push(&ids, (uint32_t)next) < 0) goto done_in;
        if (as_text) {
            if (emit(&to, ids.ids, ids.n, 0) < 0) goto done_in;
        } else {
            printf("%s%d", made > 1 ? " " : "", (int)next);
            fflush(stdout);
        }
        if (pos + 1 == total) break; /* the last token needs no logits */
        if (be->decode(m, kv, &next, 1, logits) < 0) goto done_in;
        last = logits;
    }
    if (as_text && emit(&to, ids.ids, ids.n, 1) < 0) goto done_in;
    printf("\n");
    fflush(stdout);
    const double secs = now_seconds() - t0 - t_prompt;
    fprintf(stderr, "vrl generate: %d tokens in %.3f s (%.1f tokens/s, %s); prompt %d tokens in %.3f s\n", made,
            secs, secs > 0 ? made / secs : 0.0, be->name, prompt_n, t_prompt);
    rc = 0;
done_in:
    free(in);
done:
    if (rc) fprintf(stderr, "vrl generate: %s\n", vrl_last_error());
    sample_free(ss);
    free(row);
    free(logits);
    if (kv) be->kv_free(kv);
    if (m) be->destroy(m);
    tok_ids_free(&ids);
    tok_free(tok);
    run_free(&rm);
    return rc;
fail:
    fprintf(stderr, "vrl generate: %s\n", vrl_last_error());
    return 1;
}
