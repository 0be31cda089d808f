/* test_cuda_cpu_guard.cpp: guard zones between arena tensors outside the check build
 * (fast/cuda_cpu/guard.h, docs/design/cuda-on-cpu.md "Guard zones").
 *
 * Story: two tensors in one cudaMalloc block with a guard zone between them, laid out as
 * fast/'s carve() does (the zone runs from the first tensor's end to 256 bytes past the
 * next 256-byte boundary). A cast kernel written the careless way (`i <= n`) writes one
 * element past its output, into the zone:
 *  - plain build, VRL_CUDA_CPU_CANARY=1 (ctest sets it): the launch fails with an
 *    out-of-bounds error naming the kernel, the next tensor is untouched, and the process
 *    exits with status 66 at its end; a copy past the end is the copy's error;
 *  - sanitizer build: AddressSanitizer reports the write (use-after-poison) with the
 *    kernel in the stack; the launch runs in a forked child whose stderr is read here.
 * The correct twin (`i < n`) passes in both, and a memset over both tensors passes over the
 * zone without a report. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fast/cuda_cpu/asan.h"
#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/guard.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"

#define LAUNCH CUDA_CPU_LAUNCH

enum { N = 300 }; /* 600 bytes of bf16: the tensor ends mid-granule, mid-256 */

template <bool careless>
__global__ void cast_past_end_kernel(__nv_bfloat16 *out, const float *inp, int n) {
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (careless ? i <= n : i < n) out[i] = __float2bfloat16(inp[i]);
}

/* out [N] bf16 | guard zone | next [N] bf16, in one cudaMalloc block */
struct Arena {
    char *base;
    __nv_bfloat16 *out, *next;
};

static Arena arena_with_a_zone(void) {
    Arena a;
    const size_t end = N * sizeof(__nv_bfloat16), zone_end = ((end + 255) & ~(size_t)255) + 256;
    cr_assert_eq(cudaMalloc((void **)&a.base, zone_end + N * sizeof(__nv_bfloat16)), cudaSuccess);
    a.out = (__nv_bfloat16 *)a.base;
    a.next = (__nv_bfloat16 *)(a.base + zone_end);
    cuda_cpu::guard_zone(a.base + end, zone_end - end);
    cr_assert_eq(cudaMemset(a.base, 0, zone_end + N * sizeof(__nv_bfloat16)), cudaSuccess, "a memset passes over the zone");
    return a;
}

static float inp[N + 1];

static cudaError_t cast(const Arena &a, bool careless) {
    for (int i = 0; i <= N; i++) inp[i] = 1.0f + (float)i;
    if (careless) LAUNCH(cast_past_end_kernel<true>, (N + 1 + 127) / 128, 128, 0, 0)(a.out, inp, N);
    else LAUNCH(cast_past_end_kernel<false>, (N + 127) / 128, 128, 0, 0)(a.out, inp, N);
    return cudaGetLastError();
}

Test(cuda_cpu_guard, the_correct_cast_passes) {
    cr_assert(cuda_cpu::guard::zones_on(), "guard zones on (ctest sets VRL_CUDA_CPU_CANARY=1; ASan: always)");
    Arena a = arena_with_a_zone();
    const cudaError_t e = cast(a, false);
    cr_expect_eq(e, cudaSuccess, "%s", e == cudaSuccess ? "" : cudaGetErrorString(e));
    cr_expect_eq(__bfloat162float(a.out[N - 1]), (float)N);
    cr_expect_eq(__bfloat162float(a.next[0]), 0.0f);
    cudaFree(a.base);
}

#if !CUDA_CPU_ASAN
/* exit status 66: a program that damaged a canary fails even when it ignored the error */
Test(cuda_cpu_guard, one_past_the_end_is_an_error_naming_the_kernel, .exit_code = 66) {
    cr_assert(cuda_cpu::guard::zones_on(), "guard zones on (ctest sets VRL_CUDA_CPU_CANARY=1)");
    Arena a = arena_with_a_zone();
    const cudaError_t e = cast(a, true);
    cr_assert_eq(e, cudaErrorLaunchFailure);
    const char *msg = cudaGetErrorString(e);
    cr_expect(strstr(msg, "out of bounds") && strstr(msg, "cast_past_end_kernel") && strstr(msg, "guard zone"), "%s", msg);
    cr_expect_eq(__bfloat162float(a.next[0]), 0.0f, "the neighbouring tensor is untouched");
    cr_expect_eq(cast(a, false), cudaSuccess, "the canary was rewritten: the damage is told once");
    cudaFree(a.base);
    exit(0); /* the layer's exit handler makes it 66 */
}

Test(cuda_cpu_guard, a_copy_past_the_end_is_an_error_naming_the_copy, .exit_code = 66) {
    Arena a = arena_with_a_zone();
    static unsigned char host[N * sizeof(__nv_bfloat16) + 2];
    cr_assert_eq(cudaMemcpy(a.out, host, sizeof host, cudaMemcpyHostToDevice), cudaErrorLaunchFailure);
    const char *msg = cudaGetErrorString(cudaErrorLaunchFailure);
    cr_expect(strstr(msg, "out of bounds") && strstr(msg, "cudaMemcpy"), "%s", msg);
    cudaFree(a.base);
    exit(0); /* the layer's exit handler makes it 66 */
}
#else
/* The overrunning launch in a child: AddressSanitizer ends the process that hits it. */
Test(cuda_cpu_guard, one_past_the_end_is_an_asan_report_naming_the_kernel) {
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    const pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        Arena a = arena_with_a_zone();
        (void)cast(a, true);
        _exit(0); /* not reached when ASan reports */
    }
    close(fd[1]);
    static char out[1 << 16];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], out + got, sizeof out - 1 - got)) > 0) got += (size_t)r;
    out[got] = '\0';
    close(fd[0]);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) != 0, "the child exits non-zero (ASan), status %d", status);
    cr_expect(strstr(out, "AddressSanitizer: use-after-poison") != NULL, "an ASan report on the zone:\n%.2000s", out);
    cr_expect(strstr(out, "cast_past_end_kernel") != NULL, "the stack names the kernel:\n%.4000s", out);
}
#endif
