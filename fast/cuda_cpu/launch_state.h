/* launch_state.h: what runtime.cpp and fiber.cpp share inside the CPU layer (not for kernels). */
#ifndef VRL_CUDA_CPU_LAUNCH_STATE_H
#define VRL_CUDA_CPU_LAUNCH_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "fast/cuda_cpu/runtime.h"

namespace cuda_cpu {

enum OrderKind { ORDER_FORWARD, ORDER_REVERSE, ORDER_RANDOM };
struct OrderConfig {
    OrderKind kind;
    uint64_t seed;   /* random[:SEED], default 1 */
    const char *bad; /* the unparsable value of VRL_CUDA_CPU_ORDER, or NULL */
};
/* VRL_CUDA_CPU_ORDER, read once: forward (default), reverse or random[:SEED]. */
const OrderConfig &order_config(void);
/* Replace it (tests): the same syntax; 0, or -1 if spec does not parse (nothing changes). */
int set_thread_order(const char *spec);

/* VRL_CUDA_CPU_BLOCKS, read once: the order grid blocks run in, the same syntax. */
const OrderConfig &block_order_config(void);
int set_block_order(const char *spec);

/* Restart the random order's sequence from the configured seed (fiber.cpp). */
void reseed_thread_order(void);

/* A 0/1 switch from the environment, read by the caller once: 1 iff NAME=1; anything but
 * unset, 0 or 1 is an error line and exit status 2 (guard.cpp, deferred.cpp). */
int env_switch(const char *name);

/* The dynamic shared-memory bytes of the launch running now. */
size_t launch_smem(void);

/* The running thread misused an instruction the layer defines (ptx_ops.cpp): the launch's
 * error, "thread (x,y,z): what", naming the kernel once the block stops (fiber.cpp). */
void thread_error(const char *what);

/* Run every block of a checked launch (fiber.cpp): 0, or -1 with msg naming the kernel. */
int run_grid(const char *kernel, dim3 grid, dim3 block, LaunchBody *body, char *dyn_shared, char *msg, size_t msg_len);

} // namespace cuda_cpu

#endif
