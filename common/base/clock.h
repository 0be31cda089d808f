/* clock.h: the monotonic wall clock that timings and the progress line read. */
#ifndef VRL_CLOCK_H
#define VRL_CLOCK_H

/* Monotonic wall clock in seconds. */
double now_seconds(void);

#endif
