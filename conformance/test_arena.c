/* test_arena.c: the reference's arena allocator (ref/arena.c).
 *
 * Story: a model part asks for `bytes` of zeros. Small requests come from the heap, large
 * ones (1 MiB and up) from their own mapping whose start sits on a 2 MiB boundary and
 * which carries the kernel's huge-page advice (the "hg" flag in /proc/self/smaps), so that
 * transparent huge pages can back it. Every buffer is zeros, 64-byte aligned, writable to
 * its last byte, and freed without error; an impossible size is refused with NULL. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ref/arena.h"

static const size_t sizes[] = {0, 1, 1000, (1u << 20) - 1, 1u << 20, (5u << 20) + 3, 64u << 20};

Test(arena, zeros_aligned_and_writable) {
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        const size_t n = sizes[i];
        unsigned char *p = ref_arena_alloc(n);
        cr_assert(p, "%zu bytes", n);
        cr_assert_eq((uintptr_t)p % 64, 0, "%zu bytes: not 64-byte aligned", n);
        if (n >= (1u << 20)) cr_assert_eq((uintptr_t)p % (2u << 20), 0, "%zu bytes: not on a 2 MiB boundary", n);
        size_t nonzero = 0;
        for (size_t j = 0; j < n; j++) nonzero += p[j] != 0;
        cr_assert_eq(nonzero, 0, "%zu bytes: %zu of them are not 0", n, nonzero);
        memset(p, 0xab, n);
        ref_arena_free(p);
    }
    ref_arena_free(NULL);
}

Test(arena, impossible_size_refused) { cr_assert_null(ref_arena_alloc(SIZE_MAX - 16)); }

/* The VmFlags line of the /proc/self/smaps entry whose range holds p, into flags. */
static int vm_flags_of(const void *p, char *flags, size_t cap) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[256];
    int inside = 0, found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8)) {
            snprintf(flags, cap, "%.200s", line + 8);
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

Test(arena, large_buffers_advised_for_huge_pages) {
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
        cr_skip_test("this kernel has no transparent huge pages: the advice has nothing to act on");
    char *p = ref_arena_alloc(8u << 20), *q = ref_arena_alloc(4096);
    cr_assert(p && q);
    char flags[256];
    cr_assert_eq(vm_flags_of(p, flags, sizeof flags), 0, "no smaps entry for the 8 MiB buffer");
    cr_assert(strstr(flags, " hg"), "8 MiB buffer not advised MADV_HUGEPAGE; VmFlags:%s", flags);
    cr_assert_eq(vm_flags_of(q, flags, sizeof flags), 0, "no smaps entry for the 4 KiB buffer");
    cr_assert_null(strstr(flags, " hg"), "4 KiB buffer (on the heap) advised for huge pages; VmFlags:%s", flags);
    ref_arena_free(p);
    ref_arena_free(q);
}
