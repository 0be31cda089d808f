/* bench_dist_cost.c: a cost model of fast/'s data parallelism (docs/distributed.md).
 *
 * No GPU ran for these figures: every time is computed from stated assumptions, printed
 * with the results. Per update and rank, fast/zero.cu moves
 *   reduce-scatter of the fp32 gradients  (W-1)/W x 4P bytes
 *   all-gather of the bf16 parameters     (W-1)/W x 2P bytes
 * (P parameters, W ranks; a ring sends and receives that much per rank). At a bus
 * bandwidth busbw (nccl-tests' definition: time = (W-1)/W x size / busbw) that takes
 * 6P (W-1)/W / busbw. Compute per update: tokens x (6 N + 12 L d T) FLOPs, N the
 * parameters that take part in matrix products (all but the embedding table), 12 L d T
 * the attention score and value products (forward + backward, causal mask not halved),
 * at peak x MFU. The reduce-scatter hides under the backward (2/3 of the compute), the
 * all-gather under the next forward (1/3), except the embedding's bucket: its gradient is
 * the backward's last and its parameters the forward's first, so both of its transfers
 * are exposed; of the rest, what does not fit under the compute is exposed.
 *
 * usage: bench_dist_cost [--nvlink-busbw GB/s] [--net-gbit Gbit/s] [--peak-tflops X]
 *                        [--mfu X] [--batch B] [--seq T] [--accum K]
 * Parameter counts come from the presets, as `vrl info --model 82M` prints them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/error.h"
#include "common/model/config.h"
#include "common/model/params.h"
#include "common/model/spec.h"

typedef struct {
    double nvlink_busbw; /* GB/s, 8 GPUs in one node */
    double net_gbit;     /* Gbit/s per GPU between nodes */
    double peak_tflops, mfu;
    int batch, seq, accum;
} Assume;

/* One row: a model on W GPUs at busbw GB/s. */
static void row(const char *model, const char *where, int W, double busbw, const Assume *a) {
    ModelConfig c;
    ParamTable t;
    if (config_preset(model, &c) < 0 || model_spec_table(&c, &t) < 0) {
        fprintf(stderr, "bench_dist_cost: %s\n", vrl_last_error());
        exit(1);
    }
    const double P = (double)t.total;
    const double E = (double)c.vocab_size * c.d_model; /* the embedding table */
    const double N = P - E;                            /* without the embedding lookup */
    param_table_free(&t);
    const double frac = (W - 1.0) / W;
    const double rs = frac * 4 * P, ag = frac * 2 * P; /* bytes per rank per update */
    const double t_rs = rs / (busbw * 1e9), t_ag = ag / (busbw * 1e9);
    const double tokens = (double)a->batch * a->seq * a->accum; /* per GPU per update */
    const double flops = tokens * (6 * N + 12.0 * c.n_layers * c.d_model * a->seq);
    const double t_cmp = flops / (a->peak_tflops * 1e12 * a->mfu);
    const double t_bwd = t_cmp * 2 / 3, t_fwd = t_cmp / 3;
    const double e = E / P, rs_rest = t_rs * (1 - e), ag_rest = t_ag * (1 - e);
    const double exposed = t_rs * e + (rs_rest > t_bwd ? rs_rest - t_bwd : 0) + t_ag * e +
                           (ag_rest > t_fwd ? ag_rest - t_fwd : 0);
    printf("%-5s %-22s %3d %8.1f %9.1f %9.1f %9.2f %9.2f %9.1f %8.1f%% %8.1f%%\n", model, where, W, busbw, rs / 1e6,
           ag / 1e6, t_rs * 1e3, t_ag * 1e3, t_cmp * 1e3, 100 * t_cmp / (t_cmp + t_rs + t_ag),
           100 * t_cmp / (t_cmp + exposed));
}

static double flag(int argc, char **argv, const char *name, double dflt) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return atof(argv[i + 1]);
    return dflt;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i += 2)
        if (strncmp(argv[i], "--", 2) || i + 1 >= argc || atof(argv[i + 1]) <= 0) {
            fprintf(stderr, "usage: bench_dist_cost [--nvlink-busbw GB/s] [--net-gbit Gbit/s] [--peak-tflops X] "
                            "[--mfu X] [--batch B] [--seq T] [--accum K] (positive numbers)\n");
            return 2;
        }
    Assume a = {
        .nvlink_busbw = flag(argc, argv, "--nvlink-busbw", 360),
        .net_gbit = flag(argc, argv, "--net-gbit", 400),
        .peak_tflops = flag(argc, argv, "--peak-tflops", 989),
        .mfu = flag(argc, argv, "--mfu", 0.40),
        .batch = (int)flag(argc, argv, "--batch", 8),
        .seq = (int)flag(argc, argv, "--seq", 2048),
        .accum = (int)flag(argc, argv, "--accum", 1),
    };
    printf("cost model of fast/'s ZeRO-2 data parallelism (no GPU ran: every figure is computed)\n");
    printf("assumed: 8-GPU node bus bandwidth %.0f GB/s (NVLink, nccl-tests busbw); between nodes %.0f Gbit/s\n"
           "per GPU (one NIC per GPU, ring bound by it: %.1f GB/s); compute %.0f TFLOP/s bf16 peak x MFU %.2f;\n"
           "per GPU and update: batch %d x seq %d x accum %d tokens; reduce-scatter fp32 grads, all-gather bf16 "
           "params\n\n",
           a.nvlink_busbw, a.net_gbit, a.net_gbit / 8, a.peak_tflops, a.mfu, a.batch, a.seq, a.accum);
    printf("%-5s %-22s %3s %8s %9s %9s %9s %9s %9s %9s %9s\n", "model", "setting", "W", "GB/s", "RS MB", "AG MB",
           "RS ms", "AG ms", "comp ms", "eff", "eff+ovl");
    const char *models[2] = {"82M", "468M"};
    for (int k = 0; k < 2; k++) {
        row(models[k], "8 GPUs, NVLink", 8, a.nvlink_busbw, &a);
        row(models[k], "2 nodes x 8, network", 16, a.net_gbit / 8 < a.nvlink_busbw ? a.net_gbit / 8 : a.nvlink_busbw,
            &a);
    }
    printf("\nRS/AG MB: bytes each rank sends (and receives) per update; eff: compute / (compute + RS + AG);\n"
           "eff+ovl: with the reduce-scatter under the backward and the all-gather under the next forward\n"
           "(the embedding's bucket exposed both ways).\n");
    return 0;
}
