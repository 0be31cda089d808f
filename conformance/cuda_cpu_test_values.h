/* cuda_cpu_test_values.h: what the CPU layer's instruction tests share (test_cuda_cpu_mma.cpp,
 * test_cuda_cpu_wgmma.cpp, test_cuda_cpu_mbarrier.cpp): the last launch's error text, and
 * deterministic bf16 inputs. C++, for those tests only. */
#ifndef VRL_CONFORMANCE_CUDA_CPU_TEST_VALUES_H
#define VRL_CONFORMANCE_CUDA_CPU_TEST_VALUES_H

#include <math.h>
#include <stdint.h>

#include <vector>

#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/runtime.h"

/* the last launch's error, "" when it succeeded */
static inline const char *launch_message(void) {
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

static inline float bf16_float(uint16_t b) { return __bfloat162float(__ushort_as_bfloat16(b)); }

/* n bf16 values, deterministic, magnitudes from 2^-3 to 2, both signs */
static inline std::vector<uint16_t> random_bf16(size_t n, uint64_t seed) {
    std::vector<uint16_t> v(n);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
        const double x = (u < 0.5 ? -1.0 : 1.0) * ldexp(1.0 + u, (int)(s >> 7 & 3) - 3);
        v[i] = __float2bfloat16((float)x).x;
    }
    return v;
}

#endif
