/* vrl.c: the vrl front end; dispatches to the subcommands in commands.h. */
#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: vrl COMMAND [ARGS]\n"
               "  tokenize   encode text to ids or decode ids to text\n"
               "  data       reorganize | select | tokenize | inspect training data\n"
               "`vrl COMMAND --help` describes each.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) { usage(stdout); return 0; }
    if (strcmp(argv[1], "tokenize") == 0) return cmd_tokenize(argc - 1, argv + 1);
    if (strcmp(argv[1], "data") == 0) return cmd_data(argc - 1, argv + 1);
    fprintf(stderr, "vrl: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
