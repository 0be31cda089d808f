/* schedule.h: the learning-rate schedules of formulas.md §2, computed in double. */
#ifndef VRL_SCHEDULE_H
#define VRL_SCHEDULE_H

typedef enum { SCHED_COSINE = 0, SCHED_LINEAR = 1, SCHED_EXPONENTIAL = 2 } ScheduleKind;

typedef struct {
    ScheduleKind kind;
    double peak;      /* b */
    double end;       /* lr_end */
    long warmup;      /* W */
    long decay_end;   /* S */
    long offset;      /* 0 or 1: update u uses lr(u - 1 + offset); formulas.md §2 */
} Schedule;

#define LR_START 1e-7

/* lr(s) for scheduler step s >= 0. */
double schedule_lr(const Schedule *s, long step);

/* The lr of update u (1-based): lr(u - 1) as formulas.md and the authors' schedule, whose first
 * update trains at lr_start = 1e-7; with offset 1 it is lr(u), so warm-up's first update already
 * moves the weights (b / W). */
double schedule_lr_update(const Schedule *s, long update);

/* "cosine" | "linear" | "exponential"; -1 on anything else. */
int schedule_kind_parse(const char *name, ScheduleKind *out);
const char *schedule_kind_name(ScheduleKind k);

#endif
