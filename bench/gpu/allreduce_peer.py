#!/usr/bin/env python3
# The all-reduce alone as a user would time it (issue 23; docs/benchmarks.md "H100 runs of 2026-12-05"):
# one NCCL rank (world_size 1) in one Python process, torch.distributed.all_reduce of 1, 25 and 100 MiB
# of float32, 20 warm-up calls, then 200 timed with CUDA events; the mean per call and bytes / time.
# dlbench's `model: allreduce` cells of the same sizes are the comparison. Usage: python3 bench/gpu/allreduce_peer.py
import os

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
for size in (1048576, 26214400, 104857600):
    x = torch.zeros(size // 4, device="cuda")
    for _ in range(20):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = 200
    s.record()
    for _ in range(n):
        dist.all_reduce(x)
    e.record()
    torch.cuda.synchronize()
    t = s.elapsed_time(e) / n / 1e3
    print(f"torch.distributed all_reduce ws=1 {size} B: {t*1e6:.1f} us, algbw {size/t/1e9:.2f} GB/s")
dist.destroy_process_group()
