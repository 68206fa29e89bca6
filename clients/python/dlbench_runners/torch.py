"""PyTorch from Python as a dlbench runner: ``runner: {command: [python3, -m, dlbench_runners.torch]}``.

The workloads of dlbench-torch (and of the former bench/peers/torch_eager.py) in PyTorch eager, or
compiled with ``compile: true`` (torch.compile, PyTorch >= 2): torchvision's ResNet-50 and
MobileNetV2, BERT-Base (Hugging Face's BertForSequenceClassification when transformers is
importable, else torch.nn's), your own nn.Module (``model: custom``, ``module: pkg.mod:factory``)
or a TorchScript file. The same fixed synthetic batch resident on the device, the same optimizers
(SGD lr 0.1 momentum 0.9 weight decay 1e-4 for the CNNs, AdamW lr 1e-4 for BERT), autocast for
bf16/fp16 (GradScaler for fp16 training), channels_last for the CNNs on CUDA, and every step
ends with a device synchronize. docs/python-client.md lists the parameters.

An infer cell with ``load`` (docs/load.md) serves the LoadGen scenarios through the client's load
driver (dlbench_client.load): the sample library is ``sample_library_size`` synthetic samples of
the model's input, and ``issue`` gathers a query's samples, runs the forward and synchronises.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from dlbench_client import (CellConfig, Extras, Hello, InvalidParameter, Metric, OutOfMemory, QueryPhases, Runner,
                            RunnerError, Unsupported, __version__, main as _client_main)

from .host import cpu_device, device_uuids, host_memory, python_facts, reset_peak_rss
from .params import CORE, Param, parse_device, parse_params, require_single_process
from .torch_builders import ModelBuilders
from .torch_load import LoadServing

RUNNER = "python-torch"

_SIZE = dict(minimum=1, maximum=1 << 20)

PARAMS = CORE + (
    Param("image_size", "int", help="Input height and width of vision models (224).", **_SIZE),
    Param("width_mult", "number", minimum=0, exclusive_minimum=True, maximum=16, help="MobileNetV2 width multiplier (1.0)."),
    Param("base_width", "int", help="ResNet first-stage channels; torchvision's is fixed at 64.", **_SIZE),
    Param("num_classes", "int", help="Classifier outputs (1000; BERT 2).", **_SIZE),
    Param("layers", "int", help="BERT encoder layers (12).", **_SIZE),
    Param("hidden_size", "int", help="BERT hidden size (768).", **_SIZE),
    Param("heads", "int", help="BERT attention heads (12).", **_SIZE),
    Param("seq_len", "int", help="BERT sequence length (128, at most 512).", **_SIZE),
    Param("vocab_size", "int", help="BERT vocabulary (30522).", **_SIZE),
    Param("memory_format", "enum", "auto", ("auto", "contiguous", "channels_last"),
          help="auto: channels_last for the CNNs on CUDA."),
    Param("cudnn_benchmark", "bool", True, help="torch.backends.cudnn.benchmark (off with deterministic)."),
    Param("cudnn_benchmark_limit", "int", minimum=0, maximum=1000,
          help="torch.backends.cudnn.benchmark_limit: candidate algorithms autotuning times per convolution "
               "(PyTorch's 10 when unset; 0: every one)."),
    Param("deterministic", "bool", False, help="torch.use_deterministic_algorithms(True)."),
    Param("optimizer_impl", "enum", "auto", ("auto", "foreach", "per_param"),
          help="torch.optim's foreach= (auto: foreach when the model is on CUDA)."),
    Param("threads", "int", help="torch.set_num_threads.", **_SIZE),
    Param("lr", "number", minimum=0, help="Learning rate (0.1 SGD, 1e-4 AdamW, 0.01 custom/torchscript)."),
    Param("compile", "bool", False, help="torch.compile the model (PyTorch >= 2); compile time is reported apart."),
    Param("compile_mode", "enum", "default", ("default", "reduce-overhead", "max-autotune"),
          help="torch.compile's mode."),
    Param("bert_impl", "enum", "auto", ("auto", "hf", "own"),
          help="bert_base from Hugging Face (hf) or torch.nn (own); auto: hf when importable."),
    Param("module", "str", help="model custom: 'pkg.mod:factory' or 'file.py:factory' (docs/python-client.md)."),
    Param("model_path", "str", help="model torchscript: the file torch.jit.save wrote."),
    Param("input_shapes", "str", help="model torchscript: 'B,3,224,224;B,16' (B = batch_size)."),
    Param("input_dtypes", "str", help="model torchscript: 'float32;int64' (default float32 each)."),
)

#: Steps of compiled work run (untimed) before READY, so compilation stays out of every step.
COMPILE_WARMUP_CALLS = 2

_ALLOCATE = re.compile(r"(?:Tried to allocate|you tried to allocate)\s+([\d.]+)\s*(GiB|MiB|KiB|B|bytes)?")
_UNITS = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10, "B": 1, "bytes": 1, None: 1}


def requested_bytes(message: str) -> Optional[int]:
    """The allocation size an out-of-memory message names ("Tried to allocate 2.00 GiB" on CUDA,
    "you tried to allocate 4398046511104 bytes" on the CPU), or None."""
    m = _ALLOCATE.search(message)
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def classify_torch_error(error: BaseException) -> Optional[RunnerError]:
    """PyTorch's failures that are outcomes, not faults: out of memory, batch norm on one value,
    an op without a deterministic kernel."""
    text = str(error)
    oom_type = getattr(getattr(sys.modules.get("torch"), "cuda", None), "OutOfMemoryError", None)
    if (oom_type is not None and isinstance(error, oom_type)) or (
            isinstance(error, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)):
        first = text.strip().splitlines()[0] if text.strip() else "out of memory"
        n = requested_bytes(text)
        return OutOfMemory(first, **({"requested_bytes": n} if n is not None else {}))
    if "Expected more than 1 value per channel when training" in text:
        return Unsupported("training this model needs batch_size >= 2: batch normalisation has one value per "
                           "channel (%s)" % text.strip().splitlines()[0])
    if "does not have a deterministic implementation" in text:
        return Unsupported("deterministic: %s" % text.strip().splitlines()[0])
    return None


class TorchRunner(ModelBuilders, LoadServing, Runner):
    """Cells of PyTorch from Python (the calling rules are Runner's); several in one process under
    ``dlbench run --runner-reuse`` (``end_cell``)."""

    name = RUNNER
    multi_cell = True

    def __init__(self) -> None:
        self.torch: Any = None
        self.library_benchmark_limit: Optional[int] = None
        self.import_error: Optional[str] = None
        self._start_cell_state()

    def _start_cell_state(self) -> None:
        """What one cell builds or accumulates, as a fresh process has it before its ``setup``."""
        self.p: Dict[str, Any] = {}
        self.device: Any = None
        self.batch = 1
        self._step: Callable[[], int] = lambda: 0
        self.last_loss: Any = None
        self.scaler: Any = None
        self.flops_per_sample: Optional[float] = None
        self.compile_s: Optional[float] = None
        self.compile_second_call_s: Optional[float] = None
        self.info: Dict[str, Any] = {}
        self.seed = 0
        self._serve: Optional[Callable[[List[int], int], QueryPhases]] = None

    # -- HELLO ----------------------------------------------------------------------------------
    def hello(self) -> Hello:
        try:
            import torch
        except ImportError as e:
            self.import_error = str(e)
            return Hello(RUNNER, __version__, {"name": "pytorch", "available": False, **python_facts()},
                         [cpu_device()])
        self.torch = torch
        # The library's limit as the process started: a later cell without the key gets it back.
        self.library_benchmark_limit = getattr(torch.backends.cudnn, "benchmark_limit", None)
        framework: Dict[str, Any] = {"name": "pytorch", "version": torch.__version__,
                                     "cuda_built": torch.backends.cuda.is_built(), **python_facts()}
        if torch.version.cuda:
            framework["cuda_runtime"] = torch.version.cuda
        if torch.backends.cudnn.is_available():
            framework["cudnn"] = torch.backends.cudnn.version()
        try:
            import torchvision
            framework["torchvision"] = torchvision.__version__
        except ImportError:
            pass
        framework["build_config"] = torch.__config__.show()
        devices = [cpu_device()]
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                entry = {"type": "cuda", "index": i, "name": props.name,
                         "compute_capability": "%d.%d" % (props.major, props.minor),
                         "total_memory_bytes": props.total_memory, "multiprocessors": props.multi_processor_count}
                uuid = self._uuid(i)
                if uuid:
                    entry["uuid"] = uuid
                devices.append(entry)
        return Hello(RUNNER, __version__, framework, devices,
                     {"threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads()})

    def _uuid(self, ordinal: int) -> Optional[str]:
        props = self.torch.cuda.get_device_properties(ordinal)
        raw = getattr(props, "uuid", None)
        if raw is not None:
            text = str(raw)
            return text if text.startswith("GPU-") else "GPU-" + text
        uuids = device_uuids("cuda", [ordinal])
        return uuids[0] if uuids else None

    # -- setup ----------------------------------------------------------------------------------
    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        p = parse_params(cell.params, PARAMS, RUNNER)
        if self.torch is None:
            raise Unsupported("PyTorch is not installed for %s (%s)" % (sys.executable, self.import_error))
        torch = self.torch
        self.p = p
        require_single_process(p)
        if p["model"] is None:
            raise InvalidParameter("model: required (resnet50, mobilenet_v2, bert_base, custom, torchscript)")
        kind, index = parse_device(p["device"])
        major = int(torch.__version__.split(".")[0])
        cc: Optional[Tuple[int, int]] = None
        if kind == "cuda":
            if not torch.cuda.is_available():
                raise Unsupported("device %s: CUDA is not available to this PyTorch (torch %s, built with CUDA %s)"
                                  % (p["device"], torch.__version__, torch.version.cuda))
            if index >= torch.cuda.device_count():
                raise Unsupported("device %s: this machine has %d CUDA device(s)" % (p["device"], torch.cuda.device_count()))
            props = torch.cuda.get_device_properties(index)
            cc = (props.major, props.minor)
        precision, train = p["precision"], p["scenario"] == "train"
        if precision == "int8":
            raise Unsupported("precision int8 is not implemented in the PyTorch runner")
        if precision == "tf32" and (kind != "cuda" or cc is None or cc[0] < 8):
            raise Unsupported("precision tf32 needs a CUDA device of compute capability >= 8.0")
        if precision == "bf16" and kind == "cuda" and cc is not None and cc[0] < 8:
            raise Unsupported("precision bf16 needs compute capability >= 8.0 (this GPU is %d.%d)" % cc)
        if precision == "fp16" and kind == "cpu" and (train or major < 2):
            raise Unsupported("precision fp16 on the CPU: inference only, and only with PyTorch >= 2 (this is %s)"
                              % torch.__version__)
        if p["compile"] and not hasattr(torch, "compile"):
            raise Unsupported("compile: true needs torch.compile (PyTorch >= 2.0); this is torch %s" % torch.__version__)

        if p["threads"] is not None:
            torch.set_num_threads(p["threads"])
        if p["deterministic"]:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision != "fp32"
        torch.backends.cudnn.benchmark = p["cudnn_benchmark"] and not p["deterministic"]
        limit = p["cudnn_benchmark_limit"] if p["cudnn_benchmark_limit"] is not None else self.library_benchmark_limit
        if limit is not None:
            torch.backends.cudnn.benchmark_limit = limit
        torch.backends.cudnn.deterministic = p["deterministic"]

        load = cell.load
        if load is not None and p["compile"]:
            raise Unsupported("compile: true with load is not implemented in the Python runner (the batcher runs "
                              "every batch size from 1 to max_batch, each a recompilation)")
        self.seed = cell.seed
        torch.manual_seed(cell.seed)
        generator = torch.Generator().manual_seed(cell.seed)
        self.batch = batch = p["batch_size"]
        self.device = device = torch.device("cuda", index) if kind == "cuda" else torch.device("cpu")
        # A load cell's inputs are its sample library: sample_library_size synthetic samples.
        built_batch = load.sample_library_size if load is not None else batch
        model, inputs, target, loss_fn, convolutional, optimizer_name, options = self._build(p, built_batch, generator)

        if p["memory_format"] == "channels_last" or (p["memory_format"] == "auto" and convolutional and kind == "cuda"):
            memory_format = torch.channels_last
        else:
            memory_format = torch.contiguous_format
        model = model.to(device)
        if load is not None:
            if any(t.dim() == 0 or t.shape[0] < load.sample_library_size for t in inputs):
                raise InvalidParameter("the model's inputs hold fewer than sample_library_size (%d) samples: a "
                                       "custom factory must make batch_size samples" % load.sample_library_size)
            library = tuple(t[:load.sample_library_size] for t in inputs)
            inputs = ()  # the library replaces the fixed batch (_prepare_load places it)
        inputs = tuple(t.to(device) for t in inputs)
        if memory_format is torch.channels_last:
            model = model.to(memory_format=torch.channels_last)
            inputs = tuple(t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)
        target = target.to(device) if target is not None else None
        model.train(train)

        if self.flops_per_sample is not None:
            self.flops_per_sample *= 3.0 if train else 1.0  # a training step: 3x the forward (docs/models.md)

        amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        optimizer, optimizer_impl, lr = None, None, None
        if train:
            foreach = p["optimizer_impl"] == "foreach" or (p["optimizer_impl"] == "auto" and kind == "cuda")
            optimizer_impl = "foreach" if foreach else "per_param"
            if optimizer_name == "adamw":
                lr = p["lr"] if p["lr"] is not None else 1e-4
                optimizer = torch.optim.AdamW(model.parameters(), lr=lr, foreach=foreach)
            elif optimizer_name == "sgd":
                lr = p["lr"] if p["lr"] is not None else 0.1
                optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4, foreach=foreach)
            else:
                lr = p["lr"] if p["lr"] is not None else 0.01
                optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, foreach=foreach)
            if precision == "fp16":
                amp_mod = getattr(torch, "amp", None)
                self.scaler = (amp_mod.GradScaler("cuda") if amp_mod is not None and hasattr(amp_mod, "GradScaler")
                               else torch.cuda.amp.GradScaler())

        forward = model
        if p["compile"]:
            forward = torch.compile(model, mode=None if p["compile_mode"] == "default" else p["compile_mode"])
        sync = (lambda: torch.cuda.synchronize(device)) if kind == "cuda" else (lambda: None)
        autocast = (lambda: torch.autocast(device.type, dtype=amp)) if amp is not None else None
        self._step = self._make_step(forward, inputs, target, loss_fn, optimizer, autocast, sync, train,
                                     compiled=p["compile"])
        load_effective: Dict[str, Any] = {}
        if load is not None:
            load_effective = self._prepare_load(load, forward, library, autocast, memory_format)
        if p["compile"]:
            # Compilation happens on the first calls; run them here, before READY and the timed
            # steps, and report their time apart (EXTRAS compile_s).
            t0 = time.monotonic()
            self._step()
            t1 = time.monotonic()
            for _ in range(COMPILE_WARMUP_CALLS - 1):
                self._step()
            t2 = time.monotonic()
            self.compile_s = t1 - t0
            self.compile_second_call_s = (t2 - t1) / max(1, COMPILE_WARMUP_CALLS - 1)

        effective: Dict[str, Any] = {
            "model": p["model"], "scenario": p["scenario"], "batch_size": batch, "samples_per_step": batch,
            "device": str(device) if kind == "cpu" else "cuda:%d" % index, "precision": precision,
            "param_dtype": "float32", "autocast_dtype": str(amp).replace("torch.", "") if amp is not None else None,
            "loss_scaling": self.scaler is not None,
            "memory_format": "channels_last" if memory_format is torch.channels_last else "contiguous",
            "memory_format_requested": p["memory_format"],
            "threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads(),
            "allow_tf32_cublas": torch.backends.cuda.matmul.allow_tf32,
            "allow_tf32_cudnn": torch.backends.cudnn.allow_tf32,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_benchmark_limit": getattr(torch.backends.cudnn, "benchmark_limit", None),
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(), "deterministic": p["deterministic"],
            "seed": cell.seed, "strategy": "none", "world_size": 1,
            "compile": p["compile"], "compile_mode": p["compile_mode"] if p["compile"] else None,
            "grad_mode": "train" if train else ("no_grad" if p["compile"] else "inference_mode"),
            "timing": "host clock around each step; the step ends with a device synchronize",
            "torch_version": torch.__version__, "framework": "pytorch", "model_options": options,
        }
        effective.update(self.info)
        if load is not None:
            effective["load"] = load_effective
            effective["timing"] = load_effective["timing"]
        if p["deterministic"]:
            effective["cublas_workspace_config"] = os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")
        uuids = [self._uuid(index)] if kind == "cuda" else []
        if all(uuids):
            effective["device_uuids"] = uuids
        if kind == "cuda":
            effective["device_name"] = torch.cuda.get_device_name(index)
            effective["compute_capability"] = "%d.%d" % cc if cc else None
        if train:
            effective.update({"optimizer": optimizer_name if optimizer_name != "custom" else "sgd",
                              "optimizer_impl": optimizer_impl, "lr": lr})
        if self.flops_per_sample is not None:
            effective["flops_per_sample"] = self.flops_per_sample
        return effective

    def _make_step(self, forward: Any, inputs: Tuple[Any, ...], target: Any, loss_fn: Any, optimizer: Any,
                   autocast: Any, sync: Callable[[], None], train: bool, compiled: bool) -> Callable[[], int]:
        torch = self.torch
        batch = self.batch
        scaler = self.scaler

        def loss_of(out: Any) -> Any:
            if target is not None:
                return (loss_fn or torch.nn.functional.cross_entropy)(out, target)
            if loss_fn is not None:
                return loss_fn(out)
            if not isinstance(out, torch.Tensor) or out.dim() != 0 or not out.is_floating_point():
                raise Unsupported("scenario train: the model's forward must return the loss as one floating "
                                  "scalar when no target is given")
            return out

        if train:
            def train_step() -> int:
                optimizer.zero_grad(set_to_none=True)
                if autocast is not None:
                    with autocast():
                        loss = loss_of(forward(*inputs))
                else:
                    loss = loss_of(forward(*inputs))
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
                self.last_loss = loss.detach()
                sync()
                return batch
            return train_step

        grad_off = torch.no_grad if compiled else torch.inference_mode

        def infer_step() -> int:
            with grad_off():
                if autocast is not None:
                    with autocast():
                        forward(*inputs)
                else:
                    forward(*inputs)
            sync()
            return batch
        return infer_step

    # -- steps and reports ----------------------------------------------------------------------
    def step(self) -> int:
        return self._step()

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        torch = self.torch
        snap = host_memory(str(self.device))
        if self.device is not None and self.device.type == "cuda":
            d = self.device
            snap.update({"device_allocated_bytes": torch.cuda.memory_allocated(d),
                         "device_allocated_peak_bytes": torch.cuda.max_memory_allocated(d),
                         "device_reserved_bytes": torch.cuda.memory_reserved(d),
                         "device_reserved_peak_bytes": torch.cuda.max_memory_reserved(d)})
            if label == "after_warmup":
                # The end snapshot's peaks are then the steady state's own.
                torch.cuda.reset_peak_memory_stats(d)
        return snap

    def extras(self) -> Extras:
        metrics: List[Metric] = []
        info: Dict[str, Any] = dict(self.info)
        if self.flops_per_sample is not None:
            metrics.append(Metric("flops_per_sample", self.flops_per_sample, "FLOP"))
            info["flop_convention"] = ("3 x counted forward FLOPs (multiply-add = 2)" if self.p["scenario"] == "train"
                                       else "counted forward FLOPs (multiply-add = 2)")
        if self.compile_s is not None:
            metrics.append(Metric("compile_time_s", self.compile_s, "s"))
            metrics.append(Metric("compile_second_call_s", self.compile_second_call_s or 0.0, "s"))
            info["compile_note"] = ("compile_s: the first call of the compiled step (compilation plus one step), "
                                    "before READY; the measured steps exclude it")
        if self.last_loss is not None:
            loss = float(self.last_loss.float().cpu())
            if loss == loss and abs(loss) != float("inf"):
                info["final_loss"] = loss
            else:
                info["final_loss_nonfinite"] = True
        if self.scaler is not None:
            metrics.append(Metric("loss_scale_final", float(self.scaler.get_scale()), ""))
        if self.device is not None and self.device.type == "cuda":
            info["device_name"] = self.torch.cuda.get_device_name(self.device)
        return Extras(metrics, info)

    def classify(self, error: BaseException) -> Optional[RunnerError]:
        return classify_torch_error(error)

    def end_cell(self) -> None:
        """Drops the cell's model, optimizer, inputs and figures; on CUDA returns the caching
        allocator's free blocks (``empty_cache``) and starts its peak statistics again; then resets
        the process's peak RSS (dlbench-torch does the same: docs/torch-runner.md)."""
        device = self.device
        self._start_cell_state()
        torch = self.torch
        if device is not None and device.type == "cuda" and torch is not None:
            gc.collect()  # the cell's tensors go before the cache is emptied
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        reset_peak_rss()


def main() -> None:
    """Entry point: ``python3 -m dlbench_runners.torch`` (or the dlbench-py-torch script)."""
    _client_main(TorchRunner())


if __name__ == "__main__":
    main()
