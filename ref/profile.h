/* profile.h: wall-clock seconds spent inside OpenBLAS matrix products so far, per
 * precision (bench_ref_train reports the share of a step they take). */
#ifndef VRL_REF_PROFILE_H
#define VRL_REF_PROFILE_H

double ref_matmul_seconds_f32(void);
double ref_matmul_seconds_f64(void);

#endif
