/* backends.h: the registry of Backend implementations, so that a command chooses one by
 * --device/--precision, or by the name a run stored, without knowing which exist.
 *
 * ref/ and fast/ register their tables at start (ref_register_backends, ref/ref.h;
 * fast_register_backends, fast/fast.h; cli/vrl.c calls them): one BackendEntry each, so a
 * new backend (e.g. `--device cuda-cpu`) is one line in its library's register function.
 * common/ holds only the table; it never names an implementation. */
#ifndef VRL_BACKENDS_H
#define VRL_BACKENDS_H

#include "common/model/backend.h"

typedef struct {
    const char *device;    /* what --device names: "cpu", "cuda", ... */
    const char *precision; /* what --precision names ("fp32", "fp64"); NULL: the device has one */
    const Backend *be;     /* be->name is what a run stores in its training state */
    int (*ready)(void);    /* 0, or -1 with vrl_error saying why the device cannot run; NULL: always */
    /* A device option (`--attention flash|cudnn` of the CUDA backend) for the models created after
     * it: 0, or -1 with vrl_error naming the option and why; NULL: the device has no options. */
    int (*set_option)(const char *name, const char *value);
} BackendEntry;

/* Add e (static storage) to the registry; registering the same table twice is a no-op. */
void backend_register(const BackendEntry *e);

/* The entry for --device / --precision, its device ready; NULL with one vrl_error line:
 *   --device: "X" is not cpu or cuda          (the registered devices)
 *   --device cuda: this build of vrl has no CUDA backend (fast/ is not built)
 *   --precision: "X" is not fp32 or fp64      (the device's precisions)
 *   --device cuda: <why the device is not ready>
 * A device with one precision (NULL) ignores `precision`. */
const BackendEntry *backend_select(const char *device, const char *precision);

/* e->set_option(name, value); a device without options (the reference: one attention) is
 * one vrl_error line: "--NAME VALUE: --device D has no such option (...)". */
int backend_set_option(const BackendEntry *e, const char *name, const char *value);

/* The entry whose Backend is named `name` (a run's stored backend), or NULL. */
const BackendEntry *backend_named(const char *name);

#endif
