/* attention_mix.cu: the attention-matrix residual and Eq. 2 cross-layer attention on fast/'s own
 * attention kernels (formulas and interface in attention_mix.cuh): the model's, mma (tensor
 * cores) or flash; flash under --attention cudnn: the backward of Eq. 2 needs a backward that
 * takes the merged O and lse, which fast's kernels are and cuDNN's is not (docs/design/kernels.md,
 * "Variants").
 *
 * Precision: each term's (half's) output is bf16 like any attention output, the sum of the
 * terms (the merge) is taken in fp32 and rounded once; the other layers' d(q), d(k) are kept in
 * fp32 and added once into that layer's bf16 gradient; a mixing layer's d(V') is summed in fp32. */
#include <math.h>
#include <string.h>

#include "fast/attention_mix.cuh"
#include "fast/attention_wgmma.cuh"

FAST_NS_BEGIN

/* ------------------------------------------------------------------ kernels */

#define TRY_AMIX(call) \
    if ((call) < 0) return -1

__device__ __forceinline__ float amix_bf(bf16 x) { return __bfloat162float(x); }

/* Eq. 2's merge of the two halves, one thread per (row, head): L = log(e^{L_a} + e^{L_b}),
 * out = e^{L_a−L}·out + e^{L_b−L}·out_b, lse = L (both written over the first half's).
 * out, out_b [B,T,NH*hd], lse, lse_b [B,NH,T] */
__global__ void lse_merge_kernel(bf16 *out, float *lse, const bf16 *out_b, const float *lse_b, int B, int T, int NH,
                                 int hd) {
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)B * T * NH) return;
    const int h = (int)(idx % NH);
    const size_t row = idx / NH; /* b*T + t */
    const size_t li = ((row / T) * NH + h) * T + row % T;
    const float la = lse[li], lb = lse_b[li], mx = fmaxf(la, lb); /* finite: key 0 is in both halves */
    const float L = mx + logf(expf(la - mx) + expf(lb - mx));
    const float wa = expf(la - L), wb = expf(lb - L);
    bf16 *o = out + idx * hd;
    const bf16 *ob = out_b + idx * hd;
    for (int d = 0; d < hd; d++) o[d] = __float2bfloat16(wa * amix_bf(o[d]) + wb * amix_bf(ob[d]));
    lse[li] = L;
}

/* keep[n,c] += g[n*ld + c].  keep [N,C] fp32, g [N,ld] bf16 (columns [0,C) read) */
__global__ void grad_keep_kernel(float *keep, const bf16 *g, int ld, int C, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    keep[i] += amix_bf(g[(i / C) * ld + i % C]);
}

/* g[n*ld + c] = bf16(g + keep[n,c]) (keep fp32) or bf16(g + add[n*ld + c]) (add bf16, the same
 * strides).  g [N,ld] bf16 */
__global__ void grad_add_kernel(bf16 *g, int ld, const float *keep, const bf16 *add, int C, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const size_t at = (i / C) * ld + i % C;
    g[at] = __float2bfloat16(amix_bf(g[at]) + (keep ? keep[i] : amix_bf(add[at])));
}

/* attention_backward's dV epilogue on a dV summed in fp32: f32 = (or +=) scale·src, b16 =
 * bf16(src) at row stride ld_v.  src [N,kvC] fp32 */
__global__ void dv_scatter_f32_kernel(AttnDv dv, const float *src, int ld_v, int kvC, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float g = src[i];
    if (dv.f32) dv.f32[i] = dv.add ? dv.f32[i] + dv.scale * g : dv.scale * g;
    if (dv.b16) dv.b16[(i / kvC) * ld_v + i % kvC] = __float2bfloat16(g);
}

static int grad_keep(float *keep, const bf16 *g, int ld, int N, int C) {
    const size_t n = (size_t)N * C;
    LAUNCH(grad_keep_kernel, cdiv(n, 256), 256, 0, ops_stream)(keep, g, ld, C, n);
    LAUNCH_CHECK();
    return 0;
}

static int grad_add(bf16 *g, int ld, const float *keep, const bf16 *add, int N, int C) {
    const size_t n = (size_t)N * C;
    LAUNCH(grad_add_kernel, cdiv(n, 256), 256, 0, ops_stream)(g, ld, keep, add, C, n);
    LAUNCH_CHECK();
    return 0;
}

/* ------------------------------------------------------------------ create / destroy */

/* model.cu's carving: guard zones between these buffers too (docs/design/cuda-on-cpu.md "Guard zones") */
#define CARVE(ptr, n) ((ptr) = (__typeof__(ptr))fast_carve(base, &off, (size_t)(n), sizeof *(ptr)))

/* The buffers of st for m; with base == NULL only counts. */
static size_t amix_layout(const FastModel *m, FastAttnMix *st, char *base) {
    const size_t N = m->N, qC = m->qC, kvC = m->kvC, BHT = (size_t)m->B * m->NH * m->T;
    const int *cross = m->plan->cross;
    size_t off = 0;
    int any = 0, mixing = 0, crossing = 0, read_q[FAST_MAX_LAYERS] = {0}, read_k[FAST_MAX_LAYERS] = {0};
    for (int l = 0; l < m->L; l++) {
        st->own[l] = NULL;
        if (cross[l] >= 0) read_k[cross[l]] = 1, any = crossing = 1;
        if (!st->mixes[l]) continue;
        any = mixing = 1;
        CARVE(st->own[l], N * qC);
        for (int j = 0; j < st->n_src[l]; j++) {
            CARVE(st->term[l][j], N * qC);
            CARVE(st->term_lse[l][j], BHT);
            read_q[st->src[l][j]] = read_k[st->src[l][j]] = 1;
        }
    }
    for (int i = 0; i < m->L; i++) {
        st->dq_keep[i] = st->dk_keep[i] = NULL;
        if (read_q[i]) CARVE(st->dq_keep[i], N * qC);
        if (read_k[i]) CARVE(st->dk_keep[i], N * kvC);
    }
    if (!any) return 0;
    st->half_out = st->dout_scaled = NULL, st->half_lse = st->dv_sum = NULL;
    if (crossing) CARVE(st->half_out, N * qC), CARVE(st->half_lse, BHT); /* Eq. 2's forward */
    if (mixing) CARVE(st->dout_scaled, N * qC), CARVE(st->dv_sum, N * kvC);  /* the terms' backward */
    CARVE(st->dq_tmp, N * (qC + 2 * kvC));
    CARVE(st->dk_tmp, N * (qC + 2 * kvC));
    return off;
}
#undef CARVE

int amix_layer(const FastModel *m, int l) { return m->amix && (m->amix->mixes[l] || m->plan->cross[l] >= 0); }

void amix_destroy(FastModel *m) {
    FastAttnMix *st = m->amix;
    if (!st) return;
    if (st->arena) cudaFree(st->arena);
    free(st);
    m->amix = NULL;
}

int amix_create(FastModel *m) {
    const ValuePlan *p = m->plan;
    const int L = m->L;
    FastAttnMix *st = (FastAttnMix *)calloc(1, sizeof *st);
    if (!st) return vrl_error("fast model: out of host memory");
    m->amix = st;
    for (int l = 0; l < L; l++) { /* the sources other than layer l of a row that is not the identity */
        const double *row = p->ca + (size_t)l * L;
        for (int i = 0; i < l; i++) st->mixes[l] |= row[i] != 0;
        st->mixes[l] |= row[l] != 1.0;
        for (int i = 0; i < l && st->mixes[l]; i++)
            if (row[i] != 0) st->src[l][st->n_src[l]++] = i;
        if (p->cross[l] >= 0 && !m->acts[p->cross[l]].v) /* value_flags keeps V_m for Eq. 2 */
            return vrl_error("fast model: layer %d's Eq. 2 partner %d has no raw V kept", l, p->cross[l]);
    }
    st->bytes = amix_layout(m, st, NULL);
    if (st->bytes == 0) return 0; /* no mixing and no Eq. 2: nothing to keep */
    const cudaError_t e = cudaMalloc(&st->arena, st->bytes);
    if (e != cudaSuccess) {
        st->arena = NULL;
        return vrl_error("fast model: cannot allocate %.2f GiB for the attention mixes (%s)",
                         st->bytes / 1073741824.0, cudaGetErrorString(e));
    }
    amix_layout(m, st, (char *)st->arena);
    return 0;
}

/* ------------------------------------------------------------------ forward */

/* The model's attention pair (attention.cuh: the same arguments and contract): the tensor-core
 * kernels under mma and wgmma, the flash kernels otherwise. */
typedef int (*AttnForwardFn)(bf16 *, float *, const bf16 *, const bf16 *, const bf16 *, AttnLd, int, int, int, int,
                             int);
typedef int (*AttnBackwardFn)(bf16 *, bf16 *, AttnDv, float *, const bf16 *, const bf16 *, const bf16 *,
                              const bf16 *, const bf16 *, AttnLd, const float *, int, int, int, int, int);
/* The tensor-core pair without the fused RoPE (NULL): these layers' q and k arrive rotated, and
 * their gradients leave through rope_backward (fast/model.cu rope_fused); q is written only
 * with a rope, so the const view of it is kept. */
static int mma_forward_plain(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, int B,
                             int T, int NH, int NKV, int hd) {
    return attention_mma_forward(out, lse, const_cast<bf16 *>(q), k, v, ld, B, T, NH, NKV, hd, NULL);
}
static int mma_backward_plain(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                              const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B, int T,
                              int NH, int NKV, int hd) {
    return attention_mma_backward(dq, dk, dv, Dscratch, dout, out, q, k, v, ld, lse, B, T, NH, NKV, hd, NULL);
}
static int wgmma_backward_plain(bf16 *dq, bf16 *dk, AttnDv dv, float *Dscratch, const bf16 *dout, const bf16 *out,
                                const bf16 *q, const bf16 *k, const bf16 *v, AttnLd ld, const float *lse, int B,
                                int T, int NH, int NKV, int hd) {
    return attention_wgmma_backward(dq, dk, dv, Dscratch, dout, out, q, k, v, ld, lse, B, T, NH, NKV, hd, NULL);
}
static AttnForwardFn attn_forward_of(const FastModel *m) {
    if (m->attention == FAST_ATTENTION_WGMMA) return attention_wgmma_forward; /* no RoPE inside it either */
    return m->attention == FAST_ATTENTION_MMA ? mma_forward_plain : attention_forward;
}
static AttnBackwardFn attn_backward_of(const FastModel *m) {
    if (m->attention == FAST_ATTENTION_WGMMA) return wgmma_backward_plain;
    return m->attention == FAST_ATTENTION_MMA ? mma_backward_plain : attention_backward;
}

/* Row stride of layer i's raw V (a view into its fused projection, or its own tensor). */
static int v_stride(const FastModel *m, int i) {
    return m->fuse_cols[i] == m->qC + 2 * m->kvC ? m->fuse_cols[i] : m->kvC;
}

/* Strides of a term of layer l that reads layer i's queries and keys and layer l's values. */
static AttnLd term_ld(const FastModel *m, int l, int i) {
    const AttnLd li = fast_attn_ld(m, i), ll = fast_attn_ld(m, l);
    const AttnLd ld = {li.q, li.k, ll.v};
    return ld;
}

/* Strides of Eq. 2's second half of layer l: its queries, layer mp's keys and raw V. */
static AttnLd half_ld(const FastModel *m, int l, int mp) {
    const AttnLd ld = {fast_attn_ld(m, l).q, fast_attn_ld(m, mp).k, v_stride(m, mp)};
    return ld;
}

int amix_forward(FastModel *m, int l) {
    const AttnForwardFn fwd = attn_forward_of(m);
    FastAttnMix *st = m->amix;
    FastActs *a = &m->acts[l];
    const int B = m->B, T = m->T, NH = m->NH, NKV = m->NKV, hd = m->hd, mp = m->plan->cross[l];
    const AttnLd ld = fast_attn_ld(m, l);
    if (mp >= 0) { /* Eq. 2: the own half into atty/lse, the second half, then the merge over them */
        const FastActs *am = &m->acts[mp];
        TRY_AMIX(fwd(a->atty, a->lse, a->q, a->k, a->vin, ld, B, T, NH, NKV, hd));
        TRY_AMIX(fwd(st->half_out, st->half_lse, a->q, am->k, am->v, half_ld(m, l, mp), B, T, NH, NKV, hd));
        const size_t rows = (size_t)B * T * NH;
        LAUNCH(lse_merge_kernel, cdiv(rows, 256), 256, 0, ops_stream)(a->atty, a->lse, st->half_out, st->half_lse, B, T,
                                                                      NH, hd);
        LAUNCH_CHECK();
        return 0;
    }
    /* the attention-matrix residual: each term A_i·V'_l, then atty = Σ ca·terms in fp32, layer order */
    const double *row = m->plan->ca + (size_t)l * m->L;
    MixArgs mix;
    memset(&mix, 0, sizeof mix);
    for (int j = 0; j < st->n_src[l]; j++) {
        const int i = st->src[l][j];
        TRY_AMIX(fwd(st->term[l][j], st->term_lse[l][j], m->acts[i].q, m->acts[i].k, a->vin, term_ld(m, l, i), B, T,
                     NH, NKV, hd));
        mix.src[mix.n] = st->term[l][j], mix.coef[mix.n++] = (float)row[i];
    }
    TRY_AMIX(fwd(st->own[l], a->lse, a->q, a->k, a->vin, ld, B, T, NH, NKV, hd));
    mix.src[mix.n] = st->own[l], mix.coef[mix.n++] = (float)row[l];
    return mix_forward(a->atty, &mix, (size_t)m->N * m->qC);
}

/* ------------------------------------------------------------------ backward */

int amix_backward_begin(FastModel *m) {
    const FastAttnMix *st = m->amix;
    if (!st) return 0;
    for (int i = 0; i < m->L; i++) {
        if (st->dq_keep[i]) CUDA_CHECK(cudaMemsetAsync(st->dq_keep[i], 0, (size_t)m->N * m->qC * sizeof(float), ops_stream));
        if (st->dk_keep[i]) CUDA_CHECK(cudaMemsetAsync(st->dk_keep[i], 0, (size_t)m->N * m->kvC * sizeof(float), ops_stream));
    }
    return 0;
}

/* dU scaled by c for one term (dU itself where c is 1).  [N,qC] */
static const bf16 *scaled_dout(FastModel *m, double c) {
    if (c == 1.0) return m->datty;
    MixArgs mix;
    memset(&mix, 0, sizeof mix);
    mix.n = 1, mix.src[0] = m->datty, mix.coef[0] = (float)c;
    return mix_forward(m->amix->dout_scaled, &mix, (size_t)m->N * m->qC) < 0 ? NULL : m->amix->dout_scaled;
}

int amix_backward(FastModel *m, int l, bf16 *dq, bf16 *dk, AttnDv dv) {
    const AttnBackwardFn bwd = attn_backward_of(m);
    FastAttnMix *st = m->amix;
    const FastActs *a = &m->acts[l];
    const int B = m->B, T = m->T, N = m->N, NH = m->NH, NKV = m->NKV, hd = m->hd, mp = m->plan->cross[l];
    const AttnLd ld = fast_attn_ld(m, l);
    if (mp >= 0) { /* each half with the merged out and lse: the joint softmax's gradients */
        const FastActs *am = &m->acts[mp];
        const AttnLd lb = half_ld(m, l, mp);
        const AttnDv dvm = {m->dv_keep[mp], 1.0f, 1, NULL}; /* V_m's accumulator (value_flags) */
        TRY_AMIX(bwd(dq, dk, dv, m->attD, m->datty, a->atty, a->q, a->k, a->vin, ld, a->lse, B, T, NH, NKV, hd));
        TRY_AMIX(bwd(st->dq_tmp, st->dk_tmp, dvm, m->attD, m->datty, a->atty, a->q, am->k, am->v, lb, a->lse, B, T,
                     NH, NKV, hd));
        TRY_AMIX(grad_add(dq, ld.q, NULL, st->dq_tmp, N, m->qC)); /* d(q_l): the halves' sum */
        return grad_keep(st->dk_keep[mp], st->dk_tmp, lb.k, N, m->kvC);
    }
    /* the attention-matrix residual: the own term writes d(q_l), d(k_l) and starts d(V'_l) */
    const double *row = m->plan->ca + (size_t)l * m->L;
    const bf16 *g = scaled_dout(m, row[l]);
    if (!g) return -1;
    const AttnDv own = {st->dv_sum, 1.0f, 0, NULL}, more = {st->dv_sum, 1.0f, 1, NULL};
    TRY_AMIX(bwd(dq, dk, own, m->attD, g, st->own[l], a->q, a->k, a->vin, ld, a->lse, B, T, NH, NKV, hd));
    for (int j = 0; j < st->n_src[l]; j++) { /* layer i's d(q_i), d(k_i) kept for its backward */
        const int i = st->src[l][j];
        const AttnLd lt = term_ld(m, l, i);
        if (!(g = scaled_dout(m, row[i]))) return -1;
        TRY_AMIX(bwd(st->dq_tmp, st->dk_tmp, more, m->attD, g, st->term[l][j], m->acts[i].q, m->acts[i].k, a->vin,
                     lt, st->term_lse[l][j], B, T, NH, NKV, hd));
        TRY_AMIX(grad_keep(st->dq_keep[i], st->dq_tmp, lt.q, N, m->qC));
        TRY_AMIX(grad_keep(st->dk_keep[i], st->dk_tmp, lt.k, N, m->kvC));
    }
    const size_t n = (size_t)N * m->kvC;
    LAUNCH(dv_scatter_f32_kernel, cdiv(n, 256), 256, 0, ops_stream)(dv, st->dv_sum, ld.v, m->kvC, n);
    LAUNCH_CHECK();
    return 0;
}

int amix_add_kept(FastModel *m, int l, bf16 *dq, bf16 *dk) {
    const FastAttnMix *st = m->amix;
    if (!st) return 0;
    const AttnLd ld = fast_attn_ld(m, l);
    if (st->dq_keep[l]) TRY_AMIX(grad_add(dq, ld.q, st->dq_keep[l], NULL, m->N, m->qC));
    if (st->dk_keep[l]) TRY_AMIX(grad_add(dk, ld.k, st->dk_keep[l], NULL, m->N, m->kvC));
    return 0;
}

FAST_NS_END
