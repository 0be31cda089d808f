/* cublaslt.cpp: the cuBLASLt stand-in of cublaslt.h. Plain loops: op(A) and op(B) are
 * first widened to fp32 in row-major [m,k] and [n,k] copies, so every output element is
 * one dot product over k in order (fp32), then alpha·acc + beta·C, rounded once to D's type. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "fast/cuda_cpu/bf16.h"
#include "fast/cuda_cpu/check.h"
#include "fast/cuda_cpu/cublaslt.h"
#include "fast/cuda_cpu/guard.h"

struct CublasCpuHandle {
    int unused;
};
struct CublasCpuDesc {
    cublasOperation_t ta, tb;
};
struct CublasCpuLayout {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
};
struct CublasCpuPref {
    uint32_t align[4];
};

namespace {

char why[512];

cublasStatus_t refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
cublasStatus_t refuse(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t ok(void) { return CUBLAS_STATUS_SUCCESS; }

float load(const void *p, cudaDataType_t t, size_t i) {
    return t == CUDA_R_16BF ? __bfloat162float(((const __nv_bfloat16 *)p)[i]) : ((const float *)p)[i];
}

/* The shapes the real library would accept: m, n, k from the layouts, consistent under the transposes. */
cublasStatus_t check_shapes(const CublasCpuDesc *op, const CublasCpuLayout *a, const CublasCpuLayout *b,
                            const CublasCpuLayout *c, const CublasCpuLayout *d, uint64_t *m, uint64_t *n, uint64_t *k) {
    if (!op || !a || !b || !c || !d) return refuse("a NULL descriptor or layout");
    *m = d->rows, *n = d->cols;
    const uint64_t am = op->ta == CUBLAS_OP_N ? a->rows : a->cols, ak = op->ta == CUBLAS_OP_N ? a->cols : a->rows;
    const uint64_t bk = op->tb == CUBLAS_OP_N ? b->rows : b->cols, bn = op->tb == CUBLAS_OP_N ? b->cols : b->rows;
    *k = ak;
    if (am != *m) return refuse("op(A) has %llu rows but D has %llu", (unsigned long long)am, (unsigned long long)*m);
    if (bn != *n) return refuse("op(B) has %llu columns but D has %llu", (unsigned long long)bn, (unsigned long long)*n);
    if (bk != ak) return refuse("op(A) is %llu x %llu but op(B) has %llu rows", (unsigned long long)am,
                                (unsigned long long)ak, (unsigned long long)bk);
    if (c->rows != d->rows || c->cols != d->cols) return refuse("C is not the shape of D");
    if (a->type != CUDA_R_16BF || b->type != CUDA_R_16BF) return refuse("A and B must be bf16");
    if (c->type != d->type || (d->type != CUDA_R_16BF && d->type != CUDA_R_32F))
        return refuse("C and D must both be bf16 or both fp32");
    const CublasCpuLayout *all[4] = {a, b, c, d};
    const char *names = "ABCD";
    for (int i = 0; i < 4; i++)
        if (all[i]->ld < 1 || (uint64_t)all[i]->ld < all[i]->rows)
            return refuse("leading dimension of %c is %lld, below its %llu rows", names[i], (long long)all[i]->ld,
                          (unsigned long long)all[i]->rows);
    if (*m == 0 || *n == 0 || *k == 0) return refuse("empty product (m=%llu n=%llu k=%llu)", (unsigned long long)*m,
                                                     (unsigned long long)*n, (unsigned long long)*k);
    return ok();
}

/* One output element: the k products in order, in fp32. It reads only the widened copies
 * (ours, checked when they were filled), so it is left uninstrumented: the sanitizer build
 * would otherwise spend most of a training step here. */
__attribute__((no_sanitize("address", "undefined"))) float dot_in_order(const float *x, const float *y, uint64_t k) {
#if VRL_CUDA_CPU_FP32
    /* the fp32-storage build (docs/design/precision.md, "Checks in bits"): each product is exact in double
     * and the sum of k of them is within k·2⁻⁵³ relative of exact, so the dot product's one fp32
     * rounding is all that is left: ½ ulp, below ref fp32's own fp32 accumulation */
    double acc = 0.0;
    for (uint64_t p = 0; p < k; p++) acc += (double)x[p] * y[p];
    return (float)acc;
#else
    float acc = 0.0f;
    for (uint64_t p = 0; p < k; p++) acc += x[p] * y[p];
    return acc;
#endif
}

} // namespace

const char *cublas_cpu_last_error(void) { return why; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = new CublasCpuHandle{0};
    return ok();
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    delete h;
    return ok();
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale) {
    if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return refuse("only fp32 compute and scale");
    *d = new CublasCpuDesc{CUBLAS_OP_N, CUBLAS_OP_N};
    return ok();
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    delete d;
    return ok();
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes) {
    if (bytes != sizeof(cublasOperation_t)) return refuse("transpose attribute of %zu bytes", bytes);
    const cublasOperation_t v = *(const cublasOperation_t *)buf;
    if (v != CUBLAS_OP_N && v != CUBLAS_OP_T) return refuse("transpose %d", (int)v);
    if (attr == CUBLASLT_MATMUL_DESC_TRANSA) d->ta = v;
    else if (attr == CUBLASLT_MATMUL_DESC_TRANSB) d->tb = v;
    else return refuse("descriptor attribute %d", (int)attr);
    return ok();
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType_t type, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
    *l = new CublasCpuLayout{type, rows, cols, ld};
    return ok();
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    delete l;
    return ok();
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = new CublasCpuPref{{256, 256, 256, 256}}; /* the library assumes 256-byte operands unless told */
    return ok();
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    delete p;
    return ok();
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t bytes) {
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) return bytes == 8 ? ok() : refuse("workspace size type");
    if (bytes != sizeof(uint32_t)) return refuse("alignment attribute of %zu bytes", bytes);
    const uint32_t v = *(const uint32_t *)buf;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: p->align[0] = v; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: p->align[1] = v; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: p->align[2] = v; break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: p->align[3] = v; break;
    default: return refuse("preference attribute %d", (int)attr);
    }
    return ok();
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref,
                                              int requested, cublasLtMatmulHeuristicResult_t *results, int *found) {
    uint64_t m, n, k;
    why[0] = '\0';
    *found = 0;
    if (!h || !pref || requested < 1) return refuse("heuristic: no handle, preference or room for a result");
    const cublasStatus_t st = check_shapes(op, a, b, c, d, &m, &n, &k);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    for (int i = 0; i < 4; i++) results[0].algo.align[i] = pref->align[i];
    results[0].workspaceSize = 0;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *found = 1;
    return ok();
}

namespace {
/* The dot products of one row of op(A) with JB consecutive columns of op(B), each summed in
 * order over k in fp32 exactly as dot_in_order does: the JB sums run side by side (one per
 * SIMD lane), so every lane performs the same roundings in the same order as the scalar loop
 * and the bits are the same; only the time changes (the stand-in was a fifth of a
 * test_fast_cpu_vs_ref run at faab088). opBt [k, n] row-major: column j of op(B) down column j. */
const uint64_t JB = 32;
__attribute__((no_sanitize("address", "undefined"))) void dots_in_order(const float *a, const float *opBt, uint64_t n,
                                                                         uint64_t j0, uint64_t k, float *out) {
#if VRL_CUDA_CPU_FP32
    double acc[JB] = {0};
    for (uint64_t p = 0; p < k; p++) {
        const double x = a[p];
        const float *b = opBt + p * n + j0;
        for (uint64_t jj = 0; jj < JB; jj++) acc[jj] += x * (double)b[jj];
    }
    for (uint64_t jj = 0; jj < JB; jj++) out[jj] = (float)acc[jj];
#else
    float acc[JB] = {0};
    for (uint64_t p = 0; p < k; p++) {
        const float x = a[p];
        const float *b = opBt + p * n + j0;
        for (uint64_t jj = 0; jj < JB; jj++) acc[jj] += x * b[jj];
    }
    for (uint64_t jj = 0; jj < JB; jj++) out[jj] = acc[jj];
#endif
}

/* D = alpha·op(A)·op(B) + beta·C with checked shapes (the descriptors by value: a recorded
 * matmul must not depend on descriptors destroyed after the capture). */
void matmul_now(CublasCpuDesc op, float al, const void *A, CublasCpuLayout a, const void *B, CublasCpuLayout b,
                float be, const void *C, CublasCpuLayout c, void *D, CublasCpuLayout d, uint64_t m, uint64_t n,
                uint64_t k) {
    /* opA [m,k] row-major fp32: element (i, p) of op(A); opB [n,k] and opBt [k,n]: (j, p) of op(B) */
    std::vector<float> opA(m * k), opB(n * k), opBt(k * n);
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t p = 0; p < k; p++)
            opA[i * k + p] = load(A, CUDA_R_16BF, op.ta == CUBLAS_OP_N ? i + p * a.ld : p + i * a.ld);
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t p = 0; p < k; p++) {
            const float v = load(B, CUDA_R_16BF, op.tb == CUBLAS_OP_N ? p + j * b.ld : j + p * b.ld);
            opB[j * k + p] = v;
            opBt[p * n + j] = v;
        }
    const uint64_t nb = n / JB * JB; /* columns in whole blocks; the rest one at a time */
    std::vector<float> acc(n);
    for (uint64_t i = 0; i < m; i++) {
        for (uint64_t j0 = 0; j0 < nb; j0 += JB) dots_in_order(&opA[i * k], opBt.data(), n, j0, k, &acc[j0]);
        for (uint64_t j = nb; j < n; j++) acc[j] = dot_in_order(&opA[i * k], &opB[j * k], k);
        for (uint64_t j = 0; j < n; j++) {
            /* beta = 0 ignores C (it may hold NaN), as cuBLASLt does */
            const float v = be == 0.0f ? al * acc[j] : al * acc[j] + be * load(C, c.type, i + j * c.ld);
            if (d.type == CUDA_R_16BF) ((__nv_bfloat16 *)D)[i + j * d.ld] = __float2bfloat16(v);
            else ((float *)D)[i + j * d.ld] = v;
        }
    }
}
/* Bytes from a column-major operand's first element to its last (the checkers' range). */
size_t span_bytes(const CublasCpuLayout &l) {
    const size_t elem = l.type == CUDA_R_16BF ? 2 : 4;
    return l.rows && l.cols ? ((size_t)l.ld * (l.cols - 1) + l.rows) * elem : 0;
}
} // namespace

/* Checked when issued; run then, or at replay when stream is capturing (runtime.h). */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t a, const void *B, cublasLtMatrixLayout_t b, const void *beta,
                              const void *C, cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspace_bytes,
                              cudaStream_t stream) {
    (void)workspace, (void)workspace_bytes;
    uint64_t m, n, k;
    why[0] = '\0';
    if (!h || !algo || !alpha || !beta || !A || !B || !C || !D) return refuse("matmul: a NULL argument");
    const cublasStatus_t st = check_shapes(op, a, b, c, d, &m, &n, &k);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    const void *ptrs[4] = {A, B, C, D};
    for (int i = 0; i < 4; i++)
        if ((uintptr_t)ptrs[i] % algo->align[i])
            return refuse("%c at %p is not %u-byte aligned as the preference promised", "ABCD"[i], ptrs[i],
                          algo->align[i]);
    const float al = *(const float *)alpha, be = *(const float *)beta;
    const CublasCpuDesc op_v = *op;
    const CublasCpuLayout a_v = *a, b_v = *b, c_v = *c, d_v = *d;
    if (cuda_cpu::issue(stream, "cublasLtMatmul", [=]() {
            /* one operation on stream for the checkers (check.h): each operand's columns */
            cuda_cpu::check::op_begin(stream, "cublasLtMatmul");
            cuda_cpu::check::op_range(A, span_bytes(a_v), 0);
            cuda_cpu::check::op_range(B, span_bytes(b_v), 0);
            if (be != 0.0f) cuda_cpu::check::op_range(C, span_bytes(c_v), 0);
            cuda_cpu::check::op_range(D, span_bytes(d_v), 1);
            cuda_cpu::check::op_end();
            if (cuda_cpu::check::op_error()) return cudaErrorLaunchFailure;
            matmul_now(op_v, al, A, a_v, B, b_v, be, C, c_v, D, d_v, m, n, k);
            return cuda_cpu::guard::damaged("cublasLtMatmul", 0) ? cudaErrorLaunchFailure : cudaSuccess;
        }) != cudaSuccess)
        return refuse("matmul: %s", cuda_cpu::check::op_error() ? cuda_cpu::check::op_error()
                                    : cuda_cpu::guard::report() ? cuda_cpu::guard::report()
                                                                : cudaGetErrorString(cudaGetLastError()));
    return ok();
}
