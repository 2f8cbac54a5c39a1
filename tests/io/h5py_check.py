#!/usr/bin/python3
"""Prints every dataset of an HDF5 file as h5py sees it, one line each in name order:
"name dtype [shape] chunks compression sum" -- the format hdf5_interop_writer prints from the
values it wrote. Exits 77 (CTest's skip code) when h5py is not installed."""
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"h5py_check: {e}; run with Debian's /usr/bin/python3 (python3-h5py)", file=sys.stderr)
    sys.exit(77)


def main(path):
    lines = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        data = obj[...]
        shape = ",".join(str(d) for d in obj.shape)
        chunks = ",".join(str(c) for c in obj.chunks) if obj.chunks else "contiguous"
        compression = f"gzip{obj.compression_opts}" if obj.compression == "gzip" else "none"
        total = float(data.astype(np.float64).sum())
        lines.append(f"{name} {obj.dtype} [{shape}] {chunks} {compression} {total:.6f}")

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    for line in sorted(lines):
        print(line)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: h5py_check.py FILE.h5")
    main(sys.argv[1])
