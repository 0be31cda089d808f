/* tensor_core.cpp: mma.sync.m16n8k16 (bf16 -> fp32) and ldmatrix.m8n8 (b16) on the CPU layer,
 * completed once all 32 lanes of a warp have posted their fragments (tensor_core.h,
 * docs/design/cuda-on-cpu.md "Tensor-core instructions on the CPU").
 *
 * Fragment layouts from the PTX ISA (section numbers of its 8.x editions; later editions
 * renumber, the titles stay):
 *  - 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16 with floating point type", .bf16 A, B
 *    and the .f32 accumulators. With g = lane >> 2 (groupID), t = lane % 4
 *    (threadID_in_group), i the element index, low half of a .b32 register first:
 *      A (16x16, row): a_i at row g + 8·((i >> 1) & 1), col 2t + (i & 1) + 8·(i >> 2)
 *                      (register j holds a_2j, a_2j+1: rows g, g+8, g, g+8; cols +0, +0, +8, +8)
 *      B (16x8, col):  b_i at row (k) 2t + (i & 1) + 8·(i >> 1), col (n) g
 *      C, D (16x8):    c_i at row g + 8·(i >> 1), col 2t + (i & 1)
 *  - 9.7.14.5.15 "Warp-level matrix load instruction: ldmatrix": lanes 8m..8m+7 supply the
 *    row addresses of matrix m (16 bytes each, 16-byte aligned, in shared memory); lane L
 *    receives in register m the elements (row g, cols 2t and 2t+1) of matrix m; with .trans
 *    the matrix is read column-major: (row 2t, col g) and (row 2t+1, col g) of the rows as
 *    stored.
 *
 * Precision: the product of two bf16 values (8-bit significands) is exact in fp32 and in
 * double. The GPU adds the 16 products and c in fp32 in an order and with an internal
 * rounding NVIDIA does not document, so no emulation can match its bits; this one sums
 * the exact products and c in double (exact up to ~2^-49 of the sum of magnitudes) and
 * rounds once to fp32: the result the hardware's is an approximation of, independent of
 * any order, so the error bounds that hold for the GPU (an fp32 sum of 17 terms) hold for
 * it too, and thread orders cannot change a bit. */
#include <stdio.h>

#include <atomic>

#include "fast/cuda_cpu/launch_state.h"
#include "fast/cuda_cpu/tensor_core.h"

/* the linker's bounds of the program's .bss, where static __shared__ arrays live */
extern "C" char __bss_start[], _end[];

namespace cuda_cpu {

int in_shared_memory(const void *p, size_t bytes) {
    const uintptr_t a = (uintptr_t)p;
    const uintptr_t bss_lo = (uintptr_t)__bss_start, bss_hi = (uintptr_t)_end;
    if (a >= bss_lo && a + bytes <= bss_hi) return 1;
    const uintptr_t dyn = (uintptr_t)dynamic_shared();
    return dyn && a >= dyn && a + bytes <= dyn + launch_smem();
}

namespace {

float bf16_value(uint32_t bits16) {
    const uint32_t u = bits16 << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Element e (0: low half, 1: high half) of a packed register. */
uint32_t half_of(uint32_t reg, int e) { return e ? reg >> 16 : reg & 0xffffu; }

int complete_mma(void *const lanes[32]) {
    float A[16][16], B[16][8], C[16][8]; /* the warp's matrices, gathered from the fragments */
    for (int lane = 0; lane < 32; lane++) {
        const MmaLane *m = (const MmaLane *)lanes[lane];
        const int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 8; i++)
            A[g + 8 * ((i >> 1) & 1)][2 * t + (i & 1) + 8 * (i >> 2)] = bf16_value(half_of(m->a[i >> 1], i & 1));
        for (int i = 0; i < 4; i++) B[2 * t + (i & 1) + 8 * (i >> 1)][g] = bf16_value(half_of(m->b[i >> 1], i & 1));
        for (int i = 0; i < 4; i++) C[g + 8 * (i >> 1)][2 * t + (i & 1)] = m->c[i];
    }
    for (int lane = 0; lane < 32; lane++) {
        MmaLane *m = (MmaLane *)lanes[lane];
        const int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 4; i++) {
            const int row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
            double s = (double)C[row][col];
            for (int k = 0; k < 16; k++) s += (double)A[row][k] * (double)B[k][col]; /* each product exact */
            m->d[i] = (float)s;                                                       /* rounded once */
        }
    }
    return 0;
}

int complete_ldmatrix(int param, void *const lanes[32], char *msg, size_t msg_len) {
    const int num = param & 7, trans = (param & 8) != 0;
    uint16_t M[4][8][8]; /* [matrix][row as stored][col]: the rows the lanes supplied */
    for (int lane = 0; lane < 8 * num; lane++) {
        const LdmatrixLane *l = (const LdmatrixLane *)lanes[lane];
        if ((uintptr_t)l->addr & 15u) {
            snprintf(msg, msg_len, "lane %d's row address %p is not 16-byte aligned", lane, l->addr);
            return -1;
        }
        if (!in_shared_memory(l->addr, 16)) {
            snprintf(msg, msg_len,
                     "lane %d's row address %p is not in shared memory (a __shared__ array or the launch's dynamic "
                     "shared memory)",
                     lane, l->addr);
            return -1;
        }
        memcpy(M[lane / 8][lane % 8], &l->row, 16); /* b16 element c at bytes 2c, 2c+1 */
    }
    for (int lane = 0; lane < 32; lane++) {
        LdmatrixLane *l = (LdmatrixLane *)lanes[lane];
        const int g = lane >> 2, t = lane & 3;
        for (int m = 0; m < num; m++) {
            const uint32_t lo = trans ? M[m][2 * t][g] : M[m][g][2 * t];
            const uint32_t hi = trans ? M[m][2 * t + 1][g] : M[m][g][2 * t + 1];
            l->r[m] = lo | hi << 16;
        }
    }
    return 0;
}

/* the last completed instruction, (op << 8 | param), for test_mma_ptx's table (mma_ptx_table.cpp) */
std::atomic<int> last_instruction{-1};

} // namespace

int tensor_core_ptx(WarpOp op, int param, char *buf, size_t len) {
    const int num = param & 7, trans = (param & 8) != 0; /* decoded as complete_ldmatrix does */
    if (op == WARP_MMA_BF16) { /* A row-major, B column-major, bf16 in, f32 C and D: complete_mma */
        snprintf(buf, len, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {4} {4} {2} {4}");
        return 0;
    }
    if (op == WARP_LDMATRIX && (num == 1 || num == 2 || num == 4)) {
        snprintf(buf, len, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%d} [1]", num, trans ? ".trans" : "", num);
        return 0;
    }
    if (len) buf[0] = 0;
    return -1;
}

void tensor_core_last(int *op, int *param) {
    const int v = last_instruction.load();
    *op = v < 0 ? -1 : v >> 8, *param = v < 0 ? 0 : v & 0xff;
}

int tensor_core_complete(WarpOp op, int param, void *const lanes[32], char *msg, size_t msg_len) {
    last_instruction.store((int)op << 8 | (param & 0xff), std::memory_order_relaxed);
    if (op == WARP_MMA_BF16) return complete_mma(lanes);
    if (op == WARP_LDMATRIX) return complete_ldmatrix(param, lanes, msg, msg_len);
    snprintf(msg, msg_len, "warp operation %d is not a tensor-core instruction", (int)op);
    return -1;
}

} // namespace cuda_cpu
