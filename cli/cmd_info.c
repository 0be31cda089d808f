/* cmd_info.c: `vrl info` — a model's shape and parameter counts, without training. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "common/model/config.h"
#include "common/base/error.h"
#include "common/model/kv_layout.h"
#include "common/model/spec.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl info [--model PRESET|FILE] [--variant SPEC] [--tensors]\n"
            "                [--kv-heads N] [--kv-cache [--seq T] [--dtype fp32|fp64|bf16]]\n\n"
            "Print the model's shape and its parameter count (what the paper's tables call\n"
            "the model size). --tensors lists every tensor with its Hugging Face name.\n"
            "--kv-heads N sets num_key_value_heads (GQA; 1 = MQA).\n"
            "--kv-cache prints what incremental decoding keeps per token and per sequence of\n"
            "T tokens [max_position_embeddings] with elements of the given dtype [fp32: what\n"
            "vrl generate keeps at --precision fp32; fp64 at --precision fp64; bf16 for\n"
            "a 16-bit cache].\n\n");
    args_print_variants(f);
}

/* Bytes the KV cache of c's variant holds (common/model/kv_layout.h). */
static int print_kv_cache(const ModelSpec *s, int seq, const char *dtype) {
    const ModelConfig *c = &s->config;
    const int bytes = !strcmp(dtype, "fp32") ? 4 : !strcmp(dtype, "fp64") ? 8 : !strcmp(dtype, "bf16") ? 2 : 0;
    if (!bytes) return vrl_error("--dtype: \"%s\" is not fp32, fp64 or bf16", dtype);
    KvLayout k;
    kv_layout(s, &k);
    const double per_tok = (double)k.elems_per_token * bytes, per_seq = per_tok * seq;
    printf("kv cache (%s, %d bytes per element): %d key rows + %d value rows per token, each %zu elements "
           "(kv_heads %d x head_dim %d)\n",
           dtype, bytes, k.k_rows, k.v_rows, k.row_elems, c->n_kv_heads, config_head_dim(c));
    printf("kv cache bytes per token: %.0f (%.1f KiB)\n", per_tok, per_tok / 1024);
    printf("kv cache bytes per sequence of %d: %.0f (%.1f MiB)\n", seq, per_seq, per_seq / (1024.0 * 1024.0));
    return 0;
}

int cmd_info(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl info"};
    const char *model = "small", *variant = NULL, *v;
    const char *dtype = "fp32";
    int tensors = 0, kvc = 0, seq = 0, kv_heads = 0, r;
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
        if (args_switch(&p, "--tensors")) {
            tensors = 1;
            continue;
        }
        if (args_switch(&p, "--kv-cache")) {
            kvc = 1;
            continue;
        }
        if ((r = args_take(&p, "--seq", &v)) != 0) {
            if (r < 0 || parse_int("--seq", v, 1, 1 << 30, &seq) < 0) goto fail;
            continue;
        }
        if ((r = args_take(&p, "--kv-heads", &v)) != 0) {
            if (r < 0 || parse_int("--kv-heads", v, 1, 1 << 20, &kv_heads) < 0) goto fail;
            continue;
        }
        if ((r = args_take(&p, "--dtype", &v)) != 0) {
            if (r < 0) goto fail;
            dtype = v;
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
    if (config_from_arg(model, &c) < 0) goto fail;
    if (kv_heads) c.n_kv_heads = kv_heads;
    if (config_validate(&c, model) < 0 || model_spec_set_variant(&c, variant, variant ? "--variant" : model, &spec) < 0)
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
    if (kvc && print_kv_cache(&spec, seq ? seq : c.max_seq, dtype) < 0) {
        model_spec_free(&spec);
        goto fail;
    }
    model_spec_free(&spec);
    return 0;
fail:
    fprintf(stderr, "vrl info: %s\n", vrl_last_error());
    return 1;
}
