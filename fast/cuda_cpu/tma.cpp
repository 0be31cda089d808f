/* tma.cpp: 2-D bf16 tensor maps and cp.async.bulk.tensor loads on the CPU layer (tma.h). The load
 * runs on the fiber of the thread that issues it: it reads the box now and hands its chunks to the
 * barrier (mbarrier.cpp), which lands them with its phase. */
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/mbarrier.h"
#include "fast/cuda_cpu/swizzle.h"
#include "fast/cuda_cpu/tma.h"

namespace cuda_cpu {

namespace {

/* opaque[]: 0 MAGIC, 1 global, 2 rows, 3 cols, 4 row stride, 5 box_rows | box_cols << 32,
 * 6 swizzle, 7 the check word of 0..6 (an overwritten or never encoded map fails it) */
const uint64_t MAGIC = 0x3270616d616d7476ull; /* "vtmamap2" */

uint64_t check_word(const uint64_t *o) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 7; i++) h = (h ^ o[i]) * 0x100000001b3ull;
    return h;
}

struct Map {
    const char *global;
    uint64_t rows, cols, stride;
    uint32_t box_rows, box_cols;
    int swizzle;
};

/* "<what> (at file:line)" as the running thread's launch error */
void misuse(const char *file, int line, const char *what) {
    char why[512];
    const char *f = strstr(file, "conformance/") ? strstr(file, "conformance/") : strstr(file, "fast/");
    snprintf(why, sizeof why, "cp.async.bulk.tensor.2d %s (at %s:%d)", what, f ? f : file, line);
    thread_error(why);
}

} // namespace

void tma_encode_2d(uint64_t o[16], const void *global, uint64_t rows, uint64_t cols, uint64_t row_stride_bytes,
                   uint32_t box_rows, uint32_t box_cols, int swizzle) {
    memset(o, 0, 16 * sizeof(uint64_t));
    o[0] = MAGIC, o[1] = (uint64_t)(uintptr_t)global, o[2] = rows, o[3] = cols, o[4] = row_stride_bytes;
    o[5] = box_rows | (uint64_t)box_cols << 32, o[6] = (uint64_t)swizzle;
    o[7] = check_word(o);
}

void tma_load_2d(void *dst, const uint64_t o[16], int32_t col, int32_t row, uint64_t *bar, const char *file,
                 int line) {
    mbarrier_record("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [1] [1] r r [1]");
    char d[320];
    if (o[0] != MAGIC || o[7] != check_word(o)) {
        misuse(file, line, "reads a tensor map that tma_map_2d_bf16 never encoded (or that was overwritten)");
        return;
    }
    const Map m = {(const char *)(uintptr_t)o[1], o[2], o[3], o[4], (uint32_t)o[5], (uint32_t)(o[5] >> 32), (int)o[6]};
    const uint32_t row_bytes = m.box_cols * 2, box_bytes = m.box_rows * row_bytes;
    const uint32_t span = 16u << m.swizzle, align = m.swizzle ? 8 * span : 128;
    char *dyn = (char *)dynamic_shared();
    const size_t smem = launch_smem();
    const uintptr_t a = (uintptr_t)dst;
    if (!dyn || a < (uintptr_t)dyn || a >= (uintptr_t)dyn + smem) {
        snprintf(d, sizeof d, "to %p: the destination is not in the launch's dynamic shared memory (the CPU layer's "
                 "shared window for TMA and wgmma)", dst);
        misuse(file, line, d);
        return;
    }
    const uint32_t off = (uint32_t)(a - (uintptr_t)dyn);
    if (off % align) {
        snprintf(d, sizeof d, "to shared offset %u: a %s destination must be %u-byte aligned", off,
                 m.swizzle == 3 ? "128B-swizzled" : m.swizzle == 2 ? "64B-swizzled" : m.swizzle == 1 ? "32B-swizzled"
                                                                                                    : "TMA",
                 align);
        misuse(file, line, d);
        return;
    }
    if ((size_t)off + box_bytes > smem) {
        snprintf(d, sizeof d, "to shared offset %u: the %u x %u box (%u bytes) runs past the launch's %zu bytes of "
                 "dynamic shared memory", off, m.box_rows, m.box_cols, box_bytes, smem);
        misuse(file, line, d);
        return;
    }
    if (m.swizzle && row_bytes != span) {
        snprintf(d, sizeof d, "with a %u-byte box row under the %u-byte swizzle: the CPU layer models only swizzled "
                 "boxes exactly one span wide", row_bytes, span);
        misuse(file, line, d);
        return;
    }
    /* the box, row-major [box_rows][box_cols] bf16, zeros outside the tensor */
    std::vector<unsigned char> box(box_bytes, 0);
    for (uint32_t i = 0; i < m.box_rows; i++) {
        const int64_t r = (int64_t)row + i;
        if (r < 0 || (uint64_t)r >= m.rows) continue;
        const int64_t c0 = col < 0 ? 0 : col, c1 = std::min<int64_t>((int64_t)col + m.box_cols, (int64_t)m.cols);
        if (c0 >= c1) continue;
        const char *src = m.global + (uint64_t)r * m.stride + (uint64_t)c0 * 2;
        check::op_range(src, (size_t)(c1 - c0) * 2, 0); /* the source is read now, by this launch */
        memcpy(box.data() + (size_t)i * row_bytes + (size_t)(c0 - col) * 2, src, (size_t)(c1 - c0) * 2);
    }
    /* chunk q of the box at window offset off + 16q, moved by the swizzle of that address */
    const size_t n = box_bytes / 16;
    std::vector<char *> at(n);
    for (size_t q = 0; q < n; q++) at[q] = dyn + swizzle_address(off + 16 * (uint32_t)q, (uint32_t)m.swizzle);
    bulk_copy_chunks(bar, at.data(), box.data(), n, box_bytes, "cp.async.bulk.tensor.2d completing on", file, line);
}

} // namespace cuda_cpu
