/* golden_report.c: measure every golden case in both ref precisions and print the
 * Markdown table of docs/conformance.md (conformance/golden/report.sh splices it in).
 *
 *   golden_report [FIXTURE_DIR]      (default: the build's VRL_GOLDEN_DIR)
 *
 * Prints measured worst relative errors only; pass/fail against the tolerances is
 * test_golden's job. Exit status 1 if any case FAILs structurally. */
#include <stdio.h>

#include "golden_check.h"

extern const Backend ref_backend_f32, ref_backend_f64;

static void cell(double e) {
    if (e < 0) printf(" – |");
    else printf(" %.1e |", e);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : VRL_GOLDEN_DIR;
    static const char *cases[] = {
#define NAME(c) #c,
        GOLDEN_CASES(NAME)
#undef NAME
    };
    const Backend *bes[2] = {&ref_backend_f64, &ref_backend_f32};
    const char *prec[2] = {"fp64", "fp32"};
    int fails = 0, skipped = 0, ran = 0;
    printf("| case | variant | n_kv | prec | logits | loss | grads (worst) | worst grad tensor | train losses | grad norms "
           "| lrs | final.* |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int b = 0; b < 2; b++) {
            GoldenResult r;
            GoldenStatus s = golden_run(dir, cases[i], bes[b], &r);
            printf("| `%s` | `%s` | %d | %s |", cases[i], r.variant, r.n_kv_heads, prec[b]);
            if (s == GOLDEN_SKIP) {
                skipped++;
                printf(" skipped: not implemented in ref yet | | | | | | | |\n");
                continue;
            }
            if (s == GOLDEN_FAIL) {
                fails++;
                printf(" **FAIL**: %s | | | | | | | |\n", r.msg);
                continue;
            }
            ran++;
            cell(r.logits), cell(r.loss), cell(r.grad);
            printf(" %s |", r.grad_worst);
            cell(r.train_loss), cell(r.grad_norm), cell(r.lr);
            if (r.has_final) printf(" %.1e (%d tensors) |\n", r.final, r.n_final);
            else printf(" – |\n");
        }
    }
    printf("\n%d runs measured, %d skipped (variant not in ref yet), %d structural failures.\n", ran, skipped, fails);
    return fails ? 1 : 0;
}
