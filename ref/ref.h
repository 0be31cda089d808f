/* ref.h: the reference backend's public interface (ref/, docs/design/architecture.md), the twin of
 * fast/fast.h: its Backend tables and their registration. Everything else in ref/ is
 * reached through the Backend table (common/model/backend.h). */
#ifndef VRL_REF_H
#define VRL_REF_H

#include "common/model/backend.h"

/* The reference models in float32 and float64 (ref/backend.c, one per build of real.h);
 * host views in the build's dtype. Named "ref-fp32", "ref-fp64" in a run's state. */
extern const Backend ref_backend_f32;
extern const Backend ref_backend_f64;

/* Register each as --device cpu with --precision fp32 / fp64 (common/model/backends.h). */
void ref_register_backend_f32(void);
void ref_register_backend_f64(void);
static inline void ref_register_backends(void) {
    ref_register_backend_f32();
    ref_register_backend_f64();
}

#endif
