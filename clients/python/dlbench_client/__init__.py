"""The dlbench runner protocol for Python programs (standard library only).

Any program that speaks the protocol is a dlbench runner: PyTorch, JAX, ONNX Runtime or TensorFlow
from Python are measured, monitored and stored by the same harness as the built-in runners.
docs/python-client.md is the guide, docs/protocol.md the normative text.

The usual way is a Runner object driven by ``run``::

    from dlbench_client import Hello, InvalidParameter, Runner, main

    class MyRunner(Runner):
        def hello(self):
            return Hello(runner="my-runner", framework={"name": "jax", "version": jax.__version__})
        def setup(self, cell):                   # cell.params, cell.seed, cell.limits
            if cell.params.get("batch_size", 1) > 4096:
                raise InvalidParameter("batch_size: at most 4096")
            self.batch = cell.params.get("batch_size", 1)
            return {"batch_size": self.batch, "samples_per_step": self.batch}   # READY's effective
        def step(self):
            jax.block_until_ready(self.train_step())   # synchronise before returning
            return self.batch                          # samples in this step

    if __name__ == "__main__":
        main(MyRunner())

A cell with ``load`` (inference under load, docs/load.md) calls ``issue(samples)`` instead of
``step()``: run the model on those entries of the sample library and return when the outputs are
ready. ``dlbench_client.load`` runs the four LoadGen scenarios around it and sends QUERIES.

A runner class with ``multi_cell = True`` serves several cells in one process when dlbench offers
it (``dlbench run --runner-reuse``): ``setup`` runs once per cell, and ``end_cell()`` after each.

``RunnerSession`` is the same conversation message by message, for programs that own their loop.
"""

from .load import (LoadResult, LoadSettings, LoadSettingsError, QueryPhases, current_stream, resolve_load_settings,
                   run_load)
from .runner import (Extras, Hello, InvalidParameter, OutOfMemory, Runner, RunnerError, Unsupported,
                     last_traceback_line, main, run, run_cell, serve, serve_cell, supports_load)
from .session import (FD_IN_ENV, FD_OUT_ENV, CellConfig, LoopResult, Metric, RunnerLimits, RunnerSession,
                      StepPhases, now_ns, parse_configure)
from .wire import (DONE_REASONS, ERROR_KINDS, HAS_COMM, HAS_COMPUTE, HAS_DATA_WAIT, MAX_PAYLOAD_BYTES,
                   PROTOCOL_VERSION, Frame, FrameReader, MessageType, ProtocolError, QueryRecord, StepRecord)

#: The client release: the major number is the protocol version it speaks (PROTOCOL_VERSION), the
#: rest counts releases of this package for that protocol.
__version__ = "1.3.0"

__all__ = [
    "CellConfig", "DONE_REASONS", "ERROR_KINDS", "Extras", "FD_IN_ENV", "FD_OUT_ENV", "Frame", "FrameReader",
    "HAS_COMM", "HAS_COMPUTE", "HAS_DATA_WAIT", "Hello", "InvalidParameter", "LoadResult", "LoadSettings",
    "LoadSettingsError", "LoopResult", "MAX_PAYLOAD_BYTES", "MessageType", "Metric", "OutOfMemory",
    "PROTOCOL_VERSION", "ProtocolError", "QueryPhases", "QueryRecord", "Runner", "RunnerError", "RunnerLimits",
    "RunnerSession", "StepPhases", "StepRecord", "Unsupported", "__version__", "current_stream",
    "last_traceback_line", "main", "now_ns", "parse_configure", "resolve_load_settings", "run", "run_cell",
    "run_load", "serve", "serve_cell", "supports_load",
]
