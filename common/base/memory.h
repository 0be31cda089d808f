/* memory.h: refuse an allocation the machine cannot hold, before making it.
 * With overcommit a huge calloc succeeds and the first touch kills the process; a model
 * larger than memory must be an error that names its size instead. */
#ifndef VRL_MEMORY_H
#define VRL_MEMORY_H

#include <stddef.h>

/* 0 when `bytes` fits in the machine's physical memory, else -1 with
 * "WHAT needs N GiB of memory, more than this machine's M GiB". */
int memory_check(size_t bytes, const char *what);

#endif
