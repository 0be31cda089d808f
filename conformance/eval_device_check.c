/* eval_device_check.c: two `vrl eval` outputs of the same run and inputs, one on the reference
 * (--device cpu --precision fp64) and one on the CUDA backend (cuda or cuda-cpu, bf16), compared
 * within a relative bound R (test_eval_fast.sh says where R comes from).
 *
 * usage: eval_device_check R REF.json REF.jsonl DEV.json DEV.jsonl
 *
 *   - per-domain losses (and their mean): |Δ| <= R·loss;
 *   - the token file's log-perplexity nll/tokens: |Δ| <= R·(nll/tokens);
 *   - every request of --log-samples (zero-shot choices, LAMBADA words): |Δll| <= R·|ll_ref|;
 *   - multiple choice (requests with "gold"; continuation " " + choice, acc_norm dividing by the
 *     choice's code points): a document's acc (acc_norm) may differ only where the reference's
 *     choice is within reach of another, ll_p − ll_j <= R·(|ll_p| + |ll_j|) for some j (each
 *     divided by its length for acc_norm): the two log-likelihoods' bounds added. Every differing
 *     document must be such a "fragile" one; the counts are printed;
 *   - is_greedy of every request equal (the tie rule itself is checked with the logits in
 *     test_fast_vs_ref.c).
 * Prints the worst relative difference per quantity; exit 1 on any miss. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define MISS(...) (fails++, printf("FAIL: " __VA_ARGS__), printf("\n"))

static double rel(double got, double want) { return want == 0 ? fabs(got) : fabs(got - want) / fabs(want); }

/* The lines of a --log-samples file as an array of objects. */
static json_t *load_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "%s: cannot open\n", path), NULL;
    json_t *a = json_array();
    char *line = NULL;
    size_t cap = 0;
    json_error_t e;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, &e);
        if (!o) {
            fprintf(stderr, "%s: %s\n", path, e.text);
            json_decref(a), a = NULL;
            break;
        }
        json_array_append_new(a, o);
    }
    free(line);
    fclose(f);
    return a;
}

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* Unicode code points of a choice: its continuation without the leading " " (lm-eval's len). */
static double choice_len(json_t *req) {
    const char *s = json_string_value(json_object_get(req, "continuation"));
    double n = 0;
    for (s += *s == ' '; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Whether document's reference choice (by ll/len when norm) is within the bound of another. */
static int fragile(json_t **req, int n, double R, int norm) {
    int p = 0;
    double v[64], b[64];
    for (int j = 0; j < n; j++) {
        const double len = norm ? choice_len(req[j]) : 1, ll = num(req[j], "loglikelihood");
        v[j] = ll / len, b[j] = R * fabs(ll) / len;
        if (v[j] > v[p]) p = j;
    }
    for (int j = 0; j < n; j++)
        if (j != p && v[p] - v[j] <= b[p] + b[j]) return 1;
    return 0;
}

static void compare_domains(json_t *a, json_t *b, double R) {
    double worst = 0;
    const char *key;
    json_t *va;
    int n = 0;
    json_object_foreach(a, key, va) {
        json_t *vb = json_object_get(b, key);
        const double x = json_is_object(va) ? num(va, "loss") : json_number_value(va);
        const double y = json_is_object(vb) ? num(vb, "loss") : json_number_value(vb);
        if (!vb || !(x > 0)) {
            MISS("domain %s missing or not positive", key);
            continue;
        }
        worst = fmax(worst, rel(y, x)), n++;
        if (!(rel(y, x) <= R)) MISS("domain %s: loss %.9g vs ref %.9g (relative %.2e > %.2e)", key, y, x, rel(y, x), R);
    }
    printf("per-domain losses (%d, the mean included): worst relative difference %.2e (bound %.2e)\n", n, worst, R);
}

static void compare_tokens(json_t *a, json_t *b, double R) {
    const double x = num(a, "nll") / num(a, "tokens"), y = num(b, "nll") / num(b, "tokens");
    printf("token file: log-perplexity ref %.9g dev %.9g, relative difference %.2e (bound %.2e); perplexity %.9g vs "
           "%.9g\n",
           x, y, rel(y, x), R, num(a, "token_perplexity"), num(b, "token_perplexity"));
    if (!(x > 0) || !(rel(y, x) <= R)) MISS("token file log-perplexity %.9g vs ref %.9g", y, x);
}

/* Requests in file order, which is the same for both runs (documents, then choices). */
static void compare_requests(json_t *ra, json_t *rb, double R) {
    if (json_array_size(ra) != json_array_size(rb) || json_array_size(ra) == 0) {
        MISS("--log-samples: %zu requests vs %zu", json_array_size(ra), json_array_size(rb));
        return;
    }
    double worst = 0;
    size_t n = json_array_size(ra), greedy_diff = 0, n_docs = 0, docs_diff[2] = {0, 0}, n_fragile[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(ra, i), *b = json_array_get(rb, i);
        const double x = num(a, "loglikelihood"), y = num(b, "loglikelihood");
        worst = fmax(worst, rel(y, x));
        if (!(rel(y, x) <= R))
            MISS("%s doc %lld request %lld: ll %.9g vs ref %.9g", json_string_value(json_object_get(a, "task")),
                 (long long)num(a, "doc"), (long long)num(a, "request"), y, x);
        greedy_diff += json_is_true(json_object_get(a, "is_greedy")) != json_is_true(json_object_get(b, "is_greedy"));
    }
    printf("requests (%zu): worst relative log-likelihood difference %.2e (bound %.2e); is_greedy differs on %zu\n", n,
           worst, R, greedy_diff);
    if (greedy_diff) MISS("is_greedy differs on %zu requests", greedy_diff);
    /* multiple-choice documents: consecutive requests of one (task, doc) */
    for (size_t i = 0; i < n;) {
        json_t *first = json_array_get(ra, i), *req[64];
        size_t k = 0;
        while (i + k < n && k < 64 && num(json_array_get(ra, i + k), "doc") == num(first, "doc") &&
               !strcmp(json_string_value(json_object_get(json_array_get(ra, i + k), "task")),
                       json_string_value(json_object_get(first, "task"))))
            req[k] = json_array_get(ra, i + k), k++;
        if (json_object_get(first, "gold") && k >= 2) { /* LAMBADA's documents have one request */
            n_docs++;
            json_t *res_a = json_object_get(first, "result"), *res_b = json_object_get(json_array_get(rb, i), "result");
            const char *metric[2] = {"acc", "acc_norm"};
            for (int m = 0; m < 2; m++) {
                const int differs = num(res_a, metric[m]) != num(res_b, metric[m]), weak = fragile(req, (int)k, R, m);
                docs_diff[m] += differs, n_fragile[m] += weak;
                if (differs && !weak)
                    MISS("%s doc %lld: %s differs but the reference's margin is above the bound",
                         json_string_value(json_object_get(first, "task")), (long long)num(first, "doc"), metric[m]);
            }
        }
        i += k;
    }
    printf("multiple choice (%zu documents): acc differs on %zu (%zu within the bound of a flip), acc_norm on %zu "
           "(%zu within the bound)\n",
           n_docs, docs_diff[0], n_fragile[0], docs_diff[1], n_fragile[1]);
    if (!n_docs) MISS("no multiple-choice document in the samples");
}

int main(int argc, char **argv) {
    char *end;
    const double R = argc == 6 ? strtod(argv[1], &end) : 0;
    if (argc != 6 || *end || !(R > 0)) {
        fprintf(stderr, "usage: eval_device_check R REF.json REF.jsonl DEV.json DEV.jsonl\n");
        return 2;
    }
    json_error_t e;
    json_t *a = json_load_file(argv[2], 0, &e), *b = a ? json_load_file(argv[4], 0, &e) : NULL;
    if (!a || !b) return fprintf(stderr, "%s: %s\n", a ? argv[4] : argv[2], e.text), 1;
    json_t *ra = load_lines(argv[3]), *rb = ra ? load_lines(argv[5]) : NULL;
    if (!ra || !rb) return 1;
    printf("backends: %s vs %s\n", json_string_value(json_object_get(a, "backend")),
           json_string_value(json_object_get(b, "backend")));
    if (json_object_get(a, "domains")) compare_domains(json_object_get(a, "domains"), json_object_get(b, "domains"), R);
    else MISS("%s: no per-domain losses", argv[2]);
    if (json_object_get(a, "tokens")) compare_tokens(json_object_get(a, "tokens"), json_object_get(b, "tokens"), R);
    else MISS("%s: no token-file perplexity", argv[2]);
    compare_requests(ra, rb, R);
    json_decref(a), json_decref(b), json_decref(ra), json_decref(rb);
    printf("%s\n", fails ? "FAILED" : "all within the bound");
    return fails ? 1 : 0;
}
