"""Checks that two shardflow-train runs are bit-identical (run with /usr/bin/python3: h5py).

    compare_runs.py RUN_A RUN_B STEPS [LOG_EVERY]

RUN_A/metrics.jsonl and RUN_B/metrics.jsonl must hold the same training lines, one for every
step 1..STEPS with LOG_EVERY 1 (the default; train.log_every=1), with equal step, epoch, loss,
accuracy, lr and, at epoch ends, epoch_loss and epoch_accuracy (floats compared exactly, as JSON
round-trips doubles); timing fields are ignored. The last checkpoint of each
run (RUN/checkpoints/ckpt-<STEPS>.h5) must hold the same /params, /buffers and /optimizer
datasets, byte for byte, and the same step attribute. Exits 1 naming the first difference.
"""
import json
import sys

import h5py
import numpy as np

COMPARED = ("step", "epoch", "loss", "accuracy", "lr", "epoch_loss", "epoch_accuracy")


def train_lines(run):
    lines = {}
    with open(f"{run}/metrics.jsonl") as f:
        for text in f:
            line = json.loads(text)
            if "loss" not in line:
                continue  # evaluation lines
            lines[line["step"]] = {k: line.get(k) for k in COMPARED}
    return lines


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and name.split("/")[0] in ("params", "buffers",
                                                                         "optimizer"):
                out[name] = np.asarray(obj[()])
        f.visititems(visit)
        return out, int(f.attrs["step"])


def main():
    run_a, run_b, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    every = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    a, b = train_lines(run_a), train_lines(run_b)
    if sorted(a) != sorted(b):
        sys.exit(f"metrics lines at different steps: {sorted(a)} vs {sorted(b)}")
    for step in range(1, steps + 1) if every == 1 else sorted(a):
        if step not in a or step not in b:
            sys.exit(f"step {step}: no metrics line in {run_a if step not in a else run_b}")
        if a[step] != b[step]:
            sys.exit(f"step {step}: metrics differ: {a[step]} vs {b[step]}")
    last = max(a)
    print(f"metrics: {len(a)} lines identical (loss at {last}: {a[last]['loss']!r})")

    name = f"checkpoints/ckpt-{steps:09d}.h5"
    da, step_a = datasets(f"{run_a}/{name}")
    db, step_b = datasets(f"{run_b}/{name}")
    if step_a != steps or step_b != steps:
        sys.exit(f"checkpoint step attributes {step_a}, {step_b}, wanted {steps}")
    if sorted(da) != sorted(db):
        sys.exit(f"checkpoint datasets differ: {sorted(da)} vs {sorted(db)}")
    if not any(k.startswith("params/") for k in da) or not any(
            k.startswith("optimizer/") for k in da):
        sys.exit(f"checkpoint lacks params or optimizer datasets: {sorted(da)}")
    for k in sorted(da):
        x, y = da[k], db[k]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64)).max() \
                if x.shape == y.shape else "shape"
            sys.exit(f"{name} /{k} differs (max abs difference {diff})")
    print(f"checkpoints: {len(da)} datasets identical byte for byte")


if __name__ == "__main__":
    main()
