"""JAX (with Flax) as a dlbench runner: ``runner: {command: [python3, -m, dlbench_runners.jax]}``.

``compile: true`` (the default) compiles the whole train or infer step with XLA ahead of time
(``jax.jit(step).lower(...).compile()``) before READY and reports the lowering and XLA compile
times as EXTRAS metrics apart from the measured steps; ``compile: false`` runs the same step op by
op under ``jax.disable_jit()``, the "XLA off" control, whose first step (it compiles each primitive
once) runs before READY and is reported as ``op_by_op_first_step_s``. Every step ends with
``jax.block_until_ready`` on everything it produced. Models: Flax ResNet-50 v1.5 (NHWC) and
BERT-Base, sized by the zoo's parameters and defaults (dlbench_runners/jax_models.py).

jax and flax are imported lazily: without them the runner still says HELLO, and a cell ends as
ERROR unsupported ("jax is not installed").
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

from dlbench_client import (CellConfig, Extras, Hello, InvalidParameter, Metric, OutOfMemory, Runner, RunnerError,
                            Unsupported, __version__, main as _client_main)

from .host import cpu_device, cuda_uuid, host_memory, python_facts
from .params import CORE, Param, parse_device, parse_params, require_single_process

RUNNER = "python-jax"

_SIZE = dict(minimum=1, maximum=1 << 20)

PARAMS = CORE + (
    Param("image_size", "int", help="Input height and width of resnet50 (224).", **_SIZE),
    Param("num_classes", "int", help="Classifier outputs (1000; BERT 2).", **_SIZE),
    Param("layers", "int", help="BERT encoder layers (12).", **_SIZE),
    Param("hidden_size", "int", help="BERT hidden size (768).", **_SIZE),
    Param("heads", "int", help="BERT attention heads (12).", **_SIZE),
    Param("seq_len", "int", help="BERT sequence length (128, at most 512).", **_SIZE),
    Param("vocab_size", "int", help="BERT vocabulary (30522).", **_SIZE),
    Param("lr", "number", minimum=0, help="Learning rate (0.1 SGD for resnet50, 1e-4 AdamW for BERT)."),
    Param("compile", "bool", True, help="true: jax.jit (XLA); false: op by op under jax.disable_jit()."),
    # Keys dlbench fills for runner: torch, accepted with their defaults so that one matrix gives
    # the same cell keys with either runner (compare matches cells by key).
    Param("memory_format", "enum", "auto", ("auto", "contiguous", "channels_last"),
          help="auto only: XLA picks layouts (inputs are NHWC)."),
    Param("cudnn_benchmark", "bool", True, help="true only: XLA autotunes while compiling (XLA_FLAGS controls it)."),
    Param("deterministic", "bool", False, help="false only (XLA_FLAGS=--xla_gpu_deterministic_ops=true otherwise)."),
    Param("optimizer_impl", "enum", "auto", ("auto", "foreach", "per_param"),
          help="auto only: the update is one XLA computation."),
)


def _oom(error: BaseException) -> Optional[RunnerError]:
    text = str(error)
    if "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text:
        return OutOfMemory(text.strip().splitlines()[0] if text.strip() else "out of memory")
    return None


class JaxRunner(Runner):
    """One cell of JAX/Flax (the calling rules are Runner's)."""

    name = RUNNER

    def __init__(self) -> None:
        self.jax: Any = None
        self.import_error: Optional[str] = None
        self.device: Any = None
        self.batch = 1
        self._step: Callable[[], int] = lambda: 0
        self.metrics: List[Metric] = []
        self.info: Dict[str, Any] = {}
        self.last_loss: Any = None
        self.train = True

    def hello(self) -> Hello:
        try:
            import jax
        except ImportError as e:
            self.import_error = str(e)
            return Hello(RUNNER, __version__, {"name": "jax", "available": False, **python_facts()}, [cpu_device()])
        self.jax = jax
        framework: Dict[str, Any] = {"name": "jax", "version": jax.__version__, **python_facts()}
        try:
            import jaxlib
            framework["jaxlib"] = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
        except (ImportError, AttributeError):
            pass
        try:
            import flax
            framework["flax"] = flax.__version__
        except ImportError:
            framework["flax"] = None
        devices = [cpu_device()]
        try:
            gpus = jax.devices("gpu")
        except Exception:  # no GPU backend in this jaxlib or on this machine (RuntimeError, or a plugin's own)
            gpus = []
        for d in gpus:
            entry: Dict[str, Any] = {"type": "cuda", "index": d.id, "name": d.device_kind,
                                     "local_hardware_id": getattr(d, "local_hardware_id", None)}
            cc = getattr(d, "compute_capability", None)
            if cc is not None:
                entry["compute_capability"] = str(cc)
            uuid = cuda_uuid(getattr(d, "local_hardware_id", d.id))
            if uuid:
                entry["uuid"] = uuid
            devices.append(entry)
        if gpus:
            try:
                framework["platform_version"] = gpus[0].client.platform_version
            except AttributeError:
                pass
        return Hello(RUNNER, __version__, framework, devices,
                     {"xla_flags": os.environ.get("XLA_FLAGS", ""),
                      "xla_python_client_preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "")})

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        p = parse_params(cell.params, PARAMS, RUNNER)
        if self.jax is None:
            raise Unsupported("jax is not installed for %s (%s)" % (sys.executable, self.import_error))
        try:
            importlib.import_module("flax")
        except ImportError as e:
            raise Unsupported("flax is not installed for %s (%s): the JAX runner's models are Flax modules"
                              % (sys.executable, e)) from e
        jax = self.jax
        import jax.numpy as jnp
        from flax.core import unfreeze

        from . import jax_models
        require_single_process(p)
        for key, only in (("memory_format", "auto"), ("cudnn_benchmark", True), ("deterministic", False),
                          ("optimizer_impl", "auto")):
            if p[key] != only:
                raise Unsupported("%s %s: the JAX runner accepts only %s (XLA decides; see docs/python-client.md)"
                                  % (key, str(p[key]).lower(), str(only).lower()))
        if p["model"] not in ("resnet50", "bert_base"):
            raise InvalidParameter("model: expected resnet50 or bert_base (got '%s')" % p["model"])
        kind, index = parse_device(p["device"])
        if kind == "cuda":
            try:
                gpus = jax.devices("gpu")
            except RuntimeError as e:
                raise Unsupported("device %s: this jax has no GPU backend (%s)" % (p["device"], e)) from e
            if index >= len(gpus):
                raise Unsupported("device %s: jax sees %d GPU(s)" % (p["device"], len(gpus)))
            device = gpus[index]
        else:
            device = jax.devices("cpu")[0]
        self.device = device
        precision, self.train = p["precision"], p["scenario"] == "train"
        cc = getattr(device, "compute_capability", None)
        major = int(str(cc).split(".")[0]) if cc is not None else None
        if precision == "int8":
            raise Unsupported("precision int8 is not implemented in the JAX runner")
        if precision == "tf32" and (kind != "cuda" or (major is not None and major < 8)):
            raise Unsupported("precision tf32 needs a CUDA device of compute capability >= 8.0")
        if precision == "fp16" and self.train:
            raise Unsupported("precision fp16 training needs loss scaling, which the JAX runner does not implement "
                              "(use bf16)")
        matmul = "tensorfloat32" if precision == "tf32" else "float32"
        jax.config.update("jax_default_matmul_precision", matmul)
        dtype = {"bf16": jnp.bfloat16, "fp16": jnp.float16}.get(precision, jnp.float32)

        self.batch = batch = p["batch_size"]
        with jax.default_device(device):
            try:
                built = jax_models.build(p["model"], p, batch, dtype, cell.seed)
            except ValueError as e:
                raise InvalidParameter(str(e)) from e
            model = built["model"]
            inputs = tuple(jax.device_put(x, device) for x in built["inputs"])
            labels = jax.device_put(built["labels"], device)
            key = jax.device_put(jax.random.PRNGKey(cell.seed % (2**32)), device)
            init = jax.jit(lambda k, *xs: model.init({"params": k, "dropout": k}, *xs, train=False))
            variables = unfreeze(init(key, *inputs))
        params = variables.pop("params")
        model_state = dict(variables)  # batch_stats for ResNet-50; empty for BERT
        lr = p["lr"] if p["lr"] is not None else built["lr"]
        opt_init, opt_update = (jax_models.sgd(lr) if built["optimizer"] == "sgd" else jax_models.adamw(lr))

        def train_step(state: Any, xs: Any, y: Any) -> Any:
            params, opt_state, mstate, rng = state
            rng, drop = jax.random.split(rng)

            def loss_fn(params: Any) -> Any:
                variables = {"params": params, **mstate}
                if mstate:
                    logits, updates = model.apply(variables, *xs, train=True, mutable=list(mstate),
                                                  rngs={"dropout": drop})
                    updates = unfreeze(updates)
                else:
                    logits, updates = model.apply(variables, *xs, train=True, rngs={"dropout": drop}), {}
                return jax_models.cross_entropy(logits, y), updates

            (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            params, opt_state = opt_update(grads, opt_state, params)
            return (params, opt_state, {**mstate, **updates}, rng), loss

        def infer_step(params: Any, mstate: Any, xs: Any) -> Any:
            return model.apply({"params": params, **mstate}, *xs, train=False)

        compile_on = p["compile"]
        if self.train:
            with jax.default_device(device):
                state = (params, jax.jit(opt_init)(params), model_state, jax.random.fold_in(key, 2))
            holder = {"state": state}
            if compile_on:
                jitted = jax.jit(train_step, donate_argnums=(0,))
                compiled = self._compile(jitted, state, inputs, labels)

                def step() -> int:
                    holder["state"], loss = compiled(holder["state"], inputs, labels)
                    jax.block_until_ready((holder["state"], loss))
                    self.last_loss = loss
                    return batch
            else:
                def step() -> int:
                    with jax.disable_jit():
                        holder["state"], loss = train_step(holder["state"], inputs, labels)
                    jax.block_until_ready((holder["state"], loss))
                    self.last_loss = loss
                    return batch
        else:
            if compile_on:
                compiled = self._compile(jax.jit(infer_step), params, model_state, inputs)

                def step() -> int:
                    jax.block_until_ready(compiled(params, model_state, inputs))
                    return batch
            else:
                def step() -> int:
                    with jax.disable_jit():
                        out = infer_step(params, model_state, inputs)
                    jax.block_until_ready(out)
                    return batch
        self._step = step
        if not compile_on:
            # Op by op, the first call still compiles every primitive it meets (one small XLA program
            # each, cached): on the H200 that first step took 8.4 s for a batch-2 ResNet-50 at 32 px
            # and 25.7 s for a 1-layer BERT train step, against a steady state of a fraction of a
            # second. It runs here, before READY and untimed, and is reported like jit's compile time.
            t0 = time.perf_counter()
            step()
            self.metrics.append(Metric("op_by_op_first_step_s", time.perf_counter() - t0, "s"))
            self.info["op_by_op_note"] = ("op_by_op_first_step_s: the first op-by-op step, which compiles each "
                                          "primitive once; run before READY, outside the measured steps")

        n_params = sum(int(x.size) for x in jax.tree_util.tree_leaves(params))
        self.info.update({"parameters": n_params, "layout": built["layout"]})
        effective: Dict[str, Any] = {
            "model": p["model"], "scenario": p["scenario"], "batch_size": batch, "samples_per_step": batch,
            "device": "cpu" if kind == "cpu" else "cuda:%d" % index, "jax_device": str(device),
            "precision": precision, "param_dtype": "float32", "compute_dtype": jnp.dtype(dtype).name,
            "jax_default_matmul_precision": matmul, "compile": compile_on,
            "execution": "jax.jit, compiled before READY" if compile_on else "op by op under jax.disable_jit()",
            "seed": cell.seed, "strategy": "none", "world_size": 1, "optimizer": built["optimizer"] if self.train else None,
            "lr": lr if self.train else None, "model_options": built["options"], "layout": built["layout"],
            "parameters": n_params, "jax_version": jax.__version__, "framework": "jax",
            "timing": "host clock around each step; the step ends with jax.block_until_ready on its outputs",
            "memory_format": "auto", "cudnn_benchmark": True, "deterministic": False, "optimizer_impl": "auto",
        }
        if kind == "cuda":
            uuid = cuda_uuid(getattr(device, "local_hardware_id", index))
            if uuid:
                effective["device_uuids"] = [uuid]
            effective["device_name"] = device.device_kind
        else:
            effective["device_uuids"] = []
        return effective

    def _compile(self, jitted: Any, *args: Any) -> Any:
        """Lowers and compiles ahead of time; records both durations (before READY, untimed)."""
        t0 = time.monotonic()
        lowered = jitted.lower(*args)
        t1 = time.monotonic()
        compiled = lowered.compile()
        t2 = time.monotonic()
        self.metrics += [Metric("jax_lower_s", t1 - t0, "s"), Metric("xla_compile_s", t2 - t1, "s")]
        self.info["compile_note"] = ("jax_lower_s: tracing and lowering to StableHLO; xla_compile_s: XLA's "
                                     "compilation (autotuning included); both before READY, outside every step")
        return compiled

    def step(self) -> int:
        return self._step()

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        snap: Dict[str, Any] = host_memory(str(self.device))
        stats = None
        try:
            stats = self.device.memory_stats() if self.device is not None else None
        except Exception:  # a backend without allocator statistics (the CPU's may raise or return None)
            stats = None
        if stats:
            for ours, theirs in (("device_allocated_bytes", "bytes_in_use"),
                                 ("device_allocated_peak_bytes", "peak_bytes_in_use"),
                                 ("device_reserved_bytes", "pool_bytes"), ("device_reserved_peak_bytes", "peak_pool_bytes")):
                if isinstance(stats.get(theirs), int):
                    snap[ours] = stats[theirs]
            # The allocator's ceiling is no memory field of the protocol (docs/metrics.md): it goes
            # to the cell's extras.
            if isinstance(stats.get("bytes_limit"), int):
                self.info["device_memory_limit_bytes"] = stats["bytes_limit"]
        return snap

    def extras(self) -> Extras:
        info = dict(self.info)
        info["memory_note"] = "JAX cannot reset its peak counters: after_warmup's and end's peaks are the cell's"
        if self.last_loss is not None:
            loss = float(self.last_loss)
            if loss == loss and abs(loss) != float("inf"):
                info["final_loss"] = loss
            else:
                info["final_loss_nonfinite"] = True
        return Extras(list(self.metrics), info)

    def classify(self, error: BaseException) -> Optional[RunnerError]:
        return _oom(error)


def main() -> None:
    """Entry point: ``python3 -m dlbench_runners.jax`` (or the dlbench-py-jax script)."""
    _client_main(JaxRunner())


if __name__ == "__main__":
    main()
