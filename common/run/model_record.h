/* model_record.h: every model-defining key of config.json, recorded with the weights.
 * tensor shapes alone let a checkpoint load under another variant, rope_theta or
 * rms_norm_eps and run a different model with rc 0; model.safetensors' __metadata__
 * therefore carries each such key ("vrl_variant", "vrl.rope_theta", ...) as a string, and
 * every reader compares it with the config it was given before trusting the weights. */
#ifndef VRL_MODEL_RECORD_H
#define VRL_MODEL_RECORD_H

#include <jansson.h>

#include "common/model/config.h"

/* Add the keys of c to a metadata object (string values). */
int model_record_add(json_t *meta, const ModelConfig *c);

/* Compare the record in RUN's model.safetensors (the published checkpoint) with c, read from
 * config_path. A key recorded with another value is an error naming the key and both
 * values; a key the file does not record (an older checkpoint) is not compared, nor a file
 * whose header cannot be read (the weights' load reports that). */
int model_record_check(const char *run, const ModelConfig *c, const char *config_path);

#endif
