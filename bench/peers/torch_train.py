"""PyTorch peer of shardflow-train for issue 25: the configs/ MLP, CNN and ResNet on Fashion-MNIST.

Trains the same model as configs/fmnist_mlp.ini, fmnist_cnn.ini or fmnist_resnet.ini (same layers, He
normal init, SGD with momentum 0.9, the presets' learning rate, warm-up + cosine schedule and
weight decay) on the same data (the Debian package dataset-fashion-mnist, the source of
shardflow's TFRecords), global batch 128, on --threads intra-op threads. The data is decoded
into memory first (not timed); each epoch's wall time counts the shuffle, the batching and
every training step. Prints one JSON line: per-epoch seconds, samples/s of the whole epochs,
and test accuracy. --precision bf16 runs the forward pass and the loss (training and test) under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's CPU mixed precision: matmuls and convs
in bf16 (oneDNN), fp32 master weights and optimizer, as shardflow's train.precision = bf16. Run by bench/peers/run_torch_peer.sh (a venv with torch from the index).
"""
import contextlib
import json
import math
import time

import torch
from torch import nn

from fmnist_peer import SETTINGS, load as load_arrays, parse_args


def load(split):
    images, labels = load_arrays(split)  # (N, 28, 28, 1): PyTorch wants (N, 1, 28, 28)
    x = torch.from_numpy(images.transpose(0, 3, 1, 2).copy())
    return x, torch.from_numpy(labels)


class Residual(nn.Module):
    """shardflow's residual:F[:s] (core/layers/residual.hpp): conv 3x3 (stride s) -> batch norm ->
    relu -> conv 3x3 -> batch norm, plus the input or a 1x1 stride-s conv of it, then relu. Convs
    keep their biases and batch norm takes Keras's momentum and epsilon, as shardflow's do; a
    stride-2 conv pads 1 on every side where shardflow pads "same" (0 before, 1 after): the
    same output shape and FLOPs."""

    def __init__(self, cin, f, stride=1):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(cin, f, 3, stride, 1), bn(f), nn.ReLU(),
                                  nn.Conv2d(f, f, 3, 1, 1), bn(f))
        self.shortcut = (nn.Conv2d(cin, f, 1, stride) if stride != 1 or cin != f
                         else nn.Identity())

    def forward(self, x):
        return torch.relu(self.main(x) + self.shortcut(x))


def bn(f):
    return nn.BatchNorm2d(f, eps=1e-3, momentum=0.01)


def model_for(name):
    if name == "resnet":  # core/model.cpp's preset: 77,898 parameters
        layers = [nn.Conv2d(1, 16, 3, padding=1), bn(16), nn.ReLU(), Residual(16, 16),
                  Residual(16, 32, 2), Residual(32, 64, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                  nn.Linear(64, 10)]
    elif name == "mlp":
        layers = [nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                  nn.Linear(256, 10)]
    else:
        layers = [nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                  nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                  nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.3), nn.Linear(1024, 10)]
    m = nn.Sequential(*layers)
    for layer in m.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.zeros_(layer.bias)
    return m


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    x, y = load("train")
    tx, ty = load("test")
    m = model_for(a.model)
    s = SETTINGS[a.model]
    opt = torch.optim.SGD(m.parameters(), lr=s["lr"], momentum=0.9,
                          weight_decay=s["weight_decay"])
    steps_per_epoch = len(x) // a.batch
    total = steps_per_epoch * a.epochs

    def rate(step):
        if step < a.warmup_steps:
            return (step + 1) / a.warmup_steps
        t = (step - a.warmup_steps) / max(1, total - a.warmup_steps)
        floor = s["min_lr"] / s["lr"]
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    loss_fn = nn.CrossEntropyLoss()

    def precision():
        if a.precision == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    epoch_s = []
    for _ in range(a.epochs):
        m.train()
        t0 = time.perf_counter()
        order = torch.randperm(len(x))
        for i in range(steps_per_epoch):
            idx = order[i * a.batch:(i + 1) * a.batch]
            opt.zero_grad(set_to_none=True)
            with precision():
                loss = loss_fn(m(x[idx]), y[idx])
            loss.backward()
            opt.step()
            sched.step()
        epoch_s.append(time.perf_counter() - t0)
    m.eval()
    with torch.no_grad(), precision():
        correct = sum(int((m(tx[i:i + 1000]).argmax(1) == ty[i:i + 1000]).sum())
                      for i in range(0, len(tx), 1000))
    samples = steps_per_epoch * a.batch * a.epochs
    print(json.dumps({"peer": "pytorch", "version": torch.__version__, "model": a.model,
                      "threads": a.threads, "epochs": a.epochs, "batch": a.batch,
                      "precision": a.precision,
                      "epoch_seconds": [round(e, 3) for e in epoch_s],
                      "samples_per_s": round(samples / sum(epoch_s), 1),
                      "loss": round(loss.item(), 4),
                      "test_accuracy": correct / len(tx)}))


if __name__ == "__main__":
    main()
