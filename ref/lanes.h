/* lanes.h: a row's sums in double, in a fixed order that vectorises.
 *
 * A sum written as one chain (s += a[i]) cannot be vectorised without reordering it, and
 * each addition waits for the one before (four cycles for a double add). Here element i
 * goes to lane i mod SUM_LANES, each lane adds its elements in index order, and the lanes
 * are added 0, 1, ..., SUM_LANES−1 at the end: one fixed order for every build, ISA and
 * thread count, whose SUM_LANES independent chains the compiler keeps in vector registers.
 * Used for RMSNorm's mean square and its backward's Σ dy·g·x, and for attention's softmax
 * denominators and Σ p·dp (formulas.md §1, §3). logsumexp in ops.c uses the same lanes. */
#ifndef VRL_REF_LANES_H
#define VRL_REF_LANES_H

#include "ref/real.h"

enum { SUM_LANES = 8 };

static inline double lanes_total(const double *acc) {
    double s = 0;
    for (int j = 0; j < SUM_LANES; j++) s += acc[j];
    return s;
}

/* Σ a[i], i < n */
static inline double sum_lanes(const real *a, int n) {
    double acc[SUM_LANES] = {0}; /* [SUM_LANES] */
    int i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
        for (int j = 0; j < SUM_LANES; j++) acc[j] += a[i + j];
    for (; i < n; i++) acc[i % SUM_LANES] += a[i];
    return lanes_total(acc);
}

/* Σ a[i]·b[i], i < n, each product in double */
static inline double dot_lanes(const real *a, const real *b, int n) {
    double acc[SUM_LANES] = {0}; /* [SUM_LANES] */
    int i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
        for (int j = 0; j < SUM_LANES; j++) acc[j] += (double)a[i + j] * b[i + j];
    for (; i < n; i++) acc[i % SUM_LANES] += (double)a[i] * b[i];
    return lanes_total(acc);
}

/* Σ a[i]·b[i]·c[i], i < n, as ((double)a·b)·c */
static inline double dot3_lanes(const real *a, const real *b, const real *c, int n) {
    double acc[SUM_LANES] = {0}; /* [SUM_LANES] */
    int i = 0;
    for (; i + SUM_LANES <= n; i += SUM_LANES)
        for (int j = 0; j < SUM_LANES; j++) acc[j] += (double)a[i + j] * b[i + j] * c[i + j];
    for (; i < n; i++) acc[i % SUM_LANES] += (double)a[i] * b[i] * c[i];
    return lanes_total(acc);
}

#endif
