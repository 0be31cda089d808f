/* real.h: the reference is one source compiled twice, as float32 and as float64.
 *
 * CMake builds every ref source once with VRL_FP64=0 and once with VRL_FP64=1. `real`
 * is the element type, and REF(name) gives each exported function a precision
 * suffix (rmsnorm_forward -> rmsnorm_forward_f32 / _f64) so both builds link into
 * one `vrl` binary. Headers map the plain names to the suffixed ones, so the code
 * itself reads `rmsnorm_forward(...)`. */
#ifndef VRL_REAL_H
#define VRL_REAL_H

#include <cblas.h>
#include <math.h>

#ifndef VRL_FP64
#define VRL_FP64 0
#endif

#if VRL_FP64
typedef double real;
#define REF(name) name##_f64
#define REAL_DTYPE DT_F64
#define cblas_gemm cblas_dgemm
#define cblas_dot_ cblas_ddot
#define rexp exp
#define rlog log
#define rsqrt_ sqrt
#define rcos cos
#define rsin sin
#define rtanh tanh
#define rfabs fabs
#else
typedef float real;
#define REF(name) name##_f32
#define REAL_DTYPE DT_F32
#define cblas_gemm cblas_sgemm
#define cblas_dot_ cblas_sdot
#define rexp expf
#define rlog logf
#define rsqrt_ sqrtf
#define rcos cosf
#define rsin sinf
#define rtanh tanhf
#define rfabs fabsf
#endif

#endif
