/* zero.cu: NCCL data parallelism for fast/, ZeRO-2 style (zero.cuh): buckets, shards,
 * the communicator and its stream. Host-side plumbing only: no kernel of its own; the
 * optimizer's kernels (adamw.cu) run on this rank's ranges. NEVER RUN (no GPU here). */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fast/zero.cuh"

extern "C" {
#include "common/base/procgroup.h"
#include "fast/zero.h"
}

FAST_NS_BEGIN

#define NCCL_CHECK(call)                                                                                     \
    do {                                                                                                     \
        ncclResult_t r_ = (call);                                                                            \
        if (r_ != ncclSuccess) return vrl_error("fast: NCCL %s (%s:%d)", ncclGetErrorString(r_), __FILE__, __LINE__); \
    } while (0)

typedef struct {
    size_t start, len;   /* table values [start, start + len) */
    size_t chunk;        /* ceil(len / world) rounded up to PARAM_ALIGN (whole vectors): every
                          * rank's block length (the last may be short, or empty) */
    size_t shard_off;    /* this rank's block in gshard */
    int owner;           /* layer 0 .. L-1, or ZERO_EMBED / ZERO_HEAD / ZERO_LATE */
    int launched;        /* reduce-scatter issued in the running backward */
    cudaEvent_t ready;   /* model's stream: the bucket's gradients are complete */
    cudaEvent_t gathered;/* communication stream: its bf16 parameters are everywhere */
} ZeroBucket;

struct ZeroState {
    ncclComm_t comm;
    cudaStream_t stream;      /* non-blocking: runs beside the model's stream */
    cudaEvent_t reduced;      /* communication stream: every reduce-scatter done */
    cudaEvent_t updated;      /* model's stream: the shard's AdamW done */
    int rank, world;
    int armed;                /* the running backward reduce-scatters */
    int n;                    /* buckets, in table order */
    ZeroBucket *b;            /* host [n] */
    float *gshard;            /* [shard_len] device: this rank's reduced blocks, gaps zero */
    size_t shard_len;
};

static size_t block_len(const ZeroBucket *b, int r) {
    const size_t lo = (size_t)r * b->chunk;
    return lo >= b->len ? 0 : (b->len - lo < b->chunk ? b->len - lo : b->chunk);
}

/* Whose gradients the tensor at `offset` holds, from the model's offsets: a layer's tensors
 * run from its attention norm to the next layer's (the last: to the final norm). */
static int owner_of(const FastModel *m, size_t offset) {
    if (offset == m->o_wte) return ZERO_EMBED;
    if (offset == m->o_lnf || offset == m->o_lm_head) return ZERO_HEAD;
    for (int l = 0; l < m->L; l++) {
        const size_t end = l + 1 < m->L ? m->lo[l + 1].ln1 : m->o_lnf;
        if (offset >= m->lo[l].ln1 && offset < end) return l;
    }
    return ZERO_LATE;
}

/* Buckets: maximal runs of adjacent tensors with one owner, each tensor with its padding
 * gap (common/model/params.h), so the buckets tile the table: every element in exactly one. */
static int build_buckets(ZeroState *z, const FastModel *m) {
    const ParamTable *t = m->t;
    z->b = (ZeroBucket *)calloc((size_t)t->n, sizeof *z->b);
    if (!z->b) return vrl_error("fast: out of host memory for %d buckets", t->n);
    z->n = 0;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        const int owner = owner_of(m, p->offset);
        ZeroBucket *last = z->n ? &z->b[z->n - 1] : NULL;
        if (last && last->owner == owner && last->start + last->len == p->offset) {
            last->len += p->slot;
            continue;
        }
        z->b[z->n].start = p->offset;
        z->b[z->n].len = p->slot;
        z->b[z->n].owner = owner;
        z->n++;
    }
    z->shard_len = 0;
    for (int k = 0; k < z->n; k++) {
        ZeroBucket *b = &z->b[k];
        /* whole vectors per rank block, so each rank's AdamW runs take the vector path */
        b->chunk = param_padded((b->len + z->world - 1) / z->world);
        b->shard_off = z->shard_len;
        z->shard_len += b->chunk;
        CUDA_CHECK(cudaEventCreateWithFlags(&b->ready, cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&b->gathered, cudaEventDisableTiming));
    }
    return 0;
}

extern "C" int fast_shard_open(void *vm) {
    FastModel *m = (FastModel *)vm;
    if (m->zero) return 0;
    /* one rank: its shard is the whole gradient and there is nothing to exchange, so no
     * communicator; the step then runs as graphs (model.cu). VRL_FAST_ZERO_ONE_RANK=1 keeps
     * the NCCL path at one rank (test_fast_nccl compares it with the plain path). */
    const char *one = getenv("VRL_FAST_ZERO_ONE_RANK");
    if (dist_world() == 1 && !(one && one[0] == '1')) return 0;
    ZeroState *z = (ZeroState *)calloc(1, sizeof *z);
    if (!z) return vrl_error("fast: out of host memory");
    m->zero = z;
    z->rank = dist_rank();
    z->world = dist_world();
    /* rank 0 draws the communicator's id; MPI carries it to the others */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (z->rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    dist_broadcast(&id, sizeof id);
    NCCL_CHECK(ncclCommInitRank(&z->comm, z->world, id, z->rank));
    CUDA_CHECK(cudaStreamCreateWithFlags(&z->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&z->reduced, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&z->updated, cudaEventDisableTiming));
    if (build_buckets(z, m) < 0) return -1;
    CUDA_CHECK(cudaMalloc(&z->gshard, z->shard_len * sizeof(float)));
    CUDA_CHECK(cudaMemset(z->gshard, 0, z->shard_len * sizeof(float)));
    if (z->rank == 0)
        fprintf(stderr, "vrl fast: NCCL %d ranks, %d buckets, shard %.1f MiB of fp32 gradients per rank\n", z->world,
                z->n, z->shard_len * 4.0 / 1048576.0);
    return 0;
}

extern "C" void fast_reduce_next(void *vm) {
    FastModel *m = (FastModel *)vm;
    if (!m->zero) return;
    m->zero->armed = 1;
    for (int k = 0; k < m->zero->n; k++) m->zero->b[k].launched = 0;
}

extern "C" void fast_shard_close(void *vm) {
    FastModel *m = (FastModel *)vm;
    ZeroState *z = m->zero;
    if (!z) return;
    if (z->stream) cudaStreamSynchronize(z->stream);
    for (int k = 0; k < z->n; k++) {
        cudaEventDestroy(z->b[k].ready);
        cudaEventDestroy(z->b[k].gathered);
    }
    if (z->reduced) cudaEventDestroy(z->reduced);
    if (z->updated) cudaEventDestroy(z->updated);
    if (z->stream) cudaStreamDestroy(z->stream);
    if (z->comm) ncclCommDestroy(z->comm);
    cudaFree(z->gshard);
    free(z->b);
    free(z);
    m->zero = NULL;
}

/* ------------------------------------------------------------------ backward: reduce-scatter */

static int reduce_scatter(FastModel *m, ZeroBucket *b) {
    ZeroState *z = m->zero;
    CUDA_CHECK(cudaEventRecord(b->ready, m->stream));
    CUDA_CHECK(cudaStreamWaitEvent(z->stream, b->ready, 0));
    float *src = m->grads + b->start, *dst = z->gshard + b->shard_off;
    if (b->len == (size_t)z->world * b->chunk) {
        NCCL_CHECK(ncclReduceScatter(src, dst, b->chunk, ncclFloat32, ncclSum, z->comm, z->stream));
    } else { /* uneven blocks: one reduce per block, to its owner */
        NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < z->world; r++) {
            const size_t cnt = block_len(b, r);
            if (cnt) NCCL_CHECK(ncclReduce(src + (size_t)r * b->chunk, dst, cnt, ncclFloat32, ncclSum, r, z->comm, z->stream));
        }
        NCCL_CHECK(ncclGroupEnd());
    }
    b->launched = 1;
    return 0;
}

int zero_grads_ready(FastModel *m, int owner) {
    ZeroState *z = m->zero;
    if (!z || !z->armed) return 0;
    for (int k = 0; k < z->n; k++)
        if (z->b[k].owner == owner && !z->b[k].launched && reduce_scatter(m, &z->b[k]) < 0) return -1;
    return 0;
}

int zero_backward_end(FastModel *m) {
    ZeroState *z = m->zero;
    if (!z || !z->armed) return 0;
    for (int k = 0; k < z->n; k++)
        if (!z->b[k].launched && reduce_scatter(m, &z->b[k]) < 0) return -1;
    CUDA_CHECK(cudaEventRecord(z->reduced, z->stream));
    z->armed = 0;
    return 0;
}

int zero_wait_reduced(FastModel *m) {
    CUDA_CHECK(cudaStreamWaitEvent(m->stream, m->zero->reduced, 0));
    return 0;
}

/* ------------------------------------------------------------------ the shard */

int zero_n_ranges(const FastModel *m) { return m->zero->n; }

void zero_range(const FastModel *m, int k, size_t *start, size_t *n, float **grad) {
    const ZeroState *z = m->zero;
    const ZeroBucket *b = &z->b[k];
    *start = b->start + (size_t)z->rank * b->chunk;
    *n = block_len(b, z->rank);
    *grad = z->gshard + b->shard_off;
}

float *zero_shard_grads(const FastModel *m, size_t *n) {
    *n = m->zero->shard_len;
    return m->zero->gshard;
}

/* ------------------------------------------------------------------ all-gather */

/* Every rank's block of bucket b of the buffer base (elements of esize bytes) to every rank. */
static int gather(ZeroState *z, const ZeroBucket *b, void *base, size_t esize, ncclDataType_t dt) {
    char *p = (char *)base + b->start * esize;
    if (b->len == (size_t)z->world * b->chunk) /* in place: this rank's block is already where it belongs */
        NCCL_CHECK(ncclAllGather(p + (size_t)z->rank * b->chunk * esize, p, b->chunk, dt, z->comm, z->stream));
    else {
        NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < z->world; r++) {
            const size_t cnt = block_len(b, r);
            char *blk = p + (size_t)r * b->chunk * esize;
            if (cnt) NCCL_CHECK(ncclBroadcast(blk, blk, cnt, dt, r, z->comm, z->stream));
        }
        NCCL_CHECK(ncclGroupEnd());
    }
    return 0;
}

int zero_gather_params(FastModel *m) {
    ZeroState *z = m->zero;
    CUDA_CHECK(cudaEventRecord(z->updated, m->stream));
    CUDA_CHECK(cudaStreamWaitEvent(z->stream, z->updated, 0));
    /* forward order: the embedding, the layers, the head, the rest */
    const int order[4] = {ZERO_EMBED, 0, ZERO_HEAD, ZERO_LATE};
    for (int pass = 0; pass < 4; pass++)
        for (int k = 0; k < z->n; k++) {
            ZeroBucket *b = &z->b[k];
            if (order[pass] == 0 ? b->owner < 0 : b->owner != order[pass]) continue;
            if (gather(z, b, m->params16, sizeof(bf16), ncclBfloat16) < 0) return -1;
            CUDA_CHECK(cudaEventRecord(b->gathered, z->stream));
        }
    return 0;
}

int zero_wait_params(FastModel *m, int owner) {
    ZeroState *z = m->zero;
    if (!z) return 0;
    for (int k = 0; k < z->n; k++)
        if (z->b[k].owner == owner) CUDA_CHECK(cudaStreamWaitEvent(m->stream, z->b[k].gathered, 0));
    return 0;
}

int zero_gather_state(FastModel *m) {
    ZeroState *z = m->zero;
    if (!z || z->world == 1) return 0; /* one rank's shard is everything */
    CUDA_CHECK(cudaEventRecord(z->updated, m->stream));
    CUDA_CHECK(cudaStreamWaitEvent(z->stream, z->updated, 0));
    for (int k = 0; k < z->n; k++) {
        if (gather(z, &z->b[k], m->params32, sizeof(float), ncclFloat32) < 0) return -1;
        if (gather(z, &z->b[k], m->exp_avg, sizeof(float), ncclFloat32) < 0) return -1;
        if (gather(z, &z->b[k], m->exp_avg_sq, sizeof(float), ncclFloat32) < 0) return -1;
    }
    CUDA_CHECK(cudaStreamSynchronize(z->stream));
    return 0;
}

FAST_NS_END
