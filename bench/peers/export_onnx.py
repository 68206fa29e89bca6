#!/usr/bin/env python3
"""Exports a torchvision model to ONNX for the ONNX Runtime runner (dlbench_runners.onnxruntime).

The graph has a dynamic batch axis (input "images" [batch, 3, S, S] float32, output "logits"
[batch, classes]), so one file serves every batch_size of a matrix. Weights are seeded random,
as in the other runners. Checked with onnx.checker when the onnx package is importable.

Usage: bench/peers/export_onnx.py --out resnet50.onnx [--model resnet50|mobilenet_v2]
       [--image-size 224] [--num-classes 1000] [--opset 17]
"""
import argparse
import json
import sys

import torch
import torchvision


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the .onnx file to write")
    ap.add_argument("--model", choices=["resnet50", "mobilenet_v2"], default="resnet50")
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--num-classes", type=int, default=1000)
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not 32 <= args.image_size <= 4096 or not 1 <= args.num_classes <= 1 << 20:
        ap.error("--image-size must be in 32..4096 and --num-classes in 1..1048576")
    torch.manual_seed(args.seed)
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.num_classes).eval()
    example = torch.randn(1, 3, args.image_size, args.image_size)
    torch.onnx.export(model, (example,), args.out, input_names=["images"], output_names=["logits"],
                      dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}}, opset_version=args.opset)
    checked = False
    try:
        import onnx
    except ImportError:
        onnx = None
    if onnx is not None:
        onnx.checker.check_model(onnx.load(args.out))
        checked = True
    json.dump({"out": args.out, "model": args.model, "image_size": args.image_size, "num_classes": args.num_classes,
               "opset": args.opset, "torch": torch.__version__, "onnx_checked": checked}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
