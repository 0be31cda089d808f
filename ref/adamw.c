/* adamw.c: global-norm clipping and AdamW, as torch does them (formulas.md §2).
 *
 * Clipping follows torch.nn.utils.clip_grad_norm_: total = ‖g‖₂ over every gradient,
 * coef = clip / (total + 1e-6), g ← g·min(1, coef). The squared norm is accumulated in
 * double in one fixed order that depends only on the buffer's length: the flat gradient
 * buffer is cut into chunks of NORM_CHUNK elements, each chunk summed in lanes.h's
 * SUM_LANES interleaved partial sums (element i into lane i mod SUM_LANES) that are then
 * added in lane order, and the chunk sums are added in chunk order. The chunks are shared
 * among the threads, so the norm is the same bits for any thread count, and the lanes let
 * the sum vectorise. Up to efde7f2 the sum was one chain in element order, on one thread
 * (latency-bound): the norm, and so the clip coefficient, now differ from those commits'
 * in the last bits (docs/design/cpu-reference-speed.md, "AdamW and the gradient clip").
 *
 * The update follows torch.optim.AdamW's _single_tensor_adamw, operation for operation,
 * each in `real` with the Python-float scalars rounded to `real` as torch's CPU kernels do:
 *   (step is 1-based: torch's state["step"] after its increment)
 *   g   ← g · c                                  (c = (real)coef when clipping, else 1)
 *   p   ← p · (1 − lr·wd)                        (decoupled decay; only ParamInfo.decay)
 *   m   ← m.lerp(g, 1 − β1) = m + (1 − β1)·(g − m)   (torch's lerp for weight < 0.5)
 *   v   ← v·β2 + (1 − β2)·g·g                    (mul_ then addcmul_)
 *   denom = sqrt(v) / sqrt(1 − β2^t) + eps
 *   p   ← p + (−lr / (1 − β1^t))·m / denom       (addcdiv_)
 * The clip's scaling is done in the same pass as the update (one pass over g, p, m, v
 * instead of two), with the same roundings: g·c rounded to `real`, written back to g
 * (Backend.step leaves the clipped gradients, test_adamw reads them) and used by the
 * update. Without a clip nothing is written to g. A tensor without decay is multiplied by
 * 1, which is exact, so the loop has no branch and vectorises (adamw.c is compiled with
 * -fno-math-errno: CMakeLists.txt).
 *
 * Threads (threads.h): the update is element by element and split among ref_threads()
 * threads; the norm as above. */
#include "ref/adamw.h"

#include "ref/isa.h"
#include "ref/lanes.h"
#include "ref/threads.h"

/* elements below which a loop is not worth waking a second thread for */
#define PAR_MIN_ELEMS 16384

/* The norm's fixed order: chunk length, and chunks per parallel loop (their sums wait on
 * the stack to be added in order). */
enum { NORM_CHUNK = 32768, NORM_BATCH = 256 };

/* Σ g[i]² over g [P] in double: each chunk in lanes.h's fixed lanes, the chunk sums in
 * chunk order, the chunks computed on the threads. */
REF_HOT
static double grad_sum_sq(const real *g, size_t P) {
    const size_t chunks = (P + NORM_CHUNK - 1) / NORM_CHUNK;
    const int nt = ref_threads();
    double total = 0;
    for (size_t c0 = 0; c0 < chunks; c0 += NORM_BATCH) {
        const size_t nc = chunks - c0 < NORM_BATCH ? chunks - c0 : NORM_BATCH;
        double part[NORM_BATCH]; /* [nc] the sums of chunks c0 .. c0 + nc - 1 */
#pragma omp parallel for num_threads(nt) if (nt > 1 && nc > 1) schedule(static)
        for (size_t c = 0; c < nc; c++) {
            const size_t i0 = (c0 + c) * NORM_CHUNK;
            const real *x = g + i0;
            part[c] = dot_lanes(x, x, (int)(P - i0 < NORM_CHUNK ? P - i0 : NORM_CHUNK));
        }
        for (size_t c = 0; c < nc; c++) total += part[c];
    }
    return total;
}

/* The update's scalars, each rounded to `real` once. */
typedef struct {
    real clip;      /* the clip coefficient c (1: no clipping) */
    real decay;     /* 1 − lr·wd, or 1 for a tensor without decay */
    real w1, b2, w2; /* 1 − β1, β2, 1 − β2 */
    real step_size; /* −lr / (1 − β1^t) */
    real bc2_sqrt;  /* sqrt(1 − β2^t) */
    real eps;
} Scalars;

/* One tensor's elements [n]: p, g, m, v at the same offsets. With `clipping`, g·c is
 * written back; without, g is only read (the flag is the same for every element: -O3
 * unswitches the loop, so neither copy has a branch inside). */
REF_HOT
static void update_tensor(real *p, real *g, real *ma, real *va, size_t n, const Scalars *s, int clipping) {
    const real c = s->clip, decay = s->decay, w1 = s->w1, b2 = s->b2, w2 = s->w2;
    const real step_size = s->step_size, bc2_sqrt = s->bc2_sqrt, eps = s->eps;
    const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && n >= PAR_MIN_ELEMS) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const real gi = clipping ? g[i] * c : g[i];
        if (clipping) g[i] = gi;
        const real pd = p[i] * decay;
        const real m = ma[i] + w1 * (gi - ma[i]);
        const real v = va[i] * b2 + w2 * gi * gi;
        const real denom = rsqrt_(v) / bc2_sqrt + eps; /* rsqrt_ is real.h's sqrt */
        ma[i] = m;
        va[i] = v;
        p[i] = pd + step_size * m / denom;
    }
}

REF_HOT
double adamw_update(const ParamTable *t, real *params, real *g, real *exp_avg, real *exp_avg_sq, long step,
                    const AdamWConfig *opt, double lr) {
    const double norm = sqrt(grad_sum_sq(g, t->total));
    Scalars s = {.clip = 1};
    if (opt->clip > 0) {
        const double coef = opt->clip / (norm + 1e-6);
        if (coef < 1) s.clip = (real)coef; /* torch multiplies by the clamped coef; 1.0 changes nothing */
    }
    const double st = (double)step;
    const double bc1 = 1 - pow(opt->beta1, st), bc2 = 1 - pow(opt->beta2, st);
    s.step_size = (real)(-(lr / bc1));
    s.bc2_sqrt = (real)sqrt(bc2);
    s.w1 = (real)(1 - opt->beta1);
    s.b2 = (real)opt->beta2;
    s.w2 = (real)(1 - opt->beta2);
    s.eps = (real)opt->eps;
    const real decay = (real)(1 - lr * opt->weight_decay);

    for (int k = 0; k < t->n; k++) {
        const ParamInfo *info = &t->p[k];
        const size_t o = info->offset;
        s.decay = info->decay && opt->weight_decay != 0 ? decay : 1; /* p·1 = p exactly */
        update_tensor(params + o, g + o, exp_avg + o, exp_avg_sq + o, info->numel, &s, s.clip != 1);
    }
    return norm;
}
