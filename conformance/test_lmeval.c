/* test_lmeval.c: evaluation (common/eval/lmeval.c) against a fake model whose
 * log-probabilities are fixed by construction, with a byte-level tokenizer (one token
 * per byte, id = byte value) written by the test: multiple-choice acc / acc_norm,
 * per-token positions, rolling windows, HellaSwag preprocessing on the fixture in the
 * official schema, bad task files, WikiText documents / detokenizer / word count. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/eval/lmeval.h"
#include "common/data/tokenizer.h"
#include "conformance/test_util.h"

/* ---------------------------------------------------------------- a fake model */

/* mode CONST: every position has the same logits `base`; mode SUCC: position p favours
 * the successor of its input token, logit 5 on (tok[p] + 1) mod V and 0 elsewhere.
 * The scorer creates a model per batch shape: each model is its own [B, T] buffer, the
 * shared settings (V, mode, base) and the last forward's input are in g_fake. */
enum { FAKE_CONST = 0, FAKE_SUCC = 1 };
typedef struct {
    int V, mode;
    int B, T;            /* the last forward's shape */
    int32_t tok[65536];  /* [B,T] last forward's input */
    double base[256];    /* [V] logits of FAKE_CONST */
    long forwards;
} Fake;
typedef struct {
    int B, T;
    int32_t *tok;        /* [B,T] this model's last input */
} FakeModel;

static Fake g_fake;
static ModelSpec g_fake_spec;

static void *fake_create(const ModelSpec *spec, int B, int T) {
    (void)spec;
    FakeModel *m = calloc(1, sizeof *m);
    m->B = B, m->T = T;
    m->tok = calloc((size_t)B * T, sizeof *m->tok);
    return m;
}
static void fake_destroy(void *m) {
    free(((FakeModel *)m)->tok);
    free(m);
}
static void fake_set_state(void *m, const void *params, const void *a, const void *b) { (void)m, (void)params, (void)a, (void)b; }
static double fake_forward_loss(void *m_, const int32_t *tokens) {
    FakeModel *m = m_;
    memcpy(m->tok, tokens, (size_t)m->B * m->T * sizeof *tokens);
    cr_assert((size_t)m->B * m->T <= sizeof g_fake.tok / sizeof g_fake.tok[0]);
    memcpy(g_fake.tok, tokens, (size_t)m->B * m->T * sizeof *tokens);
    g_fake.B = m->B, g_fake.T = m->T;
    g_fake.forwards++;
    return 0;
}
/* Backend.token_logprobs of the fake: the forward, then each scored position's fake logits
 * row, log-softmax at the target, and the greedy flag (lowest id among equal maxima). */
static int fake_token_logprobs(void *m_, const int32_t *tokens, const int32_t *targets, double *logprob,
                               uint8_t *greedy) {
    FakeModel *m = m_;
    fake_forward_loss(m, tokens);
    double x[256]; /* [V] one position's logits */
    for (int n = 0; n < m->B * m->T; n++) {
        if (targets[n] < 0) continue;
        double mx = -INFINITY, z = 0;
        int arg = 0;
        for (int v = 0; v < g_fake.V; v++) {
            x[v] = g_fake.mode == FAKE_CONST ? g_fake.base[v] : (v == (m->tok[n] + 1) % g_fake.V ? 5.0 : 0.0);
            if (x[v] > mx) mx = x[v], arg = v;
        }
        for (int v = 0; v < g_fake.V; v++) z += exp(x[v] - mx);
        logprob[n] = x[targets[n]] - mx - log(z);
        greedy[n] = arg == targets[n];
    }
    return 0;
}
static const Backend fake_backend = {.name = "fake",
                                     .dtype = DT_F64,
                                     .create = fake_create,
                                     .destroy = fake_destroy,
                                     .set_state = fake_set_state,
                                     .forward_loss = fake_forward_loss,
                                     .token_logprobs = fake_token_logprobs};

static void fake_scorer(Scorer *s, int B, int T, int V, int mode) {
    memset(&g_fake, 0, sizeof g_fake);
    g_fake.V = V, g_fake.mode = mode;
    memset(&g_fake_spec, 0, sizeof g_fake_spec);
    g_fake_spec.config.vocab_size = V;
    cr_assert_eq(scorer_init(s, &fake_backend, &g_fake_spec, NULL, B, T), 0, "%s", vrl_last_error());
}

/* ---------------------------------------------------------------- a byte tokenizer */

/* GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256 + k. */
static int byte_cp(int b) {
    int k = 0;
    for (int x = 0; x < 256; x++) {
        int printable = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
        if (x == b) return printable ? x : 256 + k;
        if (!printable) k++;
    }
    return -1;
}

/* A byte-level BPE with no merges: every byte is one token whose id is the byte. */
static Tokenizer *byte_tokenizer(const char *dir) {
    json_t *vocab = json_object();
    for (int b = 0; b < 256; b++) {
        int cp = byte_cp(b);
        char key[4] = {0};
        if (cp < 0x80) key[0] = (char)cp;
        else key[0] = (char)(0xC0 | (cp >> 6)), key[1] = (char)(0x80 | (cp & 0x3F));
        json_object_set_new(vocab, key, json_integer(b));
    }
    json_t *root = json_pack("{s:{s:s, s:o, s:[]}, s:{s:s, s:b, s:b}, s:{s:s}, s:[]}", "model", "type", "BPE", "vocab",
                             vocab, "merges", "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0,
                             "use_regex", 1, "decoder", "type", "ByteLevel", "added_tokens");
    cr_assert_not_null(root);
    const char *path = test_path(dir, "bytes.tokenizer.json");
    cr_assert_eq(json_dump_file(root, path, 0), 0);
    json_decref(root);
    Tokenizer *t;
    cr_assert_eq(tok_load(path, &t), 0, "%s", vrl_last_error());
    TokIds ids = {0};
    cr_assert_eq(tok_encode(t, "a b", 3, &ids), 0);
    cr_assert(ids.n == 3 && ids.ids[0] == 'a' && ids.ids[1] == ' ' && ids.ids[2] == 'b', "byte tokenizer is not 1:1");
    tok_ids_free(&ids);
    return t;
}

static const char *write_text(const char *dir, const char *name, const char *text) {
    const char *p = test_path(dir, name);
    test_write(p, text, strlen(text));
    return p;
}

/* ---------------------------------------------------------------- multiple choice */

/* Context-free logits: ' ' 3, 'a' 2, 'b' 1.5, every other byte -30. Doc 1 (gold "aa"):
 * Σ log p(" aa") = lp(' ') + 2 lp(a) ≈ −3.39 < Σ log p(" b") ≈ −2.43, so acc picks "b"
 * (wrong); per character −3.39/2 ≈ −1.70 > −2.43/1, so acc_norm picks "aa" (right).
 * Doc 2 (gold "a", choices "a" / "b"): both right. acc = 0.5, acc_norm = 1. */
Test(lmeval, acc_and_acc_norm_differ_by_construction) {
    const char *dir = test_tmpdir();
    Tokenizer *tok = byte_tokenizer(dir);
    Scorer s;
    fake_scorer(&s, 3, 16, 256, FAKE_CONST);
    for (int v = 0; v < 256; v++) g_fake.base[v] = -30;
    g_fake.base[' '] = 3, g_fake.base['a'] = 2, g_fake.base['b'] = 1.5;
    const char *path = write_text(dir, "obqa.jsonl",
                                  "{\"query\": \"q\", \"choices\": [\"aa\", \"b\"], \"gold\": 0}\n"
                                  "\n"
                                  "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 0}\n");
    TaskSet t;
    cr_assert_eq(task_load(lmeval_task("openbook_qa"), path, 0, &t), 0, "%s", vrl_last_error());
    cr_assert_eq(t.n, 2);
    cr_assert_str_eq(t.docs[0].ctx[0], "q");
    cr_assert_str_eq(t.docs[0].cont[0], " aa");
    cr_assert_eq(t.docs[0].len_norm[0], 2);
    TaskResult r;
    cr_assert_eq(task_evaluate(&s, tok, &t, NULL, &r), 0, "%s", vrl_last_error());
    cr_expect_eq(r.n, 2);
    cr_expect(fabs(r.acc - 0.5) < 1e-15, "acc %g", r.acc);
    cr_expect(fabs(r.acc_norm - 1.0) < 1e-15, "acc_norm %g", r.acc_norm);

    /* the summed log-probability itself */
    double lse = 0;
    for (int v = 0; v < 256; v++) lse += exp(g_fake.base[v]);
    lse = log(lse);
    const uint32_t ctx[1] = {'q'}, cont[3] = {' ', 'a', 'a'};
    LLRequest q = {.ctx = ctx, .n_ctx = 1, .cont = cont, .n_cont = 3};
    cr_assert_eq(scorer_loglik(&s, &q, 1), 0);
    const double want = (3 - lse) + 2 * (2 - lse);
    cr_expect(fabs(q.logprob - want) < 1e-12, "log p(\" aa\") = %.15g, want %.15g", q.logprob, want);
    cr_expect_eq(q.n_scored, 3);
    cr_expect_eq(q.greedy, 0); /* 'a' is not the argmax (' ' is) */
    task_free(&t);
    scorer_free(&s);
    tok_free(tok);
}

/* The answer prompt of piqa/arc and WinoGrande's partial scoring: the contexts differ,
 * the continuation is the same and only it is scored. */
Test(lmeval, prompts_piqa_and_winogrande) {
    const char *dir = test_tmpdir();
    TaskSet t;
    const char *p = write_text(dir, "piqa.jsonl", "{\"query\": \"Question: Why?\\n\", \"choices\": [\"x\", \"y\"], \"gold\": 1}\n");
    cr_assert_eq(task_load(lmeval_task("piqa"), p, 0, &t), 0, "%s", vrl_last_error());
    cr_expect_str_eq(t.docs[0].ctx[1], "Question: Why?\nAnswer:");
    cr_expect_str_eq(t.docs[0].cont[1], " y");
    cr_expect_eq(t.docs[0].gold, 1);
    task_free(&t);
    p = write_text(dir, "wg.jsonl",
                   "{\"context_options\": [\"Tom beat Sam so Tom\", \"Tom beat Sam so Sam\"], \"continuation\": \"lost.\", "
                   "\"gold\": 1}\n");
    cr_assert_eq(task_load(lmeval_task("winogrande"), p, 0, &t), 0, "%s", vrl_last_error());
    cr_expect_str_eq(t.docs[0].ctx[0], "Tom beat Sam so Tom");
    cr_expect_str_eq(t.docs[0].ctx[1], "Tom beat Sam so Sam");
    cr_expect_str_eq(t.docs[0].cont[0], " lost.");
    cr_expect_str_eq(t.docs[0].cont[1], " lost.");

    task_free(&t);
    /* Successor model: ' ' (0x20) is the successor of 0x1F and '!' of ' '. An option
     * ending in 0x1F makes the continuation " !" two successors; the other option's
     * ' ' is not one. So each document's gold is the 0x1F option. */
    p = write_text(dir, "wg2.jsonl",
                   "{\"context_options\": [\"so so A\", \"so \\u001f\"], \"continuation\": \"!\", \"gold\": 1}\n"
                   "{\"context_options\": [\"x \\u001f\", \"x B\"], \"continuation\": \"!\", \"gold\": 0}\n");
    cr_assert_eq(task_load(lmeval_task("winogrande"), p, 0, &t), 0, "%s", vrl_last_error());
    Tokenizer *tok = byte_tokenizer(dir);
    Scorer s;
    fake_scorer(&s, 3, 8, 256, FAKE_SUCC);
    TaskResult r;
    cr_assert_eq(task_evaluate(&s, tok, &t, NULL, &r), 0, "%s", vrl_last_error());
    cr_expect_eq(r.acc, 1.0, "acc %g", r.acc);
    cr_expect_eq(r.acc_norm, 1.0, "acc_norm %g", r.acc_norm);
    task_free(&t);
    scorer_free(&s);
    tok_free(tok);
}

/* Successor model: log p = 5 − lse on a successor, −lse otherwise, lse = ln(e^5 + V − 1).
 * Rolling windows must predict every token exactly once from its true predecessor,
 * whatever the window size and batch. */
Test(lmeval, rolling_windows_predict_each_token_once) {
    const uint32_t toks[11] = {1, 2, 3, 4, 9, 10, 11, 12, 13, 5, 6};
    const int V = 16;
    const double lse = log(exp(5.0) + V - 1);
    for (int T = 2; T <= 12; T += 1)
        for (int B = 1; B <= 3; B++) {
            Scorer s;
            fake_scorer(&s, B, T, V, FAKE_SUCC);
            double nll;
            size_t np;
            /* prefix 0: 0->1 is a successor; 4->9 and 13->5 are not: 9 of 11 */
            cr_assert_eq(scorer_rolling(&s, toks, 11, 0, &nll, &np), 0, "%s", vrl_last_error());
            cr_expect_eq(np, 11, "T=%d B=%d: %zu predictions", T, B, np);
            cr_expect(fabs(nll - (11 * lse - 9 * 5)) < 1e-12, "T=%d B=%d: nll %.15g", T, B, nll);
            /* no prefix: 10 predictions, 8 successors */
            cr_assert_eq(scorer_rolling(&s, toks, 11, -1, &nll, &np), 0);
            cr_expect_eq(np, 10);
            cr_expect(fabs(nll - (10 * lse - 8 * 5)) < 1e-12, "T=%d B=%d (no prefix): nll %.15g", T, B, nll);
            scorer_free(&s);
        }
}

/* A long request keeps its last T+1 tokens (lm-eval's [-(T+1):][:-1]); a continuation
 * longer than T is scored on its last T tokens only. */
Test(lmeval, truncation_keeps_the_tail) {
    Scorer s;
    fake_scorer(&s, 1, 4, 16, FAKE_SUCC);
    const uint32_t ctx[6] = {7, 7, 7, 7, 7, 1}, cont[2] = {2, 9};
    LLRequest q = {.ctx = ctx, .n_ctx = 6, .cont = cont, .n_cont = 2};
    cr_assert_eq(scorer_loglik(&s, &q, 1), 0);
    const double lse = log(exp(5.0) + 15);
    cr_expect_eq(q.n_scored, 2);
    cr_expect(fabs(q.logprob - ((5 - lse) + (-lse))) < 1e-12, "%.15g", q.logprob);
    cr_expect_eq(g_fake.tok[0], 7); /* input = 7 7 1 2 */
    cr_expect_eq(g_fake.tok[2], 1);
    cr_expect_eq(g_fake.tok[3], 2);
    const uint32_t long_cont[6] = {3, 4, 5, 6, 7, 8};
    q = (LLRequest){.ctx = ctx, .n_ctx = 1, .cont = long_cont, .n_cont = 6};
    cr_assert_eq(scorer_loglik(&s, &q, 1), 0);
    cr_expect_eq(q.n_scored, 4);
    cr_expect(fabs(q.logprob - 4 * (5 - lse)) < 1e-12);
    cr_expect_eq(q.greedy, 1);
    scorer_free(&s);
}

/* ---------------------------------------------------------------- HellaSwag */

Test(lmeval, hellaswag_official_schema_and_preprocess) {
    char path[4096];
    snprintf(path, sizeof path, "%s/conformance/fixtures/hellaswag_mini.jsonl", VRL_SOURCE_DIR);
    TaskSet t;
    cr_assert_eq(task_load(lmeval_task("hellaswag"), path, 0, &t), 0, "%s", vrl_last_error());
    cr_assert_eq(t.n, 3);
    /* expected strings from lm-eval's hellaswag utils.preprocess / _process_doc, run in Python */
    cr_expect_str_eq(t.docs[0].ctx[0], "Removing ice from car: Then, the man writes over the snow covering the window of "
                                       "a car, and a woman wearing winter clothes smiles. Then");
    cr_expect_str_eq(t.docs[0].cont[3], " , the man continues removing the snow on his car.");
    cr_expect_eq(t.docs[0].gold, 3);
    cr_expect_eq(t.docs[0].len_norm[1], 126);
    cr_expect_str_eq(t.docs[1].ctx[0], "Home and Garden: How to grow tomatoes. Pick a spot. tomatoes need sun.");
    cr_expect_str_eq(t.docs[1].cont[0], " Water them daily.");
    cr_expect_eq(t.docs[1].gold, 0); /* label given as the string "0" */
    cr_expect_str_eq(t.docs[2].ctx[0], "Personal care and style: A woman is seen speaking to the camera. She");
    cr_expect_eq(t.docs[2].len_norm[1], 17);
    task_free(&t);
    /* --limit */
    cr_assert_eq(task_load(lmeval_task("hellaswag"), path, 2, &t), 0);
    cr_expect_eq(t.n, 2);
    task_free(&t);
}

/* ---------------------------------------------------------------- bad input */

Test(lmeval, bad_task_files_name_file_and_line) {
    const char *dir = test_tmpdir();
    TaskSet t;
    const char *p = write_text(dir, "arc.jsonl",
                               "{\"query\": \"a\", \"choices\": [\"x\", \"y\"], \"gold\": 0}\n"
                               "{\"query\": \"b\", \"gold\": 0}\n");
    char want[4200];
    snprintf(want, sizeof want, "%s:2: missing field \"choices\"", p);
    expect_error(task_load(lmeval_task("arc_easy"), p, 0, &t), want);
    p = write_text(dir, "g.jsonl", "{\"query\": \"a\", \"choices\": [\"x\", \"y\"], \"gold\": 2}\n");
    expect_error(task_load(lmeval_task("arc_easy"), p, 0, &t), ":1: field \"gold\" = 2 is not a choice index");
    p = write_text(dir, "w.jsonl", "{\"context_options\": [\"a\", \"b\"], \"gold\": 0}\n");
    expect_error(task_load(lmeval_task("winogrande"), p, 0, &t), ":1: missing field \"continuation\"");
    p = write_text(dir, "h.jsonl", "{\"activity_label\": \"x\", \"ctx\": \"c\", \"endings\": [\"a\", \"b\"]}\n");
    expect_error(task_load(lmeval_task("hellaswag"), p, 0, &t), ":1: missing field \"label\"");
    p = write_text(dir, "j.jsonl", "{\"query\": \n");
    expect_error(task_load(lmeval_task("piqa"), p, 0, &t), "j.jsonl:1: not a JSON object");
    expect_error(task_load(lmeval_task("piqa"), test_path(dir, "absent.jsonl"), 0, &t), "absent.jsonl");
}

/* ---------------------------------------------------------------- WikiText */

Test(lmeval, wikitext_documents_detokenizer_words) {
    /* expected pages from EleutherAI/wikitext_document_level's _generate_examples, run in
     * Python: no newline at a page's end but the last; whitespace-only lead dropped */
    const char *text = " \n = A = \n \n x y \n = = Sub = = \n z \n = B = \n w \n";
    char **docs;
    size_t n;
    cr_assert_eq(wikitext_documents(text, strlen(text), &docs, &n), 0);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(docs[0], " = A = \n \n x y \n = = Sub = = \n z ");
    cr_expect_str_eq(docs[1], " = B = \n w \n");
    for (size_t i = 0; i < n; i++) free(docs[i]);
    free(docs);
    /* a lead that is not blank is a page of its own; "= = = C = = =" is no heading; Unicode
     * spaces count for words (U+00A0, U+2003) as Python's \s does */
    text = "lead\xC2\xA0text \n = A = \n a\xE2\x80\x83" "b \n = = = C = = = \n = B = ";
    cr_assert_eq(wikitext_documents(text, strlen(text), &docs, &n), 0);
    cr_assert_eq(n, 3);
    cr_expect_str_eq(docs[0], "lead\xC2\xA0text ");
    cr_expect_str_eq(docs[1], " = A = \n a\xE2\x80\x83" "b \n = = = C = = = ");
    cr_expect_str_eq(docs[2], " = B = ");
    const size_t words[3] = {3, 14, 5}, bytes[3] = {11, 31, 7}; /* len(re.split(r"\s+", p)), len(p.encode()) */
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(count_words(docs[i]), words[i], "page %zu: %zu words", i, count_words(docs[i]));
        cr_expect_eq(strlen(docs[i]), bytes[i]);
        free(docs[i]);
    }
    free(docs);
    cr_expect_eq(count_words("a\x1c" "b\xE3\x80\x80" "c\xE2\x80\x8B" "d"), 3); /* U+001C, U+3000 yes; U+200B no */

    /* expected output from lm-eval's preprocess_wikitext.wikitext_detokenizer in Python */
    char *d = wikitext_detokenize(" = Tom 's Hat = \n \n The hat ( made in 1 @,@ 000 N ) was \" very big \" , at 5 @.@ "
                                  "3 \xC2\xB0 C ; they said ' yes ' . \n = = Later years = = \n [ edit ] { a } \n");
    cr_assert_not_null(d, "%s", vrl_last_error());
    cr_expect_str_eq(d, " = Tom's Hat =\n\nThe hat (made in 1,000 N) was \"very big\", at 5.3\xC2\xB0"
                        "C; they said' yes'.\n== Later years ==\n[edit] {a}\n");
    cr_expect_eq(count_words(d), 26); /* len(re.split(r"\s+", d)) in Python */
    free(d);
    cr_expect_eq(count_words(""), 1);
    cr_expect_eq(count_words(" a  b\n"), 4); /* '', 'a', 'b', '' */
}

/* ---------------------------------------------------------------- LAMBADA, logs, batching */

/* lm-eval's lambada_openai: context = the text before the last space, continuation =
 * " " + the last word; acc = the continuation is the greedy one; perplexity =
 * exp(−mean log p). Successor model: "ab" then " " is no successor of 'b' ('c' is). */
Test(lmeval, lambada_last_word_acc_and_perplexity) {
    const char *dir = test_tmpdir();
    const char *p = write_text(dir, "lambada.jsonl", "{\"text\": \"x y \\u001f!\"}\n{\"text\": \"ab cd\"}\n{\"text\": \"alone\"}\n"
                                  "{\"text\": \"x\\u001f !\"}\n");
    TaskSet t;
    cr_assert_eq(task_load(lmeval_task("lambada_openai"), p, 0, &t), 0, "%s", vrl_last_error());
    cr_assert_eq(t.n, 4);
    cr_expect_str_eq(t.docs[0].ctx[0], "x y");
    cr_expect_str_eq(t.docs[0].cont[0], " \x1f!");
    cr_expect_str_eq(t.docs[2].ctx[0], ""); /* no space: EOS is the context, as lm-eval */
    cr_expect_str_eq(t.docs[2].cont[0], " alone");
    Tokenizer *tok = byte_tokenizer(dir);
    Scorer s;
    fake_scorer(&s, 2, 16, 256, FAKE_SUCC);
    const char *logp = test_path(dir, "samples.jsonl");
    FILE *samples = fopen(logp, "w");
    TaskResult r;
    cr_assert_eq(task_evaluate(&s, tok, &t, samples, &r), 0, "%s", vrl_last_error());
    fclose(samples);
    /* successors among the scored tokens: doc 0 ' '<-'y', 0x1F<-' ', '!'<-0x1F: none;
     * doc 1 ' '<-'b', 'c'<-' ' no, 'd'<-'c' yes; doc 2 ' '<-EOS (id 0 here), "alone": none;
     * doc 3 ' '<-0x1F, '!'<-' ': both, the only greedy document */
    const double lse = log(exp(5.0) + 255);
    const double ll = (-3 * lse) + (-3 * lse + 5) + (-6 * lse) + 2 * (5 - lse);
    cr_expect_eq(r.acc, 0.25);
    cr_expect(fabs(r.perplexity - exp(-ll / 4)) < 1e-9 * r.perplexity, "perplexity %.15g", r.perplexity);
    /* --log-samples: one line per request with the document's result */
    json_error_t e;
    FILE *f = fopen(logp, "r");
    size_t lines = 0;
    json_t *o;
    while ((o = json_loadf(f, JSON_DISABLE_EOF_CHECK, &e))) {
        const int greedy = lines == 3;
        cr_expect_str_eq(json_string_value(json_object_get(o, "task")), "lambada_openai");
        cr_expect_eq(json_integer_value(json_object_get(o, "doc")), (json_int_t)lines);
        cr_expect_eq(json_is_true(json_object_get(o, "is_greedy")), greedy);
        cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "result"), "acc")), greedy);
        json_decref(o);
        lines++;
        int c;
        while ((c = fgetc(f)) == '\n') {}
        if (c == EOF) break;
        ungetc(c, f);
    }
    fclose(f);
    cr_expect_eq(lines, 4);
    task_free(&t);
    scorer_free(&s);
    tok_free(tok);
    p = write_text(dir, "bad.jsonl", "{\"text\": \"a b \"}\n");
    expect_error(task_load(lmeval_task("lambada_openai"), p, 0, &t), "bad.jsonl:1: field \"text\" has no last word");
}

/* Empty choices are refused with the file and line; WinoGrande has no acc_norm. */
Test(lmeval, empty_choice_refused) {
    const char *dir = test_tmpdir();
    TaskSet t;
    const char *p = write_text(dir, "piqa.jsonl",
                               "{\"query\": \"a\", \"choices\": [\"x\", \"y\"], \"gold\": 0}\n"
                               "{\"query\": \"a\", \"choices\": [\"x\", \"\"], \"gold\": 0}\n");
    expect_error(task_load(lmeval_task("piqa"), p, 0, &t), "piqa.jsonl:2: field \"choices\" entry 1 is an empty string");
    p = write_text(dir, "wg.jsonl", "{\"context_options\": [\"a\", \"b\"], \"continuation\": \"\", \"gold\": 0}\n");
    expect_error(task_load(lmeval_task("winogrande"), p, 0, &t), "wg.jsonl:1: field \"continuation\" is an empty string");
    cr_expect_eq(lmeval_task("winogrande")->has_acc_norm, 0);
    cr_expect_eq(lmeval_task("piqa")->has_acc_norm, 1);
}

/* Batching by length gives every request the score of the one-shape path, with fewer
 * padded tokens: requests of lengths 1..40 on a window of 64. */
Test(lmeval, length_buckets_match_fixed_shape) {
    enum { N = 40 };
    uint32_t toks[N + 1];
    for (int i = 0; i <= N; i++) toks[i] = (uint32_t)((i * 7 + (i % 3 == 0)) % 16);
    LLRequest a[N], b[N];
    for (int i = 0; i < N; i++) /* context toks[0..i], continuation the next 1..3 tokens */
        a[i] = (LLRequest){.ctx = toks, .n_ctx = (size_t)(i % 37) + 1, .cont = toks + (i % 37) + 1, .n_cont = (size_t)(i % 3) + 1};
    memcpy(b, a, sizeof a);
    Scorer s;
    fake_scorer(&s, 2, 64, 16, FAKE_SUCC);
    s.fixed_shape = 1;
    cr_assert_eq(scorer_loglik(&s, a, N), 0, "%s", vrl_last_error());
    const size_t fixed_forwards = s.forwards;
    scorer_free(&s);
    fake_scorer(&s, 2, 64, 16, FAKE_SUCC);
    cr_assert_eq(scorer_loglik(&s, b, N), 0, "%s", vrl_last_error());
    for (int i = 0; i < N; i++) {
        cr_expect_eq(a[i].logprob, b[i].logprob, "request %d: %.17g vs %.17g", i, a[i].logprob, b[i].logprob);
        cr_expect_eq(a[i].n_scored, b[i].n_scored);
        cr_expect_eq(a[i].greedy, b[i].greedy);
    }
    cr_expect_eq(fixed_forwards, 20);
    /* inputs of 1..39 tokens, longest first: 6 in windows of 64 (2 rows, 3 forwards), 16 in
     * 32 (4 rows, 4 forwards), 18 in 16 (8 rows, 3 forwards) */
    cr_expect_eq(s.forwards, 10, "%zu forwards with buckets", s.forwards);
    scorer_free(&s);
}

/* Words and bytes come from the page before detokenizing, tokens after it. */
Test(lmeval, wikitext_counts_on_the_original_page) {
    const char *dir = test_tmpdir();
    Tokenizer *tok = byte_tokenizer(dir);
    const char *p = write_text(dir, "wiki.raw", " \n = T = \n a @-@ b , c \n");
    Scorer s;
    fake_scorer(&s, 2, 8, 256, FAKE_CONST);
    PplResult r;
    cr_assert_eq(wikitext_evaluate(&s, tok, p, 0, 0, "wikitext", NULL, &r), 0, "%s", vrl_last_error());
    /* page " = T = \n a @-@ b , c \n": 10 words, 22 bytes (Python); detokenized
     * " = T =\na-b, c\n": 14 tokens */
    cr_expect_eq(r.docs, 1);
    cr_expect_eq(r.words, 10);
    cr_expect_eq(r.bytes, 22);
    cr_expect_eq(r.tokens, 14);
    const double nll = 14 * log(256.0); /* uniform logits */
    cr_expect(fabs(r.nll - nll) < 1e-9);
    cr_expect(fabs(r.word_ppl - exp(nll / 10)) < 1e-9 * r.word_ppl);
    cr_expect(fabs(r.byte_ppl - exp(nll / 22)) < 1e-9 * r.byte_ppl);
    cr_expect(fabs(r.bits_per_byte - nll / 22 / log(2.0)) < 1e-12);
    scorer_free(&s);
    tok_free(tok);
}
