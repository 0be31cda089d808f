/* lmeval_golden_check.c: `vrl eval`'s figures against lm-evaluation-harness's
 * (conformance/lmeval_golden/expected.json, made by make_expected.sh).
 *
 * usage: lmeval_golden_check TOL EXPECTED.json SUMMARY.json... -- SAMPLES.jsonl...
 * Every metric of EXPECTED.json must be in one of the summaries (tasks under
 * "zero_shot", WikiText under "wikitext"), and every request's log-likelihood in one
 * of the --log-samples files, within TOL relative. Prints the worst relative error
 * per metric and per task's requests; exit 1 on any miss. The tolerances are the
 * test's (test_lmeval_golden.sh): 1e-6 against transformers as it is (its Llama keeps
 * RoPE, RMSNorm and softmax in float32 for a float64 model: about 1e-7 relative),
 * 1e-12 against expected_f64.json where those run in float64 too. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double rel_err(double got, double want) {
    const double scale = fmax(fabs(got), fabs(want));
    return scale == 0 ? 0 : fabs(got - want) / scale;
}

/* metric `m` of task `t` in any of the summaries; NULL if absent */
static json_t *find_metric(json_t **sum, int n, const char *t, const char *m) {
    for (int i = 0; i < n; i++) {
        json_t *v = !strcmp(t, "wikitext") ? json_object_get(sum[i], "wikitext")
                                           : json_object_get(json_object_get(sum[i], "zero_shot"), t);
        if (v && json_object_get(v, m)) return json_object_get(v, m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    char *end;
    const double TOL = argc >= 5 ? strtod(argv[1], &end) : 0;
    if (argc < 5 || *end || !(TOL > 0)) {
        fprintf(stderr, "usage: lmeval_golden_check TOL EXPECTED.json SUMMARY.json... -- SAMPLES.jsonl...\n");
        return 2;
    }
    json_error_t e;
    json_t *want = json_load_file(argv[2], 0, &e);
    if (!want) return fprintf(stderr, "%s: %s\n", argv[2], e.text), 1;
    json_t *sum[16], *got_ll = json_object(); /* "task/doc/request" -> loglikelihood */
    int n_sum = 0, a = 3, fails = 0;
    for (; a < argc && strcmp(argv[a], "--"); a++) {
        if (n_sum == 16 || !(sum[n_sum++] = json_load_file(argv[a], 0, &e)))
            return fprintf(stderr, "%s: %s\n", argv[a], e.text), 1;
    }
    for (a++; a < argc; a++) {
        FILE *f = fopen(argv[a], "r");
        if (!f) return fprintf(stderr, "%s: cannot open\n", argv[a]), 1;
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0) {
            json_t *o = json_loads(line, 0, &e);
            if (!o) return fprintf(stderr, "%s: %s\n", argv[a], e.text), 1;
            char key[256];
            snprintf(key, sizeof key, "%s/%lld/%lld", json_string_value(json_object_get(o, "task")),
                     (long long)json_integer_value(json_object_get(o, "doc")),
                     (long long)json_integer_value(json_object_get(o, "request")));
            json_object_set(got_ll, key, json_object_get(o, "loglikelihood"));
            json_decref(o);
        }
        free(line);
        fclose(f);
    }
    printf("%s\n%-16s %-16s %22s %22s %10s\n", argv[2], "task", "metric", "lm-eval", "vrl", "rel.err");
    const char *t;
    json_t *ms;
    json_object_foreach(json_object_get(want, "metrics"), t, ms) {
        const char *m;
        json_t *w;
        json_object_foreach(ms, m, w) {
            json_t *g = find_metric(sum, n_sum, t, m);
            const double err = g ? rel_err(json_number_value(g), json_number_value(w)) : INFINITY;
            const int bad = !(err <= TOL);
            fails += bad;
            printf("%-16s %-16s %22.15g %22.15g %10.2e%s\n", t, m, json_number_value(w), g ? json_number_value(g) : NAN,
                   err, bad ? "  FAIL" : "");
        }
    }
    json_t *rows;
    json_object_foreach(json_object_get(want, "samples"), t, rows) {
        double worst = 0;
        size_t i, missing = 0;
        json_t *r;
        json_array_foreach(rows, i, r) {
            char key[256];
            snprintf(key, sizeof key, "%s/%lld/%lld", t, (long long)json_integer_value(json_array_get(r, 0)),
                     (long long)json_integer_value(json_array_get(r, 1)));
            json_t *g = json_object_get(got_ll, key);
            if (!g) {
                missing++;
                continue;
            }
            worst = fmax(worst, rel_err(json_number_value(g), json_number_value(json_array_get(r, 2))));
        }
        const int bad = worst > TOL || missing;
        fails += bad;
        printf("%-16s %-16s %22zu %22s %10.2e%s\n", t, "loglikelihoods", json_array_size(rows), "(worst)", worst,
               bad ? "  FAIL" : "");
        if (missing) printf("  %zu requests of %s are not in the samples files\n", missing, t);
    }
    printf("%s: %d failure(s), tolerance %g relative\n", fails ? "FAIL" : "ok", fails, TOL);
    for (int i = 0; i < n_sum; i++) json_decref(sum[i]);
    json_decref(want), json_decref(got_ll);
    return fails ? 1 : 0;
}
