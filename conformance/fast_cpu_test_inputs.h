/* fast_cpu_test_inputs.h: what fast/'s Hopper-kernel tests share (test_fast_cpu_gemm_wgmma.cpp,
 * test_fast_cpu_attention_wgmma.cpp, test_fast_cpu_attention_wgmma_backward.cpp): a fixed xorshift
 * sequence, bf16 vectors drawn from it, and causal attention's forward in double. C++, for those
 * tests only (fast/'s bf16 from the CPU layer's headers). */
#ifndef VRL_CONFORMANCE_FAST_CPU_TEST_INPUTS_H
#define VRL_CONFORMANCE_FAST_CPU_TEST_INPUTS_H

#include <math.h>
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

/* causal attention in double, GQA (query head h reads kv head h / (NH/NKV)): out [B·T, NH·hd] and
 * lse [B, NH, T] (the natural log of each scaled score row's sum).  q [B·T, NH·hd], k, v [B·T, NKV·hd] */
static inline void attention_forward_fp64(const std::vector<bf16> &q, const std::vector<bf16> &k,
                                          const std::vector<bf16> &v, int B, int T, int NH, int NKV, int hd,
                                          std::vector<double> &out, std::vector<double> &lse) {
    const int qC = NH * hd, kvC = NKV * hd;
    const double scale = 1.0 / sqrt((double)hd);
    auto x = [](bf16 b) { return (double)__bfloat162float(b); };
    out.assign((size_t)B * T * qC, 0.0), lse.assign((size_t)B * NH * T, 0.0);
    std::vector<double> s(T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kh = h / (NH / NKV);
            for (int i = 0; i < T; i++) {
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= i; j++) {
                    double d = 0;
                    for (int e = 0; e < hd; e++)
                        d += x(q[((size_t)b * T + i) * qC + h * hd + e]) * x(k[((size_t)b * T + j) * kvC + kh * hd + e]);
                    s[j] = d * scale, mx = fmax(mx, s[j]);
                }
                for (int j = 0; j <= i; j++) sum += s[j] = exp(s[j] - mx);
                for (int j = 0; j <= i; j++)
                    for (int e = 0; e < hd; e++)
                        out[((size_t)b * T + i) * qC + h * hd + e] += s[j] / sum * x(v[((size_t)b * T + j) * kvC + kh * hd + e]);
                lse[((size_t)b * NH + h) * T + i] = mx + log(sum);
            }
        }
}

#endif
