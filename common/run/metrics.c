/* metrics.c: JSON-lines metrics and the terminal progress line. */
#include "common/run/metrics.h"
#include <errno.h>
#include <fcntl.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/clock.h"
#include "common/base/error.h"
#include "common/base/fsutil.h"
#include "common/run/run_paths.h"

/* Keep the lines that are whole JSON objects whose "step" is <= keep; rewrite the file
 * atomically. A line cut by a full disk, or glued to the next one, does not parse and goes. */
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
        if (!end) break; /* no newline: the write of this line never finished */
        const size_t len = (size_t)(end - line) + 1;
        json_t *o_line = json_loadb(line, len - 1, 0, NULL);
        json_t *step = json_is_object(o_line) ? json_object_get(o_line, "step") : NULL;
        if (json_is_integer(step) && json_integer_value(step) <= keep) {
            memcpy(out + o, line, len);
            o += len;
        }
        json_decref(o_line);
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
    if (keep_upto_step < 0 && file_exists(m->path)) {
        /* a run that stopped before its first save, started again: its log is kept aside */
        char old[sizeof m->path + 16];
        snprintf(old, sizeof old, "%s.restarted", m->path);
        if (rename(m->path, old) != 0) return vrl_error("%s: cannot move aside to %s", m->path, old);
        fprintf(stderr, "vrl train: %s held a log of a run with no checkpoint; kept as %s\n", m->path, old);
    }
    /* O_NOFOLLOW: a metrics.jsonl link in a received folder is refused, never appended through */
    const int fd = open(m->path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (keep_upto_step >= 0 ? O_APPEND : O_TRUNC), 0644);
    m->f = fd >= 0 ? fdopen(fd, keep_upto_step >= 0 ? "a" : "w") : NULL;
    if (!m->f) {
        const int e = errno;
        if (fd >= 0) close(fd);
        if (e == ELOOP) return vrl_error("%s: is a symbolic link; refusing to write through it (remove it)", m->path);
        return vrl_error("%s: cannot open for writing: %s", m->path, strerror(e));
    }
    if (tb_open(&m->tb, run_dir, keep_upto_step) < 0) return -1;
    m->tty = isatty(STDERR_FILENO);
    m->t_start = now_seconds();
    return 0;
}

void metrics_close(Metrics *m) {
    if (m->f) fclose(m->f);
    m->f = NULL;
    tb_close(&m->tb);
}

/* A JSON number, or null for NaN and the infinities (which JSON cannot write): %.17g
 * round-trips a double exactly, so logs can be compared bit for bit. */
static const char *json_num(char buf[32], double x) {
    if (isfinite(x)) snprintf(buf, 32, "%.17g", x);
    else snprintf(buf, 32, "null");
    return buf;
}

/* Every line is checked like a checkpoint write: a full disk is an error, never a gap. */
static int metrics_flush(Metrics *m, int printed) {
    if (printed < 0 || fflush(m->f) != 0 || ferror(m->f))
        return vrl_error("%s: cannot write (disk full?); the log is repaired from the checkpoint on --resume",
                         m->path);
    return 0;
}

int metrics_log_step(Metrics *m, long step, double loss, double lr, double grad_norm, double tokens_per_s) {
    char l[32], r[32], g[32], t[32], e[32];
    if (isfinite(tokens_per_s)) snprintf(t, sizeof t, "%.1f", tokens_per_s);
    else snprintf(t, sizeof t, "null");
    snprintf(e, sizeof e, "%.3f", now_seconds() - m->t_start);
    const int n = fprintf(m->f, "{\"step\":%ld,\"loss\":%s,\"lr\":%s,\"grad_norm\":%s,\"tokens_per_s\":%s,"
                                "\"elapsed_s\":%s}\n",
                          step, json_num(l, loss), json_num(r, lr), json_num(g, grad_norm), t, e);
    if (metrics_flush(m, n) < 0) return -1;
    /* TensorBoard gets the numbers as printed above (tokens/s and seconds rounded there) */
    static const char *const tags[] = {"loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s"};
    const double values[] = {loss, lr, grad_norm, isfinite(tokens_per_s) ? strtod(t, NULL) : tokens_per_s,
                             strtod(e, NULL)};
    return tb_write_scalars(&m->tb, step, 5, tags, values);
}

int metrics_log_eval(Metrics *m, long step, const char *split, const char *domain, double loss) {
    char v[32], tag[256];
    int n;
    if (domain)
        n = fprintf(m->f, "{\"step\":%ld,\"split\":\"%s\",\"domain\":\"%s\",\"val_loss\":%s}\n", step, split, domain,
                    json_num(v, loss));
    else
        n = fprintf(m->f, "{\"step\":%ld,\"split\":\"%s\",\"val_loss\":%s}\n", step, split, json_num(v, loss));
    if (metrics_flush(m, n) < 0) return -1;
    if (domain) snprintf(tag, sizeof tag, "%s_loss/%s", split, domain);
    else snprintf(tag, sizeof tag, "%s_loss", split);
    const char *tags[] = {tag};
    return tb_write_scalars(&m->tb, step, 1, tags, &loss);
}

int metrics_log_resume(Metrics *m, long step, const char *changes_json) {
    return metrics_flush(m, fprintf(m->f, "{\"step\":%ld,\"event\":\"resume\",\"changed\":%s}\n", step, changes_json));
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
