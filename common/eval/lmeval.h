/* lmeval.h: evaluation of a trained model (docs/evaluation.md), written against the
 * Backend table so it runs on ref and fast alike, the way lm-evaluation-harness 0.4
 * computes it.
 *
 *   - Scorer: log-likelihood of continuations given contexts, as lm-eval's HF model:
 *     input = (ctx + cont)[-(T+1):][:-1], score = Σ log p(cont_j | everything before),
 *     batched by length (see Scorer).
 *   - Rolling log-likelihood of a whole token sequence (lm-eval's
 *     get_rolling_token_windows with context_len 1 + make_disjoint_window): every token
 *     predicted exactly once, windows of T predictions, each later window with a full T
 *     tokens of context. Used for WikiText, text files and per-domain validation.
 *   - Tasks read from jsonl: multiple choice (piqa, arc_easy, arc_challenge,
 *     openbook_qa: query/choices/gold; winogrande: context_options/continuation/gold,
 *     partial scoring; hellaswag: the official ctx/endings/label/activity_label),
 *     acc = argmax Σ log p, acc_norm = argmax Σ log p / len(choice) (Unicode code
 *     points, Python's len()); lambada_openai (text): acc = the last word is the greedy
 *     continuation, perplexity = exp(−mean log p(last word)).
 *   - WikiText raw: lm-eval's pages, wikitext_detokenizer, word/byte perplexity and bits
 *     per byte with words and bytes counted on the original page. */
#ifndef VRL_LMEVAL_H
#define VRL_LMEVAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/model/backend.h"
#include "common/model/spec.h"
#include "common/data/tokenizer.h"

/* ------------------------------------------------------------------ scoring */

/* The scorer owns the model and scores through Backend.token_logprobs, so only a
 * log-probability and a greedy flag per position come back from the backend (a GPU's
 * logits stay on the GPU). Requests are sorted by input length (longest first) and
 * cut into batches whose window is the smallest of T, T/2, T/4, ... (down to 16) that
 * holds the batch's longest input, with B*T/window rows, so every forward costs about
 * B*T tokens and is not mostly padding. A model is created for each shape as the
 * sorted requests reach it (one at a time). A causal model gives a position the same
 * result whatever follows it, so the scores equal the one-shape path's to rounding. */
typedef struct {
    const Backend *be;
    const ModelSpec *spec;
    const void *params;  /* [spec->table.total] in be->dtype */
    int B, T, V;         /* rows at the full window T; B*T tokens per forward */
    int fixed_shape;     /* 1: every forward at [B, T], requests in their given order */
    void *model;         /* the current shape's model, [rows, len] */
    int rows, len;
    int32_t *tokens;     /* [B*T] the batch being built, as [rows, len] */
    int32_t *targets;    /* [B*T] the token each position must predict, -1 where nothing is scored */
    double *logprob;     /* [B*T] log p(target) per position, from be->token_logprobs */
    uint8_t *greedy;     /* [B*T] 1 where the target is the argmax (lowest id on ties) */
    size_t forwards;     /* forward passes so far */
    const char *label;   /* progress on stderr ("piqa: 120/400 requests ...") when set */
} Scorer;

int scorer_init(Scorer *s, const Backend *be, const ModelSpec *spec, const void *params, int B, int T);
void scorer_free(Scorer *s);

/* One log-likelihood request: log p(cont | ctx). n_ctx >= 1 (lm-eval puts the EOS
 * token before an empty context), n_cont >= 1. If n_cont > T only its last T tokens
 * can be predicted: the rest is counted as context (n_scored says how many were). */
typedef struct {
    const uint32_t *ctx;
    size_t n_ctx;
    const uint32_t *cont;
    size_t n_cont;
    double logprob;      /* out: summed log-probability of the scored tokens */
    size_t n_scored;     /* out */
    int greedy;          /* out: 1 if every scored token was the argmax */
} LLRequest;

/* Score n requests, B at a time. 0, or -1 with vrl_error (bad ids, NaN logits). */
int scorer_loglik(Scorer *s, LLRequest *req, size_t n);

/* Rolling log-likelihood of tokens[n]: *nll = −Σ log p over the predicted tokens,
 * *n_pred their count. prefix >= 0: it is put before the sequence so every token is
 * predicted (lm-eval's loglikelihood_rolling, prefix = EOS); prefix < 0: the first
 * token is context only (n − 1 predictions, like training on a chunk). */
/* The same windows as requests appended to *req (k used, cap allocated; realloc'd),
 * for batching many sequences; they point into tokens and prefix (NULL = no prefix),
 * which must outlive them. */
int rolling_requests(const uint32_t *tokens, size_t n, int T, const uint32_t *prefix, LLRequest **req, size_t *k,
                     size_t *cap);

int scorer_rolling(Scorer *s, const uint32_t *tokens, size_t n, int64_t prefix, double *nll, size_t *n_pred);

/* ------------------------------------------------------------------ tasks */

typedef enum { TASK_MC = 0, TASK_WINOGRANDE = 1, TASK_HELLASWAG = 2, TASK_LAMBADA = 3 } TaskKind;

typedef struct {
    const char *name;     /* "piqa" */
    const char *file;     /* "piqa.jsonl" inside the eval folder */
    TaskKind kind;
    int answer_prompt;    /* 1: context = query (trailing space/newlines removed) + "\nAnswer:" */
    int has_acc_norm;     /* lm-eval defines acc_norm for the task */
} TaskInfo;

/* The known tasks: the six multiple-choice ones in Table 1's order, then lambada_openai;
 * NULL-terminated. */
extern const TaskInfo LMEVAL_TASKS[];
const TaskInfo *lmeval_task(const char *name);

/* The required fields of each task file, one line per task, for --help and errors. */
extern const char LMEVAL_TASK_SCHEMAS[];

/* One document: n choices, each a context and a continuation string (LAMBADA: one
 * "choice", the last word). */
typedef struct {
    int n;
    char **ctx;           /* [n] */
    char **cont;          /* [n] including the leading " " delimiter */
    double *len_norm;     /* [n] characters of the choice text (acc_norm's divisor) */
    int gold;
} TaskDoc;

typedef struct {
    const TaskInfo *info;
    TaskDoc *docs;
    size_t n;
} TaskSet;

/* Read a task file (at most `limit` documents, 0 = all). Missing, mistyped or empty
 * fields are errors naming the file and the 1-based line. */
int task_load(const TaskInfo *info, const char *path, size_t limit, TaskSet *out);
void task_free(TaskSet *t);

/* lm-eval's HellaSwag preprocess(): strip, " [title]" -> ". ", drop "[...]", "  " -> " ".
 * malloc'd result. */
char *hellaswag_preprocess(const char *text);

typedef struct {
    double acc, acc_norm;   /* acc_norm: tasks with has_acc_norm */
    double perplexity;      /* LAMBADA: exp(-mean log-likelihood of the last word) */
    size_t n;
} TaskResult;

/* Score every document. log != NULL: one JSON line per request (--log-samples). */
int task_evaluate(Scorer *s, const Tokenizer *tok, const TaskSet *t, FILE *log, TaskResult *r);

/* Decide one document from its choices' summed log-probs lp[n] and lengths len[n]:
 * *pred = argmax lp, *pred_norm = argmax lp/len (first index on ties, like np.argmax). */
void mc_decide(const double *lp, const double *len, int n, int *pred, int *pred_norm);

/* ------------------------------------------------------------------ perplexity of text */

/* Split a WikiText raw file into pages as EleutherAI/wikitext_document_level does: lines
 * (split on "\n"); a line whose text, after "= = =" -> "===", "= =" -> "==" and strip(),
 * starts with "= " and ends with " =" begins a page; a page is its lines joined by "\n"
 * (no newline at its end, except the last page, which keeps the file's final newline);
 * a page of whitespace only before a heading is dropped. *docs[*n] are malloc'd. */
int wikitext_documents(const char *text, size_t len, char ***docs, size_t *n);

/* lm-eval's wikitext_detokenizer. malloc'd result, NULL with vrl_error on failure. */
char *wikitext_detokenize(const char *text);

/* Words as lm-eval counts them: len(re.split(r"\s+", doc)) (pieces, empty ones included;
 * \s is Python's Unicode whitespace). */
size_t count_words(const char *text);

typedef struct {
    double nll;           /* total negative log-likelihood (nats) */
    size_t tokens, words, bytes, docs;
    double token_ppl;     /* exp(nll / tokens) */
    double word_ppl;      /* exp(nll / words), words of the original text */
    double byte_ppl;      /* exp(nll / bytes), UTF-8 bytes of the original text */
    double bits_per_byte; /* nll / bytes / ln 2 */
} PplResult;

/* lm-eval's `wikitext` task on a raw file (wiki.test.raw of WikiText-2 or -103): every
 * page (at most `limit`, 0 = all) detokenized, scored whole by rolling windows after the
 * prefix token, words and bytes counted on the original page. `name` labels the log. */
int wikitext_evaluate(Scorer *s, const Tokenizer *tok, const char *path, uint32_t prefix, size_t limit,
                      const char *name, FILE *log, PplResult *r);

/* A whole text file as one document, as is (no detokenizer): the same figures. */
int text_evaluate(Scorer *s, const Tokenizer *tok, const char *path, uint32_t prefix, FILE *log, PplResult *r);

#endif
