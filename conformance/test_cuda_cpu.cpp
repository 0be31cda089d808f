/* test_cuda_cpu.cpp: the CUDA-on-CPU layer itself (fast/cuda_cpu/, docs/design/cuda-on-cpu.md).
 *
 * Story: each CUDA behaviour fast/ relies on, run through the layer with a small kernel
 * and checked against what CUDA documents: bf16 rounding, warp shuffles and ballots with
 * their masks and widths, barriers, atomics, dynamic shared memory, graph capture and
 * replay, the cuBLASLt stand-in against a double-precision product, and every error the
 * layer reports instead of a GPU's hang, fault or undefined result (divergent barriers, a
 * lane that exits before a shuffle, masks, launch limits, a misaligned 16-byte vector load
 * or store), each naming the kernel. Thread
 * orders: a kernel with its barrier gives the same bits in all three orders; without it,
 * forward and reverse differ (the race probe works). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/cublaslt.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"

#define LAUNCH CUDA_CPU_LAUNCH

/* The last launch error's message ("" after a success). */
static const char *launch_message(void) {
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

static uint16_t bits(float f) { return __float2bfloat16(f).x; }
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

Test(cuda_cpu, bf16_rounds_to_nearest_even) {
    cr_expect_eq(bits(1.0f), 0x3f80);
    cr_expect_eq(bits(from_bits(0x3f808000u)), 0x3f80, "a tie rounds to the even neighbour (down)");
    cr_expect_eq(bits(from_bits(0x3f818000u)), 0x3f82, "a tie rounds to the even neighbour (up)");
    cr_expect_eq(bits(from_bits(0x3f808001u)), 0x3f81, "above the tie rounds up");
    cr_expect_eq(bits(from_bits(0x3f807fffu)), 0x3f80, "below the tie rounds down");
    cr_expect_eq(bits(-2.5f), 0xc020);
    cr_expect_eq(bits(from_bits(0x7f7fffffu)), 0x7f80, "the largest float rounds to infinity");
    cr_expect_eq(bits(INFINITY), 0x7f80);
    const float nan_back = __bfloat162float(__float2bfloat16(NAN));
    cr_expect(isnan(nan_back), "NaN stays NaN");
    cr_expect_eq(__bfloat162float(__float2bfloat16(3.140625f)), 3.140625f, "bf16 values convert exactly");
}

Test(cuda_cpu, bf16_raw_bits_round_trip) {
    cr_expect_eq(__bfloat16_as_ushort(__float2bfloat16(-2.5f)), 0xc020, "the raw bits, unrounded");
    cr_expect_eq(__bfloat162float(__ushort_as_bfloat16(0x3f81)), from_bits(0x3f810000u), "bits back to a value");
    cr_expect(isnan(__bfloat162float(__ushort_as_bfloat16(0x7fc1))), "a NaN pattern stays NaN");
}

/* ------------------------------------------------------------------ warp collectives */

__global__ void shuffles_kernel(int *out) {
    const int lane = (int)threadIdx.x % 32, t = (int)threadIdx.x;
    out[t * 6 + 0] = __shfl_xor_sync(0xffffffffu, t, 5);
    out[t * 6 + 1] = __shfl_down_sync(0xffffffffu, t, 3);
    out[t * 6 + 2] = __shfl_up_sync(0xffffffffu, t, 2, 8);
    out[t * 6 + 3] = __shfl_sync(0xffffffffu, t, 7);
    out[t * 6 + 4] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
    out[t * 6 + 5] = __shfl_xor_sync(0xffffffffu, t, 16, 16); /* width 16: a later group gives the own value */
}

Test(cuda_cpu, warp_shuffles_follow_cuda) {
    int *out = (int *)malloc(64 * 6 * sizeof(int));
    LAUNCH(shuffles_kernel, 1, 64, 0, 0)(out);
    cr_assert_str_eq(launch_message(), "");
    unsigned ballot = 0;
    for (int l = 0; l < 32; l++) ballot |= (l % 3 == 0 ? 1u : 0u) << l;
    for (int t = 0; t < 64; t++) {
        const int lane = t % 32, base = t - lane;
        cr_expect_eq(out[t * 6 + 0], t ^ 5, "xor lane %d", t);
        cr_expect_eq(out[t * 6 + 1], lane + 3 < 32 ? t + 3 : t, "down lane %d", t);
        cr_expect_eq(out[t * 6 + 2], lane % 8 >= 2 ? t - 2 : t, "up (width 8) lane %d", t);
        cr_expect_eq(out[t * 6 + 3], base + 7, "idx lane %d", t);
        cr_expect_eq((unsigned)out[t * 6 + 4], ballot, "ballot lane %d", t);
        cr_expect_eq(out[t * 6 + 5], lane < 16 ? t : t - 16, "xor 16 at width 16 lane %d", t);
    }
    free(out);
}

__global__ void early_exit_shuffle_kernel(float *out) {
    if (threadIdx.x == 5) return; /* lane 5 leaves; the others still name it in the mask */
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void own_lane_missing_kernel(float *out) {
    out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, 1.0f, 1); /* lanes 16..31 are not in their own mask */
}

__global__ void reads_outside_mask_kernel(float *out) {
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, 2.0f, 20);
}

Test(cuda_cpu, bad_collectives_are_errors_naming_the_kernel) {
    float out[32];
    LAUNCH(early_exit_shuffle_kernel, 1, 32, 0, 0)(out);
    const char *m = launch_message();
    cr_expect(strstr(m, "kernel early_exit_shuffle_kernel") && strstr(m, "lane 5") && strstr(m, "exited"), "%s", m);
    LAUNCH(own_lane_missing_kernel, 1, 32, 0, 0)(out);
    m = launch_message();
    cr_expect(strstr(m, "own_lane_missing_kernel") && strstr(m, "does not name its own lane"), "%s", m);
    LAUNCH(reads_outside_mask_kernel, 1, 32, 0, 0)(out);
    m = launch_message();
    cr_expect(strstr(m, "reads_outside_mask_kernel") && strstr(m, "reads lane 20"), "%s", m);
}

/* ------------------------------------------------------------------ 16-byte vector access */

/* Thread i copies 16 bytes from in + off_in + 16·i to out + off_out + 16·i as one vector. */
__global__ void vector_copy_kernel(char *out, const char *in, int off_out, int off_in) {
    const float4 v = CUDA_CPU_VECTOR_LOAD(float4, in + off_in + 16 * threadIdx.x);
    CUDA_CPU_VECTOR_STORE(out + off_out + 16 * threadIdx.x, v);
}

Test(cuda_cpu, misaligned_vector_accesses_are_errors_naming_the_kernel) {
    alignas(16) char in[80], out[80];
    for (int i = 0; i < 80; i++) in[i] = (char)i, out[i] = 0;
    LAUNCH(vector_copy_kernel, 1, 4, 0, 0)(out, in, 0, 16); /* aligned: a plain copy */
    cr_expect_str_eq(launch_message(), "");
    for (int i = 0; i < 64; i++) cr_expect_eq(out[i], (char)(i + 16), "byte %d", i);
    const uint4 u = make_uint4(1, 2, 3, 4);
    cr_expect_eq(u.w, 4u);
    /* a GPU faults on both: here each is a launch error, and the access is not made */
    memset(out, 0, sizeof out);
    LAUNCH(vector_copy_kernel, 1, 4, 0, 0)(out, in, 0, 4);
    const char *m = launch_message();
    cr_expect(strstr(m, "kernel vector_copy_kernel") && strstr(m, "thread (0,0,0)") && strstr(m, "16-byte vector load") &&
                  strstr(m, "not 16-byte aligned") && strstr(m, "test_cuda_cpu.cpp"),
              "%s", m);
    LAUNCH(vector_copy_kernel, 1, 4, 0, 0)(out, in, 8, 16);
    m = launch_message();
    cr_expect(strstr(m, "kernel vector_copy_kernel") && strstr(m, "16-byte vector store") && strstr(m, "not 16-byte aligned"),
              "%s", m);
    for (int i = 0; i < 80; i++) cr_expect_eq(out[i], 0, "byte %d was written by a misaligned store", i);
}

/* ------------------------------------------------------------------ barriers */

__global__ void divergent_barrier_kernel(int *out) {
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

__global__ void exit_before_barrier_kernel(int *out) {
    if (threadIdx.x % 2) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

Test(cuda_cpu, divergent_barriers_are_errors_naming_the_kernel) {
    int out[64];
    LAUNCH(divergent_barrier_kernel, 2, 64, 0, 0)(out);
    const char *m = launch_message();
    cr_expect(strstr(m, "kernel divergent_barrier_kernel, block (0,0,0): divergent barrier"), "%s", m);
    cr_expect(strstr(m, "test_cuda_cpu.cpp"), "the message names the source lines: %s", m);
    LAUNCH(exit_before_barrier_kernel, 1, 64, 0, 0)(out);
    m = launch_message();
    cr_expect(strstr(m, "exit_before_barrier_kernel") && strstr(m, "has exited"), "%s", m);
}

/* Reverse a block's values through shared memory; without the barrier a thread can read
 * a slot before its owner wrote it. */
template <bool SYNC> __global__ void reverse_kernel(float *out, const float *in) {
    __shared__ float sh[128];
    const int t = threadIdx.x;
    sh[t] = in[blockIdx.x * 128 + t];
    if (SYNC) __syncthreads();
    out[blockIdx.x * 128 + t] = sh[127 - t] * 2.0f;
}

static void run_reverse(bool sync, const char *order, float *out, const float *in) {
    cr_assert_eq(cuda_cpu::set_thread_order(order), 0);
    memset(out, 0, 4 * 128 * sizeof(float));
    if (sync) LAUNCH(reverse_kernel<true>, 4, 128, 0, 0)(out, in);
    else LAUNCH(reverse_kernel<false>, 4, 128, 0, 0)(out, in);
    cr_assert_str_eq(launch_message(), "");
}

Test(cuda_cpu, thread_orders_expose_a_missing_barrier) {
    float in[512], ref[512], out[512];
    for (int i = 0; i < 512; i++) in[i] = (float)i;
    for (int b = 0; b < 4; b++)
        for (int t = 0; t < 128; t++) ref[b * 128 + t] = in[b * 128 + 127 - t] * 2.0f;
    const char *orders[] = {"forward", "reverse", "random:7"};
    for (int k = 0; k < 3; k++) {
        run_reverse(true, orders[k], out, in);
        cr_expect_arr_eq(out, ref, sizeof ref, "with the barrier, order %s", orders[k]);
    }
    float fwd[512], rev[512];
    run_reverse(false, "forward", fwd, in);
    run_reverse(false, "reverse", rev, in);
    cr_expect(memcmp(fwd, rev, sizeof fwd) != 0, "without the barrier forward and reverse must differ");
    cr_expect_eq(cuda_cpu::set_thread_order("sideways"), -1);
    cr_assert_eq(cuda_cpu::set_thread_order("forward"), 0);
}

/* ------------------------------------------------------------------ atomics, dynamic shared memory */

__global__ void atomics_kernel(int *count, float *sum) {
    atomicAdd(count, 1);
    atomicAdd(sum, 0.5f);
}

__global__ void dynamic_shared_kernel(float *out) {
    float *sh = (float *)cuda_cpu::dynamic_shared(); /* extern __shared__ on the GPU */
    sh[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = sh[blockDim.x - 1 - threadIdx.x];
}

Test(cuda_cpu, atomics_and_dynamic_shared_memory) {
    int count = 0;
    float sum = 0, out[2 * 96];
    LAUNCH(atomics_kernel, dim3(3, 2), dim3(32, 4), 0, 0)(&count, &sum);
    cr_assert_str_eq(launch_message(), "");
    cr_expect_eq(count, 768);
    cr_expect_eq(sum, 384.0f);
    LAUNCH(dynamic_shared_kernel, 2, 96, 96 * sizeof(float), 0)(out);
    cr_assert_str_eq(launch_message(), "");
    for (int i = 0; i < 2 * 96; i++) cr_expect_eq(out[i], (float)(95 - i % 96));
}

/* ------------------------------------------------------------------ launch limits */

__global__ void empty_kernel(int *p) { (void)p; }

Test(cuda_cpu, launch_limits_are_errors_naming_the_kernel) {
    LAUNCH(empty_kernel, 1, 2048, 0, 0)(nullptr);
    const char *m = launch_message();
    cr_expect(strstr(m, "kernel empty_kernel: block (2048,1,1) = 2048 threads"), "%s", m);
    LAUNCH(empty_kernel, 1, dim3(16, 16, 8), 0, 0)(nullptr);
    m = launch_message();
    cr_expect(strstr(m, "empty_kernel") && strstr(m, "2048 threads"), "%s", m);
    LAUNCH(empty_kernel, dim3(1, 70000), 32, 0, 0)(nullptr);
    m = launch_message();
    cr_expect(strstr(m, "empty_kernel: grid (1,70000,1)"), "%s", m);
    LAUNCH(empty_kernel, 0, 32, 0, 0)(nullptr);
    m = launch_message();
    cr_expect(strstr(m, "empty_kernel: empty launch"), "%s", m);
    LAUNCH(empty_kernel, 1, 32, 64 << 10, 0)(nullptr);
    m = launch_message();
    cr_expect(strstr(m, "empty_kernel: 65536 bytes of dynamic shared memory"), "%s", m);
    LAUNCH(empty_kernel, 1, 1024, 0, 0)(nullptr);
    cr_expect_str_eq(launch_message(), "", "1024 threads is the limit, not past it");
}

__global__ void opted_in_kernel(int *p) { (void)p; }
__global__ void other_kernel(int *p) { (void)p; }

/* cudaFuncSetAttribute's MaxDynamicSharedMemorySize: that kernel (and no other) may then ask for up
 * to the amount set, at most an H100's 227 KiB */
Test(cuda_cpu, dynamic_shared_memory_opt_in_per_kernel) {
    LAUNCH(opted_in_kernel, 1, 32, 100 << 10, 0)(nullptr);
    const char *m = launch_message();
    cr_expect(strstr(m, "opted_in_kernel: 102400 bytes of dynamic shared memory (at most 49152 without "
                        "cudaFuncSetAttribute's MaxDynamicSharedMemorySize)"), "%s", m);
    cr_assert_eq(cudaFuncSetAttribute(opted_in_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10),
                 cudaSuccess);
    LAUNCH(opted_in_kernel, 1, 32, 200 << 10, 0)(nullptr);
    cr_expect_str_eq(launch_message(), "", "opted into 200 KiB");
    LAUNCH(opted_in_kernel, 1, 32, (200 << 10) + 16, 0)(nullptr);
    m = launch_message();
    cr_expect(strstr(m, "opted_in_kernel: 204816 bytes of dynamic shared memory (at most 204800: the kernel's opt-in)"),
              "%s", m);
    LAUNCH(other_kernel, 1, 32, 100 << 10, 0)(nullptr);
    m = launch_message();
    cr_expect(strstr(m, "other_kernel: 102400 bytes"), "another kernel keeps 48 KiB: %s", m);
    cr_expect_eq(cudaFuncSetAttribute(opted_in_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 << 10),
                 cudaErrorInvalidValue, "past 227 KiB");
    (void)launch_message();
}

/* ------------------------------------------------------------------ graphs */

__global__ void add_kernel(float *x, float v) { x[threadIdx.x] += v; }

Test(cuda_cpu, graph_capture_replays_in_order) {
    float x[8] = {0}, y[8];
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ex;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    LAUNCH(add_kernel, 1, 8, 0, s)(x, 1.0f);
    LAUNCH(add_kernel, 1, 8, 0, s)(x, 2.0f);
    cr_expect_eq(cudaMemcpy(y, x, sizeof x, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
    (void)cudaGetLastError();
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(x[0], 0.0f, "captured, not run");
    cr_assert_eq(cudaGraphInstantiate(&ex, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    for (int i = 0; i < 8; i++) cr_expect_eq(x[i], 6.0f);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

/* Async copies and memsets on a capturing stream become graph nodes, replayed in issue
 * order with the kernels (the fast/ step's inputs: copies from fixed pinned buffers). */
Test(cuda_cpu, graph_records_async_copies_and_memsets) {
    float *pinned = NULL, *dev = NULL;
    cr_assert_eq(cudaMallocHost(&pinned, 8 * sizeof(float)), cudaSuccess);
    cr_assert_eq(cudaMalloc(&dev, 8 * sizeof(float)), cudaSuccess);
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ex;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    for (int i = 0; i < 8; i++) pinned[i] = (float)i, dev[i] = -1.0f;
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cr_assert_eq(cudaStreamIsCapturing(s, &cs), cudaSuccess);
    cr_expect_eq(cs, cudaStreamCaptureStatusActive);
    cr_assert_eq(cudaMemsetAsync(dev, 0, 8 * sizeof(float), s), cudaSuccess);
    cr_assert_eq(cudaMemcpyAsync(dev, pinned, 4 * sizeof(float), cudaMemcpyHostToDevice, s), cudaSuccess);
    LAUNCH(add_kernel, 1, 8, 0, s)(dev, 10.0f);
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(dev[0], -1.0f, "captured, not run");
    cr_assert_eq(cudaGraphInstantiate(&ex, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphDestroy(g), cudaSuccess, "the instance outlives its graph");
    for (int i = 0; i < 8; i++) pinned[i] = (float)(100 + i); /* the replay reads the buffer as it is now */
    cr_assert_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    for (int i = 0; i < 8; i++) cr_expect_eq(dev[i], i < 4 ? 110.0f + i : 10.0f, "element %d", i);
    cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess, "no capture: waiting is allowed");
    cudaGraphExecDestroy(ex);
    cudaStreamDestroy(s);
    cudaFree(dev);
    cudaFreeHost(pinned);
}

/* The classic graph bugs fail as CUDA fails them (cudaErrorStreamCaptureUnsupported), naming
 * the call, instead of running at capture time and never again: a synchronous copy or
 * memset, a device or stream wait, and work issued on the legacy default stream while a
 * stream captures, which is not recorded into that stream's graph. */
Test(cuda_cpu, capture_refuses_synchronous_calls_and_the_legacy_stream) {
    float x[8] = {0}, y[8] = {0};
    cudaStream_t s, other;
    cudaGraph_t g;
    cudaGraphExec_t ex;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    LAUNCH(add_kernel, 1, 8, 0, s)(x, 1.0f);
    struct {
        cudaError_t got;
        const char *name;
    } refused[] = {
        {cudaMemcpy(y, x, sizeof x, cudaMemcpyDeviceToHost), "cudaMemcpy"},
        {cudaMemset(y, 0, sizeof y), "cudaMemset"},
        {cudaDeviceSynchronize(), "cudaDeviceSynchronize"},
        {cudaStreamSynchronize(s), "cudaStreamSynchronize"},
        {cudaStreamSynchronize(other), "cudaStreamSynchronize"},
        {cudaMemcpyAsync(y, x, sizeof x, cudaMemcpyDeviceToHost, 0), "cudaMemcpyAsync on the legacy default stream"},
        {cudaMemsetAsync(y, 0, sizeof y, 0), "cudaMemsetAsync on the legacy default stream"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cr_expect_eq(refused[i].got, cudaErrorStreamCaptureUnsupported, "%s during a capture", refused[i].name);
        (void)cudaGetLastError();
    }
    /* the error string names the call; checked on a fresh refusal */
    cr_expect_eq(cudaMemcpy(y, x, sizeof x, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
    const char *msg = cudaGetErrorString(cudaGetLastError());
    cr_expect(strstr(msg, "cudaMemcpy") && strstr(msg, "captured"), "%s", msg);
    cr_expect_eq(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
    msg = cudaGetErrorString(cudaGetLastError());
    cr_expect(strstr(msg, "cudaDeviceSynchronize"), "%s", msg);
    LAUNCH(add_kernel, 1, 8, 0, 0)(x, 100.0f); /* the legacy stream: refused, not recorded */
    msg = launch_message();
    cr_expect(strstr(msg, "add_kernel") && strstr(msg, "legacy default stream"), "%s", msg);
    cr_expect_eq(cudaMemcpyAsync(y, x, sizeof x, cudaMemcpyDeviceToHost, 0), cudaErrorStreamCaptureUnsupported);
    msg = cudaGetErrorString(cudaGetLastError());
    cr_expect(strstr(msg, "cudaMemcpyAsync on the legacy default stream"), "%s", msg);
    cr_expect_eq(y[0], 0.0f, "nothing refused ran");
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(x[0], 0.0f, "the captured launch did not run, the refused ones neither");
    cr_assert_eq(cudaGraphInstantiate(&ex, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    for (int i = 0; i < 8; i++) cr_expect_eq(x[i], 1.0f, "the graph holds the one launch on s only");
    cr_expect_eq(cudaMemcpy(y, x, sizeof x, cudaMemcpyDeviceToHost), cudaSuccess, "after the capture: allowed");
    cr_expect_eq(y[3], 1.0f);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
    cudaStreamDestroy(other);
    cudaStreamDestroy(s);
}

/* ------------------------------------------------------------------ cuBLASLt */

/* Column-major D [m,n] = alpha·op(A)·op(B) + beta·C through the stand-in, issued on stream s;
 * A, B bf16, fp32 out; C is D unless given. The descriptors are destroyed before it returns. */
static cublasStatus_t lt(float *D, const __nv_bfloat16 *A, int ta, int lda, const __nv_bfloat16 *B, int tb, int ldb,
                         int m, int n, int k, int a_rows, float beta, cudaStream_t s = 0, float alpha = 1.0f,
                         const float *C = NULL) {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    cublasOperation_t a_op = ta ? CUBLAS_OP_T : CUBLAS_OP_N, b_op = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtCreate(&h);
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &a_op, sizeof a_op);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &b_op, sizeof b_op);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, a_rows, ta ? m : k, lda);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, tb ? n : k, tb ? k : n, ldb);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m);
    cublasLtMatmulPreferenceCreate(&pref);
    const uint32_t one = 2; /* bf16 arrays on the stack */
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &one, sizeof one);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &one, sizeof one);
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &heur, &found);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmul(h, op, &alpha, A, la, B, lb, &beta, C ? C : D, lc, D, lc, &heur.algo, NULL, 0, s);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(h);
    return st;
}

/* bf16 D [m,n] with ldd > m (fast/'s logits: rows of the padded vocabulary): each column of D
 * gets its m products rounded once to bf16, and the ldd − m entries past them are not touched.
 * A [m,k] and B [k,n] stored plainly (no transposes). */
Test(cuda_cpu, cublaslt_stand_in_bf16_output_with_a_leading_dimension) {
    const int m = 3, n = 2, k = 4, ldd = 5;
    __nv_bfloat16 A[3 * 4], B[4 * 2];
    float Af[3 * 4], Bf[4 * 2];
    for (int i = 0; i < m * k; i++) Af[i] = __bfloat162float(A[i] = __float2bfloat16(0.3f * (float)i - 1.1f));
    for (int i = 0; i < k * n; i++) Bf[i] = __bfloat162float(B[i] = __float2bfloat16(0.7f - 0.2f * (float)i));
    alignas(256) __nv_bfloat16 D[5 * 2];
    for (int i = 0; i < ldd * n; i++) D[i] = __float2bfloat16(-99.0f); /* the pad: must stay */
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    const float alpha = 1.0f, beta = 0.0f;
    const uint32_t two = 2;
    cublasLtCreate(&h);
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, m, k, m);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, ldd);
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &two, sizeof two);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &two, sizeof two);
    cr_assert_eq(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 1, &heur, &found), CUBLAS_STATUS_SUCCESS,
                 "%s", cublas_cpu_last_error());
    cr_assert_eq(cublasLtMatmul(h, op, &alpha, A, la, B, lb, &beta, D, ld, D, ld, &heur.algo, NULL, 0, 0),
                 CUBLAS_STATUS_SUCCESS, "%s", cublas_cpu_last_error());
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float acc = 0.0f; /* fp32, over k in order: the stand-in's documented accumulation */
            for (int p = 0; p < k; p++) acc += Af[i + p * m] * Bf[p + j * k];
            cr_expect_eq(__bfloat16_as_ushort(D[i + j * ldd]), __bfloat16_as_ushort(__float2bfloat16(acc)),
                         "D[%d,%d] = %g, expected bf16(%g)", i, j, __bfloat162float(D[i + j * ldd]), acc);
        }
        for (int i = m; i < ldd; i++)
            cr_expect_eq(__bfloat162float(D[i + j * ldd]), -99.0f, "pad entry %d of column %d was written", i, j);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(h);
}

/* The stand-in's matmul on a capturing stream is recorded and replayed, with the descriptors'
 * values as they were at capture (lt destroys them before the replay); on the legacy
 * default stream during a capture it is refused. */
Test(cuda_cpu, graph_records_the_cublaslt_stand_in) {
    __nv_bfloat16 A[4], B[4];
    alignas(256) float D[4] = {0}; /* C and D keep the default 256-byte alignment */
    for (int i = 0; i < 4; i++)
        A[i] = __float2bfloat16((float)(i + 1)), B[i] = __float2bfloat16(i == 0 || i == 3 ? 1.0f : 0.0f);
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ex;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(lt(D, A, 0, 2, B, 0, 2, 2, 2, 2, 2, 0.0f, s), CUBLAS_STATUS_SUCCESS);
    cr_expect_neq(lt(D, A, 0, 2, B, 0, 2, 2, 2, 2, 2, 0.0f, 0), CUBLAS_STATUS_SUCCESS,
                  "the legacy default stream during a capture is refused");
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_expect_eq(D[0], 0.0f, "captured, not run");
    cr_assert_eq(cudaGraphInstantiate(&ex, g, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(ex, s), cudaSuccess);
    for (int i = 0; i < 4; i++) cr_expect_eq(D[i], (float)(i + 1), "D = A·I: D[%d] = %g", i, D[i]);
    cudaGraphExecDestroy(ex);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

Test(cuda_cpu, cublaslt_stand_in_computes_the_documented_product) {
    const int m = 5, n = 3, k = 7, lda = 9, ldb = 8; /* padded leading dimensions */
    __nv_bfloat16 A[9 * 7], B[8 * 7];                /* A stored k x m (transposed), B stored k x n */
    float Af[9 * 7], Bf[8 * 7];
    for (int i = 0; i < 9 * 7; i++) Af[i] = __bfloat162float(A[i] = __float2bfloat16(sinf((float)i)));
    for (int i = 0; i < 8 * 7; i++) Bf[i] = __bfloat162float(B[i] = __float2bfloat16(cosf((float)i)));
    float *D = (float *)aligned_alloc(256, 256);
    for (int i = 0; i < m * n; i++) D[i] = 1.0f;
    cr_assert_eq(lt(D, A, 1, lda, B, 0, ldb, m, n, k, k, 0.5f), CUBLAS_STATUS_SUCCESS, "%s", cublas_cpu_last_error());
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) s += (double)Af[p + i * lda] * Bf[p + j * ldb]; /* op(A)=Aᵀ */
            cr_expect(fabs(D[i + j * m] - (s + 0.5)) < 1e-5, "D[%d,%d] = %g, expected %g", i, j, D[i + j * m], s + 0.5);
        }
    /* a leading dimension below the stored rows, and a k that does not match, are refused */
    cr_expect_eq(lt(D, A, 1, 3, B, 0, ldb, m, n, k, k, 0.0f), CUBLAS_STATUS_INVALID_VALUE);
    cr_expect(strstr(cublas_cpu_last_error(), "leading dimension of A"), "%s", cublas_cpu_last_error());
    cr_expect_eq(lt(D, A, 1, lda, B, 0, ldb, m, n, k, k + 1, 0.0f), CUBLAS_STATUS_INVALID_VALUE);
    cr_expect(strstr(cublas_cpu_last_error(), "rows"), "%s", cublas_cpu_last_error());
    free(D);
}

/* D = alpha·op(A)·op(B) + beta·C with C a different buffer from D (fast/'s value mix rides on
 * the W_v GEMM this way: alpha the layer's own coefficient, C an earlier layer's values):
 * C is read, not written, and D's old contents do not enter. */
Test(cuda_cpu, cublaslt_stand_in_scales_by_alpha_and_reads_a_separate_c) {
    const int m = 4, n = 3, k = 5;
    __nv_bfloat16 A[5 * 4], B[5 * 3]; /* A stored k x m (transposed), B stored k x n */
    float Af[5 * 4], Bf[5 * 3];
    for (int i = 0; i < k * m; i++) Af[i] = __bfloat162float(A[i] = __float2bfloat16(sinf((float)i + 0.5f)));
    for (int i = 0; i < k * n; i++) Bf[i] = __bfloat162float(B[i] = __float2bfloat16(cosf((float)i)));
    float *C = (float *)aligned_alloc(256, 256), *D = (float *)aligned_alloc(256, 256);
    for (int i = 0; i < m * n; i++) C[i] = (float)(i + 1), D[i] = 1e30f; /* D's old value must not leak in */
    cr_assert_eq(lt(D, A, 1, k, B, 0, k, m, n, k, k, 0.25f, 0, -1.5f, C), CUBLAS_STATUS_SUCCESS, "%s",
                 cublas_cpu_last_error());
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) s += (double)Af[p + i * k] * Bf[p + j * k];
            const double want = -1.5 * s + 0.25 * (i + j * m + 1);
            cr_expect(fabs(D[i + j * m] - want) < 1e-5, "D[%d,%d] = %g, expected %g", i, j, D[i + j * m], want);
            cr_expect_eq(C[i + j * m], (float)(i + j * m + 1), "C[%d,%d] was written", i, j);
        }
    free(C);
    free(D);
}
