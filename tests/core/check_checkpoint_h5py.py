"""Reads a shardflow checkpoint with h5py and checks it against write_checkpoint's expected.txt.

Usage: /usr/bin/python3 check_checkpoint_h5py.py DIR   (prints "ok" and exits 0 on success)
"""
import sys

import h5py
import numpy as np

d = sys.argv[1]
lines = open(d + "/expected.txt").read().split("\n")
path = lines[0]
with h5py.File(path, "r") as f:
    assert f.attrs["format"] == b"shardflow-checkpoint", f.attrs["format"]
    assert int(f.attrs["version"]) == 1
    assert int(f.attrs["step"]) == 7 and int(f.attrs["epoch"]) == 2
    assert f["/config"][()] == b"[model]\nname = cnn\n", f["/config"][()]
    assert list(f["/state/iterator"][...]) == [9, 8, 7]
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
        assert abs(float(data.astype(np.float64).sum()) - float(total)) <= 1e-4 * max(1.0, abs(float(total))), name
        n += 1
    assert n == int(f.attrs["num_params"]), (n, f.attrs["num_params"])
    for slot in ("m", "v"):
        assert f["/optimizer/" + slot].shape == (int(f.attrs["arena_size"]),)
    assert "moving_mean" in f["/buffers/01_batchnorm"]
print("ok")
