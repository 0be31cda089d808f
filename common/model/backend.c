/* backend.c: the one check every command makes before it uses a backend, and a loss read
 * that works for backends that keep it on the device (backend.h). */
#include "common/model/backend.h"

#include <math.h>

#include "common/base/error.h"

int backend_require(const Backend *be, const ModelSpec *s, unsigned need) {
    char why[512] = "";
    const unsigned have = be->capabilities ? be->capabilities(s, why, sizeof why) : 0;
    if ((have & need) == need) return 1;
    const char *what = (need & ~have & BACKEND_CAN_TRAIN)     ? "train"
                       : (need & ~have & BACKEND_CAN_ANALYZE) ? "analyze"
                       : (need & ~have & BACKEND_CAN_SCORE)   ? "score"
                                                              : "generate with";
    if (why[0]) vrl_error("backend %s cannot %s this model: %s", be->name, what, why);
    else vrl_error("backend %s cannot %s this model (variant \"%s\")", be->name, what, s->config.variant);
    return 0;
}

double backend_forward_backward_now(const Backend *be, void *m, const int32_t *tokens, double grad_scale) {
    const double loss = be->forward_backward(m, tokens, grad_scale);
    if (!be->micro_losses || isnan(loss)) return loss;
    double kept = NAN;
    return be->micro_losses(m, &kept, 1) < 0 ? NAN : kept;
}
