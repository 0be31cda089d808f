/* lmeval.h: evaluation of a trained model (SPEC.md §7), written against the Backend
 * table so it runs on ref and fast alike, the way lm-evaluation-harness computes it.
 *
 *   - Scorer: log-likelihood of continuations given contexts, batched into the model's
 *     fixed [B, T] shape (rows right-padded with token 0; the model is causal, so the
 *     padding never reaches a scored position). Per request, as lm-eval's HF model:
 *     input = (ctx + cont)[-(T+1):][:-1], score = Σ log p(cont_j | everything before).
 *   - Rolling log-likelihood of a whole token sequence (lm-eval's
 *     get_rolling_token_windows with context_len 1 + make_disjoint_window): every token
 *     predicted exactly once, windows of T predictions, each later window with a full T
 *     tokens of context. Used for WikiText and for per-domain validation.
 *   - Zero-shot multiple choice: tasks read from jsonl (piqa, arc_easy, arc_challenge,
 *     openbook_qa: query/choices/gold; winogrande: context_options/continuation/gold,
 *     partial scoring; hellaswag: the official ctx/endings/label/activity_label),
 *     acc = argmax Σ log p, acc_norm = argmax Σ log p / len(choice) where len counts the
 *     choice's characters (Unicode code points, Python's len() as lm-eval does; the same
 *     as bytes for ASCII text).
 *   - WikiText-2 raw: documents, lm-eval's wikitext_detokenizer, token and word
 *     perplexity. */
#ifndef VRL_LMEVAL_H
#define VRL_LMEVAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/model/backend.h"
#include "common/data/tokenizer.h"

/* ------------------------------------------------------------------ scoring */

typedef struct {
    const Backend *be;
    void *model;         /* created by be->create for [B, T] */
    int B, T, V;
    int32_t *tokens;     /* [B,T] the batch being built */
    void *logits;        /* [B,T,V] host copy in be->dtype */
    const char *label;   /* progress on stderr ("piqa: 120/400 sequences ...") when set */
} Scorer;

int scorer_init(Scorer *s, const Backend *be, void *model, int B, int T, int V);
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

/* ------------------------------------------------------------------ zero-shot tasks */

typedef enum { TASK_MC = 0, TASK_WINOGRANDE = 1, TASK_HELLASWAG = 2 } TaskKind;

typedef struct {
    const char *name;     /* "piqa" */
    const char *file;     /* "piqa.jsonl" inside the eval folder */
    TaskKind kind;
    int answer_prompt;    /* 1: context = query (trailing space/newlines removed) + "\nAnswer:" */
} TaskInfo;

/* The known tasks, in Table 1's order; NULL-terminated. */
extern const TaskInfo LMEVAL_TASKS[];
const TaskInfo *lmeval_task(const char *name);

/* One document: n choices, each a context and a continuation string. */
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

/* Read a task file (at most `limit` documents, 0 = all). Missing or mistyped fields
 * are errors naming the file and the 1-based line. */
int task_load(const TaskInfo *info, const char *path, size_t limit, TaskSet *out);
void task_free(TaskSet *t);

/* lm-eval's HellaSwag preprocess(): strip, " [title]" -> ". ", drop "[...]", "  " -> " ".
 * malloc'd result. */
char *hellaswag_preprocess(const char *text);

typedef struct {
    double acc, acc_norm;
    size_t n;
} TaskResult;

/* Score every document: acc and acc_norm over the set. */
int task_evaluate(Scorer *s, const Tokenizer *tok, const TaskSet *t, TaskResult *r);

/* Decide one document from its choices' summed log-probs lp[n] and lengths len[n]:
 * *pred = argmax lp, *pred_norm = argmax lp/len (first index on ties, like np.argmax). */
void mc_decide(const double *lp, const double *len, int n, int *pred, int *pred_norm);

/* ------------------------------------------------------------------ WikiText */

/* Split wiki.test.raw text into documents: a new document starts at every top-level
 * heading line " = Title = " (one '=' each side; "= = Sub = =" lines stay inside).
 * Text before the first heading belongs to the first document. *docs[*n] are malloc'd. */
int wikitext_documents(const char *text, size_t len, char ***docs, size_t *n);

/* lm-eval's wikitext_detokenizer. malloc'd result, NULL with vrl_error on failure. */
char *wikitext_detokenize(const char *text);

/* Words as lm-eval counts them: len(re.split(r"\s+", doc)) (pieces, empty ones included). */
size_t count_words(const char *text);

typedef struct {
    double nll;           /* total negative log-likelihood (nats) */
    size_t tokens, words, docs;
    double token_ppl, word_ppl;
} WikiResult;

/* Rolling log-likelihood of every document (at most `limit`, 0 = all) of the WikiText
 * raw file, EOS `eos` as the prefix token. */
int wikitext_evaluate(Scorer *s, const Tokenizer *tok, const char *path, int64_t eos, size_t limit, WikiResult *r);

#endif
