#include "common/base/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[VRL_ERROR_LEN];

int vrl_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

const char *vrl_last_error(void) { return last_error; }

void vrl_clear_error(void) { last_error[0] = '\0'; }
