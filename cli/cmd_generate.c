/* cmd_generate.c: `vrl generate` — text from a trained run, one token at a time through a
 * backend's KV cache (ref/decode.c, ref/gpt2_decode.c; fast/decode.cu with --device cuda or
 * cuda-cpu), sampled by common/eval/sample.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/run/run_folder.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/tokenizer.h"
#include "common/eval/generate.h"
#include "common/model/backends.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl generate --ckpt RUN (--prompt TEXT | --ids 1,2,3) [flags]\n"
            "\n"
            "Continue a prompt with a trained run (config.json + model.safetensors), streaming\n"
            "each token as it is chosen; stops at EOS (config.json's eos_token_id: the end token of\n"
            "the run's tokenizer, GPT-2 50256) or after --max-new tokens. Prints tokens/s to stderr\n"
            "at the end. Runs with a KV cache on the reference (CPU) or on fast/ (--device).\n"
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
            "  --include-eos       with --output ids: end the ids with the end token when generation\n"
            "                      stopped there (as transformers' generate() output does) [left out]\n"
            "  --precision P       fp32 | fp64 [fp32], --device cpu only\n"
            "  --device D          cpu | cuda | cuda-cpu [cpu]: the reference, or fast/'s bf16 decoder\n"
            "                      (fast/decode.cu) on a GPU or on the CPU layer\n");
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

/* The tokens as they come: ids separated by spaces, or streaming text: everything generated
 * so far decoded and what is new printed, holding back a trailing U+FFFD (a UTF-8 character
 * whose bytes are split across tokens). */
typedef struct {
    const Tokenizer *tok; /* NULL: print ids */
    size_t printed;       /* bytes of text printed */
    size_t prompt_n;      /* tokens of the prompt */
} Printer;

/* Tokens appear as they are made; a write that fails (a full disk under `> out.txt`) ends
 * the generation with its reason, which is known only here. */
static int flush_stdout(void) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    return vrl_error("write error on standard output: %s", strerror(errno ? errno : EIO));
}

static int emit(Printer *o, const TokIds *ids, int final) {
    char *text;
    size_t len;
    if (tok_decode(o->tok, ids->ids, ids->n, 1, &text, &len) < 0) return -1;
    size_t upto = len;
    if (!final && upto >= 3 && !memcmp(text + upto - 3, "\xEF\xBF\xBD", 3)) upto -= 3;
    int rc = 0;
    if (upto > o->printed) {
        fwrite(text + o->printed, 1, upto - o->printed, stdout);
        rc = flush_stdout();
        o->printed = upto;
    }
    free(text);
    return rc;
}

/* GenerateSink: the prompt (text only; next < 0), then each token. */
static int print_token(void *ctx, const TokIds *ids, int32_t next) {
    Printer *o = ctx;
    if (o->tok) return emit(o, ids, next < 0);
    if (next < 0) return 0;
    printf("%s%d", ids->n > o->prompt_n + 1 ? " " : "", (int)next);
    return flush_stdout();
}

int cmd_generate(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl generate"};
    const char *ckpt = NULL, *prompt = NULL, *ids_arg = NULL, *tokp = NULL, *output = NULL, *prec = NULL,
               *device = "cpu", *v;
    int max_new = 64, include_eos = 0, r;
    uint64_t seed = 0;
    SampleParams sp = {0, 0, 1};
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
        if (args_switch(&p, "--include-eos")) {
            include_eos = 1;
            continue;
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
    if (prec && strcmp(device, "cpu")) {
        vrl_error("--precision %s: applies to --device cpu only (--device %s has its own: bf16)", prec, device);
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
    const BackendEntry *chosen = backend_select(device, prec ? prec : "fp32");
    if (!chosen) goto fail;
    const Backend *be = chosen->be;

    /* tokenizer: --tokenizer, else the run folder's own (written at run start when known) */
    char runtok[4200];
    if (!tokp && run_path(runtok, sizeof runtok, ckpt, RUN_TOKENIZER) == 0 && file_exists(runtok)) tokp = runtok;
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
    if (as_text && include_eos) {
        vrl_error("--include-eos applies to --output ids (text never shows the end token)");
        tok_free(tok);
        goto fail;
    }

    RunFolder rm;
    TokIds ids = {0};
    int rc = 1;
    if (run_folder_open(ckpt, RUN_OPEN_PARAMS, be->dtype, &rm) < 0) {
        tok_free(tok);
        goto fail;
    }
    if (run_folder_check_finite(&rm, ckpt) < 0 || !backend_require(be, &rm.spec, BACKEND_CAN_GENERATE)) goto done;
    if (prompt ? tok_encode(tok, prompt, strlen(prompt), &ids) < 0 : parse_ids(ids_arg, &ids) < 0) goto done;
    /* text out: draw only ids the tokenizer can decode (a model's vocabulary may be larger,
     * e.g. the `small` preset's 512 rows trained on 256 byte ids) */
    const int draw_vocab = as_text ? (int)tok_vocab_size(tok) : rm.config.vocab_size;
    Printer out = {as_text ? tok : NULL, 0, ids.n};
    GenerateStats st;
    if (generate(be, &rm.spec, rm.params, &ids, max_new, draw_vocab, &sp, seed, print_token, &out, &st) < 0) goto done;
    if (as_text && emit(&out, &ids, 1) < 0) goto done;
    /* the end token it stopped at: generate() drew it but did not pass it to the sink */
    if (include_eos && st.at_eos) printf("%s%d", ids.n > out.prompt_n ? " " : "", (int)rm.config.eos_id);
    printf("\n");
    if (flush_stdout() < 0) goto done;
    fprintf(stderr, "vrl generate: %d tokens in %.3f s (%.1f tokens/s, %s); prompt %zu tokens in %.3f s", st.made,
            st.seconds, st.seconds > 0 ? st.made / st.seconds : 0.0, be->name, out.prompt_n, st.prompt_seconds);
    if (st.at_eos) fprintf(stderr, "; stopped at EOS (id %d)", rm.config.eos_id);
    if (sp.temperature == 0 && isfinite(st.min_margin)) /* how close greedy came to a tie */
        fprintf(stderr, "; smallest top-2 logit margin %.6g (step %d)", st.min_margin, st.min_margin_step);
    fprintf(stderr, "\n");
    rc = 0;
done:
    if (rc) fprintf(stderr, "vrl generate: %s\n", vrl_last_error());
    tok_ids_free(&ids);
    tok_free(tok);
    run_folder_close(&rm);
    return rc;
fail:
    fprintf(stderr, "vrl generate: %s\n", vrl_last_error());
    return 1;
}
