#!/usr/bin/env python3
"""Python's side of the AOTInductor comparison (issue 21): eager and torch.compile on the same GPU.

What a user would run instead of dlbench's `model: aoti` cell: the torchvision model an
aoti_package.py sidecar names, random weights, eval mode, under torch.inference_mode, at the
sidecar's recipe ("autocast": fp32 weights and inputs under torch.autocast bf16; "cast": weights
and inputs in bfloat16; "fp32": TF32 off), contiguous inputs as the package takes them. Times the
eager model, then torch.compile(model) (default mode): its first call (the compilation) is timed on
its own and left out, as are WARMUP further calls; then STEPS timed calls between CUDA events.
Prints img/s for eager and compiled and the compile time.

Usage: python3 bench/gpu/compiled_peer.py --sidecar /tmp/aoti/resnet50-bf16.pt2.json
       [--batch 256] [--steps 100] [--warmup 10] [--device cuda|cpu] [--no-compile]
       (--device cpu --no-compile --batch 2 --steps 2 --warmup 1: a smoke run of the eager path)
"""
import argparse
import contextlib
import json
import time

import torch
import torchvision

MAX_SIDECAR_BYTES = 64 * 1024


def read_sidecar(path):
    with open(path, "rb") as f:
        text = f.read(MAX_SIDECAR_BYTES + 1)
    if len(text) > MAX_SIDECAR_BYTES:
        raise SystemExit(f"compiled_peer.py: {path} is over {MAX_SIDECAR_BYTES} bytes")
    sidecar = json.loads(text)
    if not isinstance(sidecar, dict):
        raise SystemExit(f"compiled_peer.py: {path} is not a JSON object")
    return sidecar


def build(sidecar, batch, device):
    source = sidecar.get("source_model", "torchvision.models.resnet50")
    name = source.rsplit(".", 1)[-1]
    if name not in ("resnet50", "mobilenet_v2"):
        raise SystemExit(f"compiled_peer.py: source_model {source!r} is not resnet50 or mobilenet_v2")
    shape = [batch if d.strip() == "B" else int(d) for d in sidecar.get("input_shapes", "B,3,224,224").split(",")]
    torch.manual_seed(1)
    model = getattr(torchvision.models, name)(num_classes=1000).to(device).eval()
    x = torch.randn(*shape, device=device)
    recipe = sidecar.get("recipe", "fp32")
    if recipe == "cast":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    elif recipe not in ("autocast", "fp32"):
        raise SystemExit(f"compiled_peer.py: unknown recipe {recipe!r} (autocast, cast or fp32)")
    return name, recipe, model, x


def region(recipe, device):
    """The context each call runs in: inference mode, and autocast for the autocast recipe."""
    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode())
    if recipe == "autocast":
        stack.enter_context(torch.autocast(device.type, dtype=torch.bfloat16))
    return stack


def timed_seconds(fn, steps, device):
    """Seconds for `steps` calls: CUDA events on a GPU, the host clock between synchronisations otherwise."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(steps):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return time.perf_counter() - start


def measure(label, fn, args, device):
    for _ in range(args.warmup):
        fn()
    seconds = timed_seconds(fn, args.steps, device)
    print(f"{label:9s} {args.batch * args.steps / seconds:10.1f} img/s  {1e3 * seconds / args.steps:8.3f} ms/step")


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sidecar", required=True, help="the .pt2.json aoti_package.py wrote")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--no-compile", action="store_true", help="the eager model only")
    args = ap.parse_args()
    for name, value, hi in (("batch", args.batch, 4096), ("steps", args.steps, 100000),
                            ("warmup", args.warmup, 10000)):
        if not 1 <= value <= hi:
            ap.error(f"--{name} must be within [1, {hi}]")
    sidecar = read_sidecar(args.sidecar)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        where = torch.cuda.get_device_name()
    else:
        where = "cpu"
    name, recipe, model, x = build(sidecar, args.batch, device)
    print(f"torch {torch.__version__} on {where}; {name} infer bs{args.batch}, recipe {recipe} "
          f"(sidecar {args.sidecar}: precision {sidecar.get('precision')}), contiguous inputs; "
          f"{args.warmup} warm-up and {args.steps} timed calls each")

    def eager():
        with region(recipe, device):
            return model(x)

    measure("eager", eager, args, device)
    if args.no_compile:
        return
    if not hasattr(torch, "compile"):
        print(f"compiled: torch.compile is not in torch {torch.__version__} (2.0+); eager only")
        return
    compiled_model = torch.compile(model)

    def compiled():
        with region(recipe, device):
            return compiled_model(x)

    start = time.perf_counter()
    compiled()
    synchronize(device)
    print(f"compile   {time.perf_counter() - start:10.1f} s (the first call, not timed below)")
    measure("compiled", compiled, args, device)


if __name__ == "__main__":
    main()
