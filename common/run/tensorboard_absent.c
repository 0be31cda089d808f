/* tensorboard_absent.c: tensorboard.h where the build found no protobuf-c or ISA-L
 * (CMakeLists.txt; scripts/deps.sh installs both, a packed GPU machine may lack them):
 * training goes on with metrics.jsonl alone, and says so once. */
#include "common/run/tensorboard.h"

#include <stdio.h>
#include <string.h>

int tb_open(TbWriter *w, const char *run_dir, long keep_upto_step) {
    (void)keep_upto_step;
    memset(w, 0, sizeof *w); /* never open: tb_write_scalars and tb_close do nothing */
    fprintf(stderr, "vrl train: %s: no TensorBoard events file (this vrl was built with VRL_TENSORBOARD=OFF or "
                    "without protobuf-c and ISA-L; scripts/deps.sh installs them)\n", run_dir);
    return 0;
}

void tb_close(TbWriter *w) { w->is_open = 0; }

int tb_write_scalars(TbWriter *w, long step, int n, const char *const *tags, const double *values) {
    (void)w, (void)step, (void)n, (void)tags, (void)values;
    return 0;
}
