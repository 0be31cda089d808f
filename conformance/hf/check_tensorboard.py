"""check_tensorboard.py: TensorBoard's own reader on a vrl run folder, against its metrics.jsonl.

usage: check_tensorboard.py RUN
Reads RUN with tensorboard's EventAccumulator (every event kept: size_guidance 0) and checks:
  - the scalar tags are exactly those metrics.jsonl implies: loss, lr, grad_norm, tokens_per_s,
    elapsed_s per training line, SPLIT_loss per evaluation line and SPLIT_loss/DOMAIN per domain
    line ({"event": ...} lines carry no scalar);
  - every tag has each step once (no duplicate after a resume), the steps of metrics.jsonl;
  - each value is the float32 of the number metrics.jsonl holds, exactly (null: NaN or inf).
Prints one line per tag; exit 1 with the first difference.
"""
import json
import math
import sys

import numpy as np
from tensorboard.backend.event_processing import event_accumulator


def metrics_scalars(path):
    """{tag: {step: value}} from metrics.jsonl; a step written twice there is itself an error."""
    out = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if "event" in rec:
                continue
            step = rec["step"]
            if "val_loss" in rec:
                tag = rec["split"] + "_loss" + ("/" + rec["domain"] if "domain" in rec else "")
                pairs = [(tag, rec["val_loss"])]
            else:
                pairs = [(k, rec[k]) for k in ("loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s")]
            for tag, value in pairs:
                assert step not in out.setdefault(tag, {}), f"{path}: {tag} at step {step} twice"
                out[tag][step] = value
    return out


def main():
    run = sys.argv[1]
    want = metrics_scalars(f"{run}/metrics.jsonl")
    acc = event_accumulator.EventAccumulator(run, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got_tags = set(acc.Tags()["scalars"])
    assert got_tags == set(want), f"{run}: TensorBoard tags {sorted(got_tags)} != metrics.jsonl's {sorted(want)}"
    for tag in sorted(want):
        events = acc.Scalars(tag)
        steps = [e.step for e in events]
        assert len(steps) == len(set(steps)), f"{run}: {tag}: duplicate steps {steps}"
        assert steps == sorted(want[tag]), f"{run}: {tag}: TensorBoard steps {steps} != metrics.jsonl's {sorted(want[tag])}"
        for e in events:
            w = want[tag][e.step]
            if w is None:
                assert not math.isfinite(e.value), f"{run}: {tag} step {e.step}: {e.value}, metrics.jsonl null"
            else:
                assert e.value == float(np.float32(w)), f"{run}: {tag} step {e.step}: {e.value!r} != float32({w!r})"
        print(f"{tag:28s} {len(steps):3d} steps {steps[0]}..{steps[-1]}, each once, = metrics.jsonl (float32)")


if __name__ == "__main__":
    main()
