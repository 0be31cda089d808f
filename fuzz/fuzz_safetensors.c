/* fuzz_safetensors.c: st_read on arbitrary bytes, then every tensor converted to
 * doubles (reads each byte range the header claims). */
#include <stdlib.h>

#include "common/base/safetensors.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    StFile f;
    int rc = st_read(fuzz_file("x.safetensors", data, n), &f);
    fuzz_check_error(rc);
    if (rc < 0) return 0;
    for (int i = 0; i < f.n; i++) {
        size_t numel = 1;
        for (int d = 0; d < f.t[i].ndim; d++) numel *= (size_t)f.t[i].shape[d];
        if (numel > (1u << 20)) continue;
        double *x = malloc((numel ? numel : 1) * sizeof *x);
        if (x) fuzz_check_error(st_to_f64(&f.t[i], x, numel));
        free(x);
    }
    st_free(&f);
    return 0;
}
