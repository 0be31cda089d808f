/* guard.cpp: guard zones outside the check build (guard.h). The zones live in a list
 * sorted by address; in canary mode each holds a pattern that varies along the zone (a
 * value copied from one zone into the next, as a one-past-the-end cast does, changes it). */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "fast/cuda_cpu/asan.h"
#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/guard.h"
#include "fast/cuda_cpu/launch_state.h"

namespace cuda_cpu {
namespace guard {
namespace {

struct Zone {
    unsigned char *lo;
    size_t bytes;
};
std::vector<Zone> zones; /* sorted by lo, disjoint */
int canary = -1;         /* -1 until read */
char msg[512];

int damages; /* reported so far */

/* atexit: a program whose canary was damaged fails, whatever it made of the error (as the
 * check build's hazards: fast/'s backend set_state, for one, returns no error) */
void fail_exit(void) {
    if (!damages) return;
    fprintf(stderr, "vrl cuda-cpu canary: %d guard zone write(s) reported; exit status 66\n", damages);
    fflush(NULL);
    _exit(66);
}

/* byte i of every zone's canary (period 256) */
unsigned char pattern(size_t i) { return (unsigned char)(0xa5u + 0x3bu * (unsigned)i); }

/* whether the zone still holds its canary: memcmp against one period, the cheap common case */
int intact(const Zone &z) {
    static unsigned char period[256];
    if (!period[0])
        for (size_t i = 0; i < 256; i++) period[i] = pattern(i);
    for (size_t at = 0; at < z.bytes; at += 256)
        if (memcmp(z.lo + at, period, std::min<size_t>(256, z.bytes - at))) return 0;
    return 1;
}

int canary_mode(void) {
    if (canary < 0) {
        canary = env_switch("VRL_CUDA_CPU_CANARY") && !CUDA_CPU_ASAN && !check::enabled();
        if (canary) atexit(fail_exit);
    }
    return canary;
}

void fill(const Zone &z) {
    for (size_t i = 0; i < z.bytes; i++) z.lo[i] = pattern(i);
}

/* the first zone ending after p */
std::vector<Zone>::iterator first_after(const unsigned char *p) {
    return std::upper_bound(zones.begin(), zones.end(), p,
                            [](const unsigned char *a, const Zone &z) { return a < z.lo + z.bytes; });
}

} // namespace

int zones_on(void) { return check::enabled() || CUDA_CPU_ASAN || canary_mode(); }

void memset_around(void *p, int value, size_t bytes) {
    unsigned char *at = (unsigned char *)p, *const end = at + bytes;
    for (auto z = first_after(at); z != zones.end() && z->lo < end; ++z) {
        if (z->lo > at) memset(at, value, (size_t)(z->lo - at));
        at = std::max(at, z->lo + z->bytes);
    }
    if (at < end) memset(at, value, (size_t)(end - at));
}

const char *damaged(const char *what, int kernel) {
    msg[0] = '\0';
    if (!canary_mode()) return NULL;
    const char *found = NULL;
    for (const Zone &z : zones) {
        if (intact(z)) continue;
        if (!found) {
            size_t i = 0;
            while (z.lo[i] == pattern(i)) i++;
            size_t last = z.bytes - 1;
            while (z.lo[last] == pattern(last)) last--;
            snprintf(msg, sizeof msg,
                     "out of bounds: %s%s wrote bytes %zu..%zu of the %zu-byte guard zone after a tensor (past its "
                     "end; canary check after the %s)",
                     kernel ? "kernel " : "", what, i, last, z.bytes, kernel ? "launch" : "operation");
            fprintf(stderr, "vrl cuda-cpu canary: %s\n", msg);
            found = msg;
            damages++;
        }
        fill(z);
    }
    return found;
}

const char *report(void) { return msg[0] ? msg : NULL; }

void block_freed(void *p) {
    if (zones.empty() || !p) return;
    unsigned char *lo = (unsigned char *)p, *hi = lo + malloc_usable_size(p);
    auto a = first_after(lo), b = a;
    while (b != zones.end() && b->lo < hi) {
#if CUDA_CPU_ASAN
        __asan_unpoison_memory_region(b->lo, b->bytes);
#endif
        ++b;
    }
    zones.erase(a, b);
}

} // namespace guard

void guard_zone(void *p, size_t bytes) {
    if (!guard::zones_on() || !bytes) return;
    check::mark_guard(p, bytes);
    const guard::Zone z = {(unsigned char *)p, bytes};
    guard::zones.insert(guard::first_after(z.lo), z);
    if (guard::canary_mode()) guard::fill(z);
#if CUDA_CPU_ASAN
    /* byte exact: a tensor ending mid-granule keeps its own bytes addressable */
    __asan_poison_memory_region(p, bytes);
#endif
}

} // namespace cuda_cpu
