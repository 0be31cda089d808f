/* run_compare.c: are two run folders the same training? (test_distributed.sh)
 *
 * usage: run_compare RUN_A RUN_B TOL
 * Compares the training losses of RUN/metrics.jsonl step by step (both runs must log
 * the same steps) and every tensor of RUN/model.safetensors element by element, prints
 * the largest absolute differences and whether the two are bit-identical, and exits 0
 * when both maxima are <= TOL, 1 otherwise (2 on unreadable input). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/base/safetensors.h"

#define MAX_STEPS 100000

/* losses[step] of the training lines, NAN where a step has none; returns the last step, or -1. */
static long read_losses(const char *dir, double *losses) {
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "run_compare: %s: cannot open\n", path);
        return -1;
    }
    for (long s = 0; s < MAX_STEPS; s++) losses[s] = NAN;
    long last = 0;
    while (fgets(line, sizeof line, f)) {
        long step;
        double loss;
        if (sscanf(line, "{\"step\":%ld,\"loss\":%lf", &step, &loss) == 2 && step > 0 && step < MAX_STEPS) {
            losses[step] = loss;
            if (step > last) last = step;
        }
    }
    fclose(f);
    return last;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: run_compare RUN_A RUN_B TOL\n");
        return 2;
    }
    const double tol = atof(argv[3]);
    double *la = malloc(MAX_STEPS * sizeof *la), *lb = malloc(MAX_STEPS * sizeof *lb); /* [MAX_STEPS] */
    if (!la || !lb) return 2;
    const long na = read_losses(argv[1], la), nb = read_losses(argv[2], lb);
    if (na < 0 || nb < 0) return 2;
    double loss_diff = 0;
    int steps = 0, same_steps = na == nb;
    for (long s = 1; s <= na && s <= nb; s++) {
        same_steps &= isnan(la[s]) == isnan(lb[s]);
        if (isnan(la[s]) || isnan(lb[s])) continue;
        loss_diff = fmax(loss_diff, fabs(la[s] - lb[s]));
        steps++;
    }
    free(la);
    free(lb);

    char pa[4200], pb[4200];
    snprintf(pa, sizeof pa, "%s/model.safetensors", argv[1]);
    snprintf(pb, sizeof pb, "%s/model.safetensors", argv[2]);
    StFile fa, fb;
    if (st_read(pa, &fa) < 0) {
        fprintf(stderr, "run_compare: %s\n", vrl_last_error());
        return 2;
    }
    if (st_read(pb, &fb) < 0) {
        fprintf(stderr, "run_compare: %s\n", vrl_last_error());
        return 2;
    }
    double w_diff = 0;
    size_t values = 0;
    int same_tensors = fa.n == fb.n;
    for (int i = 0; i < fa.n && same_tensors; i++) {
        const StTensor *a = &fa.t[i], *b = st_find(&fb, a->name);
        const size_t n = a->nbytes / dtype_size(a->dtype);
        if (!b || b->nbytes / dtype_size(b->dtype) != n) {
            same_tensors = 0;
            break;
        }
        double *xa = malloc(n * sizeof *xa), *xb = malloc(n * sizeof *xb); /* [n] the tensor in double */
        if (!xa || !xb || st_to_f64(a, xa, n) < 0 || st_to_f64(b, xb, n) < 0) return 2;
        for (size_t k = 0; k < n; k++) w_diff = fmax(w_diff, fabs(xa[k] - xb[k]));
        values += n;
        free(xa);
        free(xb);
    }
    st_free(&fa);
    st_free(&fb);
    printf("losses: %d steps, max |diff| %.3e; weights: %zu values, max |diff| %.3e; bit-identical: %s\n", steps,
           loss_diff, values, w_diff, same_steps && same_tensors && loss_diff == 0 && w_diff == 0 ? "yes" : "no");
    if (!same_steps) printf("the runs logged different steps (%ld and %ld)\n", na, nb);
    if (!same_tensors) printf("the models hold different tensors\n");
    return same_steps && same_tensors && steps > 0 && loss_diff <= tol && w_diff <= tol ? 0 : 1;
}
