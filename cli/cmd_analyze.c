/* cmd_analyze.c: `vrl analyze` — formulas.md §6 analysis of trained runs: attention
 * entropy, token similarity, value spectrum and Fig. 3 cross-layer cosines per layer
 * for one or more runs side by side, and the relative training loss of two runs.
 * Numbers go to CSV and analysis.json, plots to PNG through gnuplot (data + script are
 * kept, so a plot can be redrawn by hand). The math is ref/analysis.c (fp64 build) and
 * common/eval/curves.c; the model runs behind the Backend table (ref-fp64), which must
 * declare BACKEND_CAN_ANALYZE for the run's spec. New per-run metrics are one row of
 * METRICS below. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/analyze_depth.h"
#include "cli/gnuplot.h"
#include "common/base/outfile.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/evalbatches.h"
#include "common/eval/curves.h"
#include "common/eval/domainval.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/data/loader.h"
#include "common/data/mixture.h"
#include "common/data/synthetic.h"
#include "common/run/run_folder.h"

/* Analysis runs the fp64 reference: the plain ref names below map to their _f64 builds. */
#define VRL_FP64 1
#include "ref/analysis.h"
#include "common/model/backends.h"

#define MAX_RUNS 8

typedef struct {
    const char *dir;
    char label[256];    /* the run folder's last path component */
    ModelConfig config;
    MetricSums s;       /* means over the analysed samples */
} RunMetrics;

typedef struct {
    RunMetrics run[MAX_RUNS];
    int n;
    const char *out;    /* output folder */
    int have_gnuplot;
} Analysis;

/* ------------------------------------------------------------------ output helpers */

/* A new file NAME in the output folder, through o (temp file + rename: a link or file
 * planted under that name is replaced, never written through); its stream, or NULL. */
static FILE *open_out(OutFile *o, const Analysis *a, const char *name, char *path, size_t n) {
    snprintf(path, n, "%s/%s", a->out, name);
    return outfile_open(o, path) < 0 ? NULL : o->f;
}

/* A curve of one point (a one-step run, a two-layer model's cross-layer table) would have
 * gnuplot warn "empty x range": NAME.csv's x and y spans, read back, get explicit ranges
 * where they are a single value. */
static void single_point_ranges(const Analysis *a, const char *name, FILE *gp) {
    char path[4200];
    void *text;
    size_t n;
    snprintf(path, sizeof path, "%s/%s.csv", a->out, name);
    if (read_file_all(path, &text, &n) < 0) {
        vrl_clear_error(); /* only a nicer plot is lost */
        return;
    }
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    const char *line = strchr(text, '\n'); /* past the header */
    while (line && *++line) {
        char *end;
        for (int col = 0; *line && *line != '\n'; col++) {
            const double v = strtod(line, &end);
            if (end != line && isfinite(v)) {
                const int k = col > 0; /* 0: x, 1: every y column */
                lo[k] = v < lo[k] ? v : lo[k], hi[k] = v > hi[k] ? v : hi[k];
            }
            line = end + strcspn(end, ",\n");
            if (*line == ',') line++;
        }
        line = strchr(line, '\n');
    }
    free(text);
    if (lo[0] == hi[0]) fprintf(gp, "set xrange [%.10g:%.10g]\n", lo[0] - 1, hi[0] + 1);
    const double pad = fabs(lo[1]) * 0.01 + 1e-3;
    if (lo[1] == hi[1]) fprintf(gp, "set yrange [%.10g:%.10g]\n", lo[1] - pad, hi[1] + pad);
}

/* Write NAME.gp (lines: one per run from NAME.csv, columns 2..n+1 over column 1) and
 * run gnuplot on it for NAME.png. */
static int plot(const Analysis *a, const char *name, const char *title, const char *xlabel, const char *ylabel,
                int n_series, const char *const *series, int logy) {
    char path[4200], file[300];
    snprintf(file, sizeof file, "%s.gp", name);
    OutFile of;
    FILE *f = open_out(&of, a, file, path, sizeof path);
    if (!f) return -1;
    fprintf(f,
            "# %s: redraw with `gnuplot %s.gp` in this folder\n"
            "set terminal pngcairo size 800,520 noenhanced\nset output '%s.png'\n"
            "set datafile separator ','\nset key outside right top\nset grid\n%s%s",
            name, name, name, logy ? "set logscale y\n" : "",
            strcmp(xlabel, "step") ? "set xtics 1\n" : ""); /* layers are integers */
    /* titles and run labels may hold any character: quoted for gnuplot, never a shell */
    fputs("set title ", f), gnuplot_quote(f, title);
    fputs("\nset xlabel ", f), gnuplot_quote(f, xlabel);
    fputs("\nset ylabel ", f), gnuplot_quote(f, ylabel);
    fputs("\n", f);
    single_point_ranges(a, name, f);
    fputs("plot ", f);
    for (int i = 0; i < n_series; i++) {
        fprintf(f, "%s'%s.csv' using 1:%d with %s lw 2 title ", i ? ", " : "", name, i + 2,
                strcmp(xlabel, "step") ? "linespoints" : "lines"); /* curves over steps: no markers */
        gnuplot_quote(f, series[i]);
    }
    fprintf(f, "\n");
    if (outfile_commit(&of) < 0) return -1;
    if (!a->have_gnuplot) return 0;
    char png[300];
    snprintf(png, sizeof png, "%s.png", name);
    return gnuplot_run(a->out, file, png);
}

/* CSV with one row per x in [x0, x1] and one column per run of values v(run, x). */
static int write_table(const Analysis *a, const char *name, const char *xname, int x0, int x1,
                       double (*v)(const RunMetrics *, int x)) {
    char file[300], path[4200];
    snprintf(file, sizeof file, "%s.csv", name);
    OutFile of;
    FILE *f = open_out(&of, a, file, path, sizeof path);
    if (!f) return -1;
    fprintf(f, "%s", xname);
    for (int r = 0; r < a->n; r++) fprintf(f, ",%s", a->run[r].label);
    fprintf(f, "\n");
    for (int x = x0; x <= x1; x++) {
        fprintf(f, "%d", x);
        for (int r = 0; r < a->n; r++) {
            const double y = x - x0 < a->run[r].s.L + 1 ? v(&a->run[r], x) : NAN;
            if (isnan(y)) fprintf(f, ",");
            else fprintf(f, ",%.10g", y);
        }
        fprintf(f, "\n");
    }
    return outfile_commit(&of);
}

static int max_layers(const Analysis *a) {
    int L = 0;
    for (int r = 0; r < a->n; r++) L = a->run[r].s.L > L ? a->run[r].s.L : L;
    return L;
}

static const char *const *labels(const Analysis *a) {
    static const char *l[MAX_RUNS];
    for (int r = 0; r < a->n; r++) l[r] = a->run[r].label;
    return l;
}

/* ------------------------------------------------------------------ the metrics */

/* x is the paper's 1-based layer n (similarity: hidden state 0..L). NaN past a run's depth. */
static double v_entropy(const RunMetrics *r, int n) { return n <= r->s.L ? r->s.entropy[n - 1] : NAN; }
static double v_sim(const RunMetrics *r, int s) { return s <= r->s.L ? r->s.sim_hidden[s] : NAN; }
static double v_sim_keys(const RunMetrics *r, int n) { return n <= r->s.L ? r->s.sim_keys_avg[n - 1] : NAN; }
static double v_spec_max(const RunMetrics *r, int n) { return n <= r->s.L ? r->s.spectrum[(size_t)(n - 1) * r->s.kvC] : NAN; }
static double v_cos3(const RunMetrics *r, int n) { return n <= r->s.L ? r->s.cos_eq3[n - 1] : NAN; }
static double v_cos6(const RunMetrics *r, int n) { return n <= r->s.L ? r->s.cos_eq6[n - 1] : NAN; }

static int m_entropy(const Analysis *a) {
    if (write_table(a, "entropy", "layer", 1, max_layers(a), v_entropy) < 0) return -1;
    return plot(a, "entropy", "Attention entropy per layer (Eq. 11)", "layer", "entropy (nats)", a->n, labels(a), 0);
}

static int m_similarity(const Analysis *a) {
    if (write_table(a, "similarity", "hidden_state", 0, max_layers(a), v_sim) < 0) return -1;
    if (write_table(a, "similarity_keys", "layer", 1, max_layers(a), v_sim_keys) < 0) return -1;
    if (plot(a, "similarity_keys", "Token similarity of post-RoPE keys, heads averaged (Eq. 13)", "layer",
             "mean pairwise cosine", a->n, labels(a), 0) < 0)
        return -1;
    return plot(a, "similarity", "Token similarity of hidden states (Eq. 13; 0 = embedding, L = final norm)",
                "hidden state", "mean pairwise cosine", a->n, labels(a), 0);
}

static int m_spectrum(const Analysis *a) {
    if (write_table(a, "spectrum_max", "layer", 1, max_layers(a), v_spec_max) < 0) return -1;
    for (int r = 0; r < a->n; r++) { /* the full spectra: one file per run, row = layer */
        char name[300], path[4200];
        snprintf(name, sizeof name, "spectrum_%s.csv", a->run[r].label);
        OutFile of;
        FILE *f = open_out(&of, a, name, path, sizeof path);
        if (!f) return -1;
        const MetricSums *s = &a->run[r].s;
        fprintf(f, "layer");
        for (int i = 0; i < s->kvC; i++) fprintf(f, ",eig%d", i + 1);
        fprintf(f, "\n");
        for (int l = 0; l < s->L; l++) {
            fprintf(f, "%d", l + 1);
            for (int i = 0; i < s->kvC; i++) fprintf(f, ",%.10g", s->spectrum[(size_t)l * s->kvC + i]);
            fprintf(f, "\n");
        }
        if (outfile_commit(&of) < 0) return -1;
    }
    return plot(a, "spectrum_max", "Largest eigenvalue of the value covariance (Eq. 12)", "layer", "lambda_max",
                a->n, labels(a), 1);
}

static int m_cross_layer(const Analysis *a) {
    if (write_table(a, "cross_layer_eq3", "layer", 2, max_layers(a), v_cos3) < 0) return -1;
    if (write_table(a, "cross_layer_eq6", "layer", 2, max_layers(a), v_cos6) < 0) return -1;
    if (plot(a, "cross_layer_eq3", "cos(Eq. 2, 1/2 A_n(V_n + V_m)), m = n-1 (Fig. 3)", "layer n", "cosine", a->n,
             labels(a), 0) < 0)
        return -1;
    return plot(a, "cross_layer_eq6", "cos(Eq. 2, 1/2 (A_n V_n + V_m)), m = n-1 (Fig. 3)", "layer n", "cosine", a->n,
                labels(a), 0);
}

/* The per-run metrics, by --metric name (depth-attention, for AttnRes runs only, is
 * cli/analyze_depth.c and handled on its own in cmd_analyze). */
typedef struct {
    const char *name;
    int (*write)(const Analysis *a);
    const char *summary;
} MetricCmd;

static const MetricCmd METRICS[] = {
    {"entropy", m_entropy, "attention entropy per layer (Eq. 11)"},
    {"similarity", m_similarity, "token similarity per hidden state and of keys (Eq. 13)"},
    {"spectrum", m_spectrum, "value covariance spectrum per layer (Eq. 12)"},
    {"cross-layer", m_cross_layer, "Fig. 3 cosines of Eq. 2 against Eq. 3 / Eq. 6 forms"},
};
#define N_METRICS (int)(sizeof METRICS / sizeof METRICS[0])

/* ------------------------------------------------------------------ computing */

static int analyze_run(RunMetrics *r, const char *data, int B, int T, int batches) {
    RunFolder run;
    if (run_folder_open(r->dir, RUN_OPEN_PARAMS, DT_F64, &run) < 0) return -1;
    r->config = run.config;
    if (T > run.config.max_seq) T = run.config.max_seq;
    const int kvC = run.config.n_kv_heads * (run.config.d_model / run.config.n_heads);
    int rc = -1;
    EvalBatches src;
    int32_t *tokens = malloc((size_t)B * T * sizeof *tokens); /* [B,T] */
    const BackendEntry *cpu = backend_select("cpu", "fp64"); /* the analysis runs in double */
    if (!cpu) return -1;
    const Backend *be = cpu->be;
    void *m = NULL;
    if (!tokens || metric_sums_init(&r->s, run.config.n_layers, kvC) < 0) {
        vrl_error("out of memory");
        goto done;
    }
    if (eval_batches_open(&src, data, run.config.vocab_size, B, T) < 0) goto done_nosrc;
    if (!backend_require(be, &run.spec, BACKEND_CAN_ANALYZE)) goto done_src;
    if (!(m = be->create(&run.spec, B, T))) goto done_src;
    be->set_state(m, run.params, NULL, NULL);
    for (int b = 0; b < batches; b++) {
        int s = eval_batches_next(&src, tokens);
        if (s < 0) goto done_src;
        if (s > 0) break;
        if (metrics_accumulate(be, m, &run.config, B, T, tokens, &r->s) < 0) goto done_src;
    }
    if (r->s.n_samples == 0) {
        vrl_error("%s: not one full batch of %d x %d tokens", data ? data : "synthetic corpus", B, T);
        goto done_src;
    }
    fprintf(stderr, "vrl analyze: %s: %ld sequences of %d tokens\n", r->dir, r->s.n_samples, T);
    metric_sums_mean(&r->s);
    rc = 0;
done_src:
    eval_batches_close(&src);
done_nosrc:
    if (m) be->destroy(m);
done:
    free(tokens);
    run_folder_close(&run);
    return rc;
}

static json_t *jarr(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, isnan(v[i]) ? json_null() : json_real(v[i]));
    return a;
}

static int write_json(const Analysis *a) {
    json_t *root = json_object();
    for (int r = 0; r < a->n; r++) {
        const MetricSums *s = &a->run[r].s;
        json_t *o = json_object(), *spec = json_array();
        for (int l = 0; l < s->L; l++) json_array_append_new(spec, jarr(s->spectrum + (size_t)l * s->kvC, s->kvC));
        json_object_set_new(o, "run", json_string(a->run[r].dir));
        json_object_set_new(o, "samples", json_integer(s->n_samples));
        json_object_set_new(o, "attention_entropy", jarr(s->entropy, s->L));
        json_object_set_new(o, "token_similarity_hidden", jarr(s->sim_hidden, s->L + 1));
        json_object_set_new(o, "token_similarity_keys_avg", jarr(s->sim_keys_avg, s->L));
        json_object_set_new(o, "token_similarity_keys_concat", jarr(s->sim_keys_cat, s->L));
        json_object_set_new(o, "value_spectrum", spec);
        json_object_set_new(o, "cross_layer_cos_eq3", jarr(s->cos_eq3 + 1, s->L - 1)); /* layers 2..L */
        json_object_set_new(o, "cross_layer_cos_eq6", jarr(s->cos_eq6 + 1, s->L - 1));
        json_object_set_new(root, a->run[r].label, o);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/analysis.json", a->out);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    json_decref(root);
    int rc = text ? write_file_atomic(path, text, strlen(text)) : vrl_error("out of memory");
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ relative loss */

static int relative_loss(Analysis *a, const char *base, const char *method, int w) {
    Curve cb, cm, rel;
    if (curve_read(base, &cb) < 0) return -1;
    if (curve_read(method, &cm) < 0) {
        curve_free(&cb);
        return -1;
    }
    int rc = curve_relative(&cb, &cm, w, &rel);
    curve_free(&cb);
    curve_free(&cm);
    if (rc < 0) return -1;
    if (rel.n == 0) {
        curve_free(&rel);
        return vrl_error("%s, %s: no common steps after a moving average of %d", base, method, w);
    }
    char path[4200];
    OutFile of;
    FILE *f = open_out(&of, a, "relative_loss.csv", path, sizeof path);
    if (!f) {
        curve_free(&rel);
        return -1;
    }
    fprintf(f, "step,relative_loss\n");
    double mean = 0;
    for (size_t i = 0; i < rel.n; i++) fprintf(f, "%ld,%.10g\n", rel.step[i], rel.loss[i]), mean += rel.loss[i];
    if (outfile_commit(&of) < 0) {
        curve_free(&rel);
        return -1;
    }
    printf("relative training loss (method - baseline, moving average %d): %zu points, last %.4f at step %ld, mean "
           "%.4f -> %s\n",
           w, rel.n, rel.loss[rel.n - 1], rel.step[rel.n - 1], mean / rel.n, path);
    curve_free(&rel);
    const char *series[1] = {"method - baseline"};
    char title[512];
    snprintf(title, sizeof title, "Relative training loss (moving average %d)", w);
    return plot(a, "relative_loss", title, "step", "loss difference", 1, series, 0);
}

/* Training loss of several runs (RUN/metrics.jsonl), each smoothed by a moving average
 * of w, on one plot; the CSV has one row per step any run logged. */
static int loss_curves(Analysis *a, char *const *runs, int n, int w) {
    Curve raw, sm[MAX_RUNS];
    const char *labels[MAX_RUNS];
    char path[4200];
    int rc = 0, got = 0;
    for (; got < n; got++) {
        if (run_path(path, sizeof path, runs[got], RUN_METRICS) < 0 || curve_read(path, &raw) < 0) break;
        if (raw.n == 0) {
            curve_free(&raw);
            vrl_error("%s: no training loss logged yet", path);
            break;
        }
        if (raw.n < (size_t)w)
            fprintf(stderr, "vrl analyze: %s logged %zu steps, fewer than --window %d: averaged over all %zu\n", path,
                    raw.n, w, raw.n);
        rc = curve_smooth(&raw, w, &sm[got]);
        curve_free(&raw);
        if (rc < 0) break;
        const char *slash = strrchr(runs[got], '/');
        labels[got] = slash && slash[1] ? slash + 1 : runs[got];
    }
    if (got < n) rc = -1;
    OutFile of;
    FILE *f = rc == 0 ? open_out(&of, a, "loss_curves.csv", path, sizeof path) : NULL;
    if (rc == 0 && !f) rc = -1;
    if (f) {
        fprintf(f, "step");
        for (int r = 0; r < n; r++) fprintf(f, ",%s", labels[r]);
        fprintf(f, "\n");
        size_t at[MAX_RUNS] = {0};
        for (;;) { /* merge the runs' step lists, which are increasing */
            long step = -1;
            for (int r = 0; r < n; r++)
                if (at[r] < sm[r].n && (step < 0 || sm[r].step[at[r]] < step)) step = sm[r].step[at[r]];
            if (step < 0) break;
            fprintf(f, "%ld", step);
            for (int r = 0; r < n; r++) {
                if (at[r] < sm[r].n && sm[r].step[at[r]] == step) fprintf(f, ",%.10g", sm[r].loss[at[r]++]);
                else fprintf(f, ",");
            }
            fprintf(f, "\n");
        }
        rc = outfile_commit(&of);
    }
    if (rc == 0) {
        for (int r = 0; r < n; r++)
            printf("%-24s last smoothed training loss %.4f at step %ld\n", labels[r],
                   sm[r].n ? sm[r].loss[sm[r].n - 1] : NAN, sm[r].n ? sm[r].step[sm[r].n - 1] : 0L);
        char title[256];
        snprintf(title, sizeof title, "Training loss (moving average %d)", w);
        rc = plot(a, "loss_curves", title, "step", "training loss", n, labels, 0);
    }
    for (int r = 0; r < got; r++) curve_free(&sm[r]);
    return rc;
}

/* ------------------------------------------------------------------ the command */

static void usage(FILE *f) {
    fprintf(f,
            "usage: vrl analyze --ckpt RUN [--ckpt RUN2 ...] --metric NAME|all --out DIR [flags]\n"
            "       vrl analyze --relative-loss BASE/metrics.jsonl METHOD/metrics.jsonl [--window 10] --out DIR\n"
            "       vrl analyze --loss RUN [RUN ...] [--window 10] --out DIR   (training loss curves)\n"
            "\n"
            "Per-layer analysis of trained runs side by side (formulas.md §6), fp64 reference:\n");
    for (int i = 0; i < N_METRICS; i++) fprintf(f, "  %-16s %s\n", METRICS[i].name, METRICS[i].summary);
    fprintf(f, "  %-16s %s\n", "depth-attention",
            "AttnRes runs: each sublayer's softmax weights over its sources (not in 'all')");
    fprintf(f,
            "Writes NAME.csv, NAME.gp and NAME.png (gnuplot) per plot and analysis.json.\n"
            "\n"
            "  --data SHARDS     tokenized data folder (its validation chunks), comma-separated\n"
            "                    shards, or omitted for the synthetic validation corpus\n"
            "  --batches N       batches to average over [4]\n"
            "  --batch B         sequences per batch [4]\n"
            "  --seq T           tokens per sequence [128, at most the model's]\n"
            "  --window W        moving average for --relative-loss [10]\n");
}

int cmd_analyze(int argc, char **argv) {
    Args p = {.argc = argc, .argv = argv, .i = 1, .cmd = "vrl analyze"};
    static Analysis an;
    memset(&an, 0, sizeof an);
    const char *metric = NULL, *data = NULL, *rel_base = NULL, *rel_method = NULL, *v;
    char **loss_runs = NULL;
    int n_loss = 0;
    int batches = 4, B = 4, T = 128, window = 10, r;
    while (p.i < argc) {
        if (args_switch(&p, "--help") || args_switch(&p, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[p.i], "--loss")) {
            /* every following argument up to the next flag is a run folder */
            loss_runs = argv + p.i + 1;
            for (p.i++; p.i < argc && strncmp(argv[p.i], "--", 2); p.i++) n_loss++;
            if (n_loss < 1 || n_loss > MAX_RUNS) {
                fprintf(stderr, "vrl analyze: --loss needs 1 to %d run folders\n", MAX_RUNS);
                return 2;
            }
            continue;
        }
        if (!strcmp(argv[p.i], "--relative-loss")) {
            if (p.i + 2 >= argc) {
                fprintf(stderr, "vrl analyze: --relative-loss needs BASE/metrics.jsonl METHOD/metrics.jsonl\n");
                return 2;
            }
            rel_base = argv[p.i + 1], rel_method = argv[p.i + 2];
            p.i += 3;
            continue;
        }
#define FLAG(name, action)                                                                                  \
    if ((r = args_take(&p, name, &v)) != 0) {                                                               \
        if (r < 0 || (action) < 0) goto fail;                                                               \
        continue;                                                                                           \
    }
        FLAG("--ckpt", an.n == MAX_RUNS ? vrl_error("--ckpt: at most %d runs", MAX_RUNS) : (an.run[an.n++].dir = v, 0));
        FLAG("--metric", (metric = v, 0));
        FLAG("--data", (data = v, 0));
        FLAG("--out", (an.out = v, 0));
        FLAG("--batches", parse_int("--batches", v, 1, 1 << 20, &batches));
        FLAG("--batch", parse_int("--batch", v, 1, 4096, &B));
        FLAG("--seq", parse_int("--seq", v, 2, 1 << 20, &T));
        FLAG("--window", parse_int("--window", v, 1, 1 << 20, &window));
#undef FLAG
        fprintf(stderr, "vrl analyze: unknown argument \"%s\" (see vrl analyze --help)\n", argv[p.i]);
        return 2;
    }
    if (!an.out || (!rel_base && !n_loss && (!an.n || !metric))) {
        fprintf(stderr, "vrl analyze: needs --out DIR and --ckpt RUN --metric NAME|all, --relative-loss or --loss "
                        "(see vrl analyze --help)\n");
        return 2;
    }
    if (metric && !strcmp(metric, "depth-attention")) {
        /* One matrix per run, in OUT (one run) or OUT/RUN-NAME (several). */
        for (int i = 0; i < an.n; i++) {
            char dir[4200];
            const char *slash = strrchr(an.run[i].dir, '/');
            snprintf(dir, sizeof dir, "%s/%s", an.out, slash && slash[1] ? slash + 1 : an.run[i].dir);
            if (analyze_depth_attention(an.run[i].dir, an.n > 1 ? dir : an.out, data, batches) < 0) goto fail;
        }
        return 0;
    }
    int want[N_METRICS] = {0}, any = 0;
    if (metric) {
        for (int i = 0; i < N_METRICS; i++) want[i] = !strcmp(metric, "all") || !strcmp(metric, METRICS[i].name);
        for (int i = 0; i < N_METRICS; i++) any |= want[i];
        if (!any) {
            vrl_error("--metric: \"%s\" is not entropy, similarity, spectrum, cross-layer, depth-attention or all",
                      metric);
            goto fail;
        }
    }
    if (make_dirs(an.out) < 0) goto fail;
    an.have_gnuplot = gnuplot_available();
    if (!an.have_gnuplot) printf("vrl analyze: gnuplot not found; writing CSV and .gp scripts only\n");
    if (rel_base && relative_loss(&an, rel_base, rel_method, window) < 0) goto fail;
    if (n_loss && loss_curves(&an, loss_runs, n_loss, window) < 0) goto fail;
    if (an.n) {
        for (int i = 0; i < an.n; i++) {
            const char *slash = strrchr(an.run[i].dir, '/');
            const char *base = slash && slash[1] ? slash + 1 : an.run[i].dir;
            snprintf(an.run[i].label, sizeof an.run[i].label, "%s", base);
            for (int j = 0; j < i; j++) /* two runs with the same folder name: number them */
                if (!strcmp(an.run[j].label, an.run[i].label))
                    snprintf(an.run[i].label, sizeof an.run[i].label, "%s_%d", base, i + 1);
        }
        int rc = 0;
        for (int i = 0; rc == 0 && i < an.n; i++) rc = analyze_run(&an.run[i], data, B, T, batches);
        for (int i = 0; rc == 0 && i < N_METRICS; i++)
            if (want[i]) rc = METRICS[i].write(&an);
        if (rc == 0) rc = write_json(&an);
        for (int i = 0; i < an.n; i++) metric_sums_free(&an.run[i].s);
        if (rc < 0) goto fail;
        printf("vrl analyze: %d run(s) -> %s (analysis.json, CSV%s)\n", an.n, an.out, an.have_gnuplot ? ", PNG" : "");
    }
    return 0;
fail:
    fprintf(stderr, "vrl analyze: %s\n", vrl_last_error());
    return 1;
}
