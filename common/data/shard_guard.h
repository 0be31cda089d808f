/* shard_guard.h: name the file when a mapped shard changes under a running reader.
 * A shard truncated on disk while mapped makes the next read of a lost page raise SIGBUS;
 * without this the process dies with no word. Each mapping is registered here; the
 * SIGBUS handler finds the one holding the faulting address and writes
 * "vrl: PATH: changed on disk while in use (truncated); stopped" before exiting 1. */
#ifndef VRL_SHARD_GUARD_H
#define VRL_SHARD_GUARD_H

#include <stddef.h>

/* Register [addr, addr + len) as mapped from path (the handler is installed once). */
void shard_guard_add(const void *addr, size_t len, const char *path);
/* Forget the mapping that starts at addr. */
void shard_guard_remove(const void *addr);

#endif
