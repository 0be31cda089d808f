/* curves.h: training-loss curves from a run's metrics.jsonl and the paper's relative
 * training loss (formulas.md §6): each curve smoothed by a valid-mode moving average of
 * window w (point k = mean of losses k..k+w-1, 0-based, plotted at the step of loss k,
 * i.e. step k + 1 for a run logged from step 1), then method − baseline. */
#ifndef VRL_CURVES_H
#define VRL_CURVES_H

#include <stddef.h>

typedef struct {
    long *step;     /* [n] */
    double *loss;   /* [n] training loss at that step */
    size_t n;
} Curve;

/* Training-step lines ({"step","loss",...}; eval lines are skipped) of a metrics.jsonl.
 * A resumed run may repeat a step: the last line for a step wins. Errors name the file
 * and line. */
int curve_read(const char *path, Curve *c);
void curve_free(Curve *c);

/* Valid-mode moving average: out gets n − w + 1 points. A curve shorter than the window
 * is averaged over all its n points (one point), never left empty. */
int curve_smooth(const Curve *c, int w, Curve *out);

/* smooth(method) − smooth(base) over the steps both smoothed curves have, in order. */
int curve_relative(const Curve *base, const Curve *method, int w, Curve *out);

#endif
