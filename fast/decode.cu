/* decode.cu: fast/'s KV-cache decoder (decode.h, decode.cuh), the twin of ref/decode.c.
 *
 * For the token at position p of each of B sequences, on a one-position model dm (N = B rows,
 * fast_model_create_decoder) whose params16 is the generating model's:
 *
 *   x    = embed(tok) -> stream (fast/stream.cu, step 2l: layer l's norm input and residual)
 *   ln   = RMSNorm(x)·g1                                   [B,d]
 *   q    = RoPE_p(ln·W_qᵀ)                                 [B,qC]   (the layer's own queries)
 *   K_l  = RoPE_p(ln·W_kᵀ) -> kc[l][b,p]                   [B,kvC]  where the layer has W_k
 *   V_l  = ln·W_vᵀ -> vcur[l]                              [B,kvC]  where some layer reads V_l
 *   vin  = Σ_i cv[l][i]·V_i (this token) -> vc[l][b,p]     [B,kvC]
 *   atty = Σ_{t≤p} softmax_t(q·kc[ks][t]/√hd)·vc[l][t]    [B,qC]   ks: the layer whose keys l reads
 *   U    = atty + repeat_kv(Σ_i ce[l][i]·V_i)              [B,qC]   (corrections, this token's V_i)
 *   h    = x + U·W_oᵀ -> stream -> MLP (fast/ops.cu's kernels, as model.cu's layer_forward)
 *   logits = lm_head·RMSNorm(x_L)                          [B,Vp] bf16 -> host fp32 [B,V]
 *
 * v_in is cached whole rather than the raw V_i (ref/decode.c keeps raw rows and mixes at
 * attention time): the coefficients are fixed while decoding, so Σ_i cv·V_i[t] is one row per
 * token and layer, and the attention kernel reads one tensor. A prompt of n >= 2 positions into
 * an empty cache is one prefill forward over [B, n] (the training trunk with the model's
 * attention kernels, prefill below), whose keys and value inputs fill the cache; after it, one
 * position per step. The kernels are fast/'s on B-row batches; only the cache append and the
 * attention over the cache are new (below). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fast/decode.cuh"
#include "fast/stream.cuh"

extern "C" {
#include "fast/decode.h"
#include "fast/model.h"
}

FAST_NS_BEGIN

/* ------------------------------------------------------------------ kernels */

/* cache[b, p + t, c] = src[b·n + t, c]: one thread per element of the B·n new rows. */
__global__ void decode_cache_append_kernel(bf16 *cache, const bf16 *src, int ld_src, int B, int n, int Tmax, int C,
                                           int p) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * n * C) return;
    const size_t row = i / C, c = i % C, b = row / n, t = row % n;
    cache[(b * Tmax + p + t) * C + c] = src[row * ld_src + c];
}

int decode_cache_append(bf16 *cache, const bf16 *src, int ld_src, int B, int n, int Tmax, int C, int p) {
    LAUNCH(decode_cache_append_kernel, cdiv((size_t)B * n * C, 256), 256, 0, ops_stream)(cache, src, ld_src, B, n, Tmax,
                                                                                       C, p);
    LAUNCH_CHECK();
    return 0;
}

/* One block per (head h, sequence b), DECODE_THREADS threads. Per chunk of DECODE_THREADS
 * positions: thread j scores position t0 + j (fp32 dot product over hd), the block's max and the
 * sum of exp(s − max) by a tree in shared memory, then thread e < hd rescales its running output
 * element and adds Σ_j p_j·v[t0+j][e] in position order. The division by the sum comes last. */
__global__ void decode_attention_kernel(bf16 *out, const bf16 *q, int ld_q, const bf16 *kc, const bf16 *vc, int ld_kv,
                                        int Tmax, int n, int NH, int NKV, int hd, float scale) {
    __shared__ float qs[DECODE_THREADS];  /* this head's query */
    __shared__ float pr[DECODE_THREADS];  /* the chunk's exp(s − max) */
    __shared__ float red[DECODE_THREADS]; /* tree reductions */
    const int h = blockIdx.x, b = blockIdx.y, j = threadIdx.x, g = h / (NH / NKV);
    if (j < hd) qs[j] = __bfloat162float(q[(size_t)b * ld_q + (size_t)h * hd + j]);
    __syncthreads();
    const bf16 *kb = kc + (size_t)b * Tmax * ld_kv + (size_t)g * hd, *vb = vc + (size_t)b * Tmax * ld_kv + (size_t)g * hd;
    float run_max = -INFINITY, run_sum = 0.0f, acc = 0.0f;
    for (int t0 = 0; t0 < n; t0 += DECODE_THREADS) {
        const int t = t0 + j, width = n - t0 < DECODE_THREADS ? n - t0 : DECODE_THREADS;
        float s = -INFINITY;
        if (t < n) {
            float dot = 0.0f;
            for (int e = 0; e < hd; e++) dot += qs[e] * __bfloat162float(kb[(size_t)t * ld_kv + e]);
            s = dot * scale;
        }
        red[j] = s;
        __syncthreads();
        for (int w = DECODE_THREADS / 2; w > 0; w >>= 1) {
            if (j < w) red[j] = fmaxf(red[j], red[j + w]);
            __syncthreads();
        }
        const float new_max = fmaxf(run_max, red[0]);
        __syncthreads(); /* every thread has read red[0] before it is reused */
        const float pj = t < n ? expf(s - new_max) : 0.0f;
        pr[j] = pj;
        red[j] = pj;
        __syncthreads();
        for (int w = DECODE_THREADS / 2; w > 0; w >>= 1) {
            if (j < w) red[j] += red[j + w];
            __syncthreads();
        }
        const float rescale = expf(run_max - new_max); /* 0 on the first chunk (run_max = −inf) */
        run_sum = run_sum * rescale + red[0];
        if (j < hd) {
            float part = 0.0f;
            for (int i = 0; i < width; i++) part += pr[i] * __bfloat162float(vb[(size_t)(t0 + i) * ld_kv + j]);
            acc = acc * rescale + part;
        }
        run_max = new_max;
        __syncthreads(); /* pr and red are rewritten by the next chunk */
    }
    if (j < hd) out[(size_t)b * NH * hd + (size_t)h * hd + j] = __float2bfloat16(acc / run_sum);
}

int decode_attention(bf16 *out, const bf16 *q, int ld_q, const bf16 *kc, const bf16 *vc, int ld_kv, int B, int Tmax,
                     int n, int NH, int NKV, int hd) {
    if (hd > DECODE_THREADS) return vrl_error("fast decode: head_dim %d is over %d", hd, DECODE_THREADS);
    LAUNCH(decode_attention_kernel, dim3(NH, B), DECODE_THREADS, 0, ops_stream)(out, q, ld_q, kc, vc, ld_kv, Tmax, n,
                                                                                NH, NKV, hd, 1.0f / sqrtf((float)hd));
    LAUNCH_CHECK();
    return 0;
}

/* ------------------------------------------------------------------ the cache */

typedef struct {
    FastModel *m;          /* the generating model (its weights), not owned */
    FastModel *dm;         /* the one-position model: B rows, dm->params16 = m->params16 */
    int B, Tmax, pos;
    bf16 *kc[FAST_MAX_LAYERS], *vc[FAST_MAX_LAYERS]; /* [B,Tmax,kvC] (GPT-2: d): post-RoPE keys where the
                                                      * layer has W_k, every layer's value input */
    bf16 *vcur[FAST_MAX_LAYERS]; /* [B,kvC] this token's raw V_l where some layer reads it, else NULL */
    int key_src[FAST_MAX_LAYERS]; /* the layer whose keys layer l attends with (ck's one source) */
    float *cos_t, *sin_t;  /* [Tmax, hd/2] RoPE tables, as model.cu's */
    bf16 *q, *k, *vin;     /* [B,qC], [B,kvC], [B,kvC] */
    bf16 *atty, *u;        /* [B,qC] attention output, with the corrections */
    bf16 *h_logits;        /* host [B,Vp] */
} FastKv;

#define W16(off) (kv->dm->params16 + (off))
#define TRY(call) \
    if ((call) < 0) return -1

static void kv_release(FastKv *kv) {
    if (!kv) return;
    for (int l = 0; l < FAST_MAX_LAYERS; l++) {
        cudaFree(kv->kc[l]);
        cudaFree(kv->vc[l]);
        cudaFree(kv->vcur[l]);
    }
    void *dev[] = {kv->cos_t, kv->sin_t, kv->q, kv->k, kv->vin, kv->atty, kv->u};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) cudaFree(dev[i]);
    if (kv->dm) {
        kv->dm->params16 = NULL; /* the generating model's: not the decoder's to free (its arena is) */
        fast_model_destroy(kv->dm);
    }
    free(kv->h_logits);
    free(kv);
}

extern "C" void fast_kv_free(void *vkv) { kv_release((FastKv *)vkv); }

/* n elements of T on the device, zeroed; 0 or -1. */
template <typename T> static int dev_alloc(T **p, size_t n) {
    if (cudaMalloc((void **)p, (n ? n : 1) * sizeof(T)) != cudaSuccess) {
        *p = NULL;
        return vrl_error("fast decode: out of device memory");
    }
    CUDA_CHECK(cudaMemset(*p, 0, (n ? n : 1) * sizeof(T)));
    return 0;
}

static int kv_setup(FastKv *kv, const ModelSpec *spec) {
    FastModel *m = kv->m, *dm;
    const int B = kv->B, L = m->L, Tmax = kv->Tmax;
    if (!(dm = kv->dm = fast_model_create_decoder(spec, B, 1))) return -1;
    dm->params16 = m->params16; /* the weights, read in place (its own copy is never filled) */
    const size_t BT = (size_t)B * Tmax;
    if (m->gpt2) { /* every layer's K and V rows of the packed projection */
        for (int l = 0; l < L; l++) {
            TRY(dev_alloc(&kv->kc[l], BT * m->d));
            TRY(dev_alloc(&kv->vc[l], BT * m->d));
        }
        return 0;
    }
    const ValuePlan *p = m->plan;
    const int qC = m->qC, kvC = m->kvC, h2 = m->hd / 2;
    for (int l = 0; l < L; l++) {
        kv->key_src[l] = -1;
        for (int i = 0; i <= l; i++)
            if (p->ck[(size_t)l * L + i] != 0) kv->key_src[l] = i; /* one source of 1 (fast_decode_missing) */
        if (p->has_k[l]) TRY(dev_alloc(&kv->kc[l], BT * kvC));
        TRY(dev_alloc(&kv->vc[l], BT * kvC));
        if (p->has_v[l]) TRY(dev_alloc(&kv->vcur[l], (size_t)B * kvC));
    }
    TRY(dev_alloc(&kv->q, (size_t)B * qC));
    TRY(dev_alloc(&kv->k, (size_t)B * kvC));
    TRY(dev_alloc(&kv->vin, (size_t)B * kvC));
    TRY(dev_alloc(&kv->atty, (size_t)B * qC));
    TRY(dev_alloc(&kv->u, (size_t)B * qC));
    TRY(dev_alloc(&kv->cos_t, (size_t)Tmax * h2));
    TRY(dev_alloc(&kv->sin_t, (size_t)Tmax * h2));
    /* RoPE tables in double, rounded once (model.cu's, ref/ops.c's rope_tables) */
    float *ct = (float *)malloc((size_t)Tmax * h2 * sizeof(float)), *st = (float *)malloc((size_t)Tmax * h2 * sizeof(float));
    if (!ct || !st) {
        free(ct), free(st);
        return vrl_error("fast decode: out of host memory");
    }
    for (int t = 0; t < Tmax; t++)
        for (int i = 0; i < h2; i++) {
            const double a = t * pow(m->c.rope_theta, -2.0 * i / m->hd);
            ct[t * h2 + i] = (float)cos(a);
            st[t * h2 + i] = (float)sin(a);
        }
    const cudaError_t e1 = cudaMemcpy(kv->cos_t, ct, (size_t)Tmax * h2 * sizeof(float), cudaMemcpyHostToDevice);
    const cudaError_t e2 = cudaMemcpy(kv->sin_t, st, (size_t)Tmax * h2 * sizeof(float), cudaMemcpyHostToDevice);
    free(ct), free(st);
    if (e1 != cudaSuccess || e2 != cudaSuccess) return vrl_error("fast decode: cannot upload the RoPE tables");
    return 0;
}

extern "C" void *fast_kv_create(void *vm, int batch, int max_seq) {
    FastModel *m = (FastModel *)vm;
    if (batch < 1 || max_seq < 1 || max_seq > m->c.max_seq) {
        vrl_error("decode: batch must be >= 1 and max_seq in [1, %d] (got %d, %d)", m->c.max_seq, batch, max_seq);
        return NULL;
    }
    if (m->L > FAST_MAX_LAYERS) {
        vrl_error("decode: at most %d layers", FAST_MAX_LAYERS);
        return NULL;
    }
    FastKv *kv = (FastKv *)calloc(1, sizeof *kv);
    if (!kv) {
        vrl_error("decode: out of memory");
        return NULL;
    }
    kv->m = m, kv->B = batch, kv->Tmax = max_seq;
    kv->h_logits = (bf16 *)malloc((size_t)batch * m->Vp * sizeof(bf16));
    if (!kv->h_logits || kv_setup(kv, m->spec) < 0) {
        if (!kv->h_logits) vrl_error("decode: out of memory");
        kv_release(kv);
        return NULL;
    }
    return kv;
}

/* Layer l's attention sublayer for the token at position p, from dm->acts[l] (the stream set its
 * input) to acts[l].h. */
static int attention_step(FastKv *kv, int l, int p) {
    FastModel *m = kv->m, *dm = kv->dm;
    const ValuePlan *pl = m->plan;
    const LayerOffsets *o = &m->lo[l];
    FastActs *a = &dm->acts[l];
    Blas *bl = &dm->blas;
    const int B = kv->B, d = m->d, qC = m->qC, kvC = m->kvC, L = m->L, h2 = m->hd / 2;
    const float *cp = kv->cos_t + (size_t)p * h2, *sp = kv->sin_t + (size_t)p * h2;
    TRY(rmsnorm_forward(a->ln1, a->ln1_rstd, a->x_in, W16(o->ln1), B, d, (float)m->c.norm_eps));
    TRY(matmul_forward(bl, kv->q, a->ln1, W16(o->wq), NULL, B, d, qC));
    TRY(rope_forward(kv->q, qC, cp, sp, B, 1, m->NH, m->hd));
    if (pl->has_k[l]) {
        TRY(matmul_forward(bl, kv->k, a->ln1, W16(o->wk), NULL, B, d, kvC));
        TRY(rope_forward(kv->k, kvC, cp, sp, B, 1, m->NKV, m->hd));
        TRY(decode_cache_append(kv->kc[l], kv->k, kvC, B, 1, kv->Tmax, kvC, p));
    }
    if (pl->has_v[l]) TRY(matmul_forward(bl, kv->vcur[l], a->ln1, W16(o->wv), NULL, B, d, kvC));
    /* v_in = Σ_i cv·V_i over this token's rows, trainable entries read from the weights */
    MixArgs mix;
    mix.n = 0;
    for (int i = 0; i <= l; i++) {
        int slot = -1;
        for (int j = 0; j < pl->n_train[l]; j++)
            if (pl->train_src[(size_t)l * L + j] == i) slot = j;
        const double c = pl->cv[(size_t)l * L + i];
        if (c == 0 && slot < 0) continue;
        mix.src[mix.n] = kv->vcur[i], mix.dsrc[mix.n] = NULL, mix.coef[mix.n] = (float)c;
        mix.param[mix.n] = slot >= 0 ? W16(o->lam) + slot : NULL;
        mix.n++;
    }
    TRY(mix_forward(kv->vin, &mix, (size_t)B * kvC));
    TRY(decode_cache_append(kv->vc[l], kv->vin, kvC, B, 1, kv->Tmax, kvC, p));
    const int ks = kv->key_src[l];
    TRY(decode_attention(kv->atty, kv->q, qC, kv->kc[ks], kv->vc[l], kvC, B, kv->Tmax, p + 1, m->NH, m->NKV, m->hd));
    const bf16 *u = kv->atty;
    if (m->has_corr[l]) { /* U = atty + repeat_kv(Σ ce·V_i) */
        mix.n = 0;
        for (int i = 0; i <= l; i++) {
            const double c = pl->ce[(size_t)l * L + i];
            if (c == 0) continue;
            mix.src[mix.n] = kv->vcur[i], mix.dsrc[mix.n] = NULL, mix.coef[mix.n] = (float)c, mix.param[mix.n] = NULL;
            mix.n++;
        }
        TRY(correction_forward(kv->u, kv->atty, &mix, B, m->NH, m->NKV, m->hd));
        u = kv->u;
    }
    return matmul_forward(bl, a->h, u, W16(o->wo), a->x_res, B, qC, d); /* h = x + W_o·U */
}

/* The llama trunk for one position: embedding, every layer, the final norm into dm->lnf. */
static int llama_step(FastKv *kv, int p) {
    FastModel *m = kv->m, *dm = kv->dm;
    const int B = kv->B, d = m->d, F = m->F;
    const float eps = (float)m->c.norm_eps;
    TRY(embedding_forward(dm->emb, dm->tokens, W16(m->o_wte), B, d));
    for (int l = 0; l < m->L; l++) {
        const LayerOffsets *o = &m->lo[l];
        FastActs *a = &dm->acts[l];
        TRY(stream_forward(dm, 2 * l, NULL));
        TRY(attention_step(kv, l, p));
        TRY(stream_forward(dm, 2 * l + 1, NULL));
        TRY(rmsnorm_forward(a->ln2, a->ln2_rstd, a->h_in, W16(o->ln2), B, d, eps));
        TRY(matmul_forward(&dm->blas, a->gu, a->ln2, W16(o->wgate), NULL, B, d, 2 * F)); /* [W_gate; W_up] */
        TRY(swiglu_forward(a->swi, a->gu, B, F));
        TRY(matmul_forward(&dm->blas, a->out, a->swi, W16(o->wdown), a->h_res, B, F, d));
    }
    const bf16 *x = NULL;
    TRY(stream_forward(dm, 2 * m->L, &x));
    return rmsnorm_forward(dm->lnf, dm->lnf_rstd, x, W16(m->o_lnf), B, d, eps);
}

/* One position of every sequence: tokens [B] in, logits [B,V] fp32 out. */
static int decode_step(FastKv *kv, const int32_t *tokens, float *logits) {
    FastModel *m = kv->m, *dm = kv->dm;
    const int B = kv->B, V = m->V, Vp = m->Vp;
    ops_use_stream(dm->stream);
    CUDA_CHECK(cudaMemcpyAsync(dm->tokens, tokens, (size_t)B * sizeof(int32_t), cudaMemcpyHostToDevice, dm->stream));
    TRY(m->gpt2 ? gpt2_decode_forward(dm, kv->kc, kv->vc, kv->Tmax, kv->pos) : llama_step(kv, kv->pos));
    TRY(matmul_forward_ld(&dm->blas, dm->logits, Vp, dm->lnf, W16(m->o_lm_head), B, m->d, Vp));
    CUDA_CHECK(cudaMemcpyAsync(kv->h_logits, dm->logits, (size_t)B * Vp * sizeof(bf16), cudaMemcpyDeviceToHost,
                               dm->stream));
    CUDA_CHECK(cudaStreamSynchronize(dm->stream));
    for (int b = 0; b < B; b++)
        for (int v = 0; v < V; v++) logits[(size_t)b * V + v] = __bfloat162float(kv->h_logits[(size_t)b * Vp + v]);
    kv->pos++;
    return 0;
}

/* The prompt, n >= 2 positions of every sequence into an empty cache, as one forward: a model of
 * [B, n] (fast_model_create_decoder, the generating model's weights) runs the trunk with the
 * model's attention kernels (fast_model_trunk); its keys and value inputs become the cache's
 * first n rows and its logits the output [B,n,V]. */
static int prefill(FastKv *kv, const int32_t *tokens, int n, float *logits) {
    FastModel *m = kv->m, *pm = fast_model_create_decoder(m->spec, kv->B, n);
    if (!pm) return -1;
    pm->params16 = m->params16;
    int rc = fast_model_trunk(pm, tokens);
    for (int l = 0; l < m->L && rc == 0 && !m->gpt2; l++) {
        const FastActs *a = &pm->acts[l];
        const AttnLd ld = fast_attn_ld(pm, l); /* q, k, v_in as attention read them */
        if (m->plan->has_k[l]) rc = decode_cache_append(kv->kc[l], a->k, ld.k, kv->B, n, kv->Tmax, m->kvC, 0);
        if (rc == 0) rc = decode_cache_append(kv->vc[l], a->vin, ld.v, kv->B, n, kv->Tmax, m->kvC, 0);
    }
    if (rc == 0 && m->gpt2) rc = gpt2_decode_prefill(pm, kv->kc, kv->vc, kv->Tmax);
    if (rc == 0) rc = fast_model_get_logits(pm, logits); /* waits for the stream */
    pm->params16 = NULL;
    fast_model_destroy(pm);
    if (rc == 0) kv->pos = n;
    return rc;
}

extern "C" int fast_decode(void *vm, void *vkv, const int32_t *tokens, int n_new, float *logits) {
    FastKv *kv = (FastKv *)vkv;
    (void)vm; /* the cache holds the model */
    const int B = kv->B, V = kv->m->V;
    if (backend_decode_check(tokens, B, n_new, kv->pos, kv->Tmax, V) < 0) return -1;
    if (kv->pos == 0 && n_new >= 2) return prefill(kv, tokens, n_new, logits);
    int32_t *col = (int32_t *)malloc((size_t)B * sizeof *col);    /* [B] position j of every sequence */
    float *out = (float *)malloc((size_t)B * V * sizeof *out);    /* [B,V] */
    int rc = col && out ? 0 : vrl_error("decode: out of memory");
    for (int j = 0; j < n_new && rc == 0; j++) {
        for (int b = 0; b < B; b++) col[b] = tokens[(size_t)b * n_new + j];
        rc = decode_step(kv, col, out);
        for (int b = 0; b < B && rc == 0; b++)
            memcpy(logits + ((size_t)b * n_new + j) * V, out + (size_t)b * V, (size_t)V * sizeof *out);
    }
    free(col);
    free(out);
    return rc;
}

FAST_NS_END
