"""The dlbench runner protocol for Python programs (standard library only).

Any program that speaks the protocol can be a dlbench runner: TensorFlow, JAX or PyTorch from
Python measure through the same harness, monitors and store as the built-in runners. This module
is the Python twin of src/protocol/runner_session.h; docs/protocol.md is the normative text.

    from dlbench_client import RunnerSession
    session = RunnerSession.connect()
    session.send_hello(runner="my-jax-runner", framework={"name": "jax", "version": jax.__version__})
    cell = session.receive_configure()          # dict: params, seed, limits, rank, world_size
    model = build(cell["params"])               # on failure: session.send_error("invalid", "...")
    session.send_ready({"batch_size": 32})
    def step():
        model.train_step(); jax.block_until_ready(...)   # synchronise before returning
        return 32                                 # samples in this step
    end = session.run_steps(step)               # streams STEPS until STOP or a ceiling
    session.send_done(end)
"""

import json
import os
import select
import struct
import time

PROTOCOL_VERSION = 1
FD_IN_ENV = "DLBENCH_PROTOCOL_FD_IN"
FD_OUT_ENV = "DLBENCH_PROTOCOL_FD_OUT"

HELLO, CONFIGURE, READY, STEPS, MEMORY, EXTRAS, ERROR, DONE, STOP = range(1, 10)
_HEADER = struct.Struct("<IHH")          # payload length, type, reserved
_STEP = struct.Struct("<qqqqqII")        # start, end, data_wait, compute, comm (ns), samples, present
HAS_DATA_WAIT, HAS_COMPUTE, HAS_COMM = 1, 2, 4

BATCH_RECORDS = 1024
FLUSH_INTERVAL_NS = 50_000_000


class ProtocolError(Exception):
    pass


def _now_ns():
    # CLOCK_MONOTONIC, the clock every dlbench timestamp uses.
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class RunnerSession:
    def __init__(self, fd_in, fd_out):
        self._in = fd_in
        self._out = fd_out
        self._buf = b""
        self._records = []
        self._last_flush = _now_ns()
        self.stop_requested = False
        self.rank = 0

    @classmethod
    def connect(cls):
        if FD_IN_ENV not in os.environ or FD_OUT_ENV not in os.environ:
            raise ProtocolError("this program is a dlbench runner: start it through 'dlbench run' "
                                "(DLBENCH_PROTOCOL_FD_IN/_OUT are not set)")
        return cls(int(os.environ[FD_IN_ENV]), int(os.environ[FD_OUT_ENV]))

    # -- frames ---------------------------------------------------------------------------
    def _write(self, data):
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._out, view)
            except BrokenPipeError:
                self.stop_requested = True
                return
            view = view[n:]

    def _send_json(self, msg_type, body):
        payload = json.dumps(body).encode("utf-8")
        self._write(_HEADER.pack(len(payload), msg_type, 0) + payload)

    def _next_frame(self):
        if len(self._buf) < _HEADER.size:
            return None
        length, msg_type, _ = _HEADER.unpack_from(self._buf)
        if msg_type < 1 or msg_type > 9:
            raise ProtocolError("unknown frame type %d" % msg_type)
        if len(self._buf) < _HEADER.size + length:
            return None
        payload = self._buf[_HEADER.size:_HEADER.size + length]
        self._buf = self._buf[_HEADER.size + length:]
        return msg_type, payload

    def _read_some(self):
        data = os.read(self._in, 65536)
        self._buf += data
        return len(data)

    # -- messages -------------------------------------------------------------------------
    def send_hello(self, runner, runner_version="", framework=None, devices=None, **extra):
        body = {"protocol": PROTOCOL_VERSION, "pid": os.getpid(), "runner": runner,
                "runner_version": runner_version, "framework": framework or {},
                "devices": devices or []}
        body.update(extra)
        self._send_json(HELLO, body)

    def receive_configure(self):
        while True:
            frame = self._next_frame()
            if frame is not None:
                msg_type, payload = frame
                if msg_type != CONFIGURE:
                    raise ProtocolError("expected CONFIGURE, got type %d" % msg_type)
                cell = json.loads(payload)
                self.rank = cell.get("rank", 0)
                return cell
            if self._read_some() == 0:
                return None  # the orchestrator only probed our HELLO

    def send_ready(self, effective):
        self._send_json(READY, {"effective": effective})

    def send_memory(self, snapshot):
        self._send_json(MEMORY, snapshot)

    def send_extras(self, metrics=None, info=None):
        self._send_json(EXTRAS, {"metrics": metrics or [], "info": info or {}})

    def send_error(self, kind, message, **details):
        assert kind in ("oom", "invalid", "unsupported", "internal")
        body = dict(details)
        body.update({"kind": kind, "message": message})
        self._send_json(ERROR, body)

    def send_done(self, reason, steps=0):
        self._send_json(DONE, {"reason": reason, "steps": steps})

    # -- steps ----------------------------------------------------------------------------
    def record(self, start_ns, end_ns, samples, data_wait_ns=None, compute_ns=None, comm_ns=None):
        present = 0
        if data_wait_ns is not None:
            present |= HAS_DATA_WAIT
        if compute_ns is not None:
            present |= HAS_COMPUTE
        if comm_ns is not None:
            present |= HAS_COMM
        self._records.append((start_ns, end_ns, data_wait_ns or 0, compute_ns or 0, comm_ns or 0,
                              samples, present))
        if len(self._records) >= BATCH_RECORDS or end_ns - self._last_flush >= FLUSH_INTERVAL_NS:
            self.flush(end_ns)

    def flush(self, now_ns=None):
        self._last_flush = now_ns or _now_ns()
        if self._records and not self.stop_requested:
            body = struct.pack("<II", self.rank, len(self._records)) + b"".join(
                _STEP.pack(*r) for r in self._records)
            self._write(_HEADER.pack(len(body), STEPS, 0) + body)
        self._records = []
        self._poll_commands()

    def _poll_commands(self):
        while not self.stop_requested:
            frame = self._next_frame()
            if frame is not None:
                if frame[0] == STOP:
                    self.stop_requested = True
                continue
            ready, _, _ = select.select([self._in], [], [], 0)
            if not ready:
                return
            if self._read_some() == 0:
                self.stop_requested = True  # the orchestrator is gone

    def run_steps(self, step, max_steps=None, max_time_s=None, limits=None):
        """Calls step() until STOP or a ceiling; step returns the samples it processed and must
        leave the device synchronised. Returns the end reason for send_done."""
        limits = limits or {}
        max_steps = max_steps or limits.get("max_steps", 1_000_000)
        max_time_ns = int((max_time_s or limits.get("max_time_s", 600.0)) * 1e9)
        begin = _now_ns()
        steps = 0
        while True:
            t0 = _now_ns()
            samples = step()
            t1 = _now_ns()
            self.record(t0, t1, int(samples))
            steps += 1
            if self.stop_requested:
                reason = "stopped"
                break
            if steps >= max_steps:
                reason = "max_steps"
                break
            if t1 - begin >= max_time_ns:
                reason = "max_time"
                break
        self.flush()
        self.steps = steps
        return reason
