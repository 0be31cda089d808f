/* shard_guard.c: the mapped-shard registry and its SIGBUS handler (shard_guard.h). */
#define _GNU_SOURCE
#include "common/data/shard_guard.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Enough for every shard of a data folder at paper scale; a mapping past the last slot is
 * simply not named (the signal then ends the process as before). */
#define GUARD_SLOTS 8192

typedef struct {
    _Atomic(uintptr_t) lo; /* 0: free slot */
    size_t len;
    char *path;
} Guard;

static Guard slots[GUARD_SLOTS];
static atomic_int installed;

static void say(const char *s) {
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w; /* nothing more can be done about a failed message inside a signal handler */
}

static void on_sigbus(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    const uintptr_t a = (uintptr_t)info->si_addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        const uintptr_t lo = atomic_load(&slots[i].lo);
        if (lo && a >= lo && a - lo < slots[i].len && slots[i].path) {
            say("vrl: ");
            say(slots[i].path);
            say(": changed on disk while in use (truncated); stopped\n");
            _exit(1);
        }
    }
    signal(sig, SIG_DFL); /* not a shard: the fault is re-raised as it would have been */
}

void shard_guard_add(const void *addr, size_t len, const char *path) {
    if (!atomic_exchange(&installed, 1)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
    }
    char *copy = strdup(path);
    if (!copy) return;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (atomic_load(&slots[i].lo)) continue;
        slots[i].len = len;
        slots[i].path = copy;
        uintptr_t expect = 0;
        if (atomic_compare_exchange_strong(&slots[i].lo, &expect, (uintptr_t)addr)) return;
    }
    free(copy);
}

void shard_guard_remove(const void *addr) {
    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (atomic_load(&slots[i].lo) != (uintptr_t)addr) continue;
        char *p = slots[i].path;
        slots[i].path = NULL;
        atomic_store(&slots[i].lo, 0);
        free(p);
        return;
    }
}
