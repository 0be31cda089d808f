/* error.h: one-line error messages carried from where a problem is found to the
 * command that reports it. Functions that can fail return 0 on success and -1 on
 * failure after calling vrl_error("FILE: problem"). The CLI prints vrl_last_error()
 * and exits non-zero; nothing in the library calls exit() or abort(). */
#ifndef VRL_ERROR_H
#define VRL_ERROR_H

/* room for three paths of PATH_MAX and the reason after them: a message naming a long path
 * keeps its reason */
#define VRL_ERROR_LEN 13312

/* Set the thread's last error (printf-style). Always returns -1 so callers can
 * write `return vrl_error("%s: truncated header", path);`. */
int vrl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The message set by the most recent vrl_error() on this thread ("" if none). */
const char *vrl_last_error(void);

/* Clear the thread's last error. */
void vrl_clear_error(void);

#endif
