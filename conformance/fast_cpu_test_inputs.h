/* fast_cpu_test_inputs.h: the inputs fast/'s Hopper-kernel tests share (test_fast_cpu_gemm_wgmma.cpp,
 * test_fast_cpu_attention_wgmma.cpp): a fixed xorshift sequence and bf16 vectors drawn from it.
 * C++, for those tests only (fast/'s bf16 from the CPU layer's headers). */
#ifndef VRL_CONFORMANCE_FAST_CPU_TEST_INPUTS_H
#define VRL_CONFORMANCE_FAST_CPU_TEST_INPUTS_H

#include <stdint.h>

#include <vector>

/* xorshift64: the same sequence on every machine; uniform() in [-1, 1) */
struct XorShift {
    uint64_t state;
    float uniform() {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return (float)((double)(state >> 11) / 4503599627370496.0 - 1.0);
    }
};

/* n values uniform in [-scale, scale), each rounded to bf16 */
static inline std::vector<bf16> random_bf16(XorShift &rng, size_t n, float scale) {
    std::vector<bf16> v(n);
    for (auto &x : v) x = __float2bfloat16(rng.uniform() * scale);
    return v;
}

#endif
