/* test_cuda_cpu_check.cpp: the CPU layer's hazard checkers (fast/cuda_cpu/check.h), built
 * like the check build (this file's kernels instrumented, linked with vrl_fast_cpu_check).
 *
 * Story: each hazard a GPU would expose, written as a small kernel or stream sequence the
 * way a careless CUDA programmer writes it, must come back as a launch error naming the
 * kernel (or the stream operation) and the kind of hazard; its correct twin must pass
 * with the right values. Then the scheduler: a warp shuffle synchronises its own warp only
 * (two reductions through one shared buffer without a barrier give wrong sums in the
 * reverse order), and the block order knob runs blocks forward, reversed and shuffled. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/runtime.h"

#define LAUNCH CUDA_CPU_LAUNCH

/* these tests make hazards on purpose: report them, do not fail the worker's exit */
static void report_only(void) { setenv("VRL_CUDA_CPU_CHECK", "report", 1); }
TestSuite(cuda_cpu_check, .init = report_only);

static const char *launch_message(void) {
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

static void expect_error(const char *msg, const char *kernel, const char *kind) {
    cr_expect(strstr(msg, kernel) != NULL, "the error names %s: \"%s\"", kernel, msg);
    cr_expect(strstr(msg, kind) != NULL, "the error says %s: \"%s\"", kind, msg);
}

/* ------------------------------------------------------------------ shared memory */

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* out[0] = Σ in[0..64), out[1] = Σ in[64..128): two block reductions through one shared
 * buffer; BARRIER = false leaves out the barrier between the first's read of part[] and the
 * second's writes, so only warp shuffles separate them. */
template <bool BARRIER> __global__ void two_reductions_kernel(float *out, const float *in) {
    __shared__ float part[2];
    const int t = threadIdx.x, lane = t % 32, w = t / 32;
    for (int r = 0; r < 2; r++) {
        const float v = warp_sum(in[r * 64 + t]);
        if (lane == 0) part[w] = v;
        __syncthreads();
        if (t == 0) out[r] = part[0] + part[1];
        if (BARRIER) __syncthreads();
    }
}

static int run_two_reductions(bool barrier, const char *order, float *out) {
    float in[128];
    for (int i = 0; i < 128; i++) in[i] = (float)(i % 64 < 32 ? 1 : 2) * (i < 64 ? 1.0f : 10.0f);
    float *d_in, *d_out;
    cudaMalloc(&d_in, sizeof in);
    cudaMalloc(&d_out, 2 * sizeof(float));
    cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice);
    cuda_cpu::set_thread_order(order);
    if (barrier) LAUNCH(two_reductions_kernel<true>, 1, 64, 0, 0)(d_out, d_in);
    else LAUNCH(two_reductions_kernel<false>, 1, 64, 0, 0)(d_out, d_in);
    const char *msg = launch_message();
    static char saved[1024];
    snprintf(saved, sizeof saved, "%s", msg);
    const int failed = saved[0] != '\0';
    if (!failed) cudaMemcpy(out, d_out, 2 * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d_in), cudaFree(d_out);
    cuda_cpu::set_thread_order("forward");
    if (failed) expect_error(saved, "two_reductions_kernel<false>", "shared-memory race");
    return failed;
}

Test(cuda_cpu_check, shuffles_are_no_block_barrier) {
    float out[2];
    const char *orders[] = {"forward", "reverse", "random:3"};
    for (int k = 0; k < 3; k++) {
        cr_expect_eq(run_two_reductions(true, orders[k], out), 0, "with the barrier, order %s", orders[k]);
        cr_expect(out[0] == 96.0f && out[1] == 960.0f, "sums %g %g in order %s", out[0], out[1], orders[k]);
    }
    cr_expect_eq(run_two_reductions(false, "forward", out), 1, "the checker reports the missing barrier");
    cr_expect_eq(run_two_reductions(false, "reverse", out), 1, "the checker reports the missing barrier");
}

Test(cuda_cpu_check, shuffles_are_no_block_barrier_without_the_checker) {
    /* the schedule alone: warp 1 runs to its next barrier before warp 0 reads part[] */
    setenv("VRL_CUDA_CPU_CHECK", "0", 1);
    cr_assert_eq(cuda_cpu::check::enabled(), 0);
    float fwd[2], rev[2];
    cr_assert_eq(run_two_reductions(false, "forward", fwd), 0);
    cr_assert_eq(run_two_reductions(false, "reverse", rev), 0);
    cr_expect(fwd[0] == 96.0f && fwd[1] == 960.0f, "forward happens to be right: %g %g", fwd[0], fwd[1]);
    cr_expect(rev[0] != 96.0f, "reverse: warp 1's second partial overwrote its first before warp 0 read it (%g)",
              rev[0]);
}

__global__ void shared_uninit_kernel(float *out) {
    __shared__ float s[64];
    if (threadIdx.x < 32) s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x]; /* threads 32..63 read what nobody wrote */
}

Test(cuda_cpu_check, uninitialised_shared_memory) {
    float *d;
    cudaMalloc(&d, 64 * sizeof(float));
    LAUNCH(shared_uninit_kernel, 1, 64, 0, 0)(d);
    expect_error(launch_message(), "shared_uninit_kernel", "uninitialised shared memory");
    LAUNCH(shared_uninit_kernel, 1, 32, 0, 0)(d);
    cr_expect_str_eq(launch_message(), "", "32 threads write every byte they read");
    cudaFree(d);
}

/* Every access pattern the shared-memory checker claims (check.h: two warps of a block touch
 * one byte between two barriers, one writing), over 4 warps, in all three thread orders (which
 * access the checker sees first changes the kind it names): one warp writes and another
 * reads; two warps write; several warps read, then one other warp writes; several read, then
 * one of the readers writes (the write races with the other readers). Each twin with a
 * __syncthreads() before the write, and with every access in one warp, passes with the value. */
enum SharedPattern { WRITE_READ, WRITE_WRITE, READERS_THEN_WRITER, READERS_THEN_A_READER_WRITES };

template <SharedPattern P, bool BARRIER> __global__ void shared_pattern_kernel(float *out, int one_warp) {
    __shared__ float s[1];
    const int t = threadIdx.x, lane = t % 32;
    /* the 4 actors: thread 32w of warp w, or with one_warp threads 0, 8, 16, 24 of warp 0 */
    const int w = one_warp ? (t < 32 && lane % 8 == 0 ? lane / 8 : -1) : (lane == 0 ? t / 32 : -1);
    if (t == 0) s[0] = 1.0f;
    __syncthreads();
    float r = 0.0f;
    /* first accesses */
    if (P == WRITE_READ && w == 0) s[0] = 2.0f;
    if (P == WRITE_WRITE && w == 1) s[0] = 6.0f;
    if (P == READERS_THEN_WRITER && w >= 0 && w <= 2) r = s[0];
    if (P == READERS_THEN_A_READER_WRITES && w >= 0) r = s[0];
    if (BARRIER) __syncthreads();
    /* then the second */
    if (P == WRITE_READ && w == 1) r = s[0];
    if (P == WRITE_WRITE && w == 0) s[0] = 3.0f;
    if (P == READERS_THEN_WRITER && w == 3) s[0] = 4.0f;
    if (P == READERS_THEN_A_READER_WRITES && w == 0) s[0] = 5.0f;
    __syncthreads();
    out[t] = s[0];
    if (r < 0.0f) out[t] = r; /* keeps the reads (never true) */
}

/* The launch's error ("" when none) for pattern kernel k in thread order `order`. */
static void shared_pattern(void (*k)(float *, int), const char *name, int one_warp, const char *order, char *msg,
                           size_t n, float *first) {
    float *d;
    cudaMalloc(&d, 128 * sizeof(float));
    cuda_cpu::set_thread_order(order);
    cuda_cpu::make_launcher(name, k, 1, 128, 0, 0)(d, one_warp);
    snprintf(msg, n, "%s", launch_message());
    if (!msg[0]) cudaMemcpy(first, d, sizeof(float), cudaMemcpyDeviceToHost);
    cuda_cpu::set_thread_order("forward");
    cudaFree(d);
}

Test(cuda_cpu_check, every_shared_memory_pattern) {
    struct {
        void (*racy)(float *, int), (*fixed)(float *, int);
        const char *name;
        float value; /* s[0] at the end, with the barrier */
    } const pat[] = {
        {shared_pattern_kernel<WRITE_READ, false>, shared_pattern_kernel<WRITE_READ, true>, "write_read", 2.0f},
        {shared_pattern_kernel<WRITE_WRITE, false>, shared_pattern_kernel<WRITE_WRITE, true>, "write_write", 3.0f},
        {shared_pattern_kernel<READERS_THEN_WRITER, false>, shared_pattern_kernel<READERS_THEN_WRITER, true>,
         "readers_then_writer", 4.0f},
        {shared_pattern_kernel<READERS_THEN_A_READER_WRITES, false>,
         shared_pattern_kernel<READERS_THEN_A_READER_WRITES, true>, "readers_then_a_reader_writes", 5.0f},
    };
    const char *orders[] = {"forward", "reverse", "random:3"};
    for (const auto &p : pat)
        for (const char *o : orders) {
            char msg[1024];
            float first = 0;
            shared_pattern(p.racy, p.name, 0, o, msg, sizeof msg, &first);
            cr_expect(strstr(msg, p.name) && strstr(msg, "shared-memory race"),
                      "%s across warps, order %s: a shared-memory race naming the kernel: \"%s\"", p.name, o, msg);
            shared_pattern(p.fixed, p.name, 0, o, msg, sizeof msg, &first);
            cr_expect_str_eq(msg, "", "%s with the barrier, order %s", p.name, o);
            cr_expect_eq(first, p.value, "%s with the barrier, order %s: s[0] = %g", p.name, o, (double)first);
            shared_pattern(p.racy, p.name, 1, o, msg, sizeof msg, &first);
            cr_expect_str_eq(msg, "", "%s within one warp, order %s (a warp is not checked against itself)", p.name, o);
        }
}

/* ------------------------------------------------------------------ global memory */

template <bool ATOMIC> __global__ void count_blocks_kernel(float *sum) {
    if (threadIdx.x == 0) {
        if (ATOMIC) atomicAdd(sum, 1.0f);
        else *sum += 1.0f;
    }
}

Test(cuda_cpu_check, inter_block_race) {
    float *d, h = -1.0f;
    cudaMalloc(&d, sizeof(float));
    cudaMemset(d, 0, sizeof(float));
    LAUNCH(count_blocks_kernel<false>, 4, 32, 0, 0)(d);
    expect_error(launch_message(), "count_blocks_kernel<false>", "inter-block race");
    cudaMemset(d, 0, sizeof(float));
    LAUNCH(count_blocks_kernel<true>, 4, 32, 0, 0)(d);
    cr_expect_str_eq(launch_message(), "");
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    cr_expect_eq(h, 4.0f);
    cudaFree(d);
}

/* The inter-block patterns (check.h: within one launch, a non-atomic access to a word another
 * block wrote, or a write to a word another block read), 4 blocks, in all three block orders:
 * one block writes and another reads; two blocks write; several blocks read, then one other
 * block writes; several read and one of the readers writes. The twins: every block reads
 * only, and every block writes its own word, pass. */
enum GlobalPattern { G_WRITE_READ, G_WRITE_WRITE, G_READERS_THEN_WRITER, G_READERS_THEN_A_READER_WRITES, G_READ_ONLY,
                     G_OWN_WORDS };

template <GlobalPattern P> __global__ void global_pattern_kernel(float *p, float *out) {
    if (threadIdx.x) return;
    const int b = blockIdx.x;
    float r = 0.0f;
    if (P == G_WRITE_READ) {
        if (b == 0) p[0] = 2.0f;
        if (b == 1) r = p[0];
    } else if (P == G_WRITE_WRITE) {
        if (b <= 1) p[0] = 3.0f;
    } else if (P == G_READERS_THEN_WRITER) {
        if (b <= 2) r = p[0];
        if (b == 3) p[0] = 4.0f;
    } else if (P == G_READERS_THEN_A_READER_WRITES) {
        r = p[0];
        if (b == 0) p[0] = 5.0f;
    } else if (P == G_READ_ONLY) {
        r = p[0];
    } else {
        p[1 + b] = (float)b;
    }
    out[b] = r;
}

Test(cuda_cpu_check, every_inter_block_pattern) {
    struct {
        void (*k)(float *, float *);
        const char *name;
        int racy;
    } const pat[] = {
        {global_pattern_kernel<G_WRITE_READ>, "global_pattern_kernel<G_WRITE_READ>", 1},
        {global_pattern_kernel<G_WRITE_WRITE>, "global_pattern_kernel<G_WRITE_WRITE>", 1},
        {global_pattern_kernel<G_READERS_THEN_WRITER>, "global_pattern_kernel<G_READERS_THEN_WRITER>", 1},
        {global_pattern_kernel<G_READERS_THEN_A_READER_WRITES>, "global_pattern_kernel<G_READERS_THEN_A_READER_WRITES>",
         1},
        {global_pattern_kernel<G_READ_ONLY>, "global_pattern_kernel<G_READ_ONLY>", 0},
        {global_pattern_kernel<G_OWN_WORDS>, "global_pattern_kernel<G_OWN_WORDS>", 0},
    };
    const char *orders[] = {"forward", "reverse", "random:5"};
    float *p, *out;
    cudaMalloc(&p, 8 * sizeof(float));
    cudaMalloc(&out, 4 * sizeof(float));
    for (const auto &q : pat)
        for (const char *o : orders) {
            cr_assert_eq(cuda_cpu::set_block_order(o), 0);
            cudaMemset(p, 0, 8 * sizeof(float));
            cuda_cpu::make_launcher(q.name, q.k, 4, 32, 0, 0)(p, out);
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", launch_message());
            if (q.racy) expect_error(msg, q.name, "inter-block race");
            else cr_expect_str_eq(msg, "", "%s, block order %s", q.name, o);
        }
    cuda_cpu::set_block_order("forward");
    cudaFree(p), cudaFree(out);
}

__global__ void read_kernel(float *out, const float *in) { out[threadIdx.x] = in[threadIdx.x] * 2.0f; }

Test(cuda_cpu_check, uninitialised_global_memory) {
    float *in, *out, h[8];
    cudaMalloc(&in, 8 * sizeof(float));
    cudaMalloc(&out, 8 * sizeof(float));
    cudaMemcpy(h, in, sizeof h, cudaMemcpyDeviceToHost);
    uint32_t u;
    memcpy(&u, &h[3], 4);
    cr_expect_eq(u, 0xffffffffu, "cudaMalloc's bytes start as a NaN pattern");
    LAUNCH(read_kernel, 1, 8, 0, 0)(out, in);
    expect_error(launch_message(), "read_kernel", "uninitialised global read");
    cudaMemset(in, 0, 8 * sizeof(float));
    LAUNCH(read_kernel, 1, 8, 0, 0)(out, in);
    cr_expect_str_eq(launch_message(), "");
    cudaFree(in), cudaFree(out);
}

/* ------------------------------------------------------------------ streams */

__global__ void fill_kernel(float *p, float v) { p[threadIdx.x] = v; }

Test(cuda_cpu_check, stream_order) {
    cudaStream_t a, b;
    cudaEvent_t e;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaEventCreate(&e);
    float *x, *y;
    cudaMalloc(&x, 32 * sizeof(float));
    cudaMalloc(&y, 32 * sizeof(float));
    LAUNCH(fill_kernel, 1, 32, 0, a)(x, 1.0f);
    LAUNCH(read_kernel, 1, 32, 0, b)(y, x); /* b never waited for a */
    expect_error(launch_message(), "read_kernel", "stream race");
    cudaDeviceSynchronize(); /* the host has waited for both: what follows starts clean */
    LAUNCH(fill_kernel, 1, 32, 0, a)(x, 2.0f);
    cudaEventRecord(e, a);
    cudaStreamWaitEvent(b, e, 0);
    LAUNCH(read_kernel, 1, 32, 0, b)(y, x);
    cr_expect_str_eq(launch_message(), "", "an event wait orders them");
    LAUNCH(fill_kernel, 1, 32, 0, a)(x, 3.0f); /* a overwrites what b read, without waiting for b */
    expect_error(launch_message(), "fill_kernel", "stream race");
    cudaDeviceSynchronize();
    float h[32];
    cr_expect_eq(cudaMemcpyAsync(h, y, sizeof h, cudaMemcpyDeviceToHost, a), cudaSuccess, "after a device sync");
    cudaFree(x), cudaFree(y);
    cudaEventDestroy(e);
    cudaStreamDestroy(a), cudaStreamDestroy(b);
}

Test(cuda_cpu_check, pinned_buffer_rewritten_before_its_copy_is_waited_for) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int *pin, *d;
    cudaMallocHost(&pin, 16 * sizeof(int));
    cudaMalloc(&d, 16 * sizeof(int));
    for (int i = 0; i < 16; i++) pin[i] = i;
    cr_expect_eq(cudaMemcpyAsync(d, pin, 16 * sizeof(int), cudaMemcpyHostToDevice, s), cudaSuccess);
    cudaStreamSynchronize(s);
    pin[0] = 100; /* after the wait: fine */
    cr_expect_eq(cudaMemcpyAsync(d, pin, 16 * sizeof(int), cudaMemcpyHostToDevice, s), cudaSuccess);
    pin[0] = 200; /* the copy above may not have run yet on a GPU */
    cr_expect_neq(cudaMemcpyAsync(d, pin, 16 * sizeof(int), cudaMemcpyHostToDevice, s), cudaSuccess);
    expect_error(cudaGetErrorString(cudaGetLastError()), "cudaMemcpyAsync", "pinned memory");
    cudaFreeHost(pin), cudaFree(d);
    cudaStreamDestroy(s);
}

/* ------------------------------------------------------------------ block order */

__global__ void block_order_kernel(int *seen, int *next) {
    if (threadIdx.x == 0) seen[atomicAdd(next, 1)] = (int)blockIdx.x;
}

Test(cuda_cpu_check, block_orders) {
    int *seen, *next, h[4];
    cudaMalloc(&seen, 4 * sizeof(int));
    cudaMalloc(&next, sizeof(int));
    const char *orders[] = {"forward", "reverse", "random:5"};
    int got[3][4];
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cuda_cpu::set_block_order(orders[k]), 0);
        cudaMemset(next, 0, sizeof(int));
        LAUNCH(block_order_kernel, 4, 32, 0, 0)(seen, next);
        cr_assert_str_eq(launch_message(), "");
        cudaMemcpy(h, seen, sizeof h, cudaMemcpyDeviceToHost);
        memcpy(got[k], h, sizeof h);
    }
    for (int i = 0; i < 4; i++) cr_expect_eq(got[0][i], i, "forward");
    for (int i = 0; i < 4; i++) cr_expect_eq(got[1][i], 3 - i, "reverse");
    int sorted = 0, mask = 0;
    for (int i = 0; i < 4; i++) sorted += got[2][i] == i, mask |= 1 << got[2][i];
    cr_expect(sorted < 4 && mask == 15, "random: a permutation other than forward");
    cr_expect_eq(cuda_cpu::set_block_order("upwards"), -1);
    cuda_cpu::set_block_order("forward");
    cudaFree(seen), cudaFree(next);
}

/* a grid reduction written carelessly: every block adds its partial sum to one address */
__global__ void norm_like_kernel(double *partial, const float *g, size_t n) {
    __shared__ double sh[256];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (double)g[i] * g[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if ((int)threadIdx.x < k) sh[threadIdx.x] += sh[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[0] += sh[0];
}

Test(cuda_cpu_check, partial_sums_added_by_every_block) {
    double *p;
    float *g;
    cudaMalloc(&p, 1026 * sizeof(double));
    cudaMalloc(&g, 9552 * sizeof(float));
    cudaMemset(p, 0, 1026 * sizeof(double));
    cudaMemset(g, 0, 9552 * sizeof(float));
    LAUNCH(norm_like_kernel, 1024, 256, 0, 0)(p, g, 9552);
    expect_error(launch_message(), "norm_like_kernel", "inter-block race");
}

/* by default a hazard fails the program at exit, whatever it did with the launch error */
Test(cuda_cpu_check_exit, a_hazard_fails_the_program, .exit_code = 66) {
    float *d;
    cudaMalloc(&d, sizeof(float));
    cudaMemset(d, 0, sizeof(float));
    LAUNCH(count_blocks_kernel<false>, 2, 32, 0, 0)(d);
    (void)cudaGetLastError(); /* ignored, as a careless caller would */
    exit(0);
}
