#!/usr/bin/python3
"""Independent checks of shardflow-convert outputs (numpy/h5py, no shardflow code).

  convert_check.py idx-sums IMAGES.gz LABELS.gz LIMIT STATS.json
      STATS.json (shardflow-inspect stats --json of the shards) must hold LIMIT records whose
      label/id sums and image byte sum (uint8) match the IDX.
  convert_check.py idx-h5 IMAGES.gz LABELS.gz LIMIT OUT.h5 NORMALIZE
      OUT.h5 (output.format=hdf5) holds images/labels/ids equal to the IDX's first LIMIT records,
      normalized as NORMALIZE (none | scale | standardize) says.
  convert_check.py windows CSV_DIR W S NORMALIZE LIMIT OUT.h5 [STATS.json]
      A naive reference: every *.csv of CSV_DIR (name order), channels = columns but `t`,
      normalized with the population mean/std (or min/max) of the whole series of the assets
      that give >= 1 output window (not those too short for one, nor those past the limit),
      windows by asset then start; compared with OUT.h5 and with the shards' stats.
  convert_check.py h5-sums OUT.h5 DATASET=SUM...
"""
import gzip
import json
import os
import sys

import h5py
import numpy as np


def fail(msg):
    print("convert_check: FAIL: " + msg)
    sys.exit(1)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def close(a, b, rel=1e-6, abs_=1e-3):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def idx_sums(images, labels, limit, stats_path):
    x = read_idx(images)[:limit]
    y = read_idx(labels)[:limit]
    st = json.load(open(stats_path))
    f = st["features"]
    n = len(x)
    if st["records"] != n:
        fail(f"records {st['records']} != {n}")
    if int(f["label"]["sum"]) != int(y.astype(np.int64).sum()):
        fail(f"label sum {f['label']['sum']} != {y.astype(np.int64).sum()}")
    if int(f["id"]["sum"]) != n * (n - 1) // 2:
        fail("id sum")
    if int(f["image_raw"]["byte_sum"]) != int(x.astype(np.int64).sum()):
        fail(f"pixel sum {f['image_raw']['byte_sum']} != {x.astype(np.int64).sum()}")
    if int(f["shape"]["sum"]) != n * sum(x.shape[1:] + (1,)):
        fail("shape sum")
    print(f"convert_check: ok, {n} images, pixel sum {x.astype(np.int64).sum()}")


def idx_h5(images, labels, limit, out, normalize):
    x = read_idx(images)[:limit].astype(np.float64)
    y = read_idx(labels)[:limit]
    with h5py.File(out, "r") as h:
        got = h["images"][...]
        if got.shape != x.shape:
            fail(f"images shape {got.shape} != {x.shape}")
        if not np.array_equal(h["labels"][...], y.astype(np.int64)):
            fail("labels differ")
        if not np.array_equal(h["ids"][...], np.arange(len(x))):
            fail("ids differ")
        if normalize == "none":
            want = x
            if got.dtype != np.uint8:
                fail(f"dtype {got.dtype}")
        elif normalize == "scale":
            want = x / 255.0
        else:
            mean, std = x.mean(), x.std()
            want = (x - mean) / std
            if not close(float(h["norm_offset"][0]), mean, 1e-12, 1e-9):
                fail(f"norm_offset {h['norm_offset'][0]} != {mean}")
            if not close(float(h["norm_divisor"][0]), std, 1e-12, 1e-9):
                fail(f"norm_divisor {h['norm_divisor'][0]} != {std}")
        if not np.allclose(got.astype(np.float64), want, rtol=1e-6, atol=1e-6):
            fail(f"images differ: max |diff| {np.abs(got - want).max()}")
    print(f"convert_check: ok, {len(x)} images ({normalize}) in {out}")


def windows(csv_dir, w, s, normalize, limit, out, stats_path=None):
    names = sorted(n for n in os.listdir(csv_dir) if n.endswith(".csv"))
    series = []
    for name in names:
        with open(os.path.join(csv_dir, name)) as f:
            header = f.readline().strip().split(",")
        a = np.loadtxt(os.path.join(csv_dir, name), delimiter=",", skiprows=1, ndmin=2)
        keep = [i for i, h in enumerate(header) if h != "t"]
        series.append(a[:, keep])
    # Naive windows, then the limit, then the statistics of the assets that contribute.
    refs = []
    for ai, x in enumerate(series):
        for k in range(0, max(0, (len(x) - w) // s + 1)):
            refs.append((ai, k * s))
    if limit >= 0:
        refs = refs[:limit]
    # The documented selection: the whole series of every asset with >= 1 output window (an
    # asset shorter than the window, or past the limit, is left out).
    used = sorted({a for a, _ in refs})
    if used:
        allv = np.concatenate([series[a] for a in used])
        if normalize == "standardize":
            off, div = allv.mean(axis=0), allv.std(axis=0)
        elif normalize == "scale":
            off, div = allv.min(axis=0), allv.max(axis=0) - allv.min(axis=0)
        else:
            off, div = np.zeros(allv.shape[1]), np.ones(allv.shape[1])
        div = np.where(div > 0, div, 1.0)
    want = np.array([(series[a][t:t + w] - off) / div for a, t in refs]) if refs else None
    with h5py.File(out, "r") as h:
        got = h["windows"][...]
        if len(refs) != got.shape[0]:
            fail(f"{got.shape[0]} windows, reference {len(refs)}")
        if refs:
            if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                fail(f"windows differ: max |diff| {np.abs(got - want).max()}")
            if not np.array_equal(h["asset_ids"][...], [a for a, _ in refs]):
                fail("asset_ids differ")
            if not np.array_equal(h["starts"][...], [t for _, t in refs]):
                fail("starts differ")
            if not np.array_equal(h["ids"][...], np.arange(len(refs))):
                fail("ids differ")
            if normalize != "none":
                if not np.allclose(h["norm_offset"][...], off, rtol=1e-9, atol=1e-12):
                    fail(f"norm_offset {h['norm_offset'][...]} != {off}")
                if not np.allclose(h["norm_divisor"][...], div, rtol=1e-9, atol=1e-12):
                    fail(f"norm_divisor {h['norm_divisor'][...]} != {div}")
    if stats_path:
        f = json.load(open(stats_path))["features"]
        if int(f["asset_id"]["sum"]) != sum(a for a, _ in refs):
            fail("asset_id sum in the shards")
        if int(f["start"]["sum"]) != sum(t for _, t in refs):
            fail("start sum in the shards")
        ref_sum = float(want.astype(np.float32).astype(np.float64).sum()) if refs else 0.0
        if not close(float(f["window"]["sum"]), ref_sum, 1e-6, 1e-3):
            fail(f"window sum in the shards {f['window']['sum']} != {ref_sum}")
    print(f"convert_check: ok, {len(refs)} windows from {len(series)} assets ({normalize})")


def h5_sums(out, pairs):
    with h5py.File(out, "r") as h:
        for p in pairs:
            name, want = p.split("=")
            got = h[name][...].astype(np.float64).sum()
            if not close(got, float(want), 1e-9, 1e-6):
                fail(f"{name}: sum {got} != {want}")
    print(f"convert_check: ok, {len(pairs)} sums in {out}")


def main(argv):
    cmd = argv[0]
    if cmd == "idx-sums":
        idx_sums(argv[1], argv[2], int(argv[3]), argv[4])
    elif cmd == "idx-h5":
        idx_h5(argv[1], argv[2], int(argv[3]), argv[4], argv[5])
    elif cmd == "windows":
        windows(argv[1], int(argv[2]), int(argv[3]), argv[4], int(argv[5]), argv[6],
                argv[7] if len(argv) > 7 else None)
    elif cmd == "h5-sums":
        h5_sums(argv[1], argv[2:])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
