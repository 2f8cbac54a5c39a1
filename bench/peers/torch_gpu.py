"""PyTorch peer of shardflow-bench-gpu (issue 22): training samples/s of the same presets on the
same GPU, measured the same way.

Models (core/model.hpp presets, 28x28x1 inputs, 10 classes):
  mlp     flatten, dense 512, relu, dense 256, relu, dense 10
  cnn     conv 32 5x5 same, relu, maxpool 2, conv 64 5x5 same, relu, maxpool 2, flatten,
          dense 1024, relu, dense 10
  resnet  conv 16 3x3 same, batchnorm, relu, 3 basic residual blocks (16, 32/2, 64/2),
          global average pooling, dense 10 (batch norm as Keras' defaults: momentum 0.99,
          epsilon 1e-3)
Each step waits for the previous one, copies a host batch of random images and labels to the GPU
(pageable memory, timed alone: the H2D share), runs forward, cross-entropy, backward and SGD with
momentum 0.9, and reads the loss back, as shardflow-bench gpu does. Timed over --steps steps after 3 warm-up steps. TF32
off unless --tf32 (shardflow's default too). Prints one JSON line per model.

  python3 bench/peers/torch_gpu.py --model all --batch 256 --steps 50
"""
import argparse
import json
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, f, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, f, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(f, eps=1e-3, momentum=0.01)
        self.conv2 = nn.Conv2d(f, f, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(f, eps=1e-3, momentum=0.01)
        self.short = (nn.Conv2d(cin, f, 1, stride, bias=False)
                      if stride != 1 or cin != f else nn.Identity())

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.short(x))


def model_for(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                             nn.ReLU(), nn.Linear(256, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(),
                             nn.Linear(1024, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16, eps=1e-3, momentum=0.01),
                         nn.ReLU(), Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def run(name, a):
    dev = torch.device("cuda")
    m = model_for(name).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(a.batch, 1, 28, 28)
    y = torch.arange(a.batch) % 10
    h2d = 0.0
    loss = None
    for s in range(a.steps + 3):
        if s == 3:
            torch.cuda.synchronize()
            start, h2d = time.perf_counter(), 0.0
        torch.cuda.synchronize()  # the copy's time is the copy's alone, as shardflow-bench gpu
        t0 = time.perf_counter()
        xd, yd = x.to(dev), y.to(dev)
        h2d += time.perf_counter() - t0
        opt.zero_grad(set_to_none=False)
        out = loss_fn(m(xd), yd)
        out.backward()
        opt.step()
        loss = out.item()
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    return {"bench": "gpu", "peer": "pytorch", "torch": torch.__version__, "model": name,
            "device": torch.cuda.get_device_name(0), "batch": a.batch, "steps": a.steps,
            "tf32": a.tf32, "samples_per_s": a.batch * a.steps / wall,
            "ms_per_step": 1e3 * wall / a.steps, "h2d_share": h2d / wall, "loss": loss,
            "peak_mib": torch.cuda.max_memory_allocated() / 2**20}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn", "resnet", "all"], default="all")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--tf32", action="store_true")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(42)
    for name in (["mlp", "cnn", "resnet"] if a.model == "all" else [a.model]):
        print(json.dumps(run(name, a)), flush=True)


if __name__ == "__main__":
    main()
