/* arena.c: the reference's large buffers, on transparent huge pages (arena.h).
 *
 * Why: a `small` training step streams ~150 MiB of activations through OpenBLAS's packing
 * routines, which take a few floats from each of hundreds of rows, a row stride apart: on
 * 4 KiB pages nearly every row is a new page and a TLB miss. On 2 MiB pages (madvise
 * MADV_HUGEPAGE, honoured where /sys/kernel/mm/transparent_hugepage/enabled is `madvise`,
 * as here, or `always`) the same walk stays within a few pages. Measured (docs/results/cpu-speed.md,
 * "Huge pages"): `small` +4% at 1 thread, +2 to +5% at 2; 8M and 82M unchanged. Values
 * are the same bits: only the page size changes.
 *
 * A buffer of at least ARENA_HUGE bytes is its own anonymous mapping (zero pages, touched
 * only when used, so the peak RSS stays what the model uses), its start aligned to 2 MiB
 * so that whole huge pages cover it. A 64-byte header just below the returned pointer
 * keeps the mapping for ref_arena_free; smaller buffers come from aligned_alloc with the
 * same header. Where the kernel has no transparent huge pages, madvise fails and the buffer
 * simply stays on small pages. */
#include "ref/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20) /* x86-64's PMD page */
#define ARENA_HUGE ((size_t)1 << 20) /* below this, the alignment would waste more than it saves */
#define HEADER 64                    /* keeps the returned pointer 64-byte aligned */

typedef struct {
    void *map;  /* the mapping, or NULL for a small buffer (then `raw` is aligned_alloc's pointer) */
    size_t len; /* the mapping's length */
    void *raw;
} ArenaHeader;

void *ref_arena_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - 2 * HEADER) return NULL;
    if (bytes < ARENA_HUGE) {
        const size_t len = (bytes + 2 * HEADER - 1) / HEADER * HEADER; /* header + bytes, whole lines */
        char *raw = aligned_alloc(HEADER, len);
        if (!raw) return NULL;
        memset(raw, 0, len);
        ArenaHeader *h = (ArenaHeader *)raw;
        h->map = NULL, h->len = 0, h->raw = raw;
        return raw + HEADER;
    }
    /* the header below a 2 MiB boundary, the buffer from it: [map, p) holds the header,
     * [p, p + bytes) the buffer. The mapping ends with the buffer, so a last, partly used
     * 2 MiB stretch stays on small pages rather than costing a whole huge page. */
    if (bytes > SIZE_MAX - HUGE_PAGE - HEADER) return NULL;
    const size_t len = bytes + HUGE_PAGE + HEADER;
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return NULL;
    char *p = (char *)(((uintptr_t)map + HEADER + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without huge pages the buffer stays on small ones */
#endif
    ArenaHeader *h = (ArenaHeader *)(p - HEADER);
    h->map = map, h->len = len, h->raw = NULL;
    return p;
}

void ref_arena_free(void *p) {
    if (!p) return;
    const ArenaHeader *h = (const ArenaHeader *)((char *)p - HEADER);
    if (h->map) munmap(h->map, h->len);
    else free(h->raw);
}
