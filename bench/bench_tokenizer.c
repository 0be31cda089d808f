/* bench_tokenizer.c: tokenizer throughput (MB/s of UTF-8 input, tokens/s) on one
 * thread and on all threads. Usage: bench_tokenizer TOKENIZER.json TEXT_FILE [THREADS]
 * The text is split into ~4 KB documents at line ends; threads take documents from a
 * shared counter. bench/tokenizer.sh runs this beside the PyPI `tokenizers` figure. */
#include "common/base/error.h"
#include "common/data/tokenizer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const Tokenizer *t;
    const char *text;
    const size_t *start;       /* [n_docs + 1] document boundaries */
    size_t n_docs;
    atomic_size_t next;
    atomic_ullong tokens;
} Work;

static void *worker(void *arg) {
    Work *w = arg;
    TokIds ids = {0};
    unsigned long long tok = 0;
    for (;;) {
        size_t i = atomic_fetch_add(&w->next, 1);
        if (i >= w->n_docs) break;
        ids.n = 0;
        if (tok_encode(w->t, w->text + w->start[i], w->start[i + 1] - w->start[i], &ids)) {
            fprintf(stderr, "bench_tokenizer: %s\n", vrl_last_error());
            exit(1);
        }
        tok += ids.n;
    }
    atomic_fetch_add(&w->tokens, tok);
    tok_ids_free(&ids);
    return NULL;
}

static double run(Work *w, int threads) {
    atomic_store(&w->next, 0);
    atomic_store(&w->tokens, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t th[256];
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, worker, w);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER.json TEXT_FILE [THREADS]\n");
        return 2;
    }
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    int all = argc > 3 ? atoi(argv[3]) : (int)(nproc > 0 ? nproc : 1);
    if (all < 1 || all > 256) { fprintf(stderr, "bench_tokenizer: THREADS must be 1..256\n"); return 2; }
    Tokenizer *t;
    if (tok_load(argv[1], &t)) { fprintf(stderr, "bench_tokenizer: %s\n", vrl_last_error()); return 1; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { fprintf(stderr, "bench_tokenizer: %s: cannot open\n", argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(n + 1);
    if (!text || fread(text, 1, n, f) != n) { fprintf(stderr, "bench_tokenizer: %s: read error\n", argv[2]); return 1; }
    fclose(f);
    size_t *start = malloc((n / 64 + 2) * sizeof *start), nd = 0;     /* docs are >= 4 KB except the last */
    start[0] = 0;
    for (size_t p = 0; p < n;) {
        size_t e = p + 4096 < n ? p + 4096 : n;
        while (e < n && text[e - 1] != '\n') e++;
        start[++nd] = e;
        p = e;
    }
    Work w = {t, text, start, nd, 0, 0};
    run(&w, 1);                                      /* warm the caches */
    double t1 = run(&w, 1);
    unsigned long long tokens = atomic_load(&w.tokens);
    double tn = run(&w, all);
    printf("vrl tokenizer  %-14s 1 thread : %8.2f MB/s %12.0f tokens/s\n", "", n / 1e6 / t1, tokens / t1);
    printf("vrl tokenizer  %-14s %d threads: %8.2f MB/s %12.0f tokens/s  (%zu docs, %.2f MB, %llu tokens)\n", "", all,
           n / 1e6 / tn, tokens / tn, nd, n / 1e6, tokens);
    free(start);
    free(text);
    tok_free(t);
    return 0;
}
