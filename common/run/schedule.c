/* schedule.c: formulas.md §2 learning-rate schedules. */
#include "common/run/schedule.h"

#include <math.h>
#include <string.h>

double schedule_lr(const Schedule *s, long step) {
    const double b = s->peak, e = s->end;
    const long W = s->warmup, S = s->decay_end;
    if (step < W) return LR_START + (b - LR_START) * (double)step / (double)W;
    if (step >= S) return e;
    const double span = (double)(S - W);
    switch (s->kind) {
    case SCHED_COSINE:
        return e + (b - e) * (1.0 + cos(M_PI * (double)(step - W) / span)) / 2.0;
    case SCHED_LINEAR:
        return e + (b - e) * (double)(S - step) / span;
    case SCHED_EXPONENTIAL: {
        /* gamma chosen so the excess over lr_end falls to 1e-10 at S */
        const double gamma = exp(log(1e-10 / (b - e)) / span);
        return e + (b - e) * pow(gamma, (double)(step - W));
    }
    }
    return e;
}

double schedule_lr_update(const Schedule *s, long update) { return schedule_lr(s, update - 1 + s->offset); }

int schedule_kind_parse(const char *name, ScheduleKind *out) {
    if (!strcmp(name, "cosine")) *out = SCHED_COSINE;
    else if (!strcmp(name, "linear")) *out = SCHED_LINEAR;
    else if (!strcmp(name, "exponential")) *out = SCHED_EXPONENTIAL;
    else return -1;
    return 0;
}

const char *schedule_kind_name(ScheduleKind k) {
    switch (k) {
    case SCHED_COSINE: return "cosine";
    case SCHED_LINEAR: return "linear";
    case SCHED_EXPONENTIAL: return "exponential";
    }
    return "?";
}
