/* curves.c: loss curves and the relative training loss (curves.h). */
#include "common/eval/curves.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/data/textio.h"

void curve_free(Curve *c) {
    free(c->step);
    free(c->loss);
    memset(c, 0, sizeof *c);
}

static int curve_push(Curve *c, size_t *cap, long step, double loss) {
    if (c->n && c->step[c->n - 1] >= step) { /* a resumed run re-logged this step: keep the last */
        while (c->n && c->step[c->n - 1] >= step) c->n--;
    }
    if (c->n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        long *s = realloc(c->step, *cap * sizeof *s);
        if (s) c->step = s;
        double *l = realloc(c->loss, *cap * sizeof *l);
        if (l) c->loss = l;
        if (!s || !l) return vrl_error("out of memory");
    }
    c->step[c->n] = step;
    c->loss[c->n++] = loss;
    return 0;
}

int curve_read(const char *path, Curve *c) {
    memset(c, 0, sizeof *c);
    LineReader *r;
    if (lr_open(path, &r) < 0) return -1;
    const char *buf;
    size_t len, cap = 0;
    int rc, status = 0;
    while ((rc = lr_next(r, &buf, &len)) == 1) {
        if (len == 0) continue;
        json_error_t e;
        json_t *o = json_loadb(buf, len, 0, &e);
        json_t *st = o ? json_object_get(o, "step") : NULL, *lo = o ? json_object_get(o, "loss") : NULL;
        if (!o || !json_is_integer(st)) {
            status = vrl_error("%s:%llu: not a metrics line (needs an integer \"step\")", path,
                               (unsigned long long)lr_line(r));
            json_decref(o);
            break;
        }
        if (!json_object_get(o, "split") && !json_object_get(o, "event")) { /* a training step */
            if (!json_is_number(lo)) {
                status = vrl_error("%s:%llu: training line without a numeric \"loss\"", path,
                                   (unsigned long long)lr_line(r));
                json_decref(o);
                break;
            }
            status = curve_push(c, &cap, (long)json_integer_value(st), json_number_value(lo));
        }
        json_decref(o);
        if (status < 0) break;
    }
    if (status == 0 && rc < 0) status = -1;
    if (status == 0 && c->n == 0) status = vrl_error("%s: no training steps", path);
    lr_close(r);
    if (status < 0) curve_free(c);
    return status;
}

int curve_smooth(const Curve *c, int w, Curve *out) {
    memset(out, 0, sizeof *out);
    if (w < 1) return vrl_error("--window must be >= 1 (got %d)", w);
    if (c->n == 0) return 0;
    if (c->n < (size_t)w) w = (int)c->n; /* a run shorter than the window: one mean of all it logged */
    const size_t n = c->n - (size_t)w + 1;
    out->step = malloc(n * sizeof *out->step);
    out->loss = malloc(n * sizeof *out->loss);
    if (!out->step || !out->loss) {
        curve_free(out);
        return vrl_error("out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        double s = 0;
        for (int i = 0; i < w; i++) s += c->loss[k + (size_t)i];
        out->step[k] = c->step[k];
        out->loss[k] = s / w;
    }
    out->n = n;
    return 0;
}

int curve_relative(const Curve *base, const Curve *method, int w, Curve *out) {
    Curve b, m;
    memset(out, 0, sizeof *out);
    if (curve_smooth(base, w, &b) < 0) return -1;
    if (curve_smooth(method, w, &m) < 0) {
        curve_free(&b);
        return -1;
    }
    const size_t cap = b.n < m.n ? b.n : m.n;
    out->step = malloc((cap ? cap : 1) * sizeof *out->step);
    out->loss = malloc((cap ? cap : 1) * sizeof *out->loss);
    int rc = out->step && out->loss ? 0 : vrl_error("out of memory");
    /* merge on step: both are increasing */
    for (size_t i = 0, j = 0; rc == 0 && i < b.n && j < m.n;) {
        if (b.step[i] < m.step[j]) i++;
        else if (b.step[i] > m.step[j]) j++;
        else {
            out->step[out->n] = b.step[i];
            out->loss[out->n++] = m.loss[j] - b.loss[i];
            i++, j++;
        }
    }
    curve_free(&b);
    curve_free(&m);
    if (rc < 0) curve_free(out);
    return rc;
}
