/* model.cu: the LLaMA of formulas.md §1 on CUDA, forward and backward, the twin of
 * ref/model.c (same sequence of ops, same names), in bf16 with fp32 statistics.
 *
 *   x_0 = embed(tokens)
 *   layer l:  Q_l, K_l, V_l = W_{q,k,v}·RMSNorm(x)          (raw; a projection the plan drops is absent)
 *             h  = x + W_o · (Attn(RoPE(Σ_i cq·Q_i), RoPE(Σ_i ck·K_i), Σ_i cv·V_i) + repeat_kv(Σ_i ce·V_i))
 *             x' = h + W_down · (silu(W_gate·RMSNorm(h)) ⊙ W_up·RMSNorm(h))
 *   (the mixes are the spec's ValuePlan rows, formulas.md §4, as in ref/value_path.c; cv's
 *   trainable entries are the layer's v_residual_lambda parameters; a row that is exactly one
 *   projection costs nothing: the mixed tensor is that one's buffer (baseline, SVFormer); a
 *   constant own term rides on the W_v GEMM's alpha/beta (ResFormer); adjacent W_q, W_k (W_v)
 *   whose outputs only this layer's attention reads are one GEMM, q/k/v strided views of it)
 *   (W_gate and W_up are adjacent [F,d] blocks of the table: one [2F,d] GEMM, gate|up)
 *   logits = lm_head · RMSNorm(x_L) in bf16, by chunks of rows (default: the whole batch),
 *            each chunk's cross-entropy reading it once and writing its gradient over it
 *
 * Precision: parameters are read as bf16 (a copy of the fp32 master weights), activations
 * are bf16, GEMMs accumulate in fp32 (cuBLASLt), RMSNorm statistics, softmax and the loss
 * are fp32. Gradients of parameters, of the residual stream and of the values shared
 * across layers are fp32; gradients that feed a GEMM get a bf16 copy.
 *
 * Memory: one cudaMalloc arena, laid out like ref/model.c's (count pass, then carve).
 *
 * The GPT-2 baseline (ref/gpt2.c) is fast/gpt2.cu's: a FastModel with m->gpt2 set, created here
 * up to its own tensors and layout, whose trunk and backward take the place of this file's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fast/attention_wgmma.cuh"
#include "fast/gemm_wgmma.cuh"
#include "fast/gpt2.cuh"
#include "fast/model.cuh"
#include "fast/attention_mix.cuh"
#include "fast/stream.cuh"
#include "fast/zero.cuh"
#if VRL_CUDA_CPU
#include "fast/cuda_cpu/check.h" /* guard zones and scratch poison (check build) */
#include "fast/cuda_cpu/guard.h" /* whether the arena has guard zones (check, sanitizer, canary) */
#endif

extern "C" {
#include "fast/fast.h"
#include "fast/model.h"
#include "common/base/procgroup.h"
#if VRL_HAVE_NCCL
#include "fast/zero.h"
#endif
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
#include "fast/attention_cudnn.h"
#endif
}

FAST_NS_BEGIN

#if !VRL_HAVE_NCCL
/* Without NCCL there is no m->zero: the hooks of zero.cuh do nothing. */
int zero_wait_params(FastModel *, int) { return 0; }
int zero_grads_ready(FastModel *, int) { return 0; }
int zero_backward_end(FastModel *) { return 0; }
#endif

/* ------------------------------------------------------------------ device check */

extern "C" int fast_device_check(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error */
        return vrl_error("no CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
    }
    if (n == 0) return vrl_error("no CUDA device (cudaGetDeviceCount: 0 devices)");
    return 0;
}

/* ------------------------------------------------------------------ memory layout */

/* Carve n elements of `size` bytes at *off (256-byte aligned, for 16-byte vector loads
 * and cuBLASLt); with base == NULL it only counts. The CPU layer's check build, sanitizer
 * build and canary mode leave a guard zone after each tensor, from its end to 256 bytes past
 * the next 256-byte boundary, where an access is an error (docs/design/cuda-on-cpu.md "Guard zones").
 * The nvcc build's layout has none. */
void *fast_carve(char *base, size_t *off, size_t n, size_t size) {
    size_t at = (*off + 255) & ~(size_t)255;
    *off = at + n * size;
#if VRL_CUDA_CPU
    if (cuda_cpu::guard::zones_on()) {
        const size_t zone_end = ((*off + 255) & ~(size_t)255) + 256; /* aligned: ASan poisons it whole */
        if (base) cuda_cpu::guard_zone(base + *off, zone_end - *off);
        *off = zone_end;
    }
#endif
    return base ? base + at : NULL;
}

/* The CPU layer's check build: scratch must never carry values from an earlier micro-batch
 * (refilled with NaN and shadowed as never written; nothing elsewhere). */
static void poison_scratch(FastModel *m) {
#if VRL_CUDA_CPU
    cuda_cpu::poison((char *)m->arena + m->arena_bytes - m->bytes_scratch, m->bytes_scratch);
#else
    (void)m;
#endif
}
#define CARVE(ptr, n) ((ptr) = (__typeof__(ptr))fast_carve(base, &off, (size_t)(n), sizeof *(ptr)))

static int in_place(const SourceFlags *f, int l);
static int uses_dv_own(const FastModel *m, int l);
static void fusion_flags(FastModel *m);

size_t layout_optimizer(FastModel *m, char *base) {
    const size_t P = m->t->total;
    size_t off = 0, mark = 0;
    CARVE(m->params32, P);
    CARVE(m->params16, P);
    m->bytes_params = off - mark, mark = off;
    CARVE(m->grads, P);
    m->bytes_grads = off - mark, mark = off;
    CARVE(m->exp_avg, P);
    CARVE(m->exp_avg_sq, P);
    CARVE(m->norm_words, (ADAMW_NORM_BLOCKS + 1) * EXACT_SUMSQ_WORDS);
    CARVE(m->norm_state, 2);
    CARVE(m->loss_sum, 1);
    CARVE(m->micro_loss, FAST_MAX_MICRO);
    CARVE(m->micro_count, 1);
    CARVE(m->adamw_scalars, 1);
    CARVE(m->gaps, 2 * ((size_t)m->t->n + 2));
    m->bytes_opt = off - mark;
    return off;
}

size_t layout_upload(FastModel *m, char *base, size_t off) {
    const size_t N = m->N;
    CARVE(m->tokens, N);
    CARVE(m->targets, N);
    CARVE(m->emb_uniq, N);
    CARVE(m->emb_offsets, N + 1);
    CARVE(m->emb_pos, N);
    CARVE(m->emb_count, 1);
    return off;
}

size_t layout_head(FastModel *m, char *base, size_t off) {
    const size_t N = m->N;
    CARVE(m->lnf, N * m->d);
    CARVE(m->lnf_rstd, N);
    CARVE(m->losses, N);
    CARVE(m->score_targets, N);
    CARVE(m->score_lp, N);
    CARVE(m->score_greedy, N);
    return off;
}

size_t layout_head_scratch(FastModel *m, char *base, size_t off) {
    const size_t N = m->N, d = m->d;
    CARVE(m->logits, (size_t)m->ce_rows * m->Vp);
    CARVE(m->dres32, N * d);
    CARVE(m->dres16, N * d);
    if (m->gpt2) CARVE(m->dln32, N * d); /* GPT-2: conv1d dX GEMMs and layernorm backward in fp32 */
    else CARVE(m->dln16, N * d);
    return off;
}

static size_t layout(FastModel *m, char *base) {
    const size_t N = m->N, d = m->d, F = m->F, qC = m->qC, kvC = m->kvC;
    size_t off = layout_optimizer(m, base), mark = off; /* parameters and optimizer */
    /* activations kept from the forward to the backward */
    off = layout_upload(m, base, off);
    CARVE(m->cos_t, (size_t)m->T * (m->hd / 2));
    CARVE(m->sin_t, (size_t)m->T * (m->hd / 2));
    CARVE(m->emb, N * d);
    bf16 *ln1_shared = NULL, *ln2_shared = NULL, *swi_shared = NULL;
    if (m->recompute) {
        CARVE(ln1_shared, N * d);
        CARVE(ln2_shared, N * d);
        CARVE(swi_shared, N * F);
    }
    for (int l = 0; l < m->L; l++) {
        FastActs dummy, *a = base ? &m->acts[l] : &dummy;
        memset(&dummy, 0, sizeof dummy);
        if (m->recompute) a->ln1 = ln1_shared, a->ln2 = ln2_shared, a->swi = swi_shared;
        else {
            CARVE(a->ln1, N * d);
            CARVE(a->ln2, N * d);
            CARVE(a->swi, N * F);
        }
        CARVE(a->ln1_rstd, N);
        a->qraw = a->kraw = a->v = NULL;
        if (m->qf.needed[l] && !in_place(&m->qf, l)) CARVE(a->qraw, N * qC);
        if (m->kf.needed[l] && !in_place(&m->kf, l)) CARVE(a->kraw, N * kvC);
        const size_t S = m->fuse_cols[l];
        if (S) { /* one [N,S] buffer, each row q | k (| v), the fused GEMM's output */
            CARVE(a->q, N * S);
            a->k = base ? a->q + qC : NULL;
            if (S == qC + 2 * kvC) a->v = base ? a->k + kvC : NULL;
        } else {
            CARVE(a->q, N * qC);
            CARVE(a->k, N * kvC);
        }
        if (m->vf.needed[l] && m->vin_kind[l] != VIN_FOLD && S != qC + 2 * kvC) CARVE(a->v, N * kvC);
        if (m->vin_kind[l] == VIN_ALIAS) /* V_j, j <= l: already carved (the count pass reads no pointer) */
            a->vin = m->vin_src[l] == l ? a->v : base ? m->acts[m->vin_src[l]].v : NULL;
        else CARVE(a->vin, N * kvC);
        CARVE(a->atty, N * qC);
        a->u = a->atty;
        if (m->has_corr[l]) CARVE(a->u, N * qC);
        CARVE(a->lse, (size_t)m->B * m->NH * m->T);
        CARVE(a->h, N * d);
        CARVE(a->ln2_rstd, N);
        CARVE(a->gu, N * 2 * F);
        CARVE(a->out, N * d);
    }
    off = layout_head(m, base, off);
    m->bytes_acts = off - mark, mark = off;
    /* backward and cross-entropy scratch */
    off = layout_head_scratch(m, base, off);
    CARVE(m->dswi, N * F);
    CARVE(m->dgu, N * 2 * F);
    CARVE(m->datty, N * qC);
    /* the value path's gradients, only where some layer's kind needs them (value_flags) */
    int need_dvin = 0, need_dv16 = 0, need_dv_own = 0;
    for (int l = 0; l < m->L; l++) {
        need_dvin |= m->vin_kind[l] == VIN_MIX || (m->vin_kind[l] == VIN_FOLD && m->vin_src[l] < 0);
        need_dv16 |= m->vf.needed[l];
        need_dv_own |= uses_dv_own(m, l);
    }
    m->dvin = m->dv_own = NULL;
    CARVE(m->dqkv, N * (qC + (need_dv16 ? 2 : 1) * kvC)); /* an unfused layer's dq, dk, dv16 one after the other */
    m->dq = m->dqkv, m->dk = base ? m->dqkv + N * qC : NULL;
    m->dv16 = base && need_dv16 ? m->dk + N * kvC : NULL;
    if (need_dvin) CARVE(m->dvin, N * kvC);
    if (need_dv_own) CARVE(m->dv_own, N * kvC);
    int q_mixing = 0, k_mixing = 0;
    for (int l = 0; l < m->L; l++) {
        float *dummy = NULL, **p = base ? &m->dv_keep[l] : &dummy;
        *p = NULL;
        if (m->vf.later[l]) CARVE(*p, N * kvC);
        m->dq_keep[l] = m->dk_keep[l] = NULL;
        if (m->qf.later[l]) CARVE(m->dq_keep[l], N * qC);
        if (m->kf.later[l]) CARVE(m->dk_keep[l], N * kvC);
        q_mixing |= !in_place(&m->qf, l);
        k_mixing |= !in_place(&m->kf, l);
    }
    m->dq_own = m->dk_own = NULL;
    if (q_mixing) CARVE(m->dq_own, N * qC);
    if (k_mixing) CARVE(m->dk_own, N * kvC);
    CARVE(m->lam_partial, (size_t)m->L * LAMBDA_BLOCKS);
    CARVE(m->attD, (size_t)m->B * m->NH * m->T);
    CARVE(m->norm_scratch, (size_t)cdiv(N, RMSNORM_WEIGHT_ROWS) * d);
    m->bytes_scratch = off - mark;
    return off;
}
#undef CARVE

int fast_check_head_slot(const FastModel *m) {
    for (int k = 0; k < m->t->n; k++)
        if (m->t->p[k].offset == m->o_lm_head && m->t->p[k].slot < (size_t)m->Vp * m->d)
            return vrl_error("fast model: lm_head's slot holds %zu elements, the padded vocabulary needs %zu",
                             m->t->p[k].slot, (size_t)m->Vp * m->d);
    return 0;
}

/* Offsets from the spec's layout (common/model/layout.h). */
static int bind_tensors(FastModel *m, const ModelLayout *lay) {
    m->o_wte = lay->embed.offset, m->o_lnf = lay->norm.offset, m->o_lm_head = lay->head.offset;
    if (fast_check_head_slot(m) < 0) return -1;
    for (int l = 0; l < m->L; l++) {
        const LayerLayout *ll = &lay->layer[l];
        LayerOffsets *o = &m->lo[l];
        /* a projection the value plan drops (SVFormer's W_v, CLA's W_k and W_v, shared Q/K):
         * (size_t)-1, checked in create against the plan */
#define OPTIONAL(slot) ((slot).numel ? (slot).offset : (size_t)-1)
        o->ln1 = ll->ln1.offset, o->wq = OPTIONAL(ll->wq), o->wk = OPTIONAL(ll->wk), o->wv = OPTIONAL(ll->wv);
        o->lam = OPTIONAL(ll->lam);
#undef OPTIONAL
        o->wo = ll->wo.offset, o->ln2 = ll->ln2.offset;
        o->wgate = ll->wgate.offset, o->wup = ll->wup.offset, o->wdown = ll->wdown.offset;
    }
    return 0;
}

/* Slot of layer l's trainable coefficient for source i in its v_residual_lambda, or -1. */
static int trained_slot(const ValuePlan *p, int l, int i) {
    for (int j = 0; j < p->n_train[l]; j++)
        if (p->train_src[(size_t)l * p->L + j] == i) return j;
    return -1;
}

/* The flags of one table (cq, ck, or cv with ce and the trainable entries). */
static void source_flags(SourceFlags *f, const ValuePlan *p, const double *tab, const double *corr, int trainable) {
    const int L = p->L;
#define READS(n, i) \
    (tab[(size_t)(n) * L + (i)] != 0 || (corr && corr[(size_t)(n) * L + (i)] != 0) || (trainable && trained_slot(p, n, i) >= 0))
    for (int i = 0; i < L; i++) {
        f->needed[i] = f->later[i] = 0;
        for (int n = i; n < L; n++)
            if (READS(n, i)) {
                f->needed[i] = 1;
                if (n > i) f->later[i] = 1;
            }
        int ident = tab[(size_t)i * L + i] == 1.0 && !(trainable && p->n_train[i]);
        for (int j = 0; j < i; j++) ident = ident && tab[(size_t)i * L + j] == 0;
        f->identity[i] = ident;
    }
#undef READS
}

/* Layer l's Q or K is made in place: only layer l reads its raw projection, unmixed, so the
 * GEMM writes the queries (keys) directly and RoPE rotates them there. */
static int in_place(const SourceFlags *f, int l) { return f->identity[l] && !f->later[l]; }

static void value_flags(FastModel *m) {
    const ValuePlan *p = m->plan;
    const int L = m->L;
    source_flags(&m->qf, p, p->cq, NULL, 0);
    source_flags(&m->kf, p, p->ck, NULL, 0);
    source_flags(&m->vf, p, p->cv, p->ce, 1);
    for (int l = 0; l < L; l++) /* Eq. 2 reads layer m's raw V_m: kept, its gradient accumulated */
        if (p->cross[l] >= 0) m->vf.needed[p->cross[l]] = m->vf.later[p->cross[l]] = 1;
    for (int l = 0; l < L; l++) {
        m->has_corr[l] = 0;
        for (int i = 0; i <= l; i++) m->has_corr[l] |= p->ce[(size_t)l * L + i] != 0;
    }
    /* each row's value input: one source with a constant 1 is an alias; an own term that only
     * this row's attention reads, with constants, rides on the W_v GEMM; the rest is mixed */
    for (int l = 0; l < L; l++) {
        const double *row = p->cv + (size_t)l * L;
        int n_src = 0, j = -1;
        for (int i = 0; i <= l; i++)
            if (row[i] != 0) n_src++, j = i;
        const int only_here = m->vf.needed[l] && !m->vf.later[l] && p->ce[(size_t)l * L + l] == 0;
        m->vin_src[l] = -1, m->dv_direct[l] = 0;
        if (p->n_train[l] == 0 && n_src == 1 && row[j] == 1.0) {
            m->vin_kind[l] = VIN_ALIAS, m->vin_src[l] = j;
            m->dv_direct[l] = j == l && only_here;
        } else if (p->n_train[l] == 0 && row[l] != 0 && only_here) {
            m->vin_kind[l] = VIN_FOLD;
            for (int i = 0; i < l && n_src == 2; i++) /* the one other source (ResFormer: V_1) */
                if (row[i] != 0) m->vin_src[l] = i;
        } else m->vin_kind[l] = VIN_MIX;
    }
    fusion_flags(m);
}

/* Layer l's projections as one GEMM (fuse_cols): where its Q and K are made in place (only its
 * attention reads them) and their weights are adjacent in the table, and V too where its whole
 * gradient comes straight from attention (dv_direct) and W_v follows W_k. */
static void fusion_flags(FastModel *m) {
    const size_t qw = (size_t)m->qC * m->d, kvw = (size_t)m->kvC * m->d;
    for (int l = 0; l < m->L; l++) {
        const LayerOffsets *o = &m->lo[l];
        m->fuse_cols[l] = 0;
        if (!in_place(&m->qf, l) || !in_place(&m->kf, l) || o->wk != o->wq + qw) continue;
        m->fuse_cols[l] = m->qC + m->kvC;
        if (m->dv_direct[l] && o->wv == o->wk + kvw) m->fuse_cols[l] += m->kvC;
    }
}

/* Layer l's V is a view into its fused projection. */
static int v_fused(const FastModel *m, int l) { return m->fuse_cols[l] == m->qC + 2 * m->kvC; }

/* V_l's gradient accumulates in the shared dv_own: only layer l reads V_l, through a mix or a
 * correction (not the whole gradient straight from attention, not folded into the GEMM). */
static int uses_dv_own(const FastModel *m, int l) {
    return m->vf.needed[l] && !m->vf.later[l] && m->vin_kind[l] != VIN_FOLD && !m->dv_direct[l];
}

static void mib_line(const char *what, size_t bytes) {
    fprintf(stderr, "vrl fast:   %-12s %10.1f MiB\n", what, bytes / 1048576.0);
}

static void memory_report(const FastModel *m) {
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fprintf(stderr, "vrl fast: memory for %zu parameters, batch %d x seq %d%s, logits chunk %d rows x %d (vocabulary %d padded)\n",
            m->t->total, m->B, m->T, m->recompute ? ", recomputing ln1/ln2/swiglu" : "", m->ce_rows, m->Vp, m->V);
    mib_line("parameters", m->bytes_params);
    mib_line("gradients", m->bytes_grads);
    mib_line("optimizer", m->bytes_opt);
    mib_line("activations", m->bytes_acts);
    mib_line("scratch", m->bytes_scratch);
    const size_t mix_b = m->mix ? m->mix->bytes : 0, amix_b = m->amix ? m->amix->bytes : 0; /* none for GPT-2 */
    if (mix_b) mib_line("stream", mix_b); /* stream.cuh: DenseFormer, AttnRes, HC, mHC, hidden residual */
    if (amix_b) mib_line("attn mixes", amix_b); /* attention_mix.cuh: ca mixing, Eq. 2 */
    mib_line("cuBLASLt", m->blas.workspace_bytes);
    fprintf(stderr, "vrl fast:   peak estimate %.2f GiB of %.2f GiB free on the device\n",
            (m->arena_bytes + mix_b + amix_b + m->blas.workspace_bytes) / 1073741824.0, free_b / 1073741824.0);
}

/* ------------------------------------------------------------------ create / destroy */

/* The bf16 logits chunk's cap: 2 GiB holds a whole batch of 21,345 rows at V = 50304 (468M at
 * B = 8, T = 2048 is 16,384: one lm_head GEMM and one cross-entropy launch per micro-batch). */
#define CE_CHUNK_BYTES ((size_t)2 << 30)

extern "C" void fast_model_destroy(void *vm) {
    FastModel *m = (FastModel *)vm;
    if (!m) return;
#if VRL_HAVE_NCCL
    fast_shard_close(m);
#endif
    if (m->stream) cudaStreamSynchronize(m->stream);
    if (ops_stream == m->stream) ops_use_stream(0); /* no launcher may issue on a destroyed stream */
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
    cudnn_attention_destroy((CudnnAttention *)m->cudnn);
#endif
    if (m->micro_graph.exec) cudaGraphExecDestroy(m->micro_graph.exec);
    if (m->micro_graph_first.exec) cudaGraphExecDestroy(m->micro_graph_first.exec);
    if (m->update_graph.exec) cudaGraphExecDestroy(m->update_graph.exec);
    if (m->uploaded) cudaEventDestroy(m->uploaded);
    if (m->stream) cudaStreamDestroy(m->stream);
    if (m->arena) cudaFree(m->arena);
    stream_destroy(m);
    amix_destroy(m);
    blas_destroy(&m->blas);
    free(m->lo);
    free(m->acts);
    free(m->dv_keep);
    free(m->dw_off);
    free(m->dw_len);
    free(m->dw_known);
    free(m->gpt2);
    cudaFreeHost(m->h_tokens); /* pinned: one block for every host mirror the copies read */
    cudaFreeHost(m->h_read);
    free(m->h_count);
    free(m->h_score_lp);
    free(m->h_score_greedy);
    free(m);
}

/* A model for [batch, seq]; decoder: the one-position model of fast/decode.cu (seq 1 allowed, no
 * memory report). */
static FastModel *create_model(const ModelSpec *spec, int batch, int seq, int decoder) {
    const ModelConfig *c = &spec->config;
    const ParamTable *t = &spec->table;
    char why[512];
    if (!(fast_capabilities(spec, why, sizeof why) & BACKEND_CAN_TRAIN)) {
        vrl_error("fast model: %s", why);
        return NULL;
    }
    if (batch < 1 || seq < (decoder ? 1 : 2) || seq > c->max_seq) {
        vrl_error("fast model: need batch >= 1 and seq in [2, %d] (got %d x %d)", c->max_seq, batch, seq);
        return NULL;
    }
    const int hd = config_head_dim(c);
    if ((size_t)batch * seq > (size_t)1 << 30) {
        vrl_error("fast model: batch x seq too large");
        return NULL;
    }
    if ((c->vocab_size + FAST_VOCAB_PAD - 1) / FAST_VOCAB_PAD * FAST_VOCAB_PAD > CE_MAX_COLUMNS) {
        vrl_error("fast model: vocabulary %d is over the %d padded columns the cross-entropy keeps in registers",
                  c->vocab_size, CE_MAX_COLUMNS);
        return NULL;
    }
    if (fast_device_check() < 0) return NULL;
    if (dist_world() > 1) { /* one GPU per process: the node's ranks take its devices in turn */
        int nd = 1;
        cudaGetDeviceCount(&nd);
        const cudaError_t e = cudaSetDevice(dist_local_rank() % nd);
        if (e != cudaSuccess) {
            vrl_error("fast model: rank %d cannot use GPU %d: %s", dist_rank(), dist_local_rank() % nd,
                      cudaGetErrorString(e));
            return NULL;
        }
    }
    FastModel *m = (FastModel *)calloc(1, sizeof *m);
    if (!m) {
        vrl_error("fast model: out of memory");
        return NULL;
    }
    m->c = *c;
    m->spec = spec;
    m->t = t;
    m->B = batch, m->T = seq, m->N = batch * seq;
    m->d = c->d_model, m->NH = c->n_heads, m->NKV = c->n_kv_heads, m->hd = hd;
    m->qC = m->NH * hd, m->kvC = m->NKV * hd, m->F = c->d_ffn, m->V = c->vocab_size, m->L = c->n_layers;
    const char *rc_env = getenv("VRL_FAST_RECOMPUTE");
    m->recompute = rc_env && rc_env[0] == '1';
    m->Vp = (m->V + FAST_VOCAB_PAD - 1) / FAST_VOCAB_PAD * FAST_VOCAB_PAD;
    size_t rows = CE_CHUNK_BYTES / ((size_t)m->Vp * sizeof(bf16));
    m->ce_rows = (int)(rows < 1 ? 1 : rows > (size_t)m->N ? (size_t)m->N : rows);
    const char *ce_env = getenv("VRL_FAST_CE_ROWS"); /* tests: several logits chunks at small shapes */
    if (ce_env && atoi(ce_env) > 0 && atoi(ce_env) < m->ce_rows) m->ce_rows = atoi(ce_env);
    const int L = m->L, N = m->N;
    m->lo = (LayerOffsets *)calloc(L, sizeof *m->lo);
    m->acts = (FastActs *)calloc(L, sizeof *m->acts);
    m->dv_keep = (float **)calloc(L, sizeof(float *));
    {
        /* the async copies' host sides, pinned: tokens, targets, uniq, pos [N], offsets [N+1], count [1] */
        int32_t *pin = NULL;
        const size_t n_pin = 5 * (size_t)N + 2;
        if (cudaMallocHost(&pin, n_pin * sizeof(int32_t)) != cudaSuccess ||
            cudaMallocHost(&m->h_read, sizeof *m->h_read + sizeof *m->h_adamw) != cudaSuccess) {
            vrl_error("fast model: cannot allocate pinned host memory");
            cudaFreeHost(pin);
            m->h_read = NULL;
            goto fail;
        }
        memset(pin, 0, n_pin * sizeof(int32_t)); /* offsets past a batch's U are copied, never read */
        m->h_tokens = pin, m->h_targets = pin + N, m->h_uniq = pin + 2 * (size_t)N, m->h_pos = pin + 3 * (size_t)N;
        m->h_offsets = pin + 4 * (size_t)N, m->h_emb_count = pin + 5 * (size_t)N + 1;
        m->h_adamw = (AdamWScalars *)(m->h_read + 1);
    }
    m->h_count = (int32_t *)malloc((size_t)m->V * sizeof(int32_t));
    m->h_score_lp = (float *)malloc((size_t)N * sizeof(float));
    m->h_score_greedy = (uint8_t *)malloc((size_t)N);
    m->dw_off = (size_t *)malloc(((size_t)t->n + 1) * sizeof(size_t));
    m->dw_len = (size_t *)malloc(((size_t)t->n + 1) * sizeof(size_t));
    m->dw_known = (size_t *)malloc(2 * ((size_t)t->n + 1) * sizeof(size_t));
    m->n_dw_known = -1, m->n_gaps = -1;
    if (!m->lo || !m->acts || !m->dv_keep || !m->h_tokens || !m->h_targets || !m->h_uniq || !m->h_offsets ||
        !m->h_pos || !m->h_count || !m->h_score_lp || !m->h_score_greedy || !m->dw_off || !m->dw_len || !m->dw_known) {
        vrl_error("fast model: out of host memory");
        goto fail;
    }
    m->plan = &spec->value;
    if (c->arch == ARCH_GPT2) { /* GPT-2's own tensors and step (fast/gpt2.cu) on the same device setup */
        if (gpt2_bind(m, spec) < 0) goto fail;
        goto device;
    }
    if (bind_tensors(m, &spec->layout) < 0) goto fail;
    for (int l = 0; l < L; l++)
        if (m->lo[l].wup != m->lo[l].wgate + (size_t)m->F * m->d) { /* the fused gate|up GEMM reads [2F,d] */
            vrl_error("fast model: layer %d's mlp.up_proj.weight does not follow mlp.gate_proj.weight in the table", l);
            goto fail;
        }
    value_flags(m);
    for (int l = 0; l < L; l++) {
        const struct { int needed; size_t off; const char *what; } proj[4] = {
            {m->qf.needed[l], m->lo[l].wq, "query projection"}, {m->kf.needed[l], m->lo[l].wk, "key projection"},
            {m->vf.needed[l], m->lo[l].wv, "value projection"}, {m->plan->n_train[l] > 0, m->lo[l].lam, "value coefficients"}};
        for (int j = 0; j < 4; j++)
            if (proj[j].needed != (proj[j].off != (size_t)-1)) {
                vrl_error("fast model: layer %d's %s %s the table but the value plan %s it", l,
                          proj[j].what, proj[j].needed ? "is not in" : "is in", proj[j].needed ? "reads" : "never reads");
                goto fail;
            }
    }
device:
    if (cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&m->uploaded, cudaEventDisableTiming) != cudaSuccess) {
        vrl_error("fast model: cannot create the model's stream and event");
        goto fail;
    }
    m->attention = fast_attention_kind();
    if ((m->gemm = fast_gemm_kind()) < 0) goto fail;
    if (m->attention == FAST_ATTENTION_WGMMA && !gemm_wgmma_device()) { /* the same sm_90a object as the GEMM */
        vrl_error("--attention wgmma: fast/'s wgmma attention needs a GPU of compute capability 9.0 (H100, H200) "
                  "or --device cuda-cpu; use --attention mma");
        goto fail;
    }
    if (m->gemm == FAST_GEMM_WGMMA && !gemm_wgmma_device()) {
        vrl_error("--gemm wgmma: fast/'s wgmma GEMM needs a GPU of compute capability 9.0 (H100, H200) or "
                  "--device cuda-cpu; use --gemm cublaslt");
        goto fail;
    }
    m->decoder = decoder;
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
    if (m->attention == FAST_ATTENTION_CUDNN && 2 * m->F < m->kvC) { /* dgu holds cuDNN's dV */
        vrl_error("--attention cudnn: intermediate_size %d is under half the key/value width %d", m->F, m->kvC);
        goto fail;
    }
    if (m->attention == FAST_ATTENTION_CUDNN && !(m->cudnn = cudnn_attention_create())) goto fail;
#endif
    {
        const char *g_env = getenv("VRL_FAST_GRAPH"); /* 0: queue every kernel on every call (debugging) */
        m->graph_on = !(g_env && g_env[0] == '0' && g_env[1] == '\0');
    }
    ops_use_stream(m->stream);
    if (blas_create(&m->blas) < 0) goto fail;
    m->arena_bytes = m->gpt2 ? gpt2_layout(m, NULL) : layout(m, NULL);
    {
        cudaError_t e = cudaMalloc(&m->arena, m->arena_bytes);
        if (e != cudaSuccess) {
            m->arena = NULL;
            vrl_error("fast model: cannot allocate %.2f GiB on the device for %d x %d (%s); try a smaller --batch "
                      "or VRL_FAST_RECOMPUTE=1",
                      m->arena_bytes / 1073741824.0, batch, seq, cudaGetErrorString(e));
            goto fail;
        }
    }
    (void)(m->gpt2 ? gpt2_layout(m, (char *)m->arena) : layout(m, (char *)m->arena));
    if (cudaMemset(m->arena, 0, m->arena_bytes) != cudaSuccess) { /* parameters and moments start at zero */
        vrl_error("fast model: cudaMemset failed");
        goto fail;
    }
    if (m->gpt2) goto ready; /* no residual-stream mixers, no RoPE */
    if (stream_create(m, spec) < 0) goto fail; /* reads the activations' addresses */
    if (amix_create(m) < 0) goto fail;
    {
        /* RoPE tables in double, rounded once (ref/ops.c's rope_tables) */
        const int h2 = hd / 2;
        float *ct = (float *)malloc((size_t)seq * h2 * sizeof(float)), *st = (float *)malloc((size_t)seq * h2 * sizeof(float));
        if (!ct || !st) {
            free(ct), free(st);
            vrl_error("fast model: out of host memory");
            goto fail;
        }
        for (int tt = 0; tt < seq; tt++)
            for (int i = 0; i < h2; i++) {
                double a = tt * pow(c->rope_theta, -2.0 * i / hd);
                ct[tt * h2 + i] = (float)cos(a);
                st[tt * h2 + i] = (float)sin(a);
            }
        cudaError_t e1 = cudaMemcpy(m->cos_t, ct, (size_t)seq * h2 * sizeof(float), cudaMemcpyHostToDevice);
        cudaError_t e2 = cudaMemcpy(m->sin_t, st, (size_t)seq * h2 * sizeof(float), cudaMemcpyHostToDevice);
        free(ct), free(st);
        if (e1 != cudaSuccess || e2 != cudaSuccess) {
            vrl_error("fast model: cannot upload the RoPE tables");
            goto fail;
        }
    }
ready:
    /* the legacy stream's memset and copies above are not ordered before m->stream's work */
    if (cudaDeviceSynchronize() != cudaSuccess) {
        vrl_error("fast model: %s", cudaGetErrorString(cudaGetLastError()));
        goto fail;
    }
    if (!decoder) memory_report(m);
    return m;
fail:
    fast_model_destroy(m);
    return NULL;
}

extern "C" void *fast_model_create(const ModelSpec *spec, int batch, int seq) {
    return create_model(spec, batch, seq, 0);
}

FastModel *fast_model_create_decoder(const ModelSpec *spec, int batch, int seq) {
    return create_model(spec, batch, seq, 1);
}

/* ------------------------------------------------------------------ forward */

#define W16(off) (m->params16 + (off))
#define G32(off) (m->grads + (off))
#define TRY(call) \
    if ((call) < 0) return -1

/* Tokens to the device; targets (next token in the sequence, −1 at its end); with
 * backward, the embedding-gradient plan: positions grouped by token (counting sort). The
 * host builds them in pinned buffers and queues async copies into the fixed device buffers
 * the (captured) forward and backward read; it first waits for the previous upload's
 * copies (long done: they ran at the start of the previous micro-batch), not for compute. */
static int upload_tokens(FastModel *m, const int32_t *tokens, int backward) {
    const int N = m->N, T = m->T, V = m->V;
    for (int n = 0; n < N; n++)
        if (tokens[n] < 0 || tokens[n] >= V)
            return vrl_error("token id %d at batch %d position %d is outside the vocabulary [0, %d)", (int)tokens[n],
                             n / T, n % T, V);
    CUDA_CHECK(cudaEventSynchronize(m->uploaded));
    for (int n = 0; n < N; n++) m->h_targets[n] = n % T == T - 1 ? -1 : tokens[n + 1];
    memcpy(m->h_tokens, tokens, (size_t)N * sizeof(int32_t));
    CUDA_CHECK(cudaMemcpyAsync(m->tokens, m->h_tokens, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice, m->stream));
    CUDA_CHECK(cudaMemcpyAsync(m->targets, m->h_targets, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice, m->stream));
    if (!backward) {
        CUDA_CHECK(cudaEventRecord(m->uploaded, m->stream));
        return 0;
    }
    memset(m->h_count, 0, (size_t)V * sizeof(int32_t));
    for (int n = 0; n < N; n++) m->h_count[tokens[n]]++;
    int U = 0, at = 0;
    for (int v = 0; v < V; v++)
        if (m->h_count[v]) {
            m->h_uniq[U] = v;
            m->h_offsets[U++] = at;
            at += m->h_count[v];
            m->h_count[v] = m->h_offsets[U - 1]; /* now the next free slot of token v */
        }
    m->h_offsets[U] = at;
    for (int n = 0; n < N; n++) m->h_pos[m->h_count[tokens[n]]++] = n; /* positions in order */
    *m->h_emb_count = U;
    /* whole buffers, whatever U is: the same copies every batch */
    CUDA_CHECK(cudaMemcpyAsync(m->emb_uniq, m->h_uniq, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice, m->stream));
    CUDA_CHECK(cudaMemcpyAsync(m->emb_offsets, m->h_offsets, ((size_t)N + 1) * sizeof(int32_t), cudaMemcpyHostToDevice,
                               m->stream));
    CUDA_CHECK(cudaMemcpyAsync(m->emb_pos, m->h_pos, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice, m->stream));
    CUDA_CHECK(cudaMemcpyAsync(m->emb_count, m->h_emb_count, sizeof(int32_t), cudaMemcpyHostToDevice, m->stream));
    CUDA_CHECK(cudaEventRecord(m->uploaded, m->stream));
    return 0;
}

/* What a mix of layer l reads: its row of the plan's cq, ck, cv or ce table. */
typedef enum { MIX_Q, MIX_K, MIX_V, MIX_CORR } MixKind;

/* The mixer's sources for row l of one table (non-zero or trainable coefficients only) and
 * where each one's gradient accumulates: the source's keep buffer when a later layer reads it
 * too, else the own buffer (only layer l reads it). */
static void mix_args(const FastModel *m, int l, MixKind kind, MixArgs *a) {
    const ValuePlan *p = m->plan;
    const double *tab = kind == MIX_Q ? p->cq : kind == MIX_K ? p->ck : kind == MIX_V ? p->cv : p->ce;
    a->n = 0;
    for (int i = 0; i <= l; i++) {
        const double c = tab[(size_t)l * m->L + i];
        const int slot = kind == MIX_V ? trained_slot(p, l, i) : -1;
        if (c == 0 && slot < 0) continue;
        const FastActs *s = &m->acts[i];
        if (kind == MIX_Q) a->src[a->n] = s->qraw, a->dsrc[a->n] = m->qf.later[i] ? m->dq_keep[i] : m->dq_own;
        else if (kind == MIX_K) a->src[a->n] = s->kraw, a->dsrc[a->n] = m->kf.later[i] ? m->dk_keep[i] : m->dk_own;
        else a->src[a->n] = s->v, a->dsrc[a->n] = m->vf.later[i] ? m->dv_keep[i] : m->dv_own;
        a->coef[a->n] = (float)c;
        a->param[a->n] = slot >= 0 ? m->params16 + m->lo[l].lam + slot : NULL; /* the current λ, read on the device */
        a->n++;
    }
}

/* β for the GEMM about to write weight gradient g [len floats]: 0 (overwrite) for the first
 * writer of g in the first micro-batch after zero_grad, which records the range; 1 (add)
 * otherwise, and for a range overlapping one already written in this micro-batch (that
 * writer overwrote the overlap; zero_grad zeroes what no recorded range covers). */
static float grad_dw_beta(FastModel *m, const float *g, size_t len) {
    if (!m->grads_first) return 1.0f;
    const size_t off = (size_t)(g - m->grads);
    for (int i = 0; i < m->n_dw; i++)
        if (off < m->dw_off[i] + m->dw_len[i] && m->dw_off[i] < off + len) return 1.0f;
    if (m->n_dw > m->t->n) return 1.0f; /* cannot happen: at most one range per tensor */
    m->dw_off[m->n_dw] = off, m->dw_len[m->n_dw++] = len;
    return 0.0f;
}

/* 1 if the layers' attention backward is a tensor-core one, with attention_mma_backward's contract
 * (RoPE's transpose in its epilogues): attention_mma_backward.cu under --attention mma,
 * attention_wgmma_backward.cu under wgmma (attention_mma_backward where its kernels do not fit). */
static int attention_mma_backward_runs(const FastModel *m) {
    return m->attention == FAST_ATTENTION_MMA || m->attention == FAST_ATTENTION_WGMMA;
}

/* 1 if layer l's d(queries) (kind MIX_Q) or d(keys) (MIX_K) leave attention with RoPE's transpose
 * applied (attention_mma_backward's epilogues, in fp32 before the bf16 store), so that qk_backward
 * and fused_projection_backward skip rope_backward: the tensor-core backward, and nothing added to
 * that gradient between attention and RoPE's backward (no softmax mixing or Eq. 2 at layer l, whose
 * attention_mix.cu calls the kernels without a rope; no later layer's kept share of it, which
 * amix_add_kept adds after RoPE). */
static int rope_fused(const FastModel *m, int l, MixKind kind) {
    if (!attention_mma_backward_runs(m) || amix_layer(m, l)) return 0;
    return !(m->amix && (kind == MIX_Q ? m->amix->dq_keep[l] : m->amix->dk_keep[l]));
}

/* out = inp · weightᵀ (+ residual) on the model's GEMM (--gemm): fast/'s wgmma GEMM where the
 * operands fit it, else cuBLASLt.  out [N,OC], inp [N,C], weight [OC,C], residual [N,OC] or NULL */
static int linear_forward(FastModel *m, bf16 *out, const bf16 *inp, const bf16 *weight, const bf16 *residual, int N,
                          int C, int OC) {
    if (m->gemm == FAST_GEMM_WGMMA && gemm_wgmma_fits(C, {out, inp, weight, residual}))
        return gemm_wgmma_forward(out, inp, weight, residual, N, C, OC);
    return matmul_forward(&m->blas, out, inp, weight, residual, N, C, OC);
}

/* The MLP's first half: gu = ln2 · [W_gate; W_up]ᵀ and swi = SwiGLU(gu); on the wgmma GEMM one
 * kernel with SwiGLU in its epilogue (the same bits), else cuBLASLt then swiglu_forward.
 * gu [N,2F], swi [N,F], ln2 [N,d], w [2F,d] */
static int gate_up_swiglu_forward(FastModel *m, bf16 *gu, bf16 *swi, const bf16 *ln2, const bf16 *w) {
    const int N = m->N, d = m->d, F = m->F;
    if (m->gemm == FAST_GEMM_WGMMA && gemm_wgmma_fits(d, {gu, swi, ln2, w}))
        return gemm_wgmma_gate_up_swiglu(gu, swi, ln2, w, N, d, F);
    TRY(matmul_forward(&m->blas, gu, ln2, w, NULL, N, d, 2 * F)); /* [W_gate; W_up]: one [2F,d] */
    return swiglu_forward(swi, gu, N, F);
}

/* 1 if layer l's queries take RoPE inside the tensor-core attention forward (AttnRope.q: each block
 * rotates its rows where it loads them and writes them back rotated), not in rope_forward's pass:
 * the mma path where layer l's own attention is that kernel (softmax mixing and Eq. 2 go through
 * attention_mix.cu, which calls it without a rope: their queries are rotated by the pass).
 * Nothing reads the queries between qk_forward and the attention; after it they are rotated. */
static int rope_q_in_forward(const FastModel *m, int l) {
    return m->attention == FAST_ATTENTION_MMA && !amix_layer(m, l);
}

/* 1 if layer l's keys stay before RoPE in memory and the tensor-core attention rotates every K tile
 * where it stages it, forward and backward (AttnRope.k), in place of rope_forward's pass over k:
 * where its d(k) leaves that backward with Rᵀ applied (rope_fused: the mma path, layer l's own
 * attention, and no later layer reading k_l, whose attention_mix.cu calls get no rope and need the
 * rotated keys: the terms' and Eq. 2's k_m), and not in the decoder, whose prefill copies the
 * rotated keys into its KV cache. */
static int rope_k_at_loads(const FastModel *m, int l) {
    /* not under --attention wgmma: its forward reads k as rotated (RoPE's pass); mma's backward then
     * gets rope.k 0 and still applies Rᵀ to d(k) (rope_fused) */
    return m->attention == FAST_ATTENTION_MMA && rope_fused(m, l, MIX_K) && !m->decoder;
}

/* 1 if layer l's fused q|k|v projection runs on the wgmma GEMM with RoPE in its epilogue
 * (gemm_wgmma_forward_rope: the same bits as the passes), so qk_forward skips rope_forward: where
 * q and k are the projection itself (no mix) and the passes would run (not the mma attention's
 * fused RoPE). */
static int rope_in_gemm(const FastModel *m, int l) {
    const FastActs *a = &m->acts[l];
    return m->gemm == FAST_GEMM_WGMMA && m->fuse_cols[l] && in_place(&m->qf, l) && in_place(&m->kf, l) &&
           !rope_q_in_forward(m, l) && !rope_k_at_loads(m, l) && m->hd >= 16 && 256 % m->hd == 0 &&
           gemm_wgmma_fits(m->d, {a->q, a->ln1, W16(m->lo[l].wq)});
}

/* Queries (kind MIX_Q) or keys (MIX_K) of layer l: the raw projection (where the layer has
 * one), the row's mix, then RoPE (the queries' in the attention forward, rope_q_in_forward; the
 * keys' at the attention's K loads, rope_k_at_loads, so k stays unrotated).  out [N,C] */
static int qk_forward(FastModel *m, int l, MixKind kind) {
    const SourceFlags *f = kind == MIX_Q ? &m->qf : &m->kf;
    FastActs *a = &m->acts[l];
    const int C = kind == MIX_Q ? m->qC : m->kvC, heads = kind == MIX_Q ? m->NH : m->NKV;
    const size_t w = kind == MIX_Q ? m->lo[l].wq : m->lo[l].wk;
    bf16 *out = kind == MIX_Q ? a->q : a->k, *raw = kind == MIX_Q ? a->qraw : a->kraw;
    const int ld = m->fuse_cols[l] ? m->fuse_cols[l] : C;
    if (in_place(f, l)) {
        if (!m->fuse_cols[l]) TRY(linear_forward(m, out, a->ln1, m->params16 + w, NULL, m->N, m->d, C));
    } else {
        if (f->needed[l]) TRY(linear_forward(m, raw, a->ln1, m->params16 + w, NULL, m->N, m->d, C));
        MixArgs mix;
        mix_args(m, l, kind, &mix);
        TRY(mix_forward(out, &mix, (size_t)m->N * C));
    }
    if ((kind == MIX_Q ? rope_q_in_forward(m, l) : rope_k_at_loads(m, l)) || rope_in_gemm(m, l)) return 0;
    return rope_forward(out, ld, m->cos_t, m->sin_t, m->B, m->T, heads, m->hd);
}

/* The backward of qk_forward for an unfused layer: grad [N,C] bf16 holds d(queries or keys
 * after RoPE) from the attention (before it, rope_fused); afterwards the layer's own projection's gradient is done (every reader of it
 * has run: later layers first) and W's gradient and d(ln1) are accumulated. */
static int qk_backward(FastModel *m, int l, MixKind kind, bf16 *grad, int *dln_written) {
    const SourceFlags *f = kind == MIX_Q ? &m->qf : &m->kf;
    const FastActs *a = &m->acts[l];
    const int N = m->N, C = kind == MIX_Q ? m->qC : m->kvC, heads = kind == MIX_Q ? m->NH : m->NKV;
    const size_t w = kind == MIX_Q ? m->lo[l].wq : m->lo[l].wk;
    if (!rope_fused(m, l, kind)) TRY(rope_backward(grad, C, m->cos_t, m->sin_t, m->B, m->T, heads, m->hd));
    if (!in_place(f, l)) {
        float *own = kind == MIX_Q ? m->dq_own : m->dk_own;
        float *keep = kind == MIX_Q ? m->dq_keep[l] : m->dk_keep[l];
        if (f->needed[l] && !f->later[l]) CUDA_CHECK(cudaMemsetAsync(own, 0, (size_t)N * C * sizeof(float), m->stream));
        MixArgs mix;
        mix_args(m, l, kind, &mix);
        TRY(mix_backward_bf16(&mix, grad, (size_t)N * C));
        if (f->needed[l]) TRY(cast_to_bf16(grad, f->later[l] ? keep : own, (size_t)N * C));
    }
    if (!f->needed[l]) return 0; /* no projection of its own (CLA's odd layers) */
    TRY(matmul_backward(&m->blas, NULL, *dln_written, m->dln16, m->grads + w, grad_dw_beta(m, m->grads + w, (size_t)C * m->d),
                        grad, a->ln1, m->params16 + w, N, m->d, C));
    *dln_written = 1;
    return 0;
}

/* Layer l's own V_l where something reads it raw, and its value input v_in (by vin_kind). */
static int value_forward(FastModel *m, int l) {
    FastActs *a = &m->acts[l];
    const int N = m->N, d = m->d, kvC = m->kvC;
    const bf16 *wv = m->vf.needed[l] ? m->params16 + m->lo[l].wv : NULL; /* no W_v where nobody reads V_l */
    if (m->vf.needed[l] && m->vin_kind[l] != VIN_FOLD && !v_fused(m, l))
        TRY(linear_forward(m, a->v, a->ln1, wv, NULL, N, d, kvC));
    if (m->vin_kind[l] == VIN_ALIAS) return 0; /* v_in is V_j's buffer */
    MixArgs mix;
    mix_args(m, l, MIX_V, &mix);
    if (m->vin_kind[l] == VIN_MIX) return mix_forward(a->vin, &mix, (size_t)N * kvC);
    /* VIN_FOLD: sources come in layer order, so the own term (a constant) is the last; the
     * others enter as the GEMM's C: one source directly with its coefficient as beta, several
     * summed into v_in first (beta = 1, C = D) */
    const float own = mix.coef[--mix.n];
    const bf16 *c = NULL;
    float beta = 0.0f;
    if (mix.n == 1) c = mix.src[0], beta = mix.coef[0];
    else if (mix.n > 1) {
        TRY(mix_forward(a->vin, &mix, (size_t)N * kvC));
        c = a->vin, beta = 1.0f;
    }
    return matmul_forward_scaled(&m->blas, a->vin, a->ln1, wv, own, c, beta, N, d, kvC);
}

/* --attention: fast's tensor-core (mma, wgmma's forward) or flash kernels or cuDNN's fused SDPA, on the same
 * tensors (lse in the same layout and meaning, docs/design/kernels.md "Attention through cuDNN"); q, k
 * and v_in are read through layer l's row strides (fast_attn_ld) every way. */
static int attention_forward_any(FastModel *m, int l, FastActs *a) {
    const AttnLd ld = fast_attn_ld(m, l);
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
    if (m->attention == FAST_ATTENTION_CUDNN)
        return cudnn_attention_forward((CudnnAttention *)m->cudnn, m->stream, a->atty, a->lse, a->q, ld.q, a->k, ld.k,
                                       a->vin, ld.v, m->B, m->T, m->NH, m->NKV, m->hd);
#endif
    if (m->attention == FAST_ATTENTION_MMA) {
        const AttnRope rope = {m->cos_t, m->sin_t, rope_q_in_forward(m, l), 0, 0, rope_k_at_loads(m, l)};
        return attention_mma_forward(a->atty, a->lse, a->q, a->k, a->vin, ld, m->B, m->T, m->NH, m->NKV, m->hd, &rope);
    }
    if (m->attention == FAST_ATTENTION_WGMMA) /* q and k rotated by rope_forward's pass (rope_q_in_forward is 0) */
        return attention_wgmma_forward(a->atty, a->lse, a->q, a->k, a->vin, ld, m->B, m->T, m->NH, m->NKV, m->hd);
    return attention_forward(a->atty, a->lse, a->q, a->k, a->vin, ld, m->B, m->T, m->NH, m->NKV, m->hd);
}

/* dq, dk (views with their inputs' strides, grad_views) and dV into its AttnDv destinations
 * from datty, either way. */
static int attention_backward_any(FastModel *m, int l, const FastActs *a, bf16 *dq, bf16 *dk, AttnDv dv) {
    const AttnLd ld = fast_attn_ld(m, l);
#if VRL_HAVE_CUDNN && !VRL_CUDA_CPU
    if (m->attention == FAST_ATTENTION_CUDNN) {
        /* cuDNN's dV is bf16 [N,kvC] contiguous: into dgu (free once W_gate|up's GEMMs have read
         * it, never an AttnDv destination; 2F >= kvC, checked at create), then to dv's
         * destinations as flash's epilogue puts them */
        bf16 *dv_scratch = m->dgu;
        TRY(cudnn_attention_backward((CudnnAttention *)m->cudnn, m->stream, dq, ld.q, dk, ld.k, dv_scratch, m->datty,
                                     a->atty, a->q, a->k, a->vin, ld.v, a->lse, m->B, m->T, m->NH, m->NKV, m->hd));
        return attention_dv_scatter(dv, dv_scratch, ld.v, m->N, m->kvC);
    }
#endif
    if (attention_mma_backward_runs(m)) { /* the tensor-core backward (attention_mma_backward.cu) */
        const AttnRope rope = {m->cos_t, m->sin_t, 0, rope_fused(m, l, MIX_Q), rope_fused(m, l, MIX_K),
                               rope_k_at_loads(m, l)};
        if (m->attention == FAST_ATTENTION_WGMMA) /* q, k rotated by rope_forward (rope.k is 0) */
            return attention_wgmma_backward(dq, dk, dv, m->attD, m->datty, a->atty, a->q, a->k, a->vin, ld, a->lse,
                                            m->B, m->T, m->NH, m->NKV, m->hd, &rope);
        return attention_mma_backward(dq, dk, dv, m->attD, m->datty, a->atty, a->q, a->k, a->vin, ld, a->lse, m->B,
                                      m->T, m->NH, m->NKV, m->hd, &rope);
    }
    return attention_backward(dq, dk, dv, m->attD, m->datty, a->atty, a->q, a->k, a->vin, ld, a->lse, m->B, m->T,
                              m->NH, m->NKV, m->hd);
}

/* Layer l from the inputs stream_forward set in acts[l] (its step 2l; step 2l+1 here). */
static int layer_forward(FastModel *m, int l) {
    const int N = m->N, d = m->d, qC = m->qC, F = m->F;
    const LayerOffsets *o = &m->lo[l];
    FastActs *a = &m->acts[l];
    TRY(zero_wait_params(m, l)); /* data parallel: this layer's gathered parameters */
    /* attention sublayer */
    TRY(rmsnorm_forward(a->ln1, a->ln1_rstd, a->x_in, W16(o->ln1), N, d, (float)m->c.norm_eps));
    if (rope_in_gemm(m, l)) { /* the same, q and k rotated in the GEMM's epilogue */
        TRY(gemm_wgmma_forward_rope(a->q, a->ln1, W16(o->wq), N, d, m->fuse_cols[l], qC + m->kvC, m->cos_t, m->sin_t,
                                    m->T, m->hd));
    } else if (m->fuse_cols[l]) { /* [N, qC+kvC(+kvC)] = ln1 · [W_q; W_k (; W_v)]ᵀ, the weights adjacent */
        TRY(linear_forward(m, a->q, a->ln1, W16(o->wq), NULL, N, d, m->fuse_cols[l]));
    }
    TRY(qk_forward(m, l, MIX_Q));
    TRY(qk_forward(m, l, MIX_K));
    TRY(value_forward(m, l));
    MixArgs mix;
    TRY(amix_layer(m, l) ? amix_forward(m, l) : attention_forward_any(m, l, a)); /* ca mixing, Eq. 2 */
    if (m->has_corr[l]) { /* U = atty + repeat_kv(Σ ce·V_i) */
        mix_args(m, l, MIX_CORR, &mix);
        TRY(correction_forward(a->u, a->atty, &mix, N, m->NH, m->NKV, m->hd));
    }
    TRY(linear_forward(m, a->h, a->u, W16(o->wo), a->x_res, N, qC, d)); /* h = x + W_o·U */
    TRY(stream_forward(m, 2 * l + 1, NULL));
    /* MLP sublayer */
    TRY(rmsnorm_forward(a->ln2, a->ln2_rstd, a->h_in, W16(o->ln2), N, d, (float)m->c.norm_eps));
    TRY(gate_up_swiglu_forward(m, a->gu, a->swi, a->ln2, W16(o->wgate)));
    TRY(linear_forward(m, a->out, a->swi, W16(o->wdown), a->h_res, N, F, d)); /* x' = h + W_down·swi */
    return 0;
}

/* The bf16 logits [R,Vp] of rows r0..r0+R-1 into the chunk buffer, from the kept final-norm
 * output, at the padded extent Vp (the pad columns come from lm_head's zero rows; neither the
 * loss nor the scoring reads them, and the cross-entropy writes their gradient as 0). */
static int logits_chunk(FastModel *m, int r0, int R) {
    return matmul_forward_ld(&m->blas, m->logits, m->Vp, m->lnf + (size_t)r0 * m->d, W16(m->o_lm_head), R, m->d, m->Vp);
}

/* Head: final norm, then per chunk of rows the bf16 logits and their loss, the cross-entropy
 * reading each logit once and (backward) writing its bf16 gradient over it, whose two GEMMs
 * run before the next chunk overwrites it. */
static int head_forward(FastModel *m, const bf16 *x_last, double grad_scale, int backward) {
    const int N = m->N, d = m->d, V = m->V;
    const float w = (float)(grad_scale / ((double)m->B * (m->T - 1)));
    TRY(zero_wait_params(m, ZERO_HEAD));
    if (!m->gpt2) TRY(rmsnorm_forward(m->lnf, m->lnf_rstd, x_last, W16(m->o_lnf), N, d, (float)m->c.norm_eps));
    for (int r0 = 0; r0 < N; r0 += m->ce_rows) {
        const int R = N - r0 < m->ce_rows ? N - r0 : m->ce_rows;
        TRY(logits_chunk(m, r0, R));
        TRY(crossentropy_forward_backward(m->losses + r0, m->logits, m->targets + r0, R, V, m->Vp, w, backward));
        if (backward)
            /* at the padded extent too: the pad columns' gradients are 0, so the weight
             * gradient's pad rows stay 0 and dln gets nothing from them */
            TRY(matmul_backward_ld(&m->blas, m->gpt2 ? m->dln32 + (size_t)r0 * d : NULL, 0,
                                   m->gpt2 ? NULL : m->dln16 + (size_t)r0 * d, G32(m->o_lm_head),
                                   grad_dw_beta(m, G32(m->o_lm_head), (size_t)m->Vp * d), m->logits, m->Vp,
                                   m->lnf + (size_t)r0 * d, W16(m->o_lm_head), R, d, m->Vp));
    }
    return 0;
}

/* The value path's backward (formulas.md §4): each V_i that layer l reads (v_in = Σ_i cv·V_i,
 * corrections Σ_i ce·V_i) gets its share. V_i's fp32 accumulator is dv_keep[i] when a later
 * layer reads it too, else dv_own (uses_dv_own); the baseline's and ResFormer's own V_l need
 * neither (dv_direct, VIN_FOLD). */

/* The corrections' shares, from d(U) = datty; first zeroing dv_own when layer l owns it. */
static int value_backward_corrections(FastModel *m, int l) {
    if (uses_dv_own(m, l)) CUDA_CHECK(cudaMemsetAsync(m->dv_own, 0, (size_t)m->N * m->kvC * sizeof(float), m->stream));
    if (!m->has_corr[l]) return 0;
    MixArgs mix;
    mix_args(m, l, MIX_CORR, &mix);
    return correction_backward(&mix, m->datty, m->N, m->NH, m->NKV, m->hd);
}

/* Where layer l's backward puts d(q), d(k) and V_l's bf16 gradient: views into dqkv with the
 * fused projection's row stride (one GEMM then reads them all), or the unfused buffers. */
static void grad_views(const FastModel *m, int l, bf16 **dq, bf16 **dk, bf16 **dv16) {
    *dq = m->dq, *dk = m->dk, *dv16 = m->dv16;
    if (m->fuse_cols[l]) *dq = m->dqkv, *dk = m->dqkv + m->qC;
    if (v_fused(m, l)) *dv16 = m->dqkv + m->qC + m->kvC;
}

/* Where attention's d(v_in) goes (AttnDv): an alias adds it onto V_j's accumulator (or, dv_direct,
 * writes it as V_l's bf16 gradient, dv16, for the W_v GEMMs); a fold writes dv16 for the GEMMs
 * (their alpha the own coefficient) and adds c·dV onto its one other source's accumulator (else
 * leaves dV in dvin for value_backward_mix); a mix leaves it in dvin. */
static AttnDv value_dv_targets(const FastModel *m, int l, bf16 *dv16) {
    const int j = m->vin_src[l];
    AttnDv dv = {NULL, 1.0f, 0, NULL};
    if (m->vin_kind[l] == VIN_MIX) dv.f32 = m->dvin;
    else if (m->dv_direct[l]) dv.b16 = dv16;
    else if (m->vin_kind[l] == VIN_ALIAS) dv.f32 = m->vf.later[j] ? m->dv_keep[j] : m->dv_own, dv.add = 1;
    else { /* VIN_FOLD */
        dv.b16 = dv16;
        if (j < 0) dv.f32 = m->dvin;
        else dv.f32 = m->dv_keep[j], dv.scale = (float)m->plan->cv[(size_t)l * m->L + j], dv.add = 1;
    }
    return dv;
}

/* The fused projection's backward: RoPE's transpose on the d(q), d(k) views (unless attention
 * applied it, rope_fused), then one weight-
 * gradient GEMM over the adjacent [W_q; W_k (; W_v)] and one GEMM writing d(ln1). */
static int fused_projection_backward(FastModel *m, int l, int *dln_written) {
    const int S = m->fuse_cols[l], N = m->N;
    const size_t wq = m->lo[l].wq;
    if (!rope_fused(m, l, MIX_Q)) TRY(rope_backward(m->dqkv, S, m->cos_t, m->sin_t, m->B, m->T, m->NH, m->hd));
    if (!rope_fused(m, l, MIX_K))
        TRY(rope_backward(m->dqkv + m->qC, S, m->cos_t, m->sin_t, m->B, m->T, m->NKV, m->hd));
    TRY(matmul_backward(&m->blas, NULL, *dln_written, m->dln16, m->grads + wq,
                        grad_dw_beta(m, m->grads + wq, (size_t)S * m->d), m->dqkv, m->acts[l].ln1, m->params16 + wq, N,
                        m->d, S));
    *dln_written = 1;
    return 0;
}

/* After attention: the mix's sources' shares of dvin (VIN_FOLD with several other sources: those
 * other than V_l, whose share rides on the W_v GEMMs' alpha) and the trainable coefficients'
 * gradients. Aliases and single-source folds were done in attention's epilogue. */
static int value_backward_mix(FastModel *m, int l) {
    const size_t n = (size_t)m->N * m->kvC;
    if (m->vin_kind[l] == VIN_ALIAS || (m->vin_kind[l] == VIN_FOLD && m->vin_src[l] >= 0)) return 0;
    MixArgs mix;
    mix_args(m, l, MIX_V, &mix);
    if (m->vin_kind[l] == VIN_FOLD) mix.n--; /* the own term is the last source */
    if (mix.n) TRY(mix_backward(&mix, m->dvin, n));
    if (m->plan->n_train[l]) { /* d(λ_j) = Σ dV'·V_{train_src[j]} */
        LambdaGradArgs lg;
        lg.n = m->plan->n_train[l];
        for (int j = 0; j < lg.n; j++) {
            lg.src[j] = m->acts[m->plan->train_src[(size_t)l * m->L + j]].v;
            lg.grad[j] = m->grads + m->lo[l].lam + j;
        }
        TRY(lambda_backward(&lg, m->dvin, n, m->lam_partial));
    }
    return 0;
}

/* W_v's gradient and its share of d(ln1), once every reader of V_l (layers >= l) has run its
 * backward: from V_l's accumulator (rounded to bf16), or from dv16 as attention left it
 * (dv_direct; VIN_FOLD with the own coefficient as the GEMMs' alpha). */
static int value_backward_weights(FastModel *m, int l, int *dln_written) {
    const int N = m->N, d = m->d, kvC = m->kvC;
    const size_t wv = m->lo[l].wv;
    if (!m->vf.needed[l] || v_fused(m, l)) return 0; /* fused: its GEMMs were the projection's */
    if (m->vin_kind[l] == VIN_FOLD) {
        const float own = (float)m->plan->cv[(size_t)l * m->L + l];
        TRY(matmul_backward_scaled(&m->blas, m->dln16, *dln_written, m->grads + wv,
                                   grad_dw_beta(m, m->grads + wv, (size_t)kvC * d), m->dv16, m->acts[l].ln1,
                                   m->params16 + wv, own, N, d, kvC));
    } else {
        if (!m->dv_direct[l]) TRY(cast_to_bf16(m->dv16, m->vf.later[l] ? m->dv_keep[l] : m->dv_own, (size_t)N * kvC));
        TRY(matmul_backward(&m->blas, NULL, *dln_written, m->dln16, m->grads + wv,
                            grad_dw_beta(m, m->grads + wv, (size_t)kvC * d), m->dv16, m->acts[l].ln1, m->params16 + wv,
                            N, d, kvC));
    }
    *dln_written = 1;
    return 0;
}

static int layer_backward(FastModel *m, int l) {
    const int N = m->N, d = m->d, qC = m->qC, F = m->F;
    const LayerOffsets *o = &m->lo[l];
    FastActs *a = &m->acts[l];
    Blas *bl = &m->blas;
    const float eps = (float)m->c.norm_eps;
    if (m->recompute) { /* the MLP's inputs, exactly as the forward made them */
        TRY(rmsnorm_forward(a->ln2, a->ln2_rstd, a->h_in, W16(o->ln2), N, d, eps));
        TRY(swiglu_forward(a->swi, a->gu, N, F));
    }
    /* dres32/dres16 hold dLoss/dx'. x' = h + W_down·swi. */
    const int fused_dx = m->gemm == FAST_GEMM_WGMMA && F % 8 == 0 &&
                         gemm_wgmma_fits(d, {m->dgu, m->dres16, W16(o->wdown), a->gu});
    TRY(matmul_backward(bl, NULL, 0, fused_dx ? NULL : m->dswi, G32(o->wdown),
                        grad_dw_beta(m, G32(o->wdown), (size_t)d * F), m->dres16, a->swi, W16(o->wdown), N, F, d));
    if (fused_dx) { /* d swi = dres·W_down and SwiGLU's backward in one kernel: d swi never written */
        TRY(gemm_wgmma_down_dx_swiglu(m->dgu, m->dres16, W16(o->wdown), a->gu, N, d, F));
    } else {
        TRY(swiglu_backward(m->dgu, m->dswi, a->gu, N, F));
    }
    /* one dX GEMM over 2F and one dW GEMM into the adjacent gradient blocks of W_gate and W_up */
    TRY(matmul_backward(bl, NULL, 0, m->dln16, G32(o->wgate), grad_dw_beta(m, G32(o->wgate), (size_t)2 * F * d),
                        m->dgu, a->ln2, W16(o->wgate), N, d, 2 * F));
    TRY(stream_norm_backward(m, 2 * l + 1, W16(o->ln2), a->ln2_rstd, G32(o->ln2))); /* ln2's gain too */
    TRY(stream_backward(m, 2 * l + 1));
    /* dres is now dLoss/dh. h = x + W_o·U. */
    TRY(matmul_backward(bl, NULL, 0, m->datty, G32(o->wo), grad_dw_beta(m, G32(o->wo), (size_t)d * qC), m->dres16,
                        a->u, W16(o->wo), N, qC, d));
    TRY(value_backward_corrections(m, l)); /* before attention: its dV then adds after them, as the mix did */
    bf16 *dq, *dk, *dv16;
    grad_views(m, l, &dq, &dk, &dv16);
    const AttnDv dv = value_dv_targets(m, l, dv16);
    TRY(amix_layer(m, l) ? amix_backward(m, l, dq, dk, dv) : attention_backward_any(m, l, a, dq, dk, dv));
    TRY(amix_add_kept(m, l, dq, dk)); /* later layers' shares of d(q_l), d(k_l) (ca sources, Eq. 2's k_m) */
    TRY(value_backward_mix(m, l));
    if (m->recompute) TRY(rmsnorm_forward(a->ln1, a->ln1_rstd, a->x_in, W16(o->ln1), N, d, eps));
    int dln_written = 0; /* the first projection GEMM writes d(ln1), the others add */
    if (m->fuse_cols[l]) {
        TRY(fused_projection_backward(m, l, &dln_written));
    } else {
        TRY(qk_backward(m, l, MIX_Q, dq, &dln_written));
        TRY(qk_backward(m, l, MIX_K, dk, &dln_written));
    }
    TRY(value_backward_weights(m, l, &dln_written));
    if (!dln_written) CUDA_CHECK(cudaMemsetAsync(m->dln16, 0, (size_t)N * d * sizeof(bf16), m->stream)); /* no projection at all */
    TRY(stream_norm_backward(m, 2 * l, W16(o->ln1), a->ln1_rstd, G32(o->ln1))); /* ln1's gain too */
    return 0; /* dres is now dLoss/d(the layer's stream input); stream_backward(m, 2l) goes on */
}

/* The backward of the whole model, after the head's chunks left d(lnf) in dln16; x is the
 * last layer's output. */
static int backward_pass(FastModel *m, const bf16 *x) {
    const int N = m->N, d = m->d, kvC = m->kvC;
    if (m->gpt2) return gpt2_backward(m);
    CUDA_CHECK(cudaMemsetAsync(m->dres32, 0, (size_t)N * d * sizeof(float), m->stream));
    TRY(stream_backward_begin(m));
    TRY(amix_backward_begin(m));
    TRY(rmsnorm_backward(m->dres32, m->dres16, G32(m->o_lnf), m->norm_scratch, m->dln16, x, W16(m->o_lnf),
                         m->lnf_rstd, N, d)); /* and the final norm's gain */
    TRY(stream_backward(m, 2 * m->L)); /* the head's input: the last layer's output's gradient */
    TRY(zero_grads_ready(m, ZERO_HEAD)); /* data parallel, last micro-batch: reduce-scatter as layers finish */
    for (int l = 0; l < m->L; l++) {
        if (m->vf.later[l]) CUDA_CHECK(cudaMemsetAsync(m->dv_keep[l], 0, (size_t)N * kvC * sizeof(float), m->stream));
        if (m->qf.later[l]) CUDA_CHECK(cudaMemsetAsync(m->dq_keep[l], 0, (size_t)N * m->qC * sizeof(float), m->stream));
        if (m->kf.later[l]) CUDA_CHECK(cudaMemsetAsync(m->dk_keep[l], 0, (size_t)N * kvC * sizeof(float), m->stream));
    }
    for (int l = m->L - 1; l >= 0; l--) {
        TRY(layer_backward(m, l));
        TRY(stream_backward(m, 2 * l)); /* dres: the previous layer's output's (l = 0: the embedding's) */
        TRY(zero_grads_ready(m, l));
    }
    /* at most min(N, V) distinct tokens: that many blocks, the batch's U read on the device */
    TRY(embedding_backward(G32(m->o_wte), m->dres32, m->emb_uniq, m->emb_offsets, m->emb_pos, m->emb_count,
                           N < m->V ? N : m->V, d));
    TRY(zero_grads_ready(m, ZERO_EMBED));
    TRY(zero_backward_end(m));
    return 0;
}

/* The embedding and every layer, queued; *x_last is the head's input (stream.cuh, step 2L). */
static int trunk_forward(FastModel *m, const bf16 **x_last) {
    if (m->gpt2) return *x_last = m->lnf, gpt2_trunk_forward(m); /* LN_f included */
    TRY(zero_wait_params(m, ZERO_LATE));
    TRY(zero_wait_params(m, ZERO_EMBED));
    TRY(embedding_forward(m->emb, m->tokens, W16(m->o_wte), m->N, m->d));
    for (int l = 0; l < m->L; l++) {
        TRY(stream_forward(m, 2 * l, NULL));
        TRY(layer_forward(m, l));
    }
    return stream_forward(m, 2 * m->L, x_last); /* the head's input */
}

/* After queueing a first micro-batch: the ranges its GEMMs overwrote become zero_grad's set
 * the first time; later they must be the same ranges (the step's structure is fixed), else
 * zero_grad would leave one unzeroed that nothing overwrites. */
static int learn_dw_ranges(FastModel *m) {
    if (m->n_dw_known < 0) {
        for (int i = 0; i < m->n_dw; i++) m->dw_known[2 * i] = m->dw_off[i], m->dw_known[2 * i + 1] = m->dw_len[i];
        m->n_dw_known = m->n_dw;
        return 0;
    }
    int same = m->n_dw == m->n_dw_known;
    for (int i = 0; same && i < m->n_dw; i++)
        same = m->dw_known[2 * i] == m->dw_off[i] && m->dw_known[2 * i + 1] == m->dw_len[i];
    return same ? 0 : vrl_error("fast model: the weight gradients a micro-batch's GEMMs overwrite changed (%d ranges, "
                                "were %d)", m->n_dw, m->n_dw_known);
}

/* zero_grad's ranges: [0, P) less the learned GEMM ranges, sorted, uploaded once (never inside
 * a capture: zero_grad is not captured). */
static int upload_gaps(FastModel *m) {
    const int n = m->n_dw_known;
    size_t *r = m->dw_off, *len = m->dw_len; /* scratch: the learned set, sorted by offset */
    for (int i = 0; i < n; i++) {
        size_t o = m->dw_known[2 * i], l = m->dw_known[2 * i + 1];
        int j = i;
        for (; j > 0 && r[j - 1] > o; j--) r[j] = r[j - 1], len[j] = len[j - 1];
        r[j] = o, len[j] = l;
    }
    size_t *gaps = (size_t *)malloc(2 * ((size_t)n + 1) * sizeof(size_t)); /* host [n + 1][2] */
    if (!gaps) return vrl_error("fast model: out of host memory");
    size_t at = 0;
    int g = 0;
    m->gap_max = 0;
    for (int i = 0; i <= n; i++) {
        const size_t end = i < n ? r[i] : m->t->total;
        if (end > at) {
            gaps[2 * g] = at, gaps[2 * g + 1] = end - at, g++;
            if (end - at > m->gap_max) m->gap_max = end - at;
        }
        if (i < n && r[i] + len[i] > at) at = r[i] + len[i];
    }
    const cudaError_t e = cudaMemcpy(m->gaps, gaps, 2 * (size_t)g * sizeof(size_t), cudaMemcpyHostToDevice);
    free(gaps);
    if (e != cudaSuccess) return vrl_error("fast: uploading zero_grad's ranges: %s", cudaGetErrorString(e));
    m->n_gaps = g;
    return 0;
}

/* Everything one micro-batch does on the device, queued on m->stream from the uploaded
 * inputs: forward, loss, its mean into the update's next loss slot, backward. No host work
 * depends on a result, so this is what the micro-batch graph captures. */
static int queue_micro_batch(FastModel *m, double grad_scale) {
    const bf16 *x;
    m->n_dw = 0;
    TRY(trunk_forward(m, &x));
    TRY(head_forward(m, x, grad_scale, 1));
    TRY(loss_sum(m->loss_sum, m->losses, m->N)); /* fixed order: deterministic */
    TRY(loss_record(m->micro_loss, m->micro_count, FAST_MAX_MICRO, m->loss_sum, (double)m->B * (m->T - 1)));
    TRY(backward_pass(m, x));
    return m->grads_first ? learn_dw_ranges(m) : 0;
}

/* Capture: what is queued on m->stream between the two calls becomes a graph, instantiated
 * into *exec (replacing the one there). `queued` is the queueing's result: on failure the
 * half-captured graph is dropped and the queueing's own error stands. */
static int capture_begin(FastModel *m) {
    CUDA_CHECK(cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeGlobal));
    return 0;
}
static int capture_end(FastModel *m, int queued, cudaGraphExec_t *exec) {
    cudaGraph_t g = NULL;
    const cudaError_t e = cudaStreamEndCapture(m->stream, &g);
    if (queued < 0 || e != cudaSuccess) {
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
        return queued < 0 ? -1 : vrl_error("fast: capturing the step as a graph: %s", cudaGetErrorString(e));
    }
    if (*exec) cudaGraphExecDestroy(*exec);
    *exec = NULL;
    const cudaError_t ei = cudaGraphInstantiate(exec, g, 0);
    cudaGraphDestroy(g);
    if (ei != cudaSuccess) {
        *exec = NULL;
        return vrl_error("fast: instantiating the step's graph: %s", cudaGetErrorString(ei));
    }
    return 0;
}

/* queue(m, arg)'s work on m->stream as graph g: the first call with this key runs uncaptured
 * (a warm-up: cuBLASLt's plans are made outside any capture), the second captures and
 * launches, every later one replays. A new key starts over. With VRL_FAST_GRAPH=0 or data
 * parallelism over several ranks (NCCL calls and cross-stream events stay outside graphs)
 * the work is always queued kernel by kernel. */
static int run_step_graph(FastModel *m, StepGraph *g, double key, int (*queue)(FastModel *, const void *),
                          const void *arg) {
    if (g->warm && g->key != key) {
        if (g->exec) cudaGraphExecDestroy(g->exec);
        g->exec = NULL, g->warm = 0;
    }
    if (!m->graph_on || m->zero || !g->warm) {
        TRY(queue(m, arg));
        g->warm = 1, g->key = key;
        return 0;
    }
    if (!g->exec) {
        TRY(capture_begin(m));
        TRY(capture_end(m, queue(m, arg), &g->exec));
    }
    CUDA_CHECK(cudaGraphLaunch(g->exec, m->stream));
    return 0;
}

static int queue_micro_batch_at(FastModel *m, const void *grad_scale) {
    return queue_micro_batch(m, *(const double *)grad_scale);
}

/* A training micro-batch: upload, then the forward and backward as a graph (run_step_graph).
 * Nothing is waited for: the loss stays on the device until the step. */
static int forward_backward(FastModel *m, const int32_t *tokens, double grad_scale) {
    if (m->n_micro >= FAST_MAX_MICRO)
        return vrl_error("fast model: more than %d micro-batches in one update (lower --accum)", FAST_MAX_MICRO);
    m->have_forward = 0;
    poison_scratch(m);
    TRY(upload_tokens(m, tokens, 1));
    /* the first micro-batch after zero_grad overwrites the GEMMs' weight gradients: its own graph */
    TRY(run_step_graph(m, m->grads_first ? &m->micro_graph_first : &m->micro_graph, grad_scale, queue_micro_batch_at,
                       &grad_scale));
    m->grads_first = m->grads_stale = 0;
    m->n_micro++;
    m->read_valid = 0;
    m->have_forward = 1;
    return 0;
}

/* Forward only (validation): the mean loss, read back at once (not part of a training step). */
static int forward_only(FastModel *m, const int32_t *tokens, double *loss) {
    const bf16 *x;
    m->have_forward = 0;
    poison_scratch(m);
    TRY(upload_tokens(m, tokens, 0));
    TRY(trunk_forward(m, &x));
    TRY(head_forward(m, x, 0.0, 0));
    TRY(loss_sum(m->loss_sum, m->losses, m->N));
    m->have_forward = 1;
    CUDA_CHECK(cudaMemcpyAsync(&m->h_read->forward_loss_sum, m->loss_sum, sizeof(double), cudaMemcpyDeviceToHost,
                               m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream)); /* also surfaces asynchronous faults inside this call */
    *loss = m->h_read->forward_loss_sum / ((double)m->B * (m->T - 1));
    return 0;
}

/* With backward: 0 (the loss comes back with the step, fast_model_micro_losses) or NaN with
 * vrl_error; without: the mean loss. */
extern "C" double fast_model_forward(void *vm, const int32_t *tokens, double grad_scale, int backward) {
    FastModel *m = (FastModel *)vm;
    ops_use_stream(m->stream);
    double loss = NAN;
    if (backward) return forward_backward(m, tokens, grad_scale) < 0 ? NAN : 0.0;
    if (forward_only(m, tokens, &loss) < 0) return NAN;
    return loss;
}

/* The decoder's prefill (fast/decode.cu): the trunk and the final norm over tokens [B,T], no
 * loss; the activations (keys, value inputs) and lnf stay for the caller and get_logits. */
int fast_model_trunk(FastModel *m, const int32_t *tokens) {
    ops_use_stream(m->stream);
    m->have_forward = 0;
    TRY(upload_tokens(m, tokens, 0));
    const bf16 *x;
    TRY(trunk_forward(m, &x));
    if (!m->gpt2) TRY(rmsnorm_forward(m->lnf, m->lnf_rstd, x, W16(m->o_lnf), m->N, m->d, (float)m->c.norm_eps));
    m->have_forward = 1;
    return 0;
}

/* Scoring (Backend.token_logprobs): the forward without the loss, then per logits chunk the
 * log-softmax at each target and the greedy flag on the device (token_logprobs_forward);
 * [N] floats and [N] bytes come back, never the [N,V] logits. */
extern "C" int fast_model_token_logprobs(void *vm, const int32_t *tokens, const int32_t *targets, double *logprob,
                                         uint8_t *greedy) {
    FastModel *m = (FastModel *)vm;
    const int N = m->N;
    ops_use_stream(m->stream);
    for (int n = 0; n < N; n++)
        if (targets[n] < -1 || targets[n] >= m->V)
            return vrl_error("scoring: target id %d at batch %d position %d is outside the vocabulary [0, %d)",
                             (int)targets[n], n / m->T, n % m->T, m->V);
    m->have_forward = 0;
    TRY(upload_tokens(m, tokens, 0));
    /* pageable source: the copy has read it when the call returns */
    CUDA_CHECK(cudaMemcpyAsync(m->score_targets, targets, (size_t)N * sizeof(int32_t), cudaMemcpyHostToDevice,
                               m->stream));
    const bf16 *x;
    TRY(trunk_forward(m, &x));
    TRY(zero_wait_params(m, ZERO_HEAD));
    if (!m->gpt2) TRY(rmsnorm_forward(m->lnf, m->lnf_rstd, x, W16(m->o_lnf), N, m->d, (float)m->c.norm_eps));
    for (int r0 = 0; r0 < N; r0 += m->ce_rows) {
        const int R = N - r0 < m->ce_rows ? N - r0 : m->ce_rows;
        TRY(logits_chunk(m, r0, R));
        TRY(token_logprobs_forward(m->score_lp + r0, m->score_greedy + r0, m->logits, m->score_targets + r0, R, m->V,
                                   m->Vp));
    }
    m->have_forward = 1; /* get_logits may recompute this forward's logits from lnf */
    /* the host's one wait: these two copies */
    float *lp = m->h_score_lp;
    CUDA_CHECK(cudaMemcpyAsync(lp, m->score_lp, (size_t)N * sizeof(float), cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaMemcpyAsync(m->h_score_greedy, m->score_greedy, (size_t)N, cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    for (int n = 0; n < N; n++)
        if (targets[n] >= 0) logprob[n] = lp[n], greedy[n] = m->h_score_greedy[n];
    return 0;
}

/* ------------------------------------------------------------------ state */

/* zero_grad left the GEMM ranges as they were and nothing wrote them since: zero them now,
 * before anything reads the gradient (the update, get_state). */
static int settle_grads(FastModel *m) {
    if (m->grads_stale) CUDA_CHECK(cudaMemsetAsync(m->grads, 0, m->t->total * sizeof(float), m->stream));
    m->grads_stale = 0;
    return 0;
}

extern "C" int fast_model_zero_grad(void *vm) {
    FastModel *m = (FastModel *)vm;
    ops_use_stream(m->stream);
    if (m->n_dw_known < 0) { /* not learned yet: all of it */
        CUDA_CHECK(cudaMemsetAsync(m->grads, 0, m->t->total * sizeof(float), m->stream));
    } else {
        if (m->n_gaps < 0) TRY(upload_gaps(m));
        TRY(zero_ranges(m->grads, m->gaps, m->n_gaps, m->gap_max));
        m->grads_stale = 1;
    }
    m->grads_first = 1;
    CUDA_CHECK(cudaMemsetAsync(m->micro_count, 0, sizeof(int32_t), m->stream));
    m->n_micro = 0;
    m->read_valid = 0;
    return 0;
}

/* Queue the copy of the update's micro-batch losses into h_read, then wait for the stream. */
static int read_micro_losses(FastModel *m) {
    if (m->n_micro)
        CUDA_CHECK(cudaMemcpyAsync(m->h_read->loss, m->micro_loss, (size_t)m->n_micro * sizeof(double),
                                   cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    m->read_valid = 1;
    return 0;
}

static int queue_update(FastModel *m, const void *opt) { return fast_adamw_queue(m, (const AdamWConfig *)opt); }

/* The update: this step's AdamW scalars to the device, the captured update graph (or the
 * kernels one by one: VRL_FAST_GRAPH=0, several ranks), then the step's one wait, which
 * brings back the squared norm and the update's micro-batch losses together. */
static int update(FastModel *m, const AdamWConfig *opt, double lr, long t, double *norm) {
    TRY(settle_grads(m)); /* a step with no micro-batch since zero_grad */
    fast_adamw_scalars(m, opt, lr, t); /* h_adamw is free: the previous step waited for its copy */
    CUDA_CHECK(cudaMemcpyAsync(m->adamw_scalars, m->h_adamw, sizeof *m->h_adamw, cudaMemcpyHostToDevice, m->stream));
    const double decays = opt->weight_decay != 0; /* which runs of tensors the update launches */
    TRY(run_step_graph(m, &m->update_graph, decays, queue_update, opt));
    CUDA_CHECK(cudaMemcpyAsync(&m->h_read->norm_sq, fast_adamw_norm_sq(m), sizeof(double), cudaMemcpyDeviceToHost,
                               m->stream));
    TRY(read_micro_losses(m));
    *norm = sqrt(m->h_read->norm_sq); /* with several ranks: the global squared norm adamw.cu wrote back */
    return 0;
}

extern "C" double fast_model_step(void *vm, const AdamWConfig *opt, double lr, long t) {
    FastModel *m = (FastModel *)vm;
    ops_use_stream(m->stream);
    double norm = NAN;
    return update(m, opt, lr, t, &norm) < 0 ? NAN : norm;
}

extern "C" int fast_model_micro_losses(void *vm, double *out, int n) {
    FastModel *m = (FastModel *)vm;
    if (n < 0 || n > m->n_micro)
        return vrl_error("fast model: %d micro-batch losses asked for, %d forward_backward calls since zero_grad", n,
                         m->n_micro);
    if (!m->read_valid) TRY(read_micro_losses(m)); /* no step since the last forward_backward */
    memcpy(out, m->h_read->loss + (m->n_micro - n), (size_t)n * sizeof(double)); /* the last n */
    return 0;
}

extern "C" int fast_model_get_state(void *vm, float *params, float *grads, float *exp_avg, float *exp_avg_sq) {
    FastModel *m = (FastModel *)vm;
    const size_t bytes = m->t->total * sizeof(float);
    ops_use_stream(m->stream);
#if VRL_HAVE_NCCL
    if (params || exp_avg || exp_avg_sq) TRY(zero_gather_state(m)); /* data parallel: every rank calls this */
#endif
    /* pageable destinations: each copy is done when it returns; the stream wait covers all */
    if (params) CUDA_CHECK(cudaMemcpyAsync(params, m->params32, bytes, cudaMemcpyDeviceToHost, m->stream));
    if (grads) TRY(settle_grads(m));
    if (grads) CUDA_CHECK(cudaMemcpyAsync(grads, m->grads, bytes, cudaMemcpyDeviceToHost, m->stream));
    if (exp_avg) CUDA_CHECK(cudaMemcpyAsync(exp_avg, m->exp_avg, bytes, cudaMemcpyDeviceToHost, m->stream));
    if (exp_avg_sq) CUDA_CHECK(cudaMemcpyAsync(exp_avg_sq, m->exp_avg_sq, bytes, cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    return 0;
}

extern "C" int fast_model_set_state(void *vm, const float *params, const float *exp_avg, const float *exp_avg_sq) {
    FastModel *m = (FastModel *)vm;
    const size_t P = m->t->total, bytes = P * sizeof(float);
    ops_use_stream(m->stream);
    if (params) {
        CUDA_CHECK(cudaMemcpyAsync(m->params32, params, bytes, cudaMemcpyHostToDevice, m->stream));
        TRY(cast_to_bf16(m->params16, m->params32, P));
    }
    if (exp_avg) CUDA_CHECK(cudaMemcpyAsync(m->exp_avg, exp_avg, bytes, cudaMemcpyHostToDevice, m->stream));
    if (exp_avg_sq) CUDA_CHECK(cudaMemcpyAsync(m->exp_avg_sq, exp_avg_sq, bytes, cudaMemcpyHostToDevice, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    return 0;
}

/* The bf16 logits the training step and the scoring use, recomputed chunk by chunk from the
 * kept final-norm output and widened to fp32 on the host (exact): [N,V] out, as ref's. */
extern "C" int fast_model_get_logits(void *vm, float *out) {
    FastModel *m = (FastModel *)vm;
    if (!m->have_forward) return vrl_error("fast model: no forward to take logits from");
    ops_use_stream(m->stream);
    bf16 *chunk = (bf16 *)malloc((size_t)m->ce_rows * m->Vp * sizeof(bf16)); /* host [ce_rows,Vp] */
    if (!chunk) return vrl_error("fast model: out of host memory for the logits");
    int rc = 0;
    for (int r0 = 0; r0 < m->N && rc == 0; r0 += m->ce_rows) {
        const int R = m->N - r0 < m->ce_rows ? m->N - r0 : m->ce_rows;
        cudaError_t e = cudaSuccess;
        rc = logits_chunk(m, r0, R);
        if (rc == 0) e = cudaMemcpyAsync(chunk, m->logits, (size_t)R * m->Vp * sizeof(bf16), cudaMemcpyDeviceToHost,
                                         m->stream);
        if (rc == 0 && e == cudaSuccess) e = cudaStreamSynchronize(m->stream); /* the buffer is reused next chunk */
        if (e != cudaSuccess) rc = vrl_error("fast model: reading the logits back: %s", cudaGetErrorString(e));
        for (int r = 0; r < R && rc == 0; r++) /* the V real columns of each padded row */
            for (int v = 0; v < m->V; v++)
                out[(size_t)(r0 + r) * m->V + v] = __bfloat162float(chunk[(size_t)r * m->Vp + v]);
    }
    free(chunk);
    return rc;
}

extern "C" size_t fast_model_device_bytes(void *vm) {
    FastModel *m = (FastModel *)vm;
    return m->arena_bytes + (m->mix ? m->mix->bytes : 0) + m->blas.workspace_bytes;
}

FAST_NS_END
