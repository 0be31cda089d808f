/* cmd_data_reorganize.c: `vrl data reorganize` (formulas.md §3):
 *   IN/{train,validation,test}/chunkN/NAME.jsonl[.zst] -> OUT/SPLIT/DOMAIN.jsonl.
 * Every output file appears atomically; a failing run removes what it wrote. */
#include "cli/commands.h"
#include "cli/data_common.h"
#include "cli/data_stage.h"
#include "common/base/clock.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/base/outfile.h"
#include "common/data/shard.h"
#include "common/data/textio.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

static const char REORG_USAGE[] =
    "usage: vrl data reorganize --in DIR --out DIR\n"
    "  Read SlimPajama's DIR/{train,validation,test}/chunk*/*.jsonl[.zst] (lines\n"
    "  {\"text\":..., \"meta\":{\"redpajama_set_name\":...}}) and write one\n"
    "  OUT/SPLIT/DOMAIN.jsonl per domain and split, lines kept as they are.\n";

typedef struct {
    char name[SHARD_DOMAIN_LEN + 1];
    OutFile f;
    uint64_t docs, bytes;
} DomOut;

static int reorganize_split(const char *in, const char *out, const char *split, int *found) {
    char sdir[4200], odir[4200];
    snprintf(sdir, sizeof sdir, "%s/%s", in, split);
    snprintf(odir, sizeof odir, "%s/%s", out, split);
    Names chunks;
    if (data_list_dir(sdir, 1, NULL, NULL, &chunks)) return -1;
    DomOut dom[64];
    int nd = 0, rc = 0;
    double t0 = now_seconds();
    uint64_t total_in = 0;
    for (size_t c = 0; c < chunks.n && rc == 0; c++) {
        if (strncmp(chunks.v[c], "chunk", 5) != 0) continue;
        char cdir[8400];
        snprintf(cdir, sizeof cdir, "%s/%s", sdir, chunks.v[c]);
        Names files;
        if (data_list_dir(cdir, 0, ".jsonl", ".jsonl.zst", &files)) { rc = -1; break; }
        for (size_t f = 0; f < files.n && rc == 0; f++) {
            char path[12800];
            snprintf(path, sizeof path, "%s/%s", cdir, files.v[f]);
            LineReader *r;
            if (lr_open(path, &r)) { rc = -1; break; }
            if (nd == 0 && make_dirs(odir)) { lr_close(r); rc = -1; break; }
            *found = 1;
            const char *line;
            size_t len;
            int got;
            uint64_t docs = 0;
            while (rc == 0 && (got = lr_next(r, &line, &len)) == 1) {
                if (data_is_blank(line, len)) continue;
                JsonDoc doc;
                if (jsonl_parse(path, lr_line(r), line, len, 1, &doc)) { rc = -1; break; }
                int k = -1;
                for (int i = 0; i < nd; i++)
                    if (strcmp(dom[i].name, doc.domain) == 0) k = i;
                if (k < 0) {
                    if (data_check_domain(path, lr_line(r), doc.domain)) rc = -1;
                    else if (nd == 64) rc = vrl_error("%s:%llu: more than 64 domains", path, (unsigned long long)lr_line(r));
                    else {
                        k = nd;
                        memset(&dom[k], 0, sizeof dom[k]);
                        snprintf(dom[k].name, sizeof dom[k].name, "%s", doc.domain);
                        char op[8400];
                        snprintf(op, sizeof op, "%s/%s.jsonl", odir, doc.domain);
                        if (outfile_open(&dom[k].f, op)) rc = -1;
                        else nd++;
                    }
                }
                jsonl_doc_free(&doc);
                if (rc == 0 && (outfile_write(&dom[k].f, line, len) || outfile_write(&dom[k].f, "\n", 1))) rc = -1;
                if (rc == 0) { dom[k].docs++; dom[k].bytes += len + 1; docs++; }
            }
            if (rc == 0 && got < 0) rc = -1;
            total_in += lr_bytes_in(r);
            lr_close(r);
            if (rc == 0) {
                double dt = now_seconds() - t0;
                fprintf(stderr, "reorganize: %s: %llu documents; %.1f MB read, %.1f MB/s\n", path,
                        (unsigned long long)docs, total_in / 1e6, dt > 0 ? total_in / 1e6 / dt : 0.0);
            }
        }
        names_free(&files);
    }
    names_free(&chunks);
    for (int i = 0; i < nd; i++) {
        if (rc == 0) {
            if (outfile_commit(&dom[i].f)) rc = -1;
            else printf("%-10s %-24s %8llu documents %12llu bytes\n", split, dom[i].name,
                        (unsigned long long)dom[i].docs, (unsigned long long)dom[i].bytes);
        } else {
            outfile_abort(&dom[i].f);
        }
    }
    return rc;
}

int data_reorganize(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) { fputs(REORG_USAGE, stdout); return 0; }
        if (strcmp(argv[i], "--in") == 0 && i + 1 < argc) in = argv[++i];
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
        else { fprintf(stderr, "vrl data reorganize: unknown or incomplete option %s\n%s", argv[i], REORG_USAGE); return 2; }
    }
    if (!in || !out) { fprintf(stderr, "vrl data reorganize: --in and --out are required\n%s", REORG_USAGE); return 2; }
    /* written into a stage folder, published by rename once whole (cli/data_stage.h) */
    static const char *const owned[] = {"train", "validation", "test", NULL};
    DataStage stage;
    int found = 0, rc = data_stage_open(&stage, out, owned);
    for (int s = 0; s < 3 && rc == 0; s++) rc = reorganize_split(in, stage.dir, DATA_SPLITS[s], &found);
    if (rc == 0 && !found) rc = vrl_error("%s: no SPLIT/chunk*/*.jsonl[.zst] files", in);
    if (rc == 0) rc = data_stage_publish(&stage);
    else if (stage.dir[0]) data_stage_discard(&stage);
    return rc ? data_fail("reorganize") : 0;
}
