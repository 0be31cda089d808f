/* fault.c: the VRL_FAULT_AT_WRITE test hook (fault.h). */
#include "common/base/fault.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fault_point(const char *what) {
    static long count = 0, at = -1; /* at: -1 not read yet, 0 hook off */
    static int enospc = 0, stop = 0, trace = 0;
    if (at < 0) {
        const char *s = getenv("VRL_FAULT_AT_WRITE"), *m = getenv("VRL_FAULT_MODE"), *t = getenv("VRL_FAULT_TRACE");
        at = s ? strtol(s, NULL, 10) : 0;
        if (at < 0) at = 0;
        enospc = m && !strcmp(m, "enospc");
        stop = m && !strcmp(m, "stop");
        trace = t && !strcmp(t, "1");
    }
    count++;
    if (trace) fprintf(stderr, "fault point %ld: %s\n", count, what);
    /* stop: the process stops itself at point N and at every later one, so a test can send a
     * signal at a moment it chooses and let the process go on with SIGCONT */
    if (stop && at > 0 && count >= at) {
        raise(SIGSTOP);
        return 0;
    }
    if (at == 0 || count != at) return 0;
    if (!enospc) raise(SIGKILL);
    errno = ENOSPC;
    return -1;
}
