#!/usr/bin/env python3
"""Quantizes a CNN to static int8 offline and saves it as TorchScript for dlbench-torch.

Post-training static quantization with PyTorch's eager-mode API (torch.ao.quantization, as on
PyTorch 1.13 and 2.x): the model in eval mode, Conv+BN(+ReLU) and Linear+ReLU fused, observers
placed by the engine's default qconfig (`get_default_qconfig(engine)`: histogram observer on the
activations, per-channel symmetric qint8 weights), calibrated on a few batches, converted to the
quantized modules, traced with torch.jit.trace and saved with torch.jit.save. The file holds the
int8 weights already packed; dlbench-torch runs it with

    model: torchscript
    model_path: OUT
    input_shapes: B,C,S,S      (printed by this script)
    precision: int8
    scenario: infer
    device: cpu

and records in its effective cell that the weights came quantized in the file (docs/precisions.md,
"int8 CNNs through a TorchScript model quantized offline").

Models: `fashion_cnn` (the reference CNN of Fashion-MNIST, as dlbench-torch's fashion_cnn: conv 5x5
(32) + ReLU, max-pool, conv 5x5 (64) + ReLU, max-pool, dense 1024 + ReLU, dense 10; `--base-width`
and `--hidden-size` make a small one), and torchvision's quantizable `resnet18`, `resnet50`,
`mobilenet_v2` (`--image-size`, `--num-classes`). Weights are seeded random (`--seed`), as the
runner's own zoo: this measures the deployment's speed and size, not a trained model's accuracy.

Calibration: `random` (uniform [0, 1) images, the default) or `fashion-mnist` (the first N training
images of Debian's dataset-fashion-mnist, pixels / 255, fashion_cnn only).

Engines: `--engine` picks the quantized engine the model is prepared and packed for (one of
torch.backends.quantized.supported_engines; Debian's python3-torch 1.13 has onednn and qnnpack,
PyTorch 2.x wheels also x86 and fbgemm). The runner repacks the weights for its own LibTorch's
engine when it loads the file; use the same engine on both sides.

Usage: scripts/quantize_cnn.py --out M.pt [--model fashion_cnn|resnet18|resnet50|mobilenet_v2]
       [--fp32-out F.pt] [--engine ENGINE] [--calibration random|fashion-mnist]
       [--calibration-samples 256] [--image-size 224] [--num-classes N] [--base-width 32]
       [--hidden-size 1024] [--seed 0] [--dataset-dir /usr/share/datasets/fashion-mnist]
Prints one JSON object: the files and their sizes, the engine, the input shape, the quantized
layers. Exit status 2 for a bad argument, 1 when quantization fails.
"""
import argparse
import gzip
import json
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.ao.quantization as tq

FASHION_DIR = "/usr/share/datasets/fashion-mnist"


class FashionCnn(nn.Module):
    """Fashion-MNIST's reference CNN (benchmark/convnet.py), with quantization stubs."""

    def __init__(self, base_width: int, hidden_size: int, num_classes: int):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(1, base_width, 5, padding=2)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(base_width, 2 * base_width, 5, padding=2)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2, 2)
        self.dense = nn.Linear(7 * 7 * 2 * base_width, hidden_size)
        self.relu3 = nn.ReLU()
        self.logits = nn.Linear(hidden_size, num_classes)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.relu3(self.dense(torch.flatten(x, 1)))
        return self.dequant(self.logits(x))

    def fuse_model(self):
        tq.fuse_modules(self, [["conv1", "relu1"], ["conv2", "relu2"], ["dense", "relu3"]], inplace=True)


def build(args):
    """The fp32 model in eval mode, and its input shape without the batch dimension."""
    if args.model == "fashion_cnn":
        return FashionCnn(args.base_width, args.hidden_size, args.num_classes or 10).eval(), (1, 28, 28)
    import torchvision.models.quantization as qm

    factory = {"resnet18": qm.resnet18, "resnet50": qm.resnet50, "mobilenet_v2": qm.mobilenet_v2}[args.model]
    model = factory(weights=None, quantize=False, num_classes=args.num_classes or 1000)
    return model.eval(), (3, args.image_size, args.image_size)


def read_idx_images(path: str, count: int) -> torch.Tensor:
    """The first `count` images of an IDX3 file (gzip) as float [N, 1, 28, 28] in [0, 1]."""
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 0x00000803:
            raise ValueError(f"{path}: not an IDX3 image file (magic {magic:#010x})")
        count = min(count, n)
        data = f.read(count * rows * cols)
        if len(data) != count * rows * cols:
            raise ValueError(f"{path}: truncated after {len(data)} bytes of images")
    pixels = torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(count, 1, rows, cols)
    return pixels.to(torch.float32) / 255.0


def calibration_batches(args, shape):
    samples = args.calibration_samples
    if args.calibration == "fashion-mnist":
        images = read_idx_images(os.path.join(args.dataset_dir, "train-images-idx3-ubyte.gz"), samples)
    else:
        generator = torch.Generator().manual_seed(args.seed + 1)
        images = torch.rand((samples,) + shape, generator=generator)
    return list(torch.split(images, 32))


def count_quantized(module: nn.Module) -> dict:
    """The quantized modules holding packed int8 weights, by type name."""
    counts = {}
    for m in module.modules():
        if ".quantized" in type(m).__module__ and callable(getattr(m, "weight", None)):
            counts[type(m).__name__] = counts.get(type(m).__name__, 0) + 1
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the int8 TorchScript file to write")
    ap.add_argument("--model", choices=["fashion_cnn", "resnet18", "resnet50", "mobilenet_v2"],
                    default="fashion_cnn")
    ap.add_argument("--fp32-out", help="also write the fp32 model, traced, for an fp32 cell beside it")
    ap.add_argument("--engine", help="quantized engine (default: this torch's current one)")
    ap.add_argument("--calibration", choices=["random", "fashion-mnist"], default="random")
    ap.add_argument("--calibration-samples", type=int, default=256)
    ap.add_argument("--image-size", type=int, default=224, help="torchvision models only")
    ap.add_argument("--num-classes", type=int, help="default: 10 for fashion_cnn, 1000 otherwise")
    ap.add_argument("--base-width", type=int, default=32, help="fashion_cnn's first conv filters")
    ap.add_argument("--hidden-size", type=int, default=1024, help="fashion_cnn's dense units")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dataset-dir", default=FASHION_DIR)
    args = ap.parse_args()

    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    engine = args.engine or torch.backends.quantized.engine
    if engine not in engines:
        ap.error(f"--engine {engine}: this torch {torch.__version__} has {', '.join(engines)}")
    if not 1 <= args.calibration_samples <= 60000:
        ap.error("--calibration-samples must be in 1..60000")
    if not 32 <= args.image_size <= 4096:
        ap.error("--image-size must be in 32..4096")
    if args.num_classes is not None and not 1 <= args.num_classes <= 1 << 20:
        ap.error("--num-classes must be in 1..1048576")
    if not 1 <= args.base_width <= 4096 or not 1 <= args.hidden_size <= 65536:
        ap.error("--base-width must be in 1..4096 and --hidden-size in 1..65536")
    if args.calibration == "fashion-mnist" and args.model != "fashion_cnn":
        ap.error("--calibration fashion-mnist calibrates fashion_cnn (1 x 28 x 28 images)")

    torch.manual_seed(args.seed)
    torch.backends.quantized.engine = engine
    model, shape = build(args)
    example = torch.rand((2,) + shape, generator=torch.Generator().manual_seed(args.seed + 2))
    result = {"model": args.model, "engine": engine, "torch": torch.__version__,
              "input_shapes": "B," + ",".join(str(d) for d in shape),
              "calibration": args.calibration, "calibration_samples": args.calibration_samples}
    try:
        with torch.no_grad():
            if args.fp32_out:
                torch.jit.save(torch.jit.trace(model, example), args.fp32_out)
                result["fp32_file"] = args.fp32_out
                result["fp32_file_bytes"] = os.path.getsize(args.fp32_out)
                reference = model(example)
            model.fuse_model()
            model.qconfig = tq.get_default_qconfig(engine)
            tq.prepare(model, inplace=True)
            for batch in calibration_batches(args, shape):
                model(batch)
            tq.convert(model, inplace=True)
            traced = torch.jit.trace(model, example)
            torch.jit.save(traced, args.out)
            if args.fp32_out:
                # Read the difference against the outputs' own size: random-weight torchvision
                # models can have tiny logits (mobilenet_v2's are about 1e-9).
                result["fp32_max_abs_output_on_2_samples"] = reference.abs().max().item()
                result["max_abs_diff_vs_fp32_on_2_samples"] = (traced(example) - reference).abs().max().item()
    except (RuntimeError, ValueError, OSError) as e:
        print(f"quantize_cnn: {e}", file=sys.stderr)
        return 1
    result["file"] = args.out
    result["file_bytes"] = os.path.getsize(args.out)
    result["quantized_modules"] = count_quantized(model)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
