/* arena.h (ref): one allocation per model part, carved by a layout function run twice.
 *
 * ref_carve takes n elements of `size` bytes from an arena at *off (64-byte aligned). With
 * base == NULL it only counts, so one layout function sizes and then fills its arena
 * (model.c, value_path.c, gpt2.c). CARVE(ptr, n) uses the caller's `base` and `off`. */
#ifndef VRL_REF_ARENA_H
#define VRL_REF_ARENA_H

#include <stddef.h>

static inline void *ref_carve(char *base, size_t *off, size_t n, size_t size) {
    size_t at = (*off + 63) & ~(size_t)63;
    *off = at + n * size;
    return base ? base + at : NULL;
}
#define CARVE(ptr, n) ((ptr) = ref_carve(base, &off, (size_t)(n), sizeof *(ptr)))

#endif
