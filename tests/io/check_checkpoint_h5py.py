"""Reads shardflow checkpoints with h5py and checks them against write_checkpoint's expected.txt.

Usage: /usr/bin/python3 check_checkpoint_h5py.py DIR   (prints "ok" and exits 0 on success)

DIR/whole is the checkpoint rank 0 wrote alone, DIR/collective the one every rank wrote from
its slices and DIR/partitioned the one every rank wrote from its part of the model (pipeline
stages, tensor-parallel slices) (each when present). Each is checked on its own; then each must
hold the same objects as DIR/whole with the same dtypes, shapes, chunks, filters, attributes
and bytes.
"""
import os
import sys

import h5py
import numpy as np


def check_one(d):
    lines = open(d + "/expected.txt").read().split("\n")
    path = lines[0]
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == b"shardflow-checkpoint", f.attrs["format"]
        assert int(f.attrs["version"]) == 1
        assert int(f.attrs["step"]) == 7 and int(f.attrs["epoch"]) == 2
        assert f["/config"][()] == b"[model]\nname = cnn\n", f["/config"][()]
        assert list(f["/state/iterator"][...]) == [9, 8, 7]
        assert list(f["/state/rng"][...]) == [11, 12]
        assert f["/optimizer"].attrs["name"] == b"adam"
        n = 0
        for line in lines[1:]:
            if not line:
                continue
            name, shape, total = line.split(" ")
            data = f[name][...]
            assert data.dtype == np.float32, (name, data.dtype)
            want = [int(x) for x in shape.strip("[]").split(",")]
            assert list(data.shape) == want, (name, data.shape, want)
            assert f[name].fletcher32 and f[name].chunks is not None, name
            got = float(data.astype(np.float64).sum())
            assert abs(got - float(total)) <= 1e-4 * max(1.0, abs(float(total))), (name, got, total)
            n += 1
        assert n == int(f.attrs["num_params"]), (n, f.attrs["num_params"])
        for slot in ("m", "v"):
            assert f["/optimizer/" + slot].shape == (int(f.attrs["arena_size"]),)
            assert f["/optimizer/" + slot].fletcher32
        assert "moving_mean" in f["/buffers/01_batchnorm"]
    return path


def objects(f):
    out = {}

    def visit(name, obj):
        out[name] = obj

    f.visititems(visit)
    return out


def same_attrs(a, b, where):
    assert sorted(a.attrs.keys()) == sorted(b.attrs.keys()), where
    for k in a.attrs.keys():
        x, y = a.attrs[k], b.attrs[k]
        assert type(x) == type(y) and np.array_equal(x, y), (where, k, x, y)
        assert a.attrs.get_id(k).dtype == b.attrs.get_id(k).dtype, (where, k)


def compare(path_a, path_b):
    with h5py.File(path_a, "r") as a, h5py.File(path_b, "r") as b:
        same_attrs(a, b, "/")
        oa, ob = objects(a), objects(b)
        assert sorted(oa) == sorted(ob), (sorted(oa), sorted(ob))
        for name, x in oa.items():
            y = ob[name]
            same_attrs(x, y, name)
            assert isinstance(x, h5py.Dataset) == isinstance(y, h5py.Dataset), name
            if not isinstance(x, h5py.Dataset):
                continue
            assert x.dtype == y.dtype and x.shape == y.shape, (name, x.dtype, y.dtype)
            assert x.chunks == y.chunks and x.fletcher32 == y.fletcher32, name
            assert x[()].tobytes() == y[()].tobytes() if x.shape == () else \
                x[...].tobytes() == y[...].tobytes(), name


d = sys.argv[1]
whole = check_one(d + "/whole")
for other in ("collective", "partitioned"):
    if os.path.isdir(d + "/" + other):
        compare(whole, check_one(d + "/" + other))
print("ok")
