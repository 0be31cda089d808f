/* arena.h (ref): one allocation per model part, carved by a layout function run twice.
 *
 * ref_carve takes n elements of `size` bytes from an arena at *off (64-byte aligned). With
 * base == NULL it only counts, so one layout function sizes and then fills its arena
 * (model.c, value_path.c, gpt2.c). CARVE(ptr, n) uses the caller's `base` and `off`.
 *
 * ref_arena_alloc returns `bytes` of zeros, 64-byte aligned, large ones on transparent huge
 * pages (arena.c); NULL when out of memory. Free with ref_arena_free. */
#ifndef VRL_REF_ARENA_H
#define VRL_REF_ARENA_H

#include <stddef.h>

static inline void *ref_carve(char *base, size_t *off, size_t n, size_t size) {
    size_t at = (*off + 63) & ~(size_t)63;
    *off = at + n * size;
    return base ? base + at : NULL;
}
#define CARVE(ptr, n) ((ptr) = ref_carve(base, &off, (size_t)(n), sizeof *(ptr)))

void *ref_arena_alloc(size_t bytes);
void ref_arena_free(void *p);

#endif
