/* isa.h: the reference's hot loops in the widest vector code the running CPU has.
 *
 * The default build targets x86-64-v2 (SSE4.2) so that one binary runs on any x86-64 of
 * the last fifteen years. A function marked REF_HOT is compiled three times, for
 * x86-64-v2, x86-64-v3 (AVX2) and x86-64-v4 (AVX-512), and the loader picks the widest
 * the CPU supports (gcc's target_clones: an ifunc resolver runs once at start-up). The
 * OpenMP bodies inside such a function are cloned with it.
 *
 * The clones compute the same bits: every build has -ffp-contract=off (no fused
 * multiply-add the source does not write, although v3 and v4 have FMA), no -ffast-math
 * (no reassociated sums: vectorisation is element by element), and the exponential the
 * hot loops use is the reference's own (exp_shifted.h), not a library call that might
 * differ between ISAs. docs/design/cpu-reference-speed.md ("The float32 exponential in float
 * arithmetic", "Vector code") says what was compared.
 *
 * Not cloned: a -DVRL_NATIVE=ON build (already compiled for this CPU), clang (its
 * target_clones takes other names), and the sanitizer build (VRL_NO_CLONES: the resolver
 * would run before AddressSanitizer starts). */
#ifndef VRL_REF_ISA_H
#define VRL_REF_ISA_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX2__) && !defined(VRL_NO_CLONES)
#define REF_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define REF_HOT
#endif

#endif
