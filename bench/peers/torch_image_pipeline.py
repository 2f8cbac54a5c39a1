#!/usr/bin/env python3
"""PyTorch DataLoader peer of `shardflow-bench image` (issue 49): torchvision's ImageNet
training transforms over the same JPEG folder (class folders of .jpg).

  run_torch_peer.sh --script torch_image_pipeline.py --root DIR --threads 1
      [--epochs 2] [--size 224] [--batch 64]

torchvision.datasets.ImageFolder (PIL decodes each file whole), transforms RandomResizedCrop(SIZE)
(bilinear), RandomHorizontalFlip, ToTensor, Normalize(ImageNet's means and stds); a DataLoader
with shuffle, batch 64 and num_workers = --threads worker processes (each with
torch.set_num_threads(1)); the main process only collects batches. Run it under taskset on
--threads cores, as bench/image.sh does. Counted: images over the wall time of --epochs passes,
worker start-up included (as shardflow-bench image counts its pipeline's construction).
Prints one JSON line.
"""
import argparse
import json
import sys
import time

import PIL
import torch
import torchvision
from torchvision import datasets, transforms


def worker_init(_):
    torch.set_num_threads(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True, help="folder of class folders of JPEGs")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(49)
    transform = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    data = datasets.ImageFolder(a.root, transform=transform)
    t0 = time.perf_counter()
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True,
                                         num_workers=a.threads, worker_init_fn=worker_init,
                                         persistent_workers=True)
    images = 0
    for _ in range(a.epochs):
        for x, _ in loader:
            if tuple(x.shape[1:]) != (3, a.size, a.size):
                sys.exit(f"torch_image_pipeline: a batch of shape {tuple(x.shape)}")
            images += int(x.shape[0])
    took = time.perf_counter() - t0
    print(json.dumps({"peer": "torch DataLoader", "torch": torch.__version__,
                      "torchvision": torchvision.__version__, "pillow": PIL.__version__,
                      "threads": a.threads, "images": images, "seconds": took,
                      "images_per_s": images / took}))


if __name__ == "__main__":
    main()
