/* vrl.c: the `vrl` command — one front end, one subcommand per file in cli/. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "ref/ref.h"
#if VRL_HAVE_CUDA
#include "fast/fast.h"
#endif
#if VRL_HAVE_CUDA_CPU
#include "fast/cuda_cpu/fast_cpu.h"
#endif

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Command;

static const Command commands[] = {
    {"train", cmd_train, "train a model (reference on the CPU, or --device cuda), write a run folder"},
    {"info", cmd_info, "print a model's shape and parameter counts"},
    {"tokenize", cmd_tokenize, "encode text to token ids, or decode ids to text"},
    {"data", cmd_data, "reorganize | select | tokenize | inspect training data"},
    {"eval", cmd_eval, "per-domain loss, WikiText perplexity, zero-shot accuracy of a run"},
    {"generate", cmd_generate, "continue a prompt with a trained run (KV cache; greedy or sampled)"},
    {"analyze", cmd_analyze, "per-layer entropy, similarity, spectrum, relative loss; plots"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f,
            "vrl: train and study LLaMA-style models whose layers share information across depth\n"
            "(value residuals, SVFormer, NeuTRENO, DenseFormer, Hyper-Connections, mHC, AttnRes).\n\n"
            "usage: vrl COMMAND [flags]    (vrl COMMAND --help for its flags)\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
}

/* Flush and close stdout and report a failure, as coreutils' close_stdout does: output
 * redirected to a full disk (`> ids.txt`) must not end with rc 0 and a cut file. A command
 * that failed already said why; its rc stands. */
static int finish_stdout(const char *name, int rc) {
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    /* EBADF with nothing written: stdout was closed (`>&-`) and nothing was lost */
    if (fclose(stdout) != 0 && !bad && errno != EBADF) bad = 1, e = errno;
    if (!bad) return rc;
    if (rc == 0) fprintf(stderr, "vrl %s: write error on standard output%s%s\n", name, e ? ": " : "", e ? strerror(e) : "");
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    ref_register_backends();
#if VRL_HAVE_CUDA
    fast_register_backends();
#endif
#if VRL_HAVE_CUDA_CPU
    fast_register_backends_cpu(); /* --device cuda-cpu: the CUDA backend's code on the CPU */
#endif
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : finish_stdout("--help", 0); /* the help to a full disk is an error too */
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            const int rc = commands[i].run(argc - 1, argv + 1);
            return finish_stdout(commands[i].name, rc);
        }
    fprintf(stderr, "vrl: unknown command \"%s\" (see vrl --help)\n", argv[1]);
    return 2;
}
