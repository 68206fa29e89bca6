"""The workloads a cell of the PyTorch runner (dlbench_runners.torch) builds on the CPU: the zoo models
of torch_models, your own nn.Module (``model: custom``, ``module: pkg.mod:factory``) and a TorchScript
file (``model: torchscript``)."""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any, Callable, Dict, List, Mapping, Tuple

from dlbench_client import InvalidParameter


def load_factory(spec: str) -> Callable[..., Any]:
    """The callable named by 'pkg.mod:factory' or 'path/file.py:factory'."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InvalidParameter("module: expected 'pkg.mod:factory' or 'file.py:factory' (got '%s')" % spec)
    if module_name.endswith(".py"):
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise InvalidParameter("module: no such file %s" % path)
        loader_spec = importlib.util.spec_from_file_location("dlbench_user_module", path)
        if loader_spec is None or loader_spec.loader is None:
            raise InvalidParameter("module: cannot load %s" % path)
        module = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            raise InvalidParameter("module: cannot import %s (%s); is it on PYTHONPATH?" % (module_name, e)) from e
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise InvalidParameter("module: %s has no callable %s" % (module_name, attr))
    return factory


def parse_shapes(text: str, batch: int) -> List[Tuple[int, ...]]:
    """'B,3,224,224;B,16' with B = batch."""
    shapes = []
    for part in text.split(";"):
        dims = []
        for d in part.split(","):
            d = d.strip()
            if d == "B":
                dims.append(batch)
            elif d.isdigit() and 0 < int(d) <= 1 << 20:
                dims.append(int(d))
            else:
                raise InvalidParameter("input_shapes: expected shapes like B,3,224,224;B,16 (got '%s')" % text)
        shapes.append(tuple(dims))
    return shapes


class ModelBuilders:
    """TorchRunner's model builders (a mixin): they read the runner's ``torch``, ``p`` and ``seed``
    and record into its ``info`` and ``flops_per_sample``."""

    torch: Any
    p: Dict[str, Any]
    seed: int
    info: Dict[str, Any]
    flops_per_sample: Any

    def _build(self, p: Dict[str, Any], batch: int, generator: Any) -> Tuple[Any, ...]:
        """(model, inputs, target, loss_fn, convolutional, optimizer name, options) on the CPU."""
        torch = self.torch
        from . import torch_models
        name = p["model"]
        if name == "custom":
            return self._build_custom(p, batch)
        if name == "torchscript":
            return self._build_torchscript(p, batch, generator)
        built = torch_models.build_zoo(name, p, batch, generator)
        self.info.update(built.info)
        sample = tuple(t[:1] for t in built.inputs)
        self.flops_per_sample = torch_models.count_forward_flops(built.model, sample) + built.flops_attention_per_sample
        loss_fn = torch.nn.functional.cross_entropy
        return built.model, built.inputs, built.target, loss_fn, built.convolutional, built.optimizer, built.options

    def _build_custom(self, p: Dict[str, Any], batch: int) -> Tuple[Any, ...]:
        torch = self.torch
        if not p["module"]:
            raise InvalidParameter("model custom needs module: 'pkg.mod:factory' or 'file.py:factory'")
        factory = load_factory(p["module"])
        made = factory(dict(self.p, seed=self.seed, batch_size=batch))
        if not isinstance(made, Mapping) or not isinstance(made.get("model"), torch.nn.Module):
            raise InvalidParameter("module %s: the factory must return a dict with 'model' (an nn.Module) and "
                                   "'inputs' (a tuple of tensors)" % p["module"])
        inputs = made.get("inputs", ())
        inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
        if not all(isinstance(t, torch.Tensor) for t in inputs):
            raise InvalidParameter("module %s: 'inputs' must be a tensor or a tuple of tensors" % p["module"])
        self.info["module"] = p["module"]
        return (made["model"], inputs, made.get("target"), made.get("loss"), bool(made.get("convolutional", False)),
                "custom", {"module": p["module"]})

    def _build_torchscript(self, p: Dict[str, Any], batch: int, generator: Any) -> Tuple[Any, ...]:
        torch = self.torch
        if not p["model_path"] or not p["input_shapes"]:
            raise InvalidParameter("model torchscript needs model_path and input_shapes")
        if not os.path.isfile(p["model_path"]):
            raise InvalidParameter("model_path: no such file %s" % p["model_path"])
        shapes = parse_shapes(p["input_shapes"], batch)
        names = p["input_dtypes"].split(";") if p["input_dtypes"] else ["float32"] * len(shapes)
        if len(names) != len(shapes):
            raise InvalidParameter("input_dtypes: %d dtypes for %d input shapes" % (len(names), len(shapes)))
        inputs = []
        for shape, dtype_name in zip(shapes, names):
            dtype = getattr(torch, dtype_name.strip(), None)
            if not isinstance(dtype, torch.dtype):
                raise InvalidParameter("input_dtypes: unknown dtype '%s'" % dtype_name)
            if dtype.is_floating_point:
                inputs.append(torch.randn(shape, generator=generator).to(dtype))
            else:
                inputs.append(torch.randint(2, shape, generator=generator).to(dtype))
        model = torch.jit.load(p["model_path"], map_location="cpu")
        return model, tuple(inputs), None, None, False, "custom", {"model_path": p["model_path"]}
