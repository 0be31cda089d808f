/* golden_report.c: measure every golden case in both ref precisions and print the
 * Markdown table of docs/results/conformance.md (conformance/golden/report.sh splices it in).
 *
 *   golden_report [FIXTURE_DIR]      (default: the build's VRL_GOLDEN_DIR)
 *
 * Prints measured worst relative errors only; pass/fail against the tolerances is
 * test_golden's job. Exit status 1 if any case FAILs structurally. */
#include <stdio.h>

#include "conformance/golden_check.h"

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
        GoldenResult r[2];
        GoldenStatus s[2];
        for (int b = 0; b < 2; b++) s[b] = golden_run(dir, cases[i], bes[b], &r[b]);
        if (s[0] == GOLDEN_SKIP && s[1] == GOLDEN_SKIP) { /* one row: not built into ref yet */
            skipped += 2;
            printf("| `%s` | `%s` | %d | both | skipped: not implemented in ref yet | | | | | | | |\n", cases[i],
                   r[0].variant, r[0].n_kv_heads);
            continue;
        }
        for (int b = 0; b < 2; b++) {
            printf("| `%s` | `%s` | %d | %s |", cases[i], r[b].variant, r[b].n_kv_heads, prec[b]);
            if (s[b] == GOLDEN_SKIP) {
                skipped++;
                printf(" skipped: %s | | | | | | | |\n", r[b].msg);
                continue;
            }
            if (s[b] == GOLDEN_FAIL) {
                fails++;
                printf(" **FAIL**: %s | | | | | | | |\n", r[b].msg);
                continue;
            }
            ran++;
            cell(r[b].logits), cell(r[b].loss), cell(r[b].grad);
            printf(" `%s` |", r[b].grad_worst);
            cell(r[b].train_loss), cell(r[b].grad_norm), cell(r[b].lr);
            if (r[b].has_final) printf(" %.1e (%d tensors) |\n", r[b].final, r[b].n_final);
            else printf(" – |\n");
        }
    }
    printf("\n%d runs measured, %d skipped (variant not in ref yet), %d structural failures.\n", ran, skipped, fails);
    return fails ? 1 : 0;
}
