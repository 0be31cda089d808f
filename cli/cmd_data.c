/* cmd_data.c: `vrl data SUBCOMMAND`, from SlimPajama's layout to per-domain token shards
 * (formulas.md §3); one file per subcommand:
 *
 *   reorganize  cmd_data_reorganize.c   select   cmd_data_select.c
 *   tokenize    cmd_data_tokenize.c     inspect  cmd_data_inspect.c
 *   bytes       cmd_data_bytes.c
 *
 * Results do not depend on the thread count: documents are encoded in parallel but always
 * consumed in input order (data_common.h). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

static const char DATA_USAGE[] =
    "usage: vrl data SUBCOMMAND [ARGS]   (each takes --help)\n"
    "  reorganize  SlimPajama chunk files -> one JSONL per domain and split\n"
    "  select      a seeded sample of N tokens per domain (formulas.md §3 budgets, --scale)\n"
    "  tokenize    JSONL -> EOS-separated, chunked token shards per domain\n"
    "  inspect     counts, domains and a decoded sample of shards\n"
    "  bytes       a text file -> byte-level train/val shards (vocab 256, small CPU runs)\n";

int cmd_data(int argc, char **argv) {
    if (argc < 2) { fputs(DATA_USAGE, stderr); return 2; }
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) { fputs(DATA_USAGE, stdout); return 0; }
    if (strcmp(sub, "reorganize") == 0) return data_reorganize(argc - 1, argv + 1);
    if (strcmp(sub, "select") == 0) return data_select(argc - 1, argv + 1);
    if (strcmp(sub, "tokenize") == 0) return data_tokenize(argc - 1, argv + 1);
    if (strcmp(sub, "inspect") == 0) return data_inspect(argc - 1, argv + 1);
    if (strcmp(sub, "bytes") == 0) return data_bytes(argc - 1, argv + 1); /* cmd_data_bytes.c */
    fprintf(stderr, "vrl data: unknown subcommand \"%s\"\n%s", sub, DATA_USAGE);
    return 2;
}
