/* gnuplot.h: run gnuplot without a shell, and quote text for its scripts.
 * No path or label ever reaches a shell command line: gnuplot is found on PATH and
 * started with fork/exec in the output folder, the script named relative to it. */
#ifndef VRL_GNUPLOT_H
#define VRL_GNUPLOT_H

#include <stdio.h>

/* 1 when an executable `gnuplot` is in an absolute PATH entry (empty and relative entries
 * are skipped: gnuplot runs inside the output folder); gnuplot_run execs that path. */
int gnuplot_available(void);

/* Run `gnuplot SCRIPT` with DIR as its working folder, SCRIPT writing OUTPUT (both named
 * relative to DIR); whatever stands at DIR/OUTPUT (a planted link) is removed first.
 * 0, or -1 naming DIR/SCRIPT. */
int gnuplot_run(const char *dir, const char *script, const char *output);

/* Write s as a gnuplot single-quoted string: no substitution happens inside one,
 * and a quote inside it is doubled, so any text stays text. */
void gnuplot_quote(FILE *f, const char *s);

#endif
