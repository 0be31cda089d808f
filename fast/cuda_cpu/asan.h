/* asan.h: CUDA_CPU_ASAN is 1 when compiled with AddressSanitizer (clang or gcc), else 0;
 * with it, the public ASan interface (poisoning, fiber switches). */
#ifndef VRL_CUDA_CPU_ASAN_H
#define VRL_CUDA_CPU_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define CUDA_CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDA_CPU_ASAN 1
#endif
#endif
#ifndef CUDA_CPU_ASAN
#define CUDA_CPU_ASAN 0
#endif
#if CUDA_CPU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#endif
