/* test_shard_memory.c: training on a multi-GB shard set costs the model's memory, not
 * the data's. Plain C test program (not Criterion: it runs `vrl train` as a child and
 * reads the child's peak RSS from wait4()).
 *
 * It writes two formulas.md §3 folders (7 RedPajama domains at the formulas.md weights, 2048-token
 * chunks, uint16 ids of a 50277-token vocabulary) in $TMPDIR: a small one (a few chunks
 * per domain) and a big one (VRL_MEMTEST_GIB GiB of ids, default 4, as 8 MiB shard files
 * hard-linked to one written shard per domain: see write_set), trains the same
 * model for the same few steps on each, and asserts
 *     peak RSS(big) < bound = peak RSS(small) + MARGIN,   and   big set > bound,
 * i.e. the shards are not read into memory. peak RSS(small) is the model's own memory
 * (weights, gradients, AdamW moments, activations, the program) measured, not guessed;
 * the parameter-count estimate is printed beside it. Both folders are deleted at the end.
 * Below 1 GiB free in $TMPDIR the test is skipped (exit 77).
 *
 * Usage: test_shard_memory VRL_BINARY */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/error.h"
#include "common/data/mixture.h"
#include "common/data/shard.h"

#define VOCAB 50277
#define CHUNK 2048
#define SHARD_CHUNKS 2048 /* 4M ids = 8 MiB per shard */
/* MARGIN: what may grow with the data and is not the data itself: the per-domain chunk
 * permutations (8 bytes per chunk: 1M chunks = 8 MiB for 4 GiB of ids), the file pages a
 * few batches touch (one page per row per step) and allocator noise. */
#define MARGIN_MIB 48.0

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t next_id(void) { /* xorshift64*: arbitrary ids, not text */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % VOCAB;
}

static void die(const char *what) {
    fprintf(stderr, "test_shard_memory: %s: %s\n", what, vrl_last_error()[0] ? vrl_last_error() : strerror(errno));
    exit(1);
}

/* DIR/{train,validation}/DOMAIN-NNNNN.bin: train_chunks[d] chunks per domain (a multiple
 * of SHARD_CHUNKS, or fewer), 1 validation chunk. Shard 0 of each domain is written; the
 * others are hard links to it: the loader maps every file as its own shard, so memory
 * behaves as with distinct files, while the disk holds 7 shards (the test takes seconds,
 * not minutes of writing, and 56 MiB of disk, not the set's size). */
static void write_set(const char *dir, const uint64_t *train_chunks, uint32_t *buf) {
    char p[4200], first[4200];
    if (mkdir(dir, 0755) < 0) die(dir);
    snprintf(p, sizeof p, "%s/train", dir);
    if (mkdir(p, 0755) < 0) die(p);
    snprintf(p, sizeof p, "%s/validation", dir);
    if (mkdir(p, 0755) < 0) die(p);
    for (int d = 0; d < 7; d++) {
        const char *dom = MIXTURE_DEFAULT_DOMAINS[d];
        const uint64_t c = train_chunks[d] < SHARD_CHUNKS ? train_chunks[d] : SHARD_CHUNKS;
        for (uint64_t i = 0; i < c * CHUNK; i++) buf[i] = next_id();
        snprintf(first, sizeof first, "%s/train/%s-00000.bin", dir, dom);
        if (shard_write(first, buf, c * CHUNK, VOCAB, CHUNK, dom) < 0) die(first);
        for (uint64_t s = 1; s < train_chunks[d] / c; s++) {
            snprintf(p, sizeof p, "%s/train/%s-%05llu.bin", dir, dom, (unsigned long long)s);
            if (link(first, p) < 0) die(p);
        }
        for (uint64_t i = 0; i < CHUNK; i++) buf[i] = next_id();
        snprintf(p, sizeof p, "%s/validation/%s-00000.bin", dir, dom);
        if (shard_write(p, buf, CHUNK, VOCAB, CHUNK, dom) < 0) die(p);
    }
}

/* Run `vrl train` on DATA; return the child's peak RSS in MiB and its wall time. */
static double train_peak_mib(const char *vrl, const char *model, const char *data, const char *out, double *wall) {
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execl(vrl, vrl, "train", "--model", model, "--data", data, "--steps", "4", "--batch", "4", "--seq", "128",
              "--warmup", "1", "--eval-every", "0", "--eval-batches", "1", "--quiet", "--out", out, (char *)NULL);
        perror(vrl);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) die("wait4");
    gettimeofday(&t1, NULL);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "test_shard_memory: vrl train on %s failed (status %d)\n", data, status);
        exit(1);
    }
    *wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_usec - t0.tv_usec);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_shard_memory VRL_BINARY\n");
        return 2;
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    double gib = getenv("VRL_MEMTEST_GIB") ? atof(getenv("VRL_MEMTEST_GIB")) : 4.0;
    struct statvfs fs;
    if (statvfs(tmp, &fs) < 0) die(tmp);
    const double free_gib = (double)fs.f_bavail * (double)fs.f_frsize / (1u << 30);
    if (free_gib < 1.0) {
        printf("SKIP: %.1f GiB free in %s, the memory test needs at least 1 GiB\n", free_gib, tmp);
        return 77;
    }
    char root[4200], small[4300], big[4300], model[4300], run[4300];
    snprintf(root, sizeof root, "%s/shard_memory_XXXXXX", tmp);
    if (!mkdtemp(root)) die(root);
    snprintf(small, sizeof small, "%s/small", root);
    snprintf(big, sizeof big, "%s/big", root);
    snprintf(model, sizeof model, "%s/d64.json", root);
    FILE *f = fopen(model, "w");
    if (!f) die(model);
    /* 4 layers, d 64, the GPT-NeoX vocabulary: 6,667,520 parameters (most in the embedding and head) */
    fprintf(f, "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 224, \"num_hidden_layers\": 4,"
               " \"num_attention_heads\": 2, \"num_key_value_heads\": 2, \"vocab_size\": %d,"
               " \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0}\n", VOCAB);
    fclose(f);

    uint32_t *buf = malloc((size_t)SHARD_CHUNKS * CHUNK * sizeof *buf); /* [SHARD_CHUNKS * CHUNK] one shard's ids */
    if (!buf) die("out of memory");
    const uint64_t total_chunks = (uint64_t)(gib * (1u << 30) / 2 / CHUNK);  /* 2-byte ids */
    uint64_t small_chunks[7], big_chunks[7], big_bytes = 0;
    for (int d = 0; d < 7; d++) {
        small_chunks[d] = 4;
        big_chunks[d] = (uint64_t)(MIXTURE_DEFAULT_WEIGHTS[d] * (double)total_chunks) / SHARD_CHUNKS * SHARD_CHUNKS;
        big_bytes += (big_chunks[d] + 1) * CHUNK * 2 + (big_chunks[d] / SHARD_CHUNKS + 1) * SHARD_HEADER_BYTES;
    }
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    write_set(small, small_chunks, buf);
    write_set(big, big_chunks, buf);
    gettimeofday(&t1, NULL);
    free(buf);
    const double gen_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_usec - t0.tv_usec);
    uint64_t big_ids = 0;
    for (int d = 0; d < 7; d++) big_ids += big_chunks[d] * CHUNK;
    printf("shard set: %.2f GiB (%llu ids, 7 domains, uint16, 8 MiB shards, hard-linked) made in %.1f s\n",
           (double)big_bytes / (1u << 30), (unsigned long long)big_ids, gen_s);

    double wall_small, wall_big;
    snprintf(run, sizeof run, "%s/run_small", root);
    const double rss_small = train_peak_mib(argv[1], model, small, run, &wall_small);
    snprintf(run, sizeof run, "%s/run_big", root);
    const double rss_big = train_peak_mib(argv[1], model, big, run, &wall_big);
    const double params_mib = 6667520.0 * 4 * 4 / (1 << 20); /* fp32 weights, gradients, AdamW m and v */
    const double bound = rss_small + MARGIN_MIB, set_mib = (double)big_bytes / (1 << 20);
    printf("model: 6,667,520 parameters = %.1f MiB as weights + gradients + AdamW moments (fp32)\n", params_mib);
    printf("peak RSS, 4 steps x 4 x 128 tokens: %.1f MiB on the %d-chunk set (%.1f s), %.1f MiB on the %.0f MiB set "
           "(%.1f s, including the checksum pass over every shard)\n",
           rss_small, 7 * 4, wall_small, rss_big, set_mib, wall_big);
    printf("bound: %.1f MiB (small-set RSS + %.0f MiB margin); shard set / bound = %.1f\n", bound, MARGIN_MIB,
           set_mib / bound);

    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (getenv("VRL_MEMTEST_KEEP")) printf("kept %s\n", root);
    else if (system(cmd) != 0) fprintf(stderr, "test_shard_memory: could not remove %s\n", root);
    if (!(set_mib > bound)) {
        printf("FAIL: the shard set (%.0f MiB) is not bigger than the bound (%.1f MiB): the test shows nothing\n",
               set_mib, bound);
        return 1;
    }
    if (!(rss_big < bound)) {
        printf("FAIL: peak RSS %.1f MiB on the big set exceeds %.1f MiB: shards are held in memory\n", rss_big, bound);
        return 1;
    }
    printf("ok: peak RSS stays within %.1f MiB of the model's run on a tiny set\n", rss_big - rss_small);
    return 0;
}
