/* analyze_depth.c: `vrl analyze --metric depth-attention` — which earlier sublayers each AttnRes sublayer
 * reads from, after training. Row s is the input of sublayer s (L{i}.attn, L{i}.mlp, then
 * head), column g its g-th source in the plan's order (the embedding, then each finished
 * block's sum, then the current block's partial sum; full mode: each sublayer output);
 * entries are the softmax weights α averaged over every token of the batches. The model runs
 * behind the Backend table (ref-fp32); its VIEW_DEPTH_WEIGHTS gives the weights. */
#include "cli/analyze_depth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/evalbatches.h"
#include "cli/gnuplot.h"
#include "common/base/outfile.h"
#include "common/data/mixture.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/synthetic.h"
#include "common/run/run_folder.h"
#include "common/model/spec.h"
#include "common/model/backends.h"

static void sub_name(char *buf, size_t n, int s, int L) {
    if (s == 2 * L) snprintf(buf, n, "head");
    else snprintf(buf, n, "L%d.%s", s / 2, s % 2 ? "mlp" : "attn");
}

/* Label of source g of step s: "emb", a sublayer ("L0.attn"), or a block sum ("L0.attn..L0.mlp"). */
static void src_name(char *buf, size_t n, const StreamRange *r, int L) {
    char a[32], b[32];
    if (r->lo == 0) {
        snprintf(buf, n, "emb");
        return;
    }
    sub_name(a, sizeof a, r->lo - 1, L);
    sub_name(b, sizeof b, r->hi - 2, L);
    if (r->hi - r->lo == 1) snprintf(buf, n, "%s", a);
    else snprintf(buf, n, "%s..%s", a, b);
}

/* Mean depth weights avg [S][S] (row s: step s's sources in plan order) over every token of
 * up to `batches` held-out batches of the run (its weights and training flags in run), in
 * be's model; *data becomes the data read (NULL: the synthetic stream), *used the batches
 * averaged and *N the tokens of one batch. */
static int mean_depth_weights(const RunFolder *run, const Backend *be, const char **data, int batches, double *avg,
                              int *used, int *batch_tokens) {
    const ModelSpec *spec = &run->spec;
    const ModelConfig *c = &spec->config;
    const StreamPlan *pl = &spec->stream;
    const TrainArgs a = run->args; /* the run's batch shape and validation data */
    EvalBatches eb;
    void *m = NULL;
    int32_t *tok = NULL;   /* [batch, seq] */
    int rc = -1;
    /* Held-out data: --data, else the run's own validation shards, else the validation
     * chunks of its tokenized data folder, else the synthetic validation stream. */
    if (!*data) *data = a.val_data[0] ? a.val_data : is_mixture_dir(a.data) ? a.data : NULL;
    if (eval_batches_open(&eb, *data, c->vocab_size, a.batch, a.seq) < 0) return -1;
    const int S = 2 * c->n_layers + 1, N = *batch_tokens = a.batch * a.seq;
    tok = malloc((size_t)N * sizeof *tok);
    if (!tok) {
        vrl_error("out of memory");
        goto done;
    }
    if (!(m = be->create(spec, a.batch, a.seq))) goto done;
    be->set_state(m, run->params, NULL, NULL);
    for (*used = 0; *used < batches; (*used)++) {
        const int got = eval_batches_next(&eb, tok);
        if (got < 0) goto done;
        if (got > 0) break; /* the held-out data is shorter than asked: average what there is */
        if (isnan(be->forward_loss(m, tok))) goto done;
        for (int s = 0; s < S; s++) {
            const int ns = pl->n_src[s];
            const float *w = be->view(m, VIEW_DEPTH_WEIGHTS, s); /* [N, ns] */
            if (!w) goto done;
            for (int n = 0; n < N; n++)
                for (int g = 0; g < ns; g++) avg[(size_t)s * S + g] += w[(size_t)n * ns + g];
        }
    }
    if (*used == 0) {
        vrl_error("%s: not one batch of %d x %d held-out tokens", *data ? *data : "synthetic stream", a.batch, a.seq);
        goto done;
    }
    for (size_t i = 0; i < (size_t)S * S; i++) avg[i] /= (double)N * *used; /* mean over every token */
    rc = 0;
done:
    free(tok);
    if (m) be->destroy(m);
    eval_batches_close(&eb);
    return rc;
}

/* Print the matrix avg [S][S] and write out_dir/depth_attention.{csv,dat,gp} (+ .png). */
static int write_depth_outputs(const char *run_dir, const char *out_dir, const ModelSpec *spec, const char *data,
                               const double *avg, int used, int N) {
    const ModelConfig *c = &spec->config;
    const StreamPlan *pl = &spec->stream;
    const int L = c->n_layers, S = 2 * L + 1;
    char path[4200];
    if (make_dirs(out_dir) < 0) return -1;
    /* OutFile: new files renamed into place, so a link planted under one of these names is
     * replaced, never written through */
    OutFile ocsv, odat, ogp;
    snprintf(path, sizeof path, "%s/depth_attention.csv", out_dir);
    if (outfile_open(&ocsv, path) < 0) return -1;
    snprintf(path, sizeof path, "%s/depth_attention.dat", out_dir);
    if (outfile_open(&odat, path) < 0) {
        outfile_abort(&ocsv);
        return -1;
    }
    FILE *csv = ocsv.f, *dat = odat.f;
    int maxsrc = 0;
    for (int s = 0; s < S; s++) maxsrc = pl->n_src[s] > maxsrc ? pl->n_src[s] : maxsrc;
    printf("depth attention of %s (%s), %d x %d tokens of %s; row = sublayer input, then its sources: weight\n",
           run_dir, c->variant, used, N, data ? data : "the synthetic validation stream");
    fprintf(csv, "sublayer,source_index,source,weight\n");
    for (int s = 0; s < S; s++) {
        char rn[32], sn[80];
        sub_name(rn, sizeof rn, s, L);
        printf("%-8s", rn);
        for (int g = 0; g < maxsrc; g++) {
            if (g < pl->n_src[s]) {
                src_name(sn, sizeof sn, &pl->src[(size_t)s * S + g], L);
                printf("  %s %.3f", sn, avg[(size_t)s * S + g]);
                fprintf(csv, "%s,%d,%s,%.9f\n", rn, g, sn, avg[(size_t)s * S + g]); /* rows sum to 1 within 1e-6 */
                fprintf(dat, "%d %d %.6f\n", g, s, avg[(size_t)s * S + g]);
            } else {
                fprintf(dat, "%d %d NaN\n", g, s); /* not a source of this sublayer: blank */
            }
        }
        printf("\n");
        fprintf(dat, "\n");
    }
    if (outfile_commit(&ocsv) < 0) {
        outfile_abort(&odat);
        return -1;
    }
    if (outfile_commit(&odat) < 0) return -1;
    snprintf(path, sizeof path, "%s/depth_attention.gp", out_dir);
    if (outfile_open(&ogp, path) < 0) return -1;
    FILE *gp = ogp.f;
    /* y labels: sublayers; x labels: source index (block mode: emb, block 1, ...). Files are named
     * relative to the script's folder, where gnuplot runs: no path is ever part of a command. */
    fprintf(gp, "set terminal pngcairo size 900,700 font ',10'\nset output 'depth_attention.png'\nset title ");
    char title[1024];
    snprintf(title, sizeof title, "AttnRes depth attention: %s (mean softmax weight over %d tokens)", c->variant,
             used * N);
    gnuplot_quote(gp, title);
    fprintf(gp, " noenhanced\n");
    fprintf(gp, "set xlabel 'source (0 = embedding%s)'\nset ylabel 'input of'\n",
            pl->block ? ", then finished block sums, then the partial block" : ", then sublayer outputs in order");
    fprintf(gp, "set yrange [%d.5:-0.5]\nset xrange [-0.5:%d.5]\nset cbrange [0:1]\nset palette rgb 33,13,10\n", S - 1,
            maxsrc - 1);
    fprintf(gp, "set ytics (");
    for (int s = 0; s < S; s++) {
        char rn[32];
        sub_name(rn, sizeof rn, s, L);
        fprintf(gp, "%s'%s' %d", s ? ", " : "", rn, s);
    }
    fprintf(gp, ")\nset xtics 1\nplot 'depth_attention.dat' using 1:2:3 with image notitle, \\\n"
                "     '' using 1:2:(strcol(3) eq 'NaN' ? '' : sprintf('%%.2f', $3)) with labels font ',8' notitle\n");
    if (outfile_commit(&ogp) < 0) return -1;
    if (!gnuplot_available()) {
        fprintf(stderr, "vrl analyze: gnuplot is not installed; wrote %s/depth_attention.csv only\n", out_dir);
    } else {
        if (gnuplot_run(out_dir, "depth_attention.gp", "depth_attention.png") < 0) return -1;
        printf("wrote %s/depth_attention.png (and .csv, .dat, .gp)\n", out_dir);
    }
    return 0;
}

int analyze_depth_attention(const char *run_dir, const char *out_dir, const char *data, int batches) {
    char path[4200];
    RunFolder run;
    const BackendEntry *cpu = backend_select("cpu", "fp32");
    if (!cpu) return -1;
    const Backend *be = cpu->be;
    if (run_path(path, sizeof path, run_dir, RUN_CONFIG) < 0 || run_folder_open(run_dir, 0, DT_F32, &run) < 0) return -1;
    const ModelSpec *spec = &run.spec;
    double *avg = NULL; /* [S][S] mean weights, row s over step s's sources */
    int rc = -1, used = 0, N = 0;
    if (spec->stream.kind != STREAM_ATTNRES)
        vrl_error("%s: variant \"%s\" has no depth attention (an attnres variant has)", path, run.config.variant);
    else if (backend_require(be, spec, BACKEND_CAN_ANALYZE)) {
        const size_t S = 2 * (size_t)run.config.n_layers + 1;
        if (!(avg = calloc(S * S, sizeof *avg))) vrl_error("out of memory");
        else if (run_folder_read(&run, RUN_OPEN_ARGS) == 0 && run_folder_read(&run, RUN_OPEN_PARAMS) == 0 &&
                 mean_depth_weights(&run, be, &data, batches, avg, &used, &N) == 0)
            rc = write_depth_outputs(run_dir, out_dir, spec, data, avg, used, N);
    }
    free(avg);
    run_folder_close(&run);
    return rc;
}
