/* metrics.c: JSON-lines metrics and the terminal progress line. */
#include "common/run/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/clock.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/run/run_paths.h"

/* Keep the lines whose "step" is <= keep: rewrite the file atomically. */
static int truncate_after(const char *path, long keep) {
    void *data;
    size_t n;
    if (!file_exists(path)) return 0;
    if (read_file_all(path, &data, &n) < 0) return -1;
    char *out = malloc(n + 1), *src = data;
    size_t o = 0;
    if (!out) {
        free(data);
        return vrl_error("%s: out of memory", path);
    }
    for (char *line = src; line < src + n;) {
        char *end = memchr(line, '\n', (size_t)(src + n - line));
        size_t len = end ? (size_t)(end - line) + 1 : (size_t)(src + n - line);
        const char *k = strstr(line, "\"step\":");
        long step = (k && k < line + len) ? strtol(k + 7, NULL, 10) : 0;
        if (step <= keep) {
            memcpy(out + o, line, len);
            o += len;
        }
        line += len;
    }
    int rc = write_file_atomic(path, out, o);
    free(out);
    free(data);
    return rc;
}

int metrics_open(Metrics *m, const char *run_dir, long keep_upto_step) {
    memset(m, 0, sizeof *m);
    if (run_path(m->path, sizeof m->path, run_dir, RUN_METRICS) < 0) return -1;
    if (keep_upto_step >= 0 && truncate_after(m->path, keep_upto_step) < 0) return -1;
    m->f = fopen(m->path, keep_upto_step >= 0 ? "a" : "w");
    if (!m->f) return vrl_error("%s: cannot open for writing", m->path);
    m->tty = isatty(STDERR_FILENO);
    m->t_start = now_seconds();
    return 0;
}

void metrics_close(Metrics *m) {
    if (m->f) fclose(m->f);
    m->f = NULL;
}

/* %.17g round-trips a double exactly, so logs can be compared bit for bit. */
void metrics_log_step(Metrics *m, long step, double loss, double lr, double grad_norm, double tokens_per_s) {
    fprintf(m->f,
            "{\"step\":%ld,\"loss\":%.17g,\"lr\":%.17g,\"grad_norm\":%.17g,\"tokens_per_s\":%.1f,"
            "\"elapsed_s\":%.3f}\n",
            step, loss, lr, grad_norm, tokens_per_s, now_seconds() - m->t_start);
    fflush(m->f);
}

void metrics_log_eval(Metrics *m, long step, const char *split, const char *domain, double loss) {
    if (domain)
        fprintf(m->f, "{\"step\":%ld,\"split\":\"%s\",\"domain\":\"%s\",\"val_loss\":%.17g}\n", step, split, domain,
                loss);
    else
        fprintf(m->f, "{\"step\":%ld,\"split\":\"%s\",\"val_loss\":%.17g}\n", step, split, loss);
    fflush(m->f);
}

void metrics_log_resume(Metrics *m, long step, const char *changes_json) {
    fprintf(m->f, "{\"step\":%ld,\"event\":\"resume\",\"changed\":%s}\n", step, changes_json);
    fflush(m->f);
}

static void format_duration(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

void progress_print(Metrics *m, long step, long total, double loss, double lr, double grad_norm,
                    double tokens_per_s, double seconds_per_step) {
    char eta[32], el[32];
    format_duration((double)(total - step) * seconds_per_step, eta, sizeof eta);
    format_duration(now_seconds() - m->t_start, el, sizeof el);
    fprintf(stderr, "%sstep %*ld/%ld | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | %s elapsed | ETA %s%s",
            m->tty ? "\r" : "", (int)snprintf(NULL, 0, "%ld", total), step, total, loss, lr, grad_norm,
            tokens_per_s, el, eta, m->tty ? "   " : "\n");
    fflush(stderr);
}

void progress_end(Metrics *m) {
    if (m->tty) fputc('\n', stderr);
}
