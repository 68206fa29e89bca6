#!/usr/bin/env python3
"""PyTorch's own input pipeline on the same JPEG folder, for comparison with dlbench's C++ one:
torchvision ImageFolder with RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize;
DataLoader(batch_size, shuffle, pin_memory, persistent_workers) per worker count; images per
second over BATCHES batches after WARMUP batches (the prefetched start is not timed).

Usage: dataloader_baseline.py FOLDER [--workers 1,2,4,8,16] [--batch 256] [--batches 6] [--warmup 2]
"""
import argparse
import time

import torch
import torchvision
from torchvision import transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--workers", default="1,2,4,8,16")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = torchvision.datasets.ImageFolder(args.folder, transform=tf)
    print("torch %s torchvision %s, %d images" % (torch.__version__, torchvision.__version__, len(ds)))
    print("| workers | img/s |")
    print("|---|---|")
    for w in [int(x) for x in args.workers.split(",")]:
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=w,
                                             pin_memory=True, persistent_workers=True, drop_last=True)
        it = iter(loader)
        for _ in range(args.warmup):
            next(it)
        t0 = time.perf_counter()
        n = 0
        for _ in range(args.batches):
            try:
                x, _ = next(it)
            except StopIteration:
                it = iter(loader)
                x, _ = next(it)
            n += x.shape[0]
        dt = time.perf_counter() - t0
        print("| %d | %.0f |" % (w, n / dt), flush=True)
        del it, loader


if __name__ == "__main__":
    main()
