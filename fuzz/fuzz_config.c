/* fuzz_config.c: config.json text -> ModelConfig -> the model spec (its vrl_variant
 * parsed into plans, and the parameter table). */
#include <stdlib.h>
#include <string.h>

#include "common/model/config.h"
#include "common/model/spec.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    ModelConfig c;
    int rc = config_load_json(fuzz_file("config.json", data, n), &c);
    fuzz_check_error(rc);
    if (rc < 0) return 0;
    ModelSpec spec;
    /* huge but valid shapes only size a table; nothing is allocated per element */
    rc = model_spec_build(&c, &spec);
    fuzz_check_error(rc);
    if (rc == 0) model_spec_free(&spec);
    return 0;
}
