"""What the Fashion-MNIST training peers (torch_train.py, keras_train.py) share: the Debian
package's data as numpy arrays, the presets' [train] settings (configs/fmnist_*.ini) and the
command line. numpy only, so each peer's own virtual environment can import it.
"""
import argparse
import gzip

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
SETTINGS = {
    "mlp": dict(lr=0.05, min_lr=0.0005, weight_decay=0.0),
    "cnn": dict(lr=0.02, min_lr=0.0002, weight_decay=0.0001),
    "resnet": dict(lr=0.1, min_lr=0.001, weight_decay=0.0005),
}


def load(split):
    """Images (N, 28, 28, 1) float32 in [0, 1] and labels (N,) int64 of "train" or "test"."""
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(f"{DATA}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)
    with gzip.open(f"{DATA}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn", "resnet"], required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup-steps", type=int, default=200)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    return p.parse_args()
