#!/usr/bin/env python3
"""What the first step at a new batch size costs, in one process (issue 13's probe times).

A `batch_size: max` search with boundary_probe_process: shared runs its probes in one process, so
library loading and the CUDA context are paid once; yet on an H100 (session 23, docs/benchmarks.md)
each MobileNetV2 bf16 training probe took about 6 s whatever its batch (8 or 2,058) and each SSD
training probe 5-11 s, against 0.5-2 s for ResNet-50's. This times, in one process, the first and
the second training step (and the first inference step) of torchvision's models at batch sizes the
process has not seen, with cuDNN autotuning off (as the caps table runs), channels-last and
contiguous, bf16 autocast and fp32, so the per-shape cost is seen apart from the per-sample one.

Usage: python3 bench/gpu/first_step_cost.py [--models mobilenet_v2,resnet50] [--batches 8,16,8,24,32]

Run on an H100 (2026-12-07, docs/benchmarks.md "H100 runs of 2026-12-07 (session 24)", with
--batches 8,16,8,24): the cost is channels-last training's (MobileNetV2 bf16 8.4 s at
each new batch, fp32 3.3-3.5 s; contiguous 0.1-0.45 s; inference 0.01 s; ResNet-50 0.1-0.3 s),
the same with CUDA_MODULE_LOADING=EAGER.
"""
import argparse
import time

import torch
import torchvision


def one(model, opt, x, y, train, dtype):
    torch.cuda.synchronize()
    start = time.perf_counter()
    if train:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    else:
        with torch.inference_mode(), torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
            model(x)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v2,resnet50")
    ap.add_argument("--batches", default="8,16,8,24,32")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if not batches or any(not 1 <= b <= 4096 for b in batches):
        ap.error("--batches: whole numbers in [1, 4096]")
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}; "
          "cudnn.benchmark False; seconds per step (first and second at each batch)")
    print(f"{'model':13} {'dtype':8} {'layout':14} {'mode':6} " + " ".join(f"{'bs' + str(b):>13}" for b in batches))
    for name in args.models.split(","):
        for dtype in (torch.bfloat16, torch.float32):
            for layout in (torch.channels_last, torch.contiguous_format):
                for train in (True, False):
                    model = getattr(torchvision.models, name)(num_classes=1000).to(dev, memory_format=layout)
                    model.train(train)
                    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
                    cols = []
                    for b in batches:
                        x = torch.randn(b, 3, 224, 224, device=dev).to(memory_format=layout)
                        y = torch.randint(0, 1000, (b,), device=dev)
                        first = one(model, opt, x, y, train, dtype)
                        second = one(model, opt, x, y, train, dtype)
                        cols.append(f"{first:6.2f}/{second:6.3f}")
                    print(f"{name:13} {str(dtype).split('.')[1]:8} {str(layout).split('.')[1]:14} "
                          f"{'train' if train else 'infer':6} " + " ".join(f"{c:>13}" for c in cols), flush=True)
                    del model, opt
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
