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

int backend_decode_check(const int32_t *tokens, int batch, int n_new, int pos, int tmax, int vocab) {
    if (n_new < 0 || pos + n_new > tmax)
        return vrl_error("decode: %d more positions do not fit the cache (%d of %d used)", n_new, pos, tmax);
    for (int i = 0; i < batch * n_new; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return vrl_error("decode: token id %d at batch %d position %d is outside the vocabulary [0, %d)",
                             (int)tokens[i], i / n_new, pos + i % n_new, vocab);
    return 0;
}
