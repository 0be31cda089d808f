/* safetensors.h: read and write the safetensors format (an 8-byte little-endian header
 * length, a JSON header naming each tensor's dtype, shape and byte range, then the
 * raw data). Used for model checkpoints, the training state and golden fixtures. */
#ifndef VRL_SAFETENSORS_H
#define VRL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { DT_F32 = 0, DT_F64 = 1, DT_BF16 = 2, DT_I32 = 3, DT_I64 = 4, DT_U64 = 5, DT_F16 = 6 } DType;

size_t dtype_size(DType t);
const char *dtype_name(DType t);      /* "F32", "F64", ... as safetensors spells them */

#define ST_MAX_DIM 8

typedef struct {
    char name[128];
    DType dtype;
    int ndim;
    int64_t shape[ST_MAX_DIM];
    size_t nbytes;
    void *data;                        /* points into the file buffer (reader) or caller memory (writer) */
} StTensor;

typedef struct {
    StTensor *t;
    int n, cap;
    char *metadata_json;               /* the "__metadata__" object as JSON text, or NULL */
    void *buffer;                      /* whole file (reader) */
} StFile;

/* Read and validate: header length within the file, JSON well formed, every tensor's
 * byte range inside the data section, no overlaps, sizes matching dtype x shape. */
int st_read(const char *path, StFile *f);
void st_free(StFile *f);
/* Only the header's "__metadata__" object as compact JSON text (malloc'd; "{}" when the file
 * has none), reading the header and not the tensors. */
int st_read_metadata(const char *path, char **metadata_json);
const StTensor *st_find(const StFile *f, const char *name);

/* Writer: collect tensors (data is not copied: keep it alive until st_write), then
 * write atomically (temp file, fsync, rename). metadata: string key/value pairs. */
void st_init(StFile *f);
int st_add(StFile *f, const char *name, DType dtype, int ndim, const int64_t *shape, const void *data);
int st_set_metadata(StFile *f, const char *json_object_text);
int st_write(const StFile *f, const char *path);

/* Copy a tensor into a double array with conversion (F32/F64/BF16/F16/I32/I64). */
int st_to_f64(const StTensor *t, double *out, size_t n);

#endif
