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
} Schedule;

#define LR_START 1e-7

/* lr(s) for scheduler step s >= 0. Update u (1-based) uses lr(u - 1). */
double schedule_lr(const Schedule *s, long step);

/* "cosine" | "linear" | "exponential"; -1 on anything else. */
int schedule_kind_parse(const char *name, ScheduleKind *out);
const char *schedule_kind_name(ScheduleKind k);

#endif
