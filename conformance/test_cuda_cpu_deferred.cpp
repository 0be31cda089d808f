/* test_cuda_cpu_deferred.cpp: the deferred stream mode (fast/cuda_cpu/deferred.h,
 * docs/design/cuda-on-cpu.md "Deferred streams"); ctest runs it with VRL_CUDA_CPU_DEFERRED=1.
 *
 * Story: stream a adds 1 to x, stream b copies x to y. With an event recorded on a and
 * waited for on b, y is 1 whatever the interleaving. Without the wait CUDA promises
 * nothing, and the deferred mode runs the later-created stream b first: y is 0, the wrong
 * result a GPU may give. Work queued on a stream has not run before a synchronisation
 * point, and cudaStreamSynchronize runs only what that stream needs. */
#include <criterion/criterion.h>

#include "fast/cuda_cpu/deferred.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"

#define LAUNCH CUDA_CPU_LAUNCH

__global__ void add_one_kernel(float *x) { x[threadIdx.x] += 1.0f; }
__global__ void copy_kernel(float *y, const float *x) { y[threadIdx.x] = x[threadIdx.x]; }

/* y after a: x += 1, b: y = x, with or without b waiting for a's event */
static float producer_consumer(bool wait) {
    float *x = NULL, *y = NULL;
    cr_assert_eq(cudaMalloc(&x, 4 * sizeof(float)), cudaSuccess);
    cr_assert_eq(cudaMalloc(&y, 4 * sizeof(float)), cudaSuccess);
    cr_assert_eq(cudaMemset(x, 0, 4 * sizeof(float)), cudaSuccess);
    cr_assert_eq(cudaMemset(y, 0, 4 * sizeof(float)), cudaSuccess);
    cudaStream_t a, b;
    cudaEvent_t done;
    cr_assert_eq(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaEventCreate(&done), cudaSuccess);
    LAUNCH(add_one_kernel, 1, 4, 0, a)(x);
    cr_assert_eq(cudaEventRecord(done, a), cudaSuccess);
    if (wait) cr_assert_eq(cudaStreamWaitEvent(b, done, 0), cudaSuccess);
    LAUNCH(copy_kernel, 1, 4, 0, b)(y, x);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_expect_eq(x[0], 0.0f, "queued on a: not run before a synchronisation point");
    cr_assert_eq(cudaStreamSynchronize(b), cudaSuccess);
    const float got = y[0];
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    cr_expect_eq(x[0], 1.0f, "every queue runs at cudaDeviceSynchronize");
    cudaEventDestroy(done);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaFree(x);
    cudaFree(y);
    return got;
}

Test(cuda_cpu_deferred, a_stream_that_waits_for_the_event_sees_the_producer) {
    cr_assert(cuda_cpu::deferred::on(), "ctest sets VRL_CUDA_CPU_DEFERRED=1");
    cr_expect_eq(producer_consumer(true), 1.0f);
}

Test(cuda_cpu_deferred, a_missing_wait_gives_the_stale_value) {
    cr_assert(cuda_cpu::deferred::on(), "ctest sets VRL_CUDA_CPU_DEFERRED=1");
    cr_expect_eq(producer_consumer(false), 0.0f, "b ran before a: the missing cudaStreamWaitEvent shows");
}
