/* guard.h: guard zones between fast/'s arena tensors outside the check build (guard.cpp,
 * docs/design/cuda-on-cpu.md "Guard zones").
 *
 * fast/'s carve() leaves a 256-byte zone after every tensor of its one cudaMalloc arena when
 * zones_on() says so, and hands it to cuda_cpu::guard_zone() (check.h). A write one element
 * past a tensor then lands in a zone instead of silently in the next tensor:
 *  - check build: the shadow marks the zone, any access is reported (check.cpp);
 *  - sanitizer build (AddressSanitizer): the zone is poisoned, so the access is an ASan
 *    report with the kernel's stack, at the faulting instruction;
 *  - plain build with VRL_CUDA_CPU_CANARY=1: the zone holds a canary pattern, compared after
 *    every kernel launch, copy and matmul; a damaged one is that operation's launch error.
 * Memsets pass over the zones (fast/ clears several tensors with one memset). */
#ifndef VRL_CUDA_CPU_GUARD_H
#define VRL_CUDA_CPU_GUARD_H

#include <stddef.h>

namespace cuda_cpu {
namespace guard {

/* 1 when fast/'s arena should leave guard zones: the check build with its checks on, the
 * sanitizer build, or canary mode (VRL_CUDA_CPU_CANARY=1; anything but 0 or 1 is an error
 * line and exit status 2). */
int zones_on(void);
/* memset(p, value, bytes) that leaves every guard zone inside the range as it is */
void memset_around(void *p, int value, size_t bytes);
/* Canary mode: NULL, or a message naming `what` (a kernel or the operation) if a canary
 * changed since the last look; the canaries are rewritten, so each damage is told once. */
const char *damaged(const char *what, int kernel);
/* the message of the last damaged() call, or NULL if that call found none */
const char *report(void);
/* cudaFree(p): forget (and unpoison) the zones inside p's block */
void block_freed(void *p);

} // namespace guard
} // namespace cuda_cpu

#endif
