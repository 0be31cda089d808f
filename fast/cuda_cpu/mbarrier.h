/* mbarrier.h: Hopper's transaction barriers and the non-tensor bulk copy on the CPU layer
 * (fast/mbarrier.cuh wraps them; docs/design/cuda-on-cpu.md, "mbarrier and bulk copies on the CPU").
 * PTX ISA 8.5 §9.7.13.15 "Parallel Synchronization and Communication Instructions: mbarrier"
 * (.1 size and alignment, .2 contents and count ranges, .4 phase, .5 tx-count with .5.1 expect-tx
 * and .5.2 complete-tx, .6 phase completion, .7 arrive-on; then the instructions mbarrier.init,
 * mbarrier.arrive, mbarrier.test_wait/try_wait), §9.7.9.25.1.2 "Mbarrier-based mechanism" and
 * the cp.async.bulk instruction of §9.7.9.25 "Data Movement and Conversion Instructions:
 * Asynchronous copy":
 *
 *  - a barrier is an 8-byte aligned object in shared memory; the layer keeps its state here, keyed
 *    by address, per block: the current phase, the expected and pending arrival counts, the
 *    tx-count (signed: transaction bytes may complete before they are expected);
 *  - init(count), 1 <= count <= 2^20 - 1: phase 0, pending = expected = count, tx-count 0;
 *  - arrive: pending - 1; arrive.expect_tx(bytes): tx-count + bytes, then the arrive; the token
 *    returned is the phase the arrival counted towards;
 *  - complete_tx(bytes) (a bulk copy's): tx-count - bytes;
 *  - the phase completes when pending is 0 and tx-count is 0: the copies of that phase land,
 *    the phase number advances, pending = expected, tx-count 0;
 *  - test_wait.parity / try_wait.parity(P): true iff the phase of parity P has completed, i.e. the
 *    phase in progress has the other parity (so right after init, parity 1 is "complete": the
 *    idiom by which a producer's first wait on an empty barrier passes).
 *
 * Bulk copies: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src],
 * size, [bar]: dst and src 16-byte aligned, size a positive multiple of 16, dst in shared memory,
 * bar initialised. The source is read at the issue (as the layer's cp.async does), its
 * complete_tx counts at once, and the bytes land when the barrier's phase completes, in the
 * order VRL_CUDA_CPU_ORDER gives (forward: issue order). So a kernel that reads the destination
 * before waiting for the phase reads old bytes; in the check build that read is a race naming
 * the kernel (check.h, bulk_copy_bytes).
 *
 * Misuse (a launch error, one line naming the kernel, the thread and the call): an operation on a
 * barrier never initialised in this block, an init count out of range, an arrival beyond the
 * count of the phase, more transaction bytes completed than the phase expects once all its
 * arrivals came (a GPU could complete the phase part-way through a copy), a misaligned or badly
 * sized copy, a barrier not in shared memory.
 * Waits are scheduling points (fiber.cpp): see mbarrier_wait. */
#ifndef VRL_CUDA_CPU_MBARRIER_H
#define VRL_CUDA_CPU_MBARRIER_H

#include <stddef.h>
#include <stdint.h>

namespace cuda_cpu {

void mbarrier_init(uint64_t *bar, uint32_t count, const char *file, int line);
/* arrive (expect_tx 0) or arrive.expect_tx(tx_bytes): the token (the phase it counted towards) */
uint64_t mbarrier_arrive(uint64_t *bar, int expect_tx, uint32_t tx_bytes, const char *file, int line);
/* try_wait.parity (blocking 1) or test_wait.parity (0). A phase already complete: 1 at once.
 * Otherwise try_wait's thread waits (fiber.cpp) until the phase completes, letting the other
 * warps of the block run, and returns 1 (the ISA lets try_wait suspend the thread up to a time
 * limit; the layer's limit is "until complete"). Every live thread of the block waiting with no
 * phase able to complete is a deadlock error naming the kernel and each barrier's state.
 * test_wait never waits: it returns 0; calling it again on the same barrier with no switch of
 * fibers and no mbarrier operation in between (a spin that cannot end on the layer) is an error. */
int mbarrier_wait(uint64_t *bar, uint32_t parity, int blocking, const char *file, int line);
void bulk_copy_global_to_shared(void *dst, const void *src, uint32_t bytes, uint64_t *bar, const char *file,
                                int line);

/* tma.cpp: a tensor copy (cp.async.bulk.tensor) completing on bar, already checked and read at
 * its issue: n 16-byte chunks data[n][16], chunk i landing at dst[i] when bar's phase completes;
 * tx_bytes (the whole box) complete now. `what` names the instruction in a misuse of bar.
 * mbarrier_record: the instruction text for mbarrier_trace (tma.cpp records its own). */
void bulk_copy_chunks(uint64_t *bar, char *const *dst, const unsigned char *data, size_t n, uint32_t tx_bytes,
                      const char *what, const char *file, int line);
void mbarrier_record(const char *ins);

/* For fiber.cpp: a block starts (barriers and copies of the last one are dropped); whether the
 * phase of `parity` of bar has completed (1; also 1 for a bar that is no barrier, so its
 * waiter runs on to the error); bar's state in words, for the deadlock error. */
void mbarrier_block_begin(void);
int mbarrier_phase_done(const void *bar, uint32_t parity);
void mbarrier_describe(const void *bar, char *buf, size_t len);
/* fiber.cpp: the running thread waits until mbarrier_phase_done(bar, parity). */
void mbarrier_block_thread(const void *bar, uint32_t parity, const char *file, int line);
/* fiber.cpp: how many times a thread has stopped at a scheduling point so far. */
uint64_t scheduling_events(void);

/* The instructions executed since mbarrier_forget (the first 16), as test_mbarrier_ptx.sh
 * normalises nvcc's PTX: the instruction, then [1] per address, r per register operand, joined
 * by " ; ". 0, or -1 when none ran (or buf is too short). Only thread 0 of a launch records. */
int mbarrier_trace(char *buf, size_t len);
void mbarrier_forget(void);

} // namespace cuda_cpu

#endif
