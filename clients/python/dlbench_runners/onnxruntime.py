"""ONNX Runtime as a dlbench runner: ``runner: {command: [python3, -m, dlbench_runners.onnxruntime]}``.

Runs inference of an .onnx file (``model_path``) on the CPU execution provider (``device: cpu``)
or the CUDA one (``device: cuda:N``). Inputs are built from the model's declared input shapes and
element types, with the batch dimension set to ``batch_size``: floating inputs N(0, 1), integer
inputs uniform in {0, 1}, booleans true, all from the cell's seed. They are bound on the device
once (IOBinding), outputs stay on the device, and each step ends when ONNX Runtime has
synchronised them. ``compile: false`` disables ONNX Runtime's graph optimisations (the "compiler
off" control); true (the default) enables all of them.

onnxruntime (and numpy, which it depends on) are imported lazily: without them the runner still
says HELLO, and a cell ends as ERROR unsupported.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

from dlbench_client import (CellConfig, Extras, Hello, InvalidParameter, Metric, OutOfMemory, Runner, RunnerError,
                            Unsupported, __version__, main as _client_main)

from .host import cpu_device, device_uuids, host_memory, python_facts
from .params import CORE, Param, parse_device, parse_params, require_single_process

RUNNER = "python-onnxruntime"

PARAMS = CORE + (
    Param("model_path", "str", help="The .onnx file (required)."),
    Param("compile", "bool", True, help="true: ORT_ENABLE_ALL graph optimisations; false: ORT_DISABLE_ALL."),
    Param("threads", "int", minimum=1, maximum=1024, help="intra_op_num_threads (ONNX Runtime's default otherwise)."),
    Param("seq_len", "int", minimum=1, maximum=1 << 20, help="The value of every symbolic input dimension past "
          "the batch one (token models)."),
)

_NUMPY_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
                "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
                "tensor(uint8)": "uint8", "tensor(bool)": "bool"}


def resolve_shape(name: str, shape: List[Any], batch: int, seq_len: Optional[int]) -> Tuple[int, ...]:
    """The concrete shape of a declared input: a symbolic first dimension is the batch, later
    symbolic ones ``seq_len``; a fixed first dimension must equal the batch."""
    if not shape:
        return ()
    dims: List[int] = []
    for i, d in enumerate(shape):
        if isinstance(d, int) and d > 0:
            if i == 0 and d != batch:
                raise InvalidParameter("batch_size %d: input %s has a fixed batch dimension of %d (export it with a "
                                       "dynamic batch axis, or use batch_size %d)" % (batch, name, d, d))
            dims.append(d)
        elif i == 0:
            dims.append(batch)
        elif seq_len is not None:
            dims.append(seq_len)
        else:
            raise InvalidParameter("input %s has a symbolic dimension %r at position %d: set seq_len" % (name, d, i))
    return tuple(dims)


class OnnxRuntimeRunner(Runner):
    """One cell of ONNX Runtime inference (the calling rules are Runner's)."""

    name = RUNNER

    def __init__(self) -> None:
        self.ort: Any = None
        self.import_error: Optional[str] = None
        self.kind = "cpu"
        self.index = 0
        self.batch = 1
        self.session: Any = None
        self.binding: Any = None
        self.info: Dict[str, Any] = {}

    def hello(self) -> Hello:
        try:
            import onnxruntime
        except ImportError as e:
            self.import_error = str(e)
            return Hello(RUNNER, __version__, {"name": "onnxruntime", "available": False, **python_facts()},
                         [cpu_device()])
        self.ort = onnxruntime
        framework = {"name": "onnxruntime", "version": onnxruntime.__version__,
                     "providers": onnxruntime.get_available_providers(), "device": onnxruntime.get_device(),
                     **python_facts()}
        return Hello(RUNNER, __version__, framework, [cpu_device()])

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        p = parse_params(cell.params, PARAMS, RUNNER)
        if self.ort is None:
            raise Unsupported("onnxruntime is not installed for %s (%s)" % (sys.executable, self.import_error))
        ort = self.ort
        import numpy as np
        require_single_process(p)
        if p["scenario"] != "infer":
            raise Unsupported("scenario train: the ONNX Runtime runner runs inference only")
        if p["precision"] != "fp32":
            raise Unsupported("precision %s: an ONNX model's precision is the one it was exported with; use fp32 "
                              "here and export a lower-precision model for the other" % p["precision"])
        path = p["model_path"]
        if not path:
            raise InvalidParameter("model_path: required (an .onnx file)")
        if not os.path.isfile(path):
            raise InvalidParameter("model_path: no such file %s" % path)
        self.kind, self.index = parse_device(p["device"])
        if self.kind == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise Unsupported("device %s: this onnxruntime has no CUDAExecutionProvider (providers: %s)"
                                  % (p["device"], ", ".join(ort.get_available_providers())))
            providers: List[Any] = [("CUDAExecutionProvider", {"device_id": self.index})]
        else:
            providers = ["CPUExecutionProvider"]
        options = ort.SessionOptions()
        options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if p["compile"]
                                            else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        if p["threads"] is not None:
            options.intra_op_num_threads = p["threads"]
        self.session = ort.InferenceSession(path, sess_options=options, providers=providers)
        used = self.session.get_providers()
        wanted = providers[0] if isinstance(providers[0], str) else providers[0][0]
        if wanted not in used:
            raise Unsupported("device %s: onnxruntime fell back to %s" % (p["device"], ", ".join(used)))

        self.batch = batch = p["batch_size"]
        rng = np.random.default_rng(cell.seed)
        device_type = "cuda" if self.kind == "cuda" else "cpu"
        self.binding = self.session.io_binding()
        declared = []
        for inp in self.session.get_inputs():
            np_type = _NUMPY_TYPES.get(inp.type)
            if np_type is None:
                raise Unsupported("input %s has element type %s, which this runner does not generate" % (inp.name, inp.type))
            shape = resolve_shape(inp.name, list(inp.shape), batch, p["seq_len"])
            if np_type.startswith("float"):
                data = rng.standard_normal(shape).astype(np_type)
            elif np_type == "bool":
                data = np.ones(shape, dtype=bool)
            else:
                data = rng.integers(0, 2, size=shape).astype(np_type)
            value = ort.OrtValue.ortvalue_from_numpy(data, device_type, self.index)
            self.binding.bind_ortvalue_input(inp.name, value)
            declared.append({"name": inp.name, "declared_shape": [str(d) for d in inp.shape], "shape": list(shape),
                             "type": inp.type})
        for out in self.session.get_outputs():
            self.binding.bind_output(out.name, device_type, self.index)
        self.info = {"inputs": declared, "providers": used, "model_path": os.path.abspath(path)}
        effective: Dict[str, Any] = {
            "model": p["model"], "scenario": "infer", "batch_size": batch, "samples_per_step": batch,
            "device": "cpu" if self.kind == "cpu" else "cuda:%d" % self.index, "precision": "fp32",
            "model_path": os.path.abspath(path), "execution_provider": used[0], "providers": used,
            "compile": p["compile"], "graph_optimization_level": "ORT_ENABLE_ALL" if p["compile"] else "ORT_DISABLE_ALL",
            "intra_op_num_threads": options.intra_op_num_threads, "inputs": declared, "io_binding": True,
            "onnxruntime_version": ort.__version__, "framework": "onnxruntime", "seed": cell.seed,
            "timing": "host clock around each step; the step ends when ONNX Runtime has synchronised its outputs",
        }
        uuids = device_uuids(self.kind, [self.index])
        if uuids is not None:
            effective["device_uuids"] = uuids
        return effective

    def step(self) -> int:
        self.session.run_with_iobinding(self.binding)
        self.binding.synchronize_outputs()
        return self.batch

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        return host_memory("cpu" if self.kind == "cpu" else "cuda:%d" % self.index)

    def extras(self) -> Extras:
        return Extras([], dict(self.info))

    def classify(self, error: BaseException) -> Optional[RunnerError]:
        text = str(error)
        if "out of memory" in text.lower() or "Failed to allocate memory" in text:
            return OutOfMemory(text.strip().splitlines()[0])
        return None


def main() -> None:
    """Entry point: ``python3 -m dlbench_runners.onnxruntime`` (or the dlbench-py-onnxruntime script)."""
    _client_main(OnnxRuntimeRunner())


if __name__ == "__main__":
    main()
