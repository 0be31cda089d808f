/* cmd_info.c: `vrl info` — a model's shape and parameter counts, without training. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/model/config.h"
#include "common/base/error.h"
#include "common/model/spec.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl info [--model PRESET|FILE] [--variant SPEC] [--tensors]\n\n"
            "Print the model's shape and its parameter count (what the paper's tables call\n"
            "the model size). --tensors lists every tensor with its Hugging Face name.\n\n");
    args_print_variants(f);
}

int cmd_info(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl info"};
    const char *model = "small", *variant = NULL, *v;
    int tensors = 0, r;
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
        if (args_switch(&p, "--tensors")) {
            tensors = 1;
            continue;
        }
        if ((r = args_take(&p, "--model", &v)) != 0) {
            if (r < 0) goto fail;
            model = v;
            continue;
        }
        if ((r = args_take(&p, "--variant", &v)) != 0) {
            if (r < 0) goto fail;
            variant = v;
            continue;
        }
        fprintf(stderr, "vrl info: unknown argument \"%s\" (see vrl info --help)\n", argv[p.i]);
        return 2;
    }
    ModelConfig c;
    ModelSpec spec;
    if (config_from_arg(model, &c) < 0 || model_spec_set_variant(&c, variant, variant ? "--variant" : model, &spec) < 0)
        goto fail;
    const ParamTable *t = &spec.table;
    printf("model %s: %s, L=%d, d=%d, heads=%d, kv_heads=%d, head_dim=%d, ffn=%d, vocab=%d, max_seq=%d\n",
           c.preset, c.arch == ARCH_LLAMA ? "llama" : "gpt2", c.n_layers, c.d_model, c.n_heads, c.n_kv_heads,
           config_head_dim(&c), c.d_ffn, c.vocab_size, c.max_seq);
    printf("variant: %s\n", c.variant);
    if (tensors)
        for (int i = 0; i < t->n; i++) {
            printf("  %-56s [", t->p[i].name);
            for (int d = 0; d < t->p[i].ndim; d++) printf(d ? ", %lld" : "%lld", (long long)t->p[i].shape[d]);
            printf("]%s\n", t->p[i].decay ? "" : "  (no decay)");
        }
    size_t total = param_table_count(t);
    /* Thousands separators by hand: the paper quotes counts like 81,901,056. */
    char digits[32], grouped[48];
    int n = snprintf(digits, sizeof digits, "%zu", total), o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) grouped[o++] = ',';
        grouped[o++] = digits[i];
    }
    grouped[o] = '\0';
    printf("parameters: %s\n", grouped);
    model_spec_free(&spec);
    return 0;
fail:
    fprintf(stderr, "vrl info: %s\n", vrl_last_error());
    return 1;
}
