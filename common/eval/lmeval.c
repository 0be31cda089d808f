/* lmeval.c: log-likelihood scoring, zero-shot tasks and WikiText perplexity (lmeval.h),
 * following lm-evaluation-harness (HFLM._loglikelihood_tokens, get_rolling_token_windows,
 * the piqa/arc/openbookqa/winogrande/hellaswag task definitions, wikitext's
 * preprocess_wikitext). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "common/eval/lmeval.h"

#include <jansson.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/clock.h"
#include "common/base/fsutil.h"
#include "common/data/textio.h"

/* ------------------------------------------------------------------ scoring */

int scorer_init(Scorer *s, const Backend *be, const ModelSpec *spec, const void *params, int B, int T) {
    memset(s, 0, sizeof *s);
    s->be = be, s->spec = spec, s->params = params;
    s->B = B, s->T = T, s->V = spec->config.vocab_size;
    if (!be->token_logprobs) return vrl_error("evaluation: backend %s cannot score (no token_logprobs)", be->name);
    const size_t n = (size_t)B * T;
    s->tokens = calloc(n, sizeof *s->tokens);
    s->targets = malloc(n * sizeof *s->targets);
    s->logprob = malloc(n * sizeof *s->logprob);
    s->greedy = malloc(n * sizeof *s->greedy);
    if (!s->tokens || !s->targets || !s->logprob || !s->greedy) {
        scorer_free(s);
        return vrl_error("evaluation: out of memory for a %d x %d batch", B, T);
    }
    return 0;
}

void scorer_free(Scorer *s) {
    if (s->model) s->be->destroy(s->model);
    free(s->tokens), free(s->targets), free(s->logprob), free(s->greedy);
    s->model = NULL, s->tokens = NULL, s->targets = NULL, s->logprob = NULL, s->greedy = NULL;
}

/* Make the current model [rows, len]; the previous shape's model is dropped (requests
 * arrive longest first, so a shape is never needed again within one call). */
static int scorer_shape(Scorer *s, int rows, int len) {
    if (s->model && s->rows == rows && s->len == len) return 0;
    if (s->model) s->be->destroy(s->model);
    s->model = s->be->create(s->spec, rows, len);
    if (!s->model) return -1;
    s->be->set_state(s->model, s->params, NULL, NULL);
    s->rows = rows, s->len = len;
    return 0;
}

/* The i-th token of ctx ++ cont. */
static uint32_t whole_at(const LLRequest *r, size_t i) { return i < r->n_ctx ? r->ctx[i] : r->cont[i - r->n_ctx]; }

/* A line on stderr at about every tenth of the work, so a long evaluation shows it moves. */
static void progress(const Scorer *s, size_t done, size_t n, double t0) {
    if (!s->label) return;
    const double dt = now_seconds() - t0, rate = dt > 0 ? (double)done / dt : 0;
    fprintf(stderr, "vrl eval: %s: %zu/%zu requests, %.1f requests/s, ETA %.0fs\n", s->label, done, n, rate,
            rate > 0 ? (double)(n - done) / rate : 0.0);
}

/* Tokens of the model input of a request: (ctx + cont)[-(T+1):][:-1]. */
static size_t input_len(const LLRequest *q, size_t T) {
    const size_t total = q->n_ctx + q->n_cont;
    return (total < T + 1 ? total : T + 1) - 1;
}

/* Longest input first; ties in request order, so the batches do not depend on qsort. */
static const LLRequest *g_sort_req;
static size_t g_sort_T;
static int by_length_desc(const void *a, const void *b) {
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const size_t li = input_len(&g_sort_req[i], g_sort_T), lj = input_len(&g_sort_req[j], g_sort_T);
    if (li != lj) return li > lj ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Tokens scored of request q: its continuation, at most the n_in predictions its input gives. */
static size_t n_scored_of(const LLRequest *q, size_t n_in) { return q->n_cont < n_in ? q->n_cont : n_in; }

/* Put request q's input in row r of the [rows, len] batch, and the continuation tokens it
 * scores as the targets of their positions, after checking the ids. */
static int fill_row(Scorer *s, const LLRequest *q, int r) {
    if (q->n_ctx < 1 || q->n_cont < 1) return vrl_error("evaluation: empty context or continuation");
    const size_t total = q->n_ctx + q->n_cont, n_in = input_len(q, (size_t)s->T), first = total - n_in - 1;
    for (size_t i = 0; i <= n_in; i++) { /* the last token is checked, not input */
        const uint32_t id = whole_at(q, first + i);
        if (id >= (uint32_t)s->V)
            return vrl_error("evaluation: token id %u is outside the model's vocabulary of %d (tokenizer and "
                             "model do not match)",
                             id, s->V);
        if (i < n_in) s->tokens[(size_t)r * s->len + i] = (int32_t)id;
    }
    /* whole token i (i >= total - n_scored) is predicted at input position i - first - 1 */
    for (size_t i = total - n_scored_of(q, n_in); i < total; i++)
        s->targets[(size_t)r * s->len + (i - first - 1)] = (int32_t)whole_at(q, i);
    return 0;
}

/* Score request q from row r of the last forward's log-probabilities. */
static int score_row(const Scorer *s, LLRequest *q, int r) {
    const size_t total = q->n_ctx + q->n_cont, n_in = input_len(q, (size_t)s->T), first = total - n_in - 1;
    q->n_scored = n_scored_of(q, n_in);
    q->logprob = 0;
    q->greedy = 1;
    for (size_t i = total - q->n_scored; i < total; i++) {
        const size_t at = (size_t)r * s->len + (i - first - 1);
        q->logprob += s->logprob[at];
        q->greedy &= s->greedy[at];
    }
    if (!isfinite(q->logprob))
        return vrl_error("evaluation: the model's log-probabilities are not finite (non-finite weights, or an "
                         "overflow in %s)",
                         s->be->name);
    return 0;
}

int scorer_loglik(Scorer *s, LLRequest *req, size_t n) {
    const double t0 = now_seconds();
    size_t *order = malloc((n ? n : 1) * sizeof *order); /* [n] requests, longest input first */
    if (!order) return vrl_error("evaluation: out of memory");
    for (size_t i = 0; i < n; i++) order[i] = i;
    if (!s->fixed_shape) {
        g_sort_req = req, g_sort_T = (size_t)s->T;
        qsort(order, n, sizeof *order, by_length_desc);
    }
    /* about ten reports for work of 20 full batches or more; quiet for small sets */
    const size_t every = n >= 20 * (size_t)s->B ? n / 10 : n + 1;
    size_t reported = 0;
    int rc = 0;
    for (size_t start = 0; rc == 0 && start < n;) {
        if (start - reported >= every) progress(s, reported = start, n, t0);
        /* the window: the smallest of T, T/2, ... (>= 16) that holds the longest input */
        int len = s->T, rows = s->B;
        if (!s->fixed_shape) {
            const size_t longest = input_len(&req[order[start]], (size_t)s->T);
            while (len % 2 == 0 && len / 2 >= 16 && (size_t)(len / 2) >= longest) len /= 2;
            rows = (int)((size_t)s->B * s->T / (size_t)len);
        }
        const int used = n - start < (size_t)rows ? (int)(n - start) : rows;
        rc = scorer_shape(s, rows, len);
        if (rc < 0) break;
        memset(s->tokens, 0, (size_t)rows * len * sizeof *s->tokens); /* padding: token 0 */
        for (size_t i = 0; i < (size_t)rows * len; i++) s->targets[i] = -1; /* nothing scored */
        for (int r = 0; rc == 0 && r < used; r++) rc = fill_row(s, &req[order[start + (size_t)r]], r);
        if (rc < 0) break;
        rc = s->be->token_logprobs(s->model, s->tokens, s->targets, s->logprob, s->greedy);
        if (rc < 0) break;
        s->forwards++;
        for (int r = 0; rc == 0 && r < used; r++) rc = score_row(s, &req[order[start + (size_t)r]], r);
        start += (size_t)used;
    }
    free(order);
    return rc;
}

int rolling_requests(const uint32_t *tokens, size_t n, int T_, const uint32_t *prefix, LLRequest **req, size_t *k,
                     size_t *cap) {
    const size_t T = (size_t)T_;
    if (n == 0 || (!prefix && n < 2)) return 0;
    const size_t need = *k + n / T + 2;
    if (need > *cap) {
        const size_t c = need > 2 * *cap ? need : 2 * *cap;
        LLRequest *r = realloc(*req, c * sizeof *r);
        if (!r) return vrl_error("evaluation: out of memory");
        *req = r, *cap = c;
    }
    /* First window: the prefix (or the first token) as context, up to T predictions. */
    const size_t first = n < T ? n : T;
    if (prefix) (*req)[(*k)++] = (LLRequest){.ctx = prefix, .n_ctx = 1, .cont = tokens, .n_cont = first};
    else (*req)[(*k)++] = (LLRequest){.ctx = tokens, .n_ctx = 1, .cont = tokens + 1, .n_cont = first - 1};
    /* Later windows: the next <= T tokens, each window's input the T tokens before its end. */
    for (size_t predicted = first; predicted < n;) {
        const size_t pl = n - predicted < T ? n - predicted : T, end = predicted + pl;
        (*req)[(*k)++] =
            (LLRequest){.ctx = tokens + end - T - 1, .n_ctx = T + 1 - pl, .cont = tokens + end - pl, .n_cont = pl};
        predicted += pl;
    }
    return 0;
}

int scorer_rolling(Scorer *s, const uint32_t *tokens, size_t n, int64_t prefix, double *nll, size_t *n_pred) {
    const uint32_t pre = prefix >= 0 ? (uint32_t)prefix : 0;
    LLRequest *req = NULL;
    size_t k = 0, cap = 0;
    *nll = 0, *n_pred = 0;
    int rc = rolling_requests(tokens, n, s->T, prefix >= 0 ? &pre : NULL, &req, &k, &cap);
    if (rc == 0) rc = scorer_loglik(s, req, k);
    for (size_t i = 0; rc == 0 && i < k; i++) *nll -= req[i].logprob, *n_pred += req[i].n_scored;
    free(req);
    return rc;
}

/* ------------------------------------------------------------------ strings */

/* Python's str.replace: every non-overlapping occurrence, left to right. Frees s. */
static char *replace_all(char *s, const char *from, const char *to) {
    if (!s) return NULL;
    const size_t lf = strlen(from), lt = strlen(to);
    size_t count = 0;
    for (const char *p = s; (p = strstr(p, from)); p += lf) count++;
    if (!count) return s;
    char *out = malloc(strlen(s) + count * lt + 1); /* an upper bound */
    if (!out) {
        free(s);
        return NULL;
    }
    char *o = out;
    const char *p = s, *q;
    while ((q = strstr(p, from))) {
        memcpy(o, p, (size_t)(q - p)), o += q - p;
        memcpy(o, to, lt), o += lt;
        p = q + lf;
    }
    strcpy(o, p);
    free(s);
    return out;
}

/* Python's re.sub(pattern, repl, s) with PCRE2 (UTF + Unicode properties, so \s is
 * Unicode whitespace as in Python 3). repl uses PCRE2's $1 syntax. Frees s. */
static char *regex_sub(char *s, const char *pattern, const char *repl) {
    if (!s) return NULL;
    int err;
    PCRE2_SIZE eoff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &eoff, NULL);
    if (!re) {
        vrl_error("internal: bad regex %s", pattern);
        free(s);
        return NULL;
    }
    PCRE2_SIZE cap = strlen(s) * 2 + 64;
    char *out = NULL;
    for (int tries = 0; tries < 2; tries++) {
        out = malloc(cap);
        if (!out) break;
        PCRE2_SIZE olen = cap;
        int rc = pcre2_substitute(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0,
                                  PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, NULL, NULL,
                                  (PCRE2_SPTR)repl, PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)out, &olen);
        if (rc >= 0) break;
        free(out);
        out = NULL;
        if (rc == PCRE2_ERROR_NOMEMORY) {
            cap = olen + 1;
            continue;
        }
        vrl_error("text is not valid UTF-8 (PCRE2 error %d)", rc);
        break;
    }
    pcre2_code_free(re);
    free(s);
    return out;
}

static char *dup_str(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static char *concat3(const char *a, const char *b, const char *c) {
    const size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *d = malloc(la + lb + lc + 1);
    if (!d) return NULL;
    memcpy(d, a, la), memcpy(d + la, b, lb), memcpy(d + la + lb, c, lc + 1);
    return d;
}

/* Python's str.strip() for ASCII whitespace. Frees s. */
static char *strip(char *s) {
    if (!s) return NULL;
    size_t a = 0, b = strlen(s);
    while (a < b && strchr(" \t\n\r\v\f", s[a])) a++;
    while (b > a && strchr(" \t\n\r\v\f", s[b - 1])) b--;
    memmove(s, s + a, b - a);
    s[b - a] = 0;
    return s;
}

/* Unicode code points of UTF-8 text (Python's len()). */
static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

char *hellaswag_preprocess(const char *text) {
    char *s = strip(dup_str(text));
    s = replace_all(s, " [title]", ". ");
    s = regex_sub(s, "\\[.*?\\]", "");
    return replace_all(s, "  ", " ");
}

/* Python's str.capitalize() for ASCII: first character upper, the rest lower (non-ASCII
 * bytes are left as they are). */
static char *capitalize(const char *text) {
    char *s = dup_str(text);
    if (!s) return NULL;
    for (size_t i = 0; s[i]; i++)
        if ((unsigned char)s[i] < 128) s[i] = (char)(i == 0 ? (s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i])
                                                           : (s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]));
    return s;
}

/* ------------------------------------------------------------------ tasks */

const TaskInfo LMEVAL_TASKS[] = {
    {"hellaswag", "hellaswag.jsonl", TASK_HELLASWAG, 0, 1},
    {"openbook_qa", "openbook_qa.jsonl", TASK_MC, 0, 1},
    {"winogrande", "winogrande.jsonl", TASK_WINOGRANDE, 0, 0},
    {"arc_easy", "arc_easy.jsonl", TASK_MC, 1, 1},
    {"arc_challenge", "arc_challenge.jsonl", TASK_MC, 1, 1},
    {"piqa", "piqa.jsonl", TASK_MC, 1, 1},
    {"lambada_openai", "lambada_openai.jsonl", TASK_LAMBADA, 0, 0},
    {NULL, NULL, 0, 0, 0},
};

const char LMEVAL_TASK_SCHEMAS[] =
    "  piqa, arc_easy, arc_challenge, openbook_qa: {\"query\": str, \"choices\": [str, ...],\n"
    "      \"gold\": int}  (choices non-empty; gold indexes choices)\n"
    "  winogrande: {\"context_options\": [str, ...], \"continuation\": str, \"gold\": int}\n"
    "  hellaswag: {\"activity_label\": str, \"ctx_a\": str, \"ctx_b\": str (or \"ctx\": str),\n"
    "      \"endings\": [str, ...], \"label\": int or \"int\"}\n"
    "  lambada_openai: {\"text\": str}  (the target is the word after the last space)\n";

const TaskInfo *lmeval_task(const char *name) {
    for (const TaskInfo *t = LMEVAL_TASKS; t->name; t++)
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

static void doc_free(TaskDoc *d) {
    for (int i = 0; i < d->n; i++) {
        if (d->ctx) free(d->ctx[i]);
        if (d->cont) free(d->cont[i]);
    }
    free(d->ctx), free(d->cont), free(d->len_norm);
    memset(d, 0, sizeof *d);
}

void task_free(TaskSet *t) {
    for (size_t i = 0; i < t->n; i++) doc_free(&t->docs[i]);
    free(t->docs);
    memset(t, 0, sizeof *t);
}

/* A required string field. */
static const char *field_str(json_t *o, const char *key, const char *path, uint64_t line) {
    json_t *v = json_object_get(o, key);
    if (!v) return vrl_error("%s:%llu: missing field \"%s\"", path, (unsigned long long)line, key), NULL;
    if (!json_is_string(v)) return vrl_error("%s:%llu: field \"%s\" is not a string", path, (unsigned long long)line, key), NULL;
    return json_string_value(v);
}

/* A required array of >= 2 strings. */
static json_t *field_strings(json_t *o, const char *key, const char *path, uint64_t line) {
    json_t *v = json_object_get(o, key);
    if (!v) return vrl_error("%s:%llu: missing field \"%s\"", path, (unsigned long long)line, key), NULL;
    if (!json_is_array(v) || json_array_size(v) < 2)
        return vrl_error("%s:%llu: field \"%s\" is not a list of at least 2 strings", path, (unsigned long long)line, key),
               NULL;
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_string(json_array_get(v, i)))
            return vrl_error("%s:%llu: field \"%s\" entry %zu is not a string", path, (unsigned long long)line, key, i),
                   NULL;
        else if (!*json_string_value(json_array_get(v, i)))
            return vrl_error("%s:%llu: field \"%s\" entry %zu is an empty string", path, (unsigned long long)line, key,
                             i),
                   NULL;
    return v;
}

/* A required integer in [0, n) (an integer or a decimal string, as HF datasets store labels). */
static int field_index(json_t *o, const char *key, int n, const char *path, uint64_t line, int *out) {
    json_t *v = json_object_get(o, key);
    if (!v) return vrl_error("%s:%llu: missing field \"%s\"", path, (unsigned long long)line, key);
    long x = -1;
    char *end = NULL;
    if (json_is_integer(v)) x = (long)json_integer_value(v);
    else if (json_is_string(v) && *json_string_value(v)) {
        x = strtol(json_string_value(v), &end, 10);
        if (*end) x = -1;
    } else return vrl_error("%s:%llu: field \"%s\" is not an integer", path, (unsigned long long)line, key);
    if (x < 0 || x >= n)
        return vrl_error("%s:%llu: field \"%s\" = %ld is not a choice index in [0, %d)", path, (unsigned long long)line,
                         key, x, n);
    *out = (int)x;
    return 0;
}

static int doc_alloc(TaskDoc *d, int n) {
    d->n = n;
    d->ctx = calloc((size_t)n, sizeof *d->ctx);
    d->cont = calloc((size_t)n, sizeof *d->cont);
    d->len_norm = calloc((size_t)n, sizeof *d->len_norm);
    return d->ctx && d->cont && d->len_norm ? 0 : vrl_error("out of memory");
}

/* One jsonl line -> one document, per the task's format. */
static int parse_doc(const TaskInfo *info, json_t *o, const char *path, uint64_t line, TaskDoc *d) {
    if (info->kind == TASK_MC) {
        const char *query = field_str(o, "query", path, line);
        json_t *ch = query ? field_strings(o, "choices", path, line) : NULL;
        if (!ch || doc_alloc(d, (int)json_array_size(ch)) < 0) return -1;
        if (field_index(o, "gold", d->n, path, line, &d->gold) < 0) return -1;
        char *ctx = dup_str(query);
        if (info->answer_prompt && ctx) { /* lm-eval: "Question: ...\nAnswer:" */
            char *q = concat3(strip(ctx), "\nAnswer:", "");
            free(ctx);
            ctx = q;
        }
        for (int i = 0; i < d->n && ctx; i++) {
            const char *c = json_string_value(json_array_get(ch, (size_t)i));
            d->ctx[i] = dup_str(ctx);
            d->cont[i] = concat3(" ", c, "");
            d->len_norm[i] = (double)utf8_len(c);
        }
        free(ctx);
    } else if (info->kind == TASK_WINOGRANDE) {
        json_t *opts = field_strings(o, "context_options", path, line);
        const char *cont = opts ? field_str(o, "continuation", path, line) : NULL;
        if (cont && !*cont) return vrl_error("%s:%llu: field \"continuation\" is an empty string", path, (unsigned long long)line);
        if (!cont || doc_alloc(d, (int)json_array_size(opts)) < 0) return -1;
        if (field_index(o, "gold", d->n, path, line, &d->gold) < 0) return -1;
        for (int i = 0; i < d->n; i++) { /* partial scoring: only the continuation is scored */
            d->ctx[i] = dup_str(json_string_value(json_array_get(opts, (size_t)i)));
            d->cont[i] = concat3(" ", cont, "");
            d->len_norm[i] = (double)utf8_len(cont);
        }
    } else if (info->kind == TASK_LAMBADA) { /* lm-eval: text.split(' ')[:-1] joined, ' ' + text.split(' ')[-1] */
        const char *text = field_str(o, "text", path, line);
        if (!text) return -1;
        const char *sp = strrchr(text, ' ');
        if (!*text || (sp && !sp[1]))
            return vrl_error("%s:%llu: field \"text\" has no last word", path, (unsigned long long)line);
        if (doc_alloc(d, 1) < 0) return -1;
        d->gold = 0;
        d->ctx[0] = sp ? strndup(text, (size_t)(sp - text)) : dup_str("");
        d->cont[0] = concat3(" ", sp ? sp + 1 : text, "");
        d->len_norm[0] = 1;
    } else { /* HellaSwag, lm-eval's _process_doc */
        const char *label = field_str(o, "activity_label", path, line);
        json_t *ends = label ? field_strings(o, "endings", path, line) : NULL;
        if (!ends) return -1;
        char *ctx;
        if (json_object_get(o, "ctx_a") && json_object_get(o, "ctx_b")) {
            const char *a = field_str(o, "ctx_a", path, line), *b = a ? field_str(o, "ctx_b", path, line) : NULL;
            if (!b) return -1;
            char *cb = capitalize(b);
            ctx = cb ? concat3(a, " ", cb) : NULL;
            free(cb);
        } else {
            const char *c = field_str(o, "ctx", path, line);
            if (!c) return -1;
            ctx = dup_str(c);
        }
        char *q = ctx ? concat3(label, ": ", ctx) : NULL;
        free(ctx);
        char *query = q ? hellaswag_preprocess(q) : NULL;
        free(q);
        if (!query || doc_alloc(d, (int)json_array_size(ends)) < 0) return free(query), -1;
        if (field_index(o, "label", d->n, path, line, &d->gold) < 0) return free(query), -1;
        for (int i = 0; i < d->n; i++) {
            char *e = hellaswag_preprocess(json_string_value(json_array_get(ends, (size_t)i)));
            d->ctx[i] = dup_str(query);
            d->cont[i] = e ? concat3(" ", e, "") : NULL;
            d->len_norm[i] = e ? (double)utf8_len(e) : 0;
            free(e);
            if (d->len_norm[i] == 0) {
                free(query);
                return vrl_error("%s:%llu: field \"endings\" entry %d is empty after lm-eval's preprocessing", path,
                                 (unsigned long long)line, i);
            }
        }
        free(query);
    }
    for (int i = 0; i < d->n; i++)
        if (!d->ctx[i] || !d->cont[i]) return vrl_error("%s:%llu: out of memory", path, (unsigned long long)line);
    return 0;
}

int task_load(const TaskInfo *info, const char *path, size_t limit, TaskSet *out) {
    memset(out, 0, sizeof *out);
    out->info = info;
    LineReader *r;
    if (lr_open(path, &r) < 0) return -1;
    const char *buf;
    size_t len, cap = 0;
    int rc, status = 0;
    while ((limit == 0 || out->n < limit) && (rc = lr_next(r, &buf, &len)) == 1) {
        const uint64_t line = lr_line(r);
        size_t k = 0;
        while (k < len && strchr(" \t\r", buf[k])) k++;
        if (k == len) continue; /* blank line */
        json_error_t e;
        json_t *o = json_loadb(buf, len, 0, &e);
        if (!o || !json_is_object(o)) {
            json_decref(o);
            status = vrl_error("%s:%llu: not a JSON object%s%s", path, (unsigned long long)line, o ? "" : ": ",
                               o ? "" : e.text);
            break;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            TaskDoc *d = realloc(out->docs, cap * sizeof *d);
            if (!d) {
                json_decref(o);
                status = vrl_error("%s: out of memory", path);
                break;
            }
            out->docs = d;
        }
        memset(&out->docs[out->n], 0, sizeof out->docs[out->n]);
        int prc = parse_doc(info, o, path, line, &out->docs[out->n]);
        json_decref(o);
        out->n++;
        if (prc < 0) {
            status = -1;
            break;
        }
    }
    if (status == 0 && rc < 0) status = -1;
    if (status == 0 && out->n == 0) status = vrl_error("%s: no documents", path);
    lr_close(r);
    if (status < 0) task_free(out);
    return status;
}

void mc_decide(const double *lp, const double *len, int n, int *pred, int *pred_norm) {
    *pred = 0, *pred_norm = 0;
    for (int i = 1; i < n; i++) {
        if (lp[i] > lp[*pred]) *pred = i;
        if (lp[i] / len[i] > lp[*pred_norm] / len[*pred_norm]) *pred_norm = i;
    }
}

/* lm-eval's _encode_pair: trailing spaces of the context move to the continuation; the
 * continuation's ids are those of encode(ctx + cont) after encode(ctx)'s length. */
static int encode_pair(const Tokenizer *tok, const char *ctx, const char *cont, int64_t eos, TokIds *c, TokIds *w,
                       size_t *n_ctx) {
    size_t lc = strlen(ctx), sp = 0;
    while (sp < lc && ctx[lc - 1 - sp] == ' ') sp++;
    c->n = w->n = 0;
    char *whole = concat3(ctx, cont, "");
    if (!whole) return vrl_error("out of memory");
    int rc = tok_encode(tok, ctx, lc - sp, c);
    if (rc == 0) rc = tok_encode(tok, whole, strlen(whole), w);
    free(whole);
    if (rc < 0) return -1;
    if (lc - sp == 0) { /* empty context: EOS before the continuation, as lm-eval */
        w->n = 0;
        if (tok_ids_push(w, (uint32_t)eos) < 0 || tok_encode(tok, cont, strlen(cont), w) < 0) return -1;
        *n_ctx = 1;
        return 0;
    }
    *n_ctx = c->n <= w->n ? c->n : w->n;
    return 0;
}

/* One --log-samples line: the request and its document's result (stolen reference). */
static int log_request(FILE *log, const char *task, size_t doc, int request, const char *ctx, const char *cont,
                       const LLRequest *q, json_t *extra, json_t *result) {
    json_t *o = json_pack("{s:s, s:I, s:i, s:s, s:s, s:f, s:b, s:I}", "task", task, "doc", (json_int_t)doc, "request",
                          request, "context", ctx, "continuation", cont, "loglikelihood", q->logprob, "is_greedy",
                          q->greedy, "tokens", (json_int_t)q->n_scored);
    if (!o) return json_decref(extra), json_decref(result), vrl_error("--log-samples: cannot encode a line (not UTF-8?)");
    if (extra) json_object_update(o, extra), json_decref(extra);
    json_object_set_new(o, "result", result);
    int rc = json_dumpf(o, log, JSON_COMPACT | JSON_REAL_PRECISION(17)) == 0 && fputc('\n', log) != EOF
                 ? 0
                 : vrl_error("--log-samples: write failed");
    json_decref(o);
    return rc;
}

int task_evaluate(Scorer *s, const Tokenizer *tok, const TaskSet *t, FILE *log, TaskResult *res) {
    int64_t eos = tok_token_id(tok, "<|endoftext|>");
    if (eos < 0) eos = 0;
    size_t n_req = 0;
    for (size_t i = 0; i < t->n; i++) n_req += (size_t)t->docs[i].n;
    LLRequest *req = calloc(n_req, sizeof *req);
    TokIds *ids = calloc(n_req, sizeof *ids); /* [n_req] whole ctx+cont ids per request */
    TokIds ctx = {0};
    int rc = req && ids ? 0 : vrl_error("out of memory");
    for (size_t i = 0, k = 0; rc == 0 && i < t->n; i++)
        for (int j = 0; rc == 0 && j < t->docs[i].n; j++, k++) {
            size_t n_ctx = 0;
            rc = encode_pair(tok, t->docs[i].ctx[j], t->docs[i].cont[j], eos, &ctx, &ids[k], &n_ctx);
            if (rc == 0 && n_ctx == 0)
                rc = vrl_error("%s: document %zu: the context tokenizes to nothing", t->info->name, i + 1);
            if (rc == 0)
                req[k] = (LLRequest){.ctx = ids[k].ids, .n_ctx = n_ctx, .cont = ids[k].ids + n_ctx, .n_cont = ids[k].n - n_ctx};
        }
    /* a continuation that tokenizes to nothing scores 0 (nothing to predict) */
    size_t n_live = 0;
    LLRequest **live = rc == 0 ? malloc(n_req * sizeof *live) : NULL;
    LLRequest *batch = rc == 0 ? malloc(n_req * sizeof *batch) : NULL;
    if (rc == 0 && (!live || !batch)) rc = vrl_error("out of memory");
    for (size_t k = 0; rc == 0 && k < n_req; k++) {
        req[k].greedy = 1;
        if (req[k].n_cont > 0) live[n_live] = &req[k], batch[n_live++] = req[k];
    }
    if (rc == 0) rc = scorer_loglik(s, batch, n_live);
    for (size_t k = 0; rc == 0 && k < n_live; k++) *live[k] = batch[k];
    double acc = 0, accn = 0, ll = 0;
    for (size_t i = 0, k = 0; rc == 0 && i < t->n; k += (size_t)t->docs[i].n, i++) {
        const TaskDoc *d = &t->docs[i];
        json_t *result;
        if (t->info->kind == TASK_LAMBADA) { /* lm-eval: acc = is_greedy, perplexity from ll */
            acc += req[k].greedy, ll += req[k].logprob;
            result = json_pack("{s:i, s:f}", "acc", req[k].greedy, "perplexity", req[k].logprob);
        } else {
            double lp[64];
            double len[64];
            if (d->n > 64) {
                rc = vrl_error("%s: a document has %d choices (at most 64)", t->info->name, d->n);
                break;
            }
            for (int j = 0; j < d->n; j++) lp[j] = req[k + j].logprob, len[j] = d->len_norm[j];
            int p, pn;
            mc_decide(lp, len, d->n, &p, &pn);
            acc += p == d->gold;
            accn += pn == d->gold;
            result = t->info->has_acc_norm ? json_pack("{s:i, s:i}", "acc", p == d->gold, "acc_norm", pn == d->gold)
                                           : json_pack("{s:i}", "acc", p == d->gold);
        }
        for (int j = 0; log && rc == 0 && j < d->n; j++)
            rc = log_request(log, t->info->name, i, j, d->ctx[j], d->cont[j], &req[k + j],
                             json_pack("{s:i}", "gold", d->gold), json_deep_copy(result));
        json_decref(result);
    }
    if (rc == 0)
        *res = (TaskResult){.acc = acc / (double)t->n,
                            .acc_norm = accn / (double)t->n,
                            .perplexity = exp(-ll / (double)t->n),
                            .n = t->n};
    for (size_t k = 0; ids && k < n_req; k++) tok_ids_free(&ids[k]);
    tok_ids_free(&ctx);
    free(ids), free(req), free(live), free(batch);
    return rc;
}

/* ------------------------------------------------------------------ perplexity of text */

/* Bytes of the whitespace character at p (Python's str.isspace(), which is what re's \s
 * and str.strip() use on text), 0 if p is not one. */
static size_t space_at(const unsigned char *p) {
    if ((*p >= 0x09 && *p <= 0x0D) || (*p >= 0x1C && *p <= 0x20)) return 1;
    if (p[0] == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0)) return 2;            /* U+0085, U+00A0 */
    if (p[0] == 0xE1 && p[1] == 0x9A && p[2] == 0x80) return 3;              /* U+1680 */
    if (p[0] == 0xE2 && p[1] == 0x80 && ((p[2] >= 0x80 && p[2] <= 0x8A) ||   /* U+2000..200A */
                                         p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF)) /* 2028 2029 202F */
        return 3;
    if (p[0] == 0xE2 && p[1] == 0x81 && p[2] == 0x9F) return 3;              /* U+205F */
    if (p[0] == 0xE3 && p[1] == 0x80 && p[2] == 0x80) return 3;              /* U+3000 */
    return 0;
}

/* Python's str.strip() (Unicode whitespace), in place. */
static char *strip_unicode(char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t a = 0, b = strlen(s), k;
    while (a < b && (k = space_at(p + a))) a += k;
    /* from the end: step back over UTF-8 continuation bytes to each character's start */
    while (b > a) {
        size_t c = b - 1;
        while (c > a && (p[c] & 0xC0) == 0x80) c--;
        if (space_at(p + c) != b - c) break;
        b = c;
    }
    memmove(s, s + a, b - a);
    s[b - a] = 0;
    return s;
}

/* A page's first line, as the dataset script tests it. */
static int is_title(const char *line, size_t len) {
    char *r = malloc(len + 1);
    if (!r) return 0;
    memcpy(r, line, len);
    r[len] = 0;
    r = strip_unicode(replace_all(replace_all(r, "= = =", "==="), "= =", "=="));
    const size_t n = r ? strlen(r) : 0;
    const int title = n >= 2 && !memcmp(r, "= ", 2) && !memcmp(r + n - 2, " =", 2);
    free(r);
    return title;
}

static int all_space(const char *s, size_t len) {
    for (size_t i = 0, k; i < len; i += k)
        if (!(k = space_at((const unsigned char *)s + i))) return 0;
    return 1;
}

static int push_doc(char ***docs, size_t *n, size_t *cap, const char *text, size_t len) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        char **d = realloc(*docs, *cap * sizeof *d);
        if (!d) return vrl_error("WikiText: out of memory");
        *docs = d;
    }
    char *doc = strndup(text, len);
    if (!doc) return vrl_error("WikiText: out of memory");
    (*docs)[(*n)++] = doc;
    return 0;
}

int wikitext_documents(const char *text, size_t len, char ***docs, size_t *n) {
    *docs = NULL, *n = 0;
    size_t cap = 0, page = 0; /* the current page starts at text[page] */
    for (size_t p = 0;;) {
        const char *nl = p < len ? memchr(text + p, '\n', len - p) : NULL;
        const size_t end = nl ? (size_t)(nl - text) : len;
        if (p > 0 && is_title(text + p, end - p)) {
            /* the lines before it joined by "\n": up to the newline before the heading */
            if (!all_space(text + page, p - 1 - page) && push_doc(docs, n, &cap, text + page, p - 1 - page) < 0)
                return -1;
            page = p;
        }
        if (!nl) break;
        p = end + 1;
    }
    return push_doc(docs, n, &cap, text + page, len - page); /* the last page, as the script: always */
}

char *wikitext_detokenize(const char *text) {
    char *s = dup_str(text);
    s = replace_all(s, "s '", "s'");
    s = regex_sub(s, "/' [0-9]/", "/'[0-9]/");
    s = replace_all(s, " @-@ ", "-");
    s = replace_all(s, " @,@ ", ",");
    s = replace_all(s, " @.@ ", ".");
    s = replace_all(s, " : ", ": ");
    s = replace_all(s, " ; ", "; ");
    s = replace_all(s, " . ", ". ");
    s = replace_all(s, " ! ", "! ");
    s = replace_all(s, " ? ", "? ");
    s = replace_all(s, " , ", ", ");
    s = regex_sub(s, "\\(\\s*([^\\)]*?)\\s*\\)", "($1)");
    s = regex_sub(s, "\\[\\s*([^\\]]*?)\\s*\\]", "[$1]");
    s = regex_sub(s, "{\\s*([^}]*?)\\s*}", "{$1}");
    s = regex_sub(s, "\"\\s*([^\"]*?)\\s*\"", "\"$1\"");
    s = regex_sub(s, "'\\s*([^']*?)\\s*'", "'$1'");
    s = replace_all(s, "= = = =", "====");
    s = replace_all(s, "= = =", "===");
    s = replace_all(s, "= =", "==");
    s = replace_all(s, " \xC2\xB0 ", "\xC2\xB0"); /* chr(176) */
    s = replace_all(s, " \n", "\n");
    s = replace_all(s, "\n ", "\n");
    s = replace_all(s, " N ", " 1 ");
    s = replace_all(s, " 's", "'s");
    if (!s && !vrl_last_error()[0]) vrl_error("out of memory");
    return s;
}

size_t count_words(const char *text) {
    /* re.split(r"\s+") gives one more piece than there are whitespace runs */
    size_t runs = 0;
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        size_t k = space_at(p);
        if (!k) {
            p++;
            continue;
        }
        runs++;
        while ((k = space_at(p))) p += k;
    }
    return runs + 1;
}

static int read_text(const char *path, char **text, size_t *len) {
    FILE *f = fopen_regular(path);
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    *text = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (!*text || fread(*text, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(*text);
        return vrl_error("%s: cannot read", path);
    }
    fclose(f);
    (*text)[sz] = 0;
    *len = (size_t)sz;
    if (strlen(*text) != *len) {
        free(*text);
        return vrl_error("%s: holds a NUL byte (not a text file)", path);
    }
    return 0;
}

/* lm-eval's loglikelihood_rolling over documents: text[i] (what the model reads) scored
 * by rolling windows after the prefix; words and bytes of orig[i] (the page before any
 * detokenizing), lm-eval's process_results. */
static int rolling_documents(Scorer *s, const Tokenizer *tok, char **text, char **orig, size_t nd, uint32_t prefix,
                             const char *name, FILE *log, PplResult *r) {
    memset(r, 0, sizeof *r);
    TokIds *ids = calloc(nd ? nd : 1, sizeof *ids);     /* [nd] token ids per document */
    size_t *first = calloc(nd + 1, sizeof *first);       /* [nd+1] each document's first window */
    LLRequest *req = NULL;
    size_t k = 0, cap = 0;
    int rc = ids && first ? 0 : vrl_error("%s: out of memory", name);
    for (size_t i = 0; rc == 0 && i < nd; i++) {
        rc = tok_encode(tok, text[i], strlen(text[i]), &ids[i]);
        first[i] = k;
        if (rc == 0) rc = rolling_requests(ids[i].ids, ids[i].n, s->T, &prefix, &req, &k, &cap);
    }
    first[nd] = k;
    if (rc == 0) rc = scorer_loglik(s, req, k);
    for (size_t i = 0; rc == 0 && i < nd; i++) {
        LLRequest doc = {.logprob = 0, .greedy = 1};
        for (size_t w = first[i]; w < first[i + 1]; w++)
            doc.logprob += req[w].logprob, doc.n_scored += req[w].n_scored, doc.greedy &= req[w].greedy;
        const size_t words = count_words(orig[i]), bytes = strlen(orig[i]);
        r->nll -= doc.logprob, r->tokens += doc.n_scored, r->words += words, r->bytes += bytes, r->docs++;
        if (log)
            rc = log_request(log, name, i, 0, "", text[i], &doc,
                             json_pack("{s:I}", "windows", (json_int_t)(first[i + 1] - first[i])),
                             json_pack("{s:[f,I], s:[f,I], s:[f,I]}", "word_perplexity", doc.logprob, (json_int_t)words,
                                       "byte_perplexity", doc.logprob, (json_int_t)bytes, "bits_per_byte",
                                       doc.logprob, (json_int_t)bytes));
    }
    for (size_t i = 0; ids && i < nd; i++) tok_ids_free(&ids[i]);
    free(ids), free(first), free(req);
    if (rc == 0 && r->tokens == 0) rc = vrl_error("%s: nothing to score", name);
    if (rc == 0) {
        r->token_ppl = exp(r->nll / (double)r->tokens);
        r->word_ppl = exp(r->nll / (double)r->words);
        r->byte_ppl = exp(r->nll / (double)r->bytes);
        r->bits_per_byte = r->nll / (double)r->bytes / M_LN2;
    }
    return rc;
}

int wikitext_evaluate(Scorer *s, const Tokenizer *tok, const char *path, uint32_t prefix, size_t limit,
                      const char *name, FILE *log, PplResult *r) {
    char *text, **docs = NULL, **detok = NULL;
    size_t len, n = 0;
    if (read_text(path, &text, &len) < 0) return -1;
    int rc = wikitext_documents(text, len, &docs, &n);
    free(text);
    const size_t nd = limit && limit < n ? limit : n;
    if (rc == 0 && !(detok = calloc(nd ? nd : 1, sizeof *detok))) rc = vrl_error("%s: out of memory", path);
    for (size_t i = 0; rc == 0 && i < nd; i++)
        if (!(detok[i] = wikitext_detokenize(docs[i]))) rc = vrl_error("%s: page %zu: %s", path, i + 1, vrl_last_error());
    if (rc == 0) rc = rolling_documents(s, tok, detok, docs, nd, prefix, name, log, r);
    for (size_t i = 0; i < n; i++) free(docs[i]);
    for (size_t i = 0; detok && i < nd; i++) free(detok[i]);
    free(docs), free(detok);
    return rc;
}

int text_evaluate(Scorer *s, const Tokenizer *tok, const char *path, uint32_t prefix, FILE *log, PplResult *r) {
    char *text;
    size_t len;
    if (read_text(path, &text, &len) < 0) return -1;
    int rc = rolling_documents(s, tok, &text, &text, 1, prefix, path, log, r);
    free(text);
    return rc;
}
