/* fuzz_train_state.c: the first byte picks the target:
 *   odd:  the rest is RUN/train_state.safetensors of a fixed micro model (whose
 *         model.safetensors is written once), loaded with checkpoint_load_state;
 *   even: the rest is the stored training-arguments JSON, merged as --resume does
 *         (train_args_resume: parse, range check, flag rules). */
#include <stdlib.h>
#include <string.h>

#include "common/model/config.h"
#include "common/model/params.h"
#include "common/model/spec.h"
#include "common/run/checkpoint.h"
#include "common/run/trainer.h"
#include "fuzz/fuzz_util.h"
#include "ref/model.h"

static const char MICRO[] = "{\"model_type\":\"llama\",\"hidden_size\":8,\"intermediate_size\":8,"
                            "\"num_hidden_layers\":1,\"num_attention_heads\":2,\"vocab_size\":16,"
                            "\"max_position_embeddings\":16}";

static ParamTable *micro(void) {
    static ParamTable t;
    static int ready;
    if (!ready) {
        ModelConfig c;
        if (config_parse_json(MICRO, &c, "micro") < 0 || model_spec_table(&c, &t) < 0) abort();
        double *x = calloc(t.total, sizeof *x);
        if (!x || checkpoint_save_model(fuzz_dir(), &c, &t, DT_F64, x) < 0) abort();
        free(x);
        ready = 1;
    }
    return &t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n == 0) return 0;
    if (data[0] & 1) {
        ParamTable *t = micro();
        fuzz_file("train_state.safetensors", data + 1, n - 1);
        double *m = calloc(t->total, sizeof *m), *v = calloc(t->total, sizeof *v);
        TrainState s;
        if (m && v) fuzz_check_error(checkpoint_load_state(fuzz_dir(), t, DT_F64, m, v, &s));
        free(m), free(v);
    } else {
        char *json = malloc(n);
        if (!json) return 0;
        memcpy(json, data + 1, n - 1);
        json[n - 1] = '\0';
        TrainArgs cli, out;
        train_args_defaults(&cli);
        cli.backend = &ref_backend_f64;
        char changes[1024];
        fuzz_check_error(train_args_resume(json, "state", &cli, &out, changes, sizeof changes));
        free(json);
    }
    return 0;
}
