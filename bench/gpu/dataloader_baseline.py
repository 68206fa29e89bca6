#!/usr/bin/env python3
"""PyTorch's own input pipeline on the same JPEG folder, for comparison with dlbench's C++ one:
torchvision ImageFolder with RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize;
DataLoader(batch_size, shuffle, pin_memory, persistent_workers) per worker count; images per
second in the steady state.

Each DataLoader worker builds whole batches, and iter() asks for prefetch_factor x workers of them
at once, so with W workers the batches arrive in waves of W. Timing a few batches right after the
first ones measures the hand-over of batches already built, not the pipeline's rate: on 2 cores,
8 workers then showed 1,547 img/s where 2 workers gave 870 (the H200 run of 2026-12-02 showed
21,343 img/s at 8 workers against 890 at 4 for the same reason). So the warm-up covers the whole
first prefetch (at least 2 x W batches), and the timed part is a whole number of waves: at least
BATCHES and at least 2 x W batches, rounded up to a multiple of W, crossing epochs as needed.

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
    print("| workers | img/s | batches timed |")
    print("|---|---|---|")
    for w in [int(x) for x in args.workers.split(",")]:
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=w,
                                             pin_memory=True, persistent_workers=True, drop_last=True)
        it = iter(loader)

        def next_batch():
            nonlocal it
            try:
                return next(it)
            except StopIteration:
                it = iter(loader)
                return next(it)

        waves = max(1, w)
        for _ in range(max(args.warmup, 2 * waves)):
            next_batch()
        timed = -(-max(args.batches, 2 * waves) // waves) * waves
        t0 = time.perf_counter()
        n = 0
        for _ in range(timed):
            x, _ = next_batch()
            n += x.shape[0]
        dt = time.perf_counter() - t0
        print("| %d | %.0f | %d |" % (w, n / dt, timed), flush=True)
        del it, loader


if __name__ == "__main__":
    main()
