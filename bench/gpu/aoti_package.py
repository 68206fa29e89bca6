#!/usr/bin/env python3
"""Packages a torchvision model as an AOTInductor .pt2 for dlbench's `model: aoti` (issue 21).

torchvision's resnet50 or mobilenet_v2 (random weights, eval mode, on CUDA) is exported with
torch.export.export, its batch dimension dynamic (torch.export.Dim("batch", min=1, max=--max-batch);
with --static, the example's batch size only, which Inductor can specialise its kernels for),
and compiled and packaged with torch._inductor.aoti_compile_and_package. Precision bf16 tries the
export (and compile) under torch.autocast("cuda", dtype=torch.bfloat16) first, entered inside the
model's forward so that the export captures it, and checked: the exported graph must hold bfloat16
values (recipe "autocast", float32 inputs); when any of that raises it casts the model and inputs to
bfloat16 instead (recipe "cast", bfloat16 inputs). fp32 exports the model as it is (recipe "fp32",
TF32 off).

Writes the package to --out and its sidecar to --out + ".json" (docs/torch-runner.md "AOTInductor
packages"), which dlbench-torch reads to check the cell's precision, batch size and input dtypes;
then prints the cell lines to use. TORCHINDUCTOR_FORCE_LAYOUT_OPT is 1 unless the environment sets
it (below); Inductor's settings from the environment (TORCHINDUCTOR_*) are recorded in the sidecar
as inductor_env. Compile on the machine type the package will run on: the package
is tied to its GPU architecture.

Usage: python3 bench/gpu/aoti_package.py --model resnet50 --precision bf16 --out /tmp/aoti/resnet50-bf16.pt2
       [--batch 256] [--max-batch 1024 | --static]
"""
import argparse
import json
import os
import sys
import time

# Inductor turns its layout optimisation (convolutions in channels-last) off for a graph with a
# dynamic batch, and the package then ran ResNet-50 bs256 bf16 at 14,875 img/s against 20,884 with
# this set and 20,758 exported for batch 256 alone (H100, 2026-12-06, docs/benchmarks.md "AOTInductor
# against torch.compile"). Set before torch is imported, since Inductor reads it then; an
# environment that sets it (to 0, say) wins.
os.environ.setdefault("TORCHINDUCTOR_FORCE_LAYOUT_OPT", "1")

import torch  # noqa: E402 - after the environment above
import torch._inductor  # noqa: E402
import torchvision  # noqa: E402

MODELS = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2}
INPUT_SHAPES = "B,3,224,224"


class Autocast(torch.nn.Module):
    """The model with bf16 autocast entered inside its forward, where torch.export captures it (an
    autocast entered only around the export call is not part of the traced graph)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return self.inner(x)


def holds_bf16(program):
    """Whether any value of the exported graphs (nested ones included) is bfloat16."""
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                vals = node.meta.get("val")
                for v in vals if isinstance(vals, (tuple, list)) else (vals,):
                    if getattr(v, "dtype", None) == torch.bfloat16:
                        return True
    return False


def export_and_compile(model, example, max_batch, out, autocast):
    """(export_s, compile_s): torch.export with a dynamic batch (none when max_batch is None: the
    example's shape only), then AOTInductor's package."""
    dynamic = None if max_batch is None else ({0: torch.export.Dim("batch", min=1, max=max_batch)},)
    start = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        program = torch.export.export(Autocast(model) if autocast else model, (example,), dynamic_shapes=dynamic)
    export_s = time.perf_counter() - start
    if autocast and not holds_bf16(program):
        raise RuntimeError("the program exported under autocast holds no bfloat16 value (autocast not captured)")
    start = time.perf_counter()
    torch._inductor.aoti_compile_and_package(program, package_path=out)
    compile_s = time.perf_counter() - start
    return export_s, compile_s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="resnet50")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--batch", type=int, default=256, help="the example input's batch size")
    ap.add_argument("--max-batch", type=int, default=1024, help="the dynamic batch dimension's upper bound")
    ap.add_argument("--static", action="store_true",
                    help="export for --batch alone (no dynamic batch dimension); the cell's batch_size must equal it")
    ap.add_argument("--out", required=True, help="the package to write (.pt2); its sidecar is OUT.json")
    args = ap.parse_args()
    if not 1 <= args.max_batch <= 65536:
        ap.error("--max-batch must be within [1, 65536]")
    if not 1 <= args.batch <= args.max_batch:
        ap.error(f"--batch must be within [1, --max-batch] = [1, {args.max_batch}]")
    if not args.out.endswith(".pt2"):
        ap.error("--out must name a .pt2 file (aoti_compile_and_package's package format)")
    if not torch.cuda.is_available():
        sys.exit("aoti_package.py: no CUDA device; the package is compiled for the GPU it will run on")

    total_start = time.perf_counter()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    model = MODELS[args.model](num_classes=1000).to(device).eval()
    example = torch.randn(args.batch, 3, 224, 224, device=device)
    max_batch = None if args.static else args.max_batch

    autocast_error = None
    with torch.no_grad():
        if args.precision == "fp32":
            recipe, input_dtypes = "fp32", "float32"
            export_s, compile_s = export_and_compile(model, example, max_batch, args.out, autocast=False)
        else:
            try:
                recipe, input_dtypes = "autocast", "float32"
                export_s, compile_s = export_and_compile(model, example, max_batch, args.out, autocast=True)
            except Exception as e:  # noqa: BLE001 - any failure of the autocast recipe falls back to casting
                autocast_error = f"{type(e).__name__}: {e}"[:2000]
                print(f"aoti_package.py: export under autocast failed ({autocast_error.splitlines()[0]}); "
                      "casting the model and inputs to bfloat16 instead", file=sys.stderr)
                recipe, input_dtypes = "cast", "bfloat16"
                model = model.to(torch.bfloat16)
                export_s, compile_s = export_and_compile(model, example.to(torch.bfloat16), max_batch,
                                                         args.out, autocast=False)
    packaging_s = time.perf_counter() - total_start

    sidecar = {
        "source_model": f"torchvision.models.{args.model}",
        "precision": args.precision,
        "recipe": recipe,
        "input_shapes": INPUT_SHAPES,
        "input_dtypes": input_dtypes,
        "batch_min": args.batch if args.static else 1,
        "batch_max": args.batch if args.static else args.max_batch,
        "example_batch": args.batch,
        "export_s": round(export_s, 3),
        "compile_s": round(compile_s, 3),
        "packaging_s": round(packaging_s, 3),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device_name": torch.cuda.get_device_name(device),
        "compute_capability": "{}.{}".format(*torch.cuda.get_device_capability(device)),
    }
    inductor_env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("TORCHINDUCTOR_")}
    if inductor_env:
        sidecar["inductor_env"] = inductor_env
    if autocast_error:
        sidecar["autocast_error"] = autocast_error
    with open(args.out + ".json", "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")

    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) and {args.out}.json: {args.model} {args.precision} "
          f"recipe {recipe}; export {export_s:.1f} s, compile {compile_s:.1f} s, in all {packaging_s:.1f} s")
    print("# the cell (bench/gpu/aoti.yaml):")
    print("model: aoti")
    print(f"model_path: {os.path.abspath(args.out)}")
    print(f'input_shapes: "{INPUT_SHAPES}"')
    print(f"input_dtypes: {input_dtypes}")
    print(f"precision: {args.precision}")
    print("scenario: infer")
    print("device: cuda")
    print(f"batch_size: {args.batch}  # " + ("this one only (--static)" if args.static else f"any of 1..{args.max_batch}"))


if __name__ == "__main__":
    main()
