#include "common/base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[VRL_ERROR_LEN];

/* Length of a UTF-8 sequence at s that a terminal would act on rather than show: C1
 * controls (U+0080..U+009F) and the bidirectional marks and overrides (U+061C, U+200E,
 * U+200F, U+202A..U+202E, U+2066..U+2069; an RLO reverses the rest of the line); else 0. */
static int hidden_utf8(const unsigned char *s) {
    if (s[0] == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F) return 2;
    if (s[0] == 0xD8 && s[1] == 0x9C) return 2;
    if (s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0x8E || s[2] == 0x8F || (s[2] >= 0xAA && s[2] <= 0xAE))) return 3;
    if (s[0] == 0xE2 && s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9) return 3;
    return 0;
}

int vrl_error(const char *fmt, ...) {
    char raw[VRL_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* A message names files, flags and values the user (or a crafted file) chose: control
     * and bidi characters are written as \xNN escapes, so the line shows what is there and
     * stays one line. A backslash is kept as is, so escaping twice changes nothing. */
    size_t o = 0;
    for (const unsigned char *s = (const unsigned char *)raw; *s && o + 1 < sizeof last_error;) {
        int n = *s < 0x20 || *s == 0x7F ? 1 : hidden_utf8(s);
        if (n == 0) {
            last_error[o++] = (char)*s++;
            continue;
        }
        for (; n > 0 && o + 5 < sizeof last_error; n--) o += (size_t)snprintf(last_error + o, 5, "\\x%02X", *s++);
        if (n > 0) break;
    }
    last_error[o] = '\0';
    return -1;
}

const char *vrl_last_error(void) { return last_error; }

void vrl_clear_error(void) { last_error[0] = '\0'; }
