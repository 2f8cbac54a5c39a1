#!/usr/bin/python3
"""Writes per-asset sensor CSV files for shardflow-convert (and the LSTM autoencoder workload).

    /usr/bin/python3 scripts/make_sensor_csv.py --out DIR --assets 8 --steps 512 --channels 4 \
        [--seed 1] [--anomalies 3] [--steps-jitter 0]

DIR/asset-0000.csv ... asset-NNNN.csv, each with the header `t,ch0,...,chC-1` and one row per
step: t is the step index (0, 1, 2, ...); channel c of asset a is a sinusoid with its own
period (16..128 steps), phase, amplitude (0.5..2) and offset (-1..1), plus Gaussian noise
(sigma 0.05 of the amplitude). Per asset, --anomalies anomalies are injected at random steps:
a spike (+/- 6 amplitudes on one step of one channel) or a level shift (+/- 3 amplitudes on one
channel for 8..32 steps). DIR/anomalies.txt (CSV text; not *.csv, so not read as an asset) lists them: asset,kind,channel,start,length.
--steps-jitter J gives each asset a length drawn from [steps - J, steps] (ragged series).
Everything is drawn from numpy's default_rng(seed): the same arguments give the same files.
Needs numpy (/usr/bin/python3 has Debian's python3-numpy).
"""
import argparse
import os
import sys

import numpy as np


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--assets", type=int, default=8)
    p.add_argument("--steps", type=int, default=512)
    p.add_argument("--channels", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--anomalies", type=int, default=3, help="per asset")
    p.add_argument("--steps-jitter", type=int, default=0)
    a = p.parse_args(argv)
    if a.assets < 1 or a.steps < 1 or a.channels < 1 or a.anomalies < 0:
        p.error("--assets, --steps and --channels must be >= 1, --anomalies >= 0")
    if not 0 <= a.steps_jitter < a.steps:
        p.error("--steps-jitter must be in [0, steps)")
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)
    anomalies = []
    header = "t," + ",".join(f"ch{c}" for c in range(a.channels))
    for asset in range(a.assets):
        steps = a.steps - int(rng.integers(0, a.steps_jitter + 1))
        t = np.arange(steps)
        period = rng.uniform(16, 128, a.channels)
        phase = rng.uniform(0, 2 * np.pi, a.channels)
        amp = rng.uniform(0.5, 2.0, a.channels)
        offset = rng.uniform(-1, 1, a.channels)
        x = offset + amp * np.sin(2 * np.pi * t[:, None] / period + phase)
        x += rng.normal(0, 0.05, x.shape) * amp
        for _ in range(a.anomalies):
            c = int(rng.integers(0, a.channels))
            start = int(rng.integers(0, steps))
            sign = 1 if rng.random() < 0.5 else -1
            if rng.random() < 0.5:
                x[start, c] += sign * 6 * amp[c]
                anomalies.append((asset, "spike", c, start, 1))
            else:
                length = int(min(rng.integers(8, 33), steps - start))
                x[start:start + length, c] += sign * 3 * amp[c]
                anomalies.append((asset, "shift", c, start, length))
        data = np.column_stack([t, x])
        fmt = ["%d"] + ["%.6f"] * a.channels
        np.savetxt(os.path.join(a.out, f"asset-{asset:04d}.csv"), data, fmt=fmt, delimiter=",",
                   header=header, comments="")
    with open(os.path.join(a.out, "anomalies.txt"), "w") as f:
        f.write("asset,kind,channel,start,length\n")
        for row in anomalies:
            f.write(",".join(str(v) for v in row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
