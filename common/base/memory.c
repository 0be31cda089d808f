/* memory.c: physical memory against a planned allocation (memory.h). */
#define _DEFAULT_SOURCE
#include "common/base/memory.h"

#include <unistd.h>

#include "common/base/error.h"

int memory_check(size_t bytes, const char *what) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0; /* unknown: let the allocation decide */
    const double have = (double)pages * (double)page, gib = 1024.0 * 1024.0 * 1024.0;
    if ((double)bytes <= have) return 0;
    return vrl_error("%s needs %.1f GiB of memory, more than this machine's %.1f GiB", what, (double)bytes / gib,
                     have / gib);
}
