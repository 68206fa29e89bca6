#!/usr/bin/env python3
"""ResNet-50 training from Python, eager and captured whole into one CUDA graph (issue 21).

What a user would write instead of dlbench's `cuda_graph: true` train cell: torchvision's
ResNet-50, channels_last, bf16 autocast, SGD (lr 0.1, momentum 0.9, weight decay 1e-4, foreach),
cross-entropy on a fixed random batch; the whole step (zero_grad(set_to_none), forward, loss,
backward, optimizer step) captured with torch.cuda.graph after warm-up steps on a side stream,
as PyTorch's CUDA-graph docs do ("whole-network capture"), then replayed. Each side runs WARMUP
steps, then STEPS timed steps between two synchronisations; prints steps/s and images/s. With
--sync-each-step the device is also synchronised after every step, as dlbench's step loop does
(docs/measurement.md: each step ends with a stream synchronisation before its end stamp), so the
host cannot queue the next step while the GPU runs this one.

Usage: python3 bench/gpu/train_graph_peer.py [--batch-size 64] [--steps 200] [--warmup 20]
                                             [--sync-each-step]
"""
import argparse
import time

import torch
import torchvision


def build(batch_size, device):
    torch.manual_seed(1)
    model = torchvision.models.resnet50(num_classes=1000).to(device, memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, foreach=True)
    x = torch.randn(batch_size, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch_size,), device=device)
    return model, opt, x, y


def step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def timed(fn, steps, sync_each_step):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        fn()
        if sync_each_step:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--sync-each-step", action="store_true",
                    help="synchronise the device after every timed step, as dlbench's step loop does")
    args = ap.parse_args()
    for name, value, hi in (("batch-size", args.batch_size, 4096), ("steps", args.steps, 100000),
                            ("warmup", args.warmup, 10000)):
        if not 1 <= value <= hi:
            ap.error(f"--{name} must be within [1, {hi}]")
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; ResNet-50 train bs{args.batch_size} "
          f"bf16 channels_last, SGD foreach; {args.warmup} warm-up and {args.steps} timed steps each"
          f"{', synchronised after each step' if args.sync_each_step else ''}")

    model, opt, x, y = build(args.batch_size, device)
    for _ in range(args.warmup):
        step(model, opt, x, y)
    seconds = timed(lambda: step(model, opt, x, y), args.steps, args.sync_each_step)
    print(f"eager:      {args.steps / seconds:8.2f} steps/s  {args.batch_size * args.steps / seconds:9.1f} img/s  "
          f"{1e3 * seconds / args.steps:.3f} ms/step")

    model, opt, x, y = build(args.batch_size, device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(args.warmup):
            step(model, opt, x, y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    capture_start = time.perf_counter()
    with torch.cuda.graph(graph):
        static_loss = step(model, opt, x, y)
    torch.cuda.synchronize()
    capture_s = time.perf_counter() - capture_start
    seconds = timed(graph.replay, args.steps, args.sync_each_step)
    print(f"cuda graph: {args.steps / seconds:8.2f} steps/s  {args.batch_size * args.steps / seconds:9.1f} img/s  "
          f"{1e3 * seconds / args.steps:.3f} ms/step (capture {capture_s:.2f} s; last loss {static_loss.item():.4f})")


if __name__ == "__main__":
    main()
