#!/usr/bin/env python3
"""BERT-base inference, Hugging Face's model against dlbench's, timed and profiled in one process.

Issue 21: dlbench-torch's BERT-base ran at 0.77x of Hugging Face's BertForSequenceClassification
(SDPA) on one H200, and the project's Python BERT (bench/peers/torch_eager.py, the same layers as
runners/torch/models/bert.cc) ran at the same rate as dlbench, so the gap is in the model's
definition. This script puts the two models side by side under the same conditions:

- (a) `hf`: transformers' BertForSequenceClassification, bert-base configuration, random weights,
  attn_implementation="sdpa" (skipped, with a line saying so, where transformers is absent);
- (b) `own`: BertForClassification from bench/peers/torch_eager.py;

both fp32 weights, autocast (bf16 by default), inference_mode, eval mode, the same token ids and
an all-ones attention mask [N, L] (`--mask none` passes none to HF's model; the project's
always takes one, all ones).

For each model it prints seq/s over `--steps` steps timed with CUDA events after `--warmup`
steps (on the CPU: the host's monotonic clock), then profiles `--profile-steps` steps with
torch.profiler and prints the top 15 kernels by total time with their share, and at the end a
side-by-side of time per step by category (gemm, attention, softmax, layernorm, gelu, copy/cast,
elementwise, other). On the GPU the rows are CUDA kernels; on the CPU they are the aten operators'
self time (there are no kernels), so the CPU run checks the script and the model, not the GPU's
picture.

    python3 bench/gpu/bert_profile.py                       # cuda, bs64 seq128 bf16, 200 steps
    python3 bench/gpu/bert_profile.py --device cpu          # a small check: bs2 seq64, 3 steps
"""
import argparse
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import torch_eager  # noqa: E402  (bench/peers/torch_eager.py: the project's Python BERT)

# Kernel (CUDA) or operator (CPU) name -> category; the first match wins, so the attention kernels
# (whose names contain "gemm" in some builds) are tested before the matrix products.
CATEGORIES = (
    ("attention", r"flash|fmha|attention|efficient|cudnn_?sdpa"),
    ("gemm", r"gemm|cutlass|xmma|nvjet|cublas|sm90_|addmm|\bmm\b|bmm|matmul|linear"),
    ("softmax", r"softmax"),
    ("layernorm", r"layer_?norm"),
    ("gelu", r"gelu"),
    ("copy/cast", r"copy|cast|contiguous|clone|\bto\b|_to_copy"),
    ("elementwise", r"elementwise|vectorized|add|mul|div|sub|tanh|index|embedding|gather|fill"),
)
MAX_STEPS = 100_000


def category(name):
    low = name.lower()
    for cat, pattern in CATEGORIES:
        if re.search(pattern, low):
            return cat
    return "other"


def build_hf(args, device):
    try:
        import transformers
    except ImportError:
        return None, "transformers is not installed"
    config = transformers.BertConfig(num_labels=2, attn_implementation="sdpa")
    model = transformers.BertForSequenceClassification(config)
    impl = getattr(model.config, "_attn_implementation", "?")
    return model.to(device).eval(), f"transformers {transformers.__version__}, attention {impl}"


def build_own(args, device):
    return torch_eager.BertForClassification().to(device).eval(), "bench/peers/torch_eager.py"


def make_step(name, model, ids, mask, device, amp_dtype):
    def step():
        with torch.inference_mode(), torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            if name == "hf":
                model(input_ids=ids, attention_mask=mask)
            else:
                model(ids, mask if mask is not None else torch.ones_like(ids))
    return step


def time_steps(step, steps, device):
    """Seconds for `steps` steps, the device drained before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - t0


def profile_steps(step, steps, device):
    """{name: microseconds per step} of CUDA kernels (or, on the CPU, aten operators' self time)."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    per_step = {}
    for evt in prof.key_averages():
        if device.type == "cuda":
            if evt.key.startswith("aten::") or evt.key.startswith("cuda"):
                continue  # operators and runtime calls; their kernels are their own rows
            us = getattr(evt, "self_device_time_total", None)
            if us is None:
                us = getattr(evt, "self_cuda_time_total", 0)
        else:
            if not evt.key.startswith("aten::"):
                continue
            us = evt.self_cpu_time_total
        if us > 0:
            per_step[evt.key] = per_step.get(evt.key, 0.0) + us / steps
    return per_step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models", default="hf,own", help="comma-separated: hf, own")
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--seq-len", type=int)
    ap.add_argument("--precision", choices=["bf16", "fp16", "fp32"], default="bf16")
    ap.add_argument("--mask", choices=["ones", "none"], default="ones")
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--steps", type=int)
    ap.add_argument("--profile-steps", type=int)
    args = ap.parse_args()
    device = torch.device(args.device)
    cpu = device.type == "cpu"
    # The CPU defaults keep a check of the script to seconds on a small machine.
    defaults = dict(batch_size=2, seq_len=64, warmup=1, steps=3, profile_steps=2) if cpu else \
        dict(batch_size=64, seq_len=128, warmup=30, steps=200, profile_steps=20)
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for key, lo, hi in (("batch_size", 1, 4096), ("seq_len", 1, 512), ("warmup", 0, MAX_STEPS),
                        ("steps", 1, MAX_STEPS), ("profile_steps", 1, MAX_STEPS)):
        if not lo <= getattr(args, key) <= hi:
            ap.error(f"--{key.replace('_', '-')} must be in [{lo}, {hi}], got {getattr(args, key)}")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in models:
        if m not in ("hf", "own"):
            ap.error(f"--models: unknown model '{m}' (hf, own)")

    torch.manual_seed(0)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(30522, (args.batch_size, args.seq_len), generator=gen).to(device)
    mask = torch.ones_like(ids) if args.mask == "ones" else None
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {where}; bs{args.batch_size} seq{args.seq_len} {args.precision} "
          f"autocast, inference_mode, mask {args.mask}; {args.steps} timed steps after {args.warmup}, "
          f"{args.profile_steps} profiled")

    results = {}
    for name in models:
        model, info = (build_hf if name == "hf" else build_own)(args, device)
        if model is None:
            print(f"\n[{name}] skipped: {info}")
            continue
        step = make_step(name, model, ids, mask, device, amp_dtype)
        time_steps(step, args.warmup, device)
        seconds = time_steps(step, args.steps, device)
        per_step = profile_steps(step, args.profile_steps, device)
        total = sum(per_step.values())
        rate = args.batch_size * args.steps / seconds
        print(f"\n[{name}] {info}")
        print(f"  {rate:,.0f} seq/s, {1e3 * seconds / args.steps:.3f} ms/step; profiled "
              f"{'kernel' if not cpu else 'operator self'} time {total / 1e3:.3f} ms/step")
        for key, us in sorted(per_step.items(), key=lambda kv: -kv[1])[:15]:
            print(f"  {us:9.1f} us {100 * us / total:5.1f}%  {category(key):11s} {key[:110]}")
        cats = {}
        for key, us in per_step.items():
            cats[category(key)] = cats.get(category(key), 0.0) + us
        results[name] = (rate, total, cats)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()

    if not results:
        return
    names = list(results)
    print("\nper step, by category (us; share of the model's profiled time)")
    print(f"  {'category':12s}" + "".join(f"{n:>22s}" for n in names))
    for cat in [c for c, _ in CATEGORIES] + ["other"]:
        cells = []
        for n in names:
            _, total, cats = results[n]
            us = cats.get(cat, 0.0)
            cells.append(f"{us:12.1f} ({100 * us / total:5.1f}%)")
        print(f"  {cat:12s}" + "".join(f"{c:>22s}" for c in cells))
    print(f"  {'total':12s}" + "".join(f"{results[n][1]:12.1f}{'':10s}" for n in names))
    print(f"  {'seq/s':12s}" + "".join(f"{results[n][0]:12,.0f}{'':10s}" for n in names))
    if "hf" in results and "own" in results:
        print(f"\nown / hf: {results['own'][0] / results['hf'][0]:.3f}x")


if __name__ == "__main__":
    main()
