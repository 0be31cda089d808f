/* runload.h: reading a run folder (config.json + model.safetensors) for the commands
 * that use a trained model (eval, analyze). */
#ifndef VRL_RUNLOAD_H
#define VRL_RUNLOAD_H

#include "common/base/safetensors.h"
#include "common/model/spec.h"

typedef struct {
    ModelConfig config;  /* RUN/config.json (the same as spec.config) */
    ModelSpec spec;      /* the model built from it, for Backend.create */
    void *params;        /* [spec.table.total] in dtype */
    DType dtype;
} RunModel;

/* Load RUN/config.json and RUN/model.safetensors converted to dtype. A checkpoint whose
 * tensors do not match its config is an error naming the file and the tensor. */
int run_load(const char *dir, DType dtype, RunModel *r);
void run_free(RunModel *r);

#endif
