/* backends.c: the Backend registry (backends.h). */
#include "common/model/backends.h"

#include <stdio.h>
#include <string.h>

#include "common/base/error.h"

#define BACKENDS_MAX 16

static const BackendEntry *registry[BACKENDS_MAX];
static int n_registered;

void backend_register(const BackendEntry *e) {
    for (int i = 0; i < n_registered; i++)
        if (registry[i]->be == e->be) return;
    if (n_registered < BACKENDS_MAX) registry[n_registered++] = e;
}

/* "a or b", "a, b or c": the distinct values of field over the entries (of device, if given). */
static void list_names(char *out, size_t n, const char *(*field)(const BackendEntry *), const char *device) {
    const char *seen[BACKENDS_MAX];
    int k = 0;
    for (int i = 0; i < n_registered; i++) {
        const char *v = field(registry[i]);
        if (!v || (device && strcmp(registry[i]->device, device))) continue;
        int dup = 0;
        for (int j = 0; j < k; j++) dup |= !strcmp(seen[j], v);
        if (!dup) seen[k++] = v;
    }
    out[0] = '\0';
    size_t used = 0;
    for (int j = 0; j < k && used < n; j++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", j == 0 ? "" : j == k - 1 ? " or " : ", ", seen[j]);
}
static const char *device_of(const BackendEntry *e) { return e->device; }
static const char *precision_of(const BackendEntry *e) { return e->precision; }

const BackendEntry *backend_select(const char *device, const char *precision) {
    char names[256];
    const BackendEntry *dev = NULL, *hit = NULL;
    for (int i = 0; i < n_registered; i++) {
        if (strcmp(registry[i]->device, device)) continue;
        dev = registry[i];
        if (!registry[i]->precision || !strcmp(registry[i]->precision, precision)) {
            hit = registry[i];
            break;
        }
    }
    if (!dev) {
        if (!strncmp(device, "cuda", 4))
            vrl_error("--device %s: this build of vrl has no CUDA backend (fast/ is not built)", device);
        else {
            list_names(names, sizeof names, device_of, NULL);
            vrl_error("--device: \"%s\" is not %s", device, names);
        }
        return NULL;
    }
    if (!hit) {
        list_names(names, sizeof names, precision_of, device);
        vrl_error("--precision: \"%s\" is not %s", precision, names);
        return NULL;
    }
    if (hit->ready && hit->ready() < 0) {
        char why[VRL_ERROR_LEN];
        snprintf(why, sizeof why, "%s", vrl_last_error());
        vrl_error("--device %s: %s", device, why);
        return NULL;
    }
    return hit;
}

int backend_set_option(const BackendEntry *e, const char *name, const char *value) {
    if (!e->set_option)
        return vrl_error("--%s %s: --device %s has no such option (the reference has one attention and one GEMM; "
                         "--%s is for --device cuda and cuda-cpu)",
                         name, value, e->device, name);
    return e->set_option(name, value);
}

const BackendEntry *backend_named(const char *name) {
    for (int i = 0; i < n_registered; i++)
        if (!strcmp(registry[i]->be->name, name)) return registry[i];
    return NULL;
}
