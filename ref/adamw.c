/* adamw.c: global-norm clipping and AdamW, as torch does them (formulas.md §2).
 *
 * Clipping follows torch.nn.utils.clip_grad_norm_: total = ‖g‖₂ over every gradient,
 * coef = clip / (total + 1e-6), g ← g·min(1, coef). The norm is accumulated in double
 * (one fixed order: table order, element order), so it is deterministic.
 *
 * The update follows torch.optim.AdamW's _single_tensor_adamw, operation for operation,
 * each in `real` with the Python-float scalars rounded to `real` as torch's CPU kernels do:
 *   (step is 1-based: torch's state["step"] after its increment)
 *   p   ← p · (1 − lr·wd)                        (decoupled decay; only ParamInfo.decay)
 *   m   ← m.lerp(g, 1 − β1) = m + (1 − β1)·(g − m)   (torch's lerp for weight < 0.5)
 *   v   ← v·β2 + (1 − β2)·g·g                    (mul_ then addcmul_)
 *   denom = sqrt(v) / sqrt(1 − β2^t) + eps
 *   p   ← p + (−lr / (1 − β1^t))·m / denom       (addcdiv_)
 *
 * Threads (threads.h): the clip and the update are element by element and split among
 * ref_threads() threads; the norm's sum stays on one thread, in its one order. */
#include "ref/adamw.h"

#include "ref/isa.h"
#include "ref/threads.h"

/* elements below which a loop is not worth waking a second thread for */
#define PAR_MIN_ELEMS 16384

REF_HOT double adamw_update(const ParamTable *t, real *params, real *g, real *exp_avg, real *exp_avg_sq, long step,
                    const AdamWConfig *opt, double lr) {
    const size_t P = t->total;

    double ss = 0;
    for (size_t i = 0; i < P; i++) ss += (double)g[i] * g[i];
    const double norm = sqrt(ss);
    if (opt->clip > 0) {
        double coef = opt->clip / (norm + 1e-6);
        if (coef < 1) { /* torch multiplies by the clamped coef; 1.0 changes nothing */
            const real c = (real)coef;
            const int nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && P >= PAR_MIN_ELEMS) schedule(static)
            for (size_t i = 0; i < P; i++) g[i] *= c;
        }
    }

    const double st = (double)step;
    const double bc1 = 1 - pow(opt->beta1, st), bc2 = 1 - pow(opt->beta2, st);
    const real step_size = (real)(-(lr / bc1));
    const real bc2_sqrt = (real)sqrt(bc2);
    const real w1 = (real)(1 - opt->beta1), b2 = (real)opt->beta2, w2 = (real)(1 - opt->beta2);
    const real eps = (real)opt->eps;
    const real decay = (real)(1 - lr * opt->weight_decay);

    for (int k = 0; k < t->n; k++) {
        const ParamInfo *info = &t->p[k];
        real *p = params + info->offset, *gk = g + info->offset;
        real *ma = exp_avg + info->offset, *va = exp_avg_sq + info->offset;
        const int dec = info->decay && opt->weight_decay != 0, nt = ref_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && info->numel >= PAR_MIN_ELEMS) schedule(static)
        for (size_t i = 0; i < info->numel; i++) {
            if (dec) p[i] *= decay;
            ma[i] = ma[i] + w1 * (gk[i] - ma[i]);
            va[i] = va[i] * b2 + w2 * gk[i] * gk[i];
            real denom = rsqrt_(va[i]) / bc2_sqrt + eps; /* rsqrt_ is real.h's sqrt */
            p[i] = p[i] + step_size * ma[i] / denom;
        }
    }
    return norm;
}
