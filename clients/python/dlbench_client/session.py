"""The runner's side of the protocol over its pipe pair: the Python twin of
src/protocol/runner_session.h (docs/protocol.md is the normative text).

Calling sequence::

    session = RunnerSession.connect()                 # fds from DLBENCH_PROTOCOL_FD_IN/_OUT
    session.send_hello(runner="my-runner", framework={"name": "jax", "version": jax.__version__})
    cell = session.receive_configure()                # None: dlbench only probed the HELLO; exit 0
    ...build the model; on failure session.send_error("invalid", "...") and exit 0...
    session.send_ready({"batch_size": 32, "samples_per_step": 32})
    result = session.run_steps(step, cell.limits)     # STEPS until STOP or a ceiling
    # (a cell with `load`: dlbench_client.load.run_load(session, settings, issue, cell.limits)
    #  sends QUERIES instead, through record_query and flush_queries)
    session.send_memory("end", {...}); session.send_extras(metrics=[...], info={...})
    session.send_done(result.reason, result.steps)
    # A runner whose HELLO said multi_cell=True and whose CONFIGURE said serve_more then calls
    # session.begin_next_cell() and receive_configure() again (None there: dlbench ended it; exit 0).

Most programs need none of this directly: dlbench_client.runner.run() drives a Runner object
through the same sequence and turns exceptions into ERROR frames.
"""

from __future__ import annotations

import math
import os
import select
import signal
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Union

from .wire import (DONE_REASONS, ERROR_KINDS, HAS_COMM, HAS_COMPUTE, HAS_DATA_WAIT, HEADER, PROTOCOL_VERSION,
                   QUERIES_HEADER, QUERIES_VERSION, QUERY_HAS_COMPUTE, QUERY_HAS_D2H, QUERY_HAS_H2D, QUERY_HAS_HOST_POST,
                   QUERY_HAS_HOST_PRE, QUERY_RECORD, STEP_RECORD, STEPS_HEADER, FrameReader, MessageType, ProtocolError,
                   QueryRecord, check_step, decode_json, encode_json_frame, query_record_problem)

FD_IN_ENV = "DLBENCH_PROTOCOL_FD_IN"  # the runner reads commands here
FD_OUT_ENV = "DLBENCH_PROTOCOL_FD_OUT"  # the runner writes messages here

_clock_gettime_ns = time.clock_gettime_ns
_CLOCK_MONOTONIC = time.CLOCK_MONOTONIC


def now_ns() -> int:
    """CLOCK_MONOTONIC in nanoseconds: the clock of every dlbench timestamp (steps and monitor
    samples align without conversion)."""
    return _clock_gettime_ns(_CLOCK_MONOTONIC)


@dataclass(frozen=True)
class RunnerLimits:
    """Ceilings the runner enforces by itself, so that a lost orchestrator never leaves it running.
    The orchestrator sets them past its own stopping rule; these defaults apply when CONFIGURE
    carries none (``RunnerLimits`` in runner_session.h)."""

    max_steps: int = 1_000_000
    max_time_s: float = 600.0


@dataclass(frozen=True)
class CellConfig:
    """What CONFIGURE carries: every cell parameter by its registry name (core ones validated by
    dlbench, any other key passed through unvalidated), the cell's seed, rank and limits."""

    params: Dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    rank: int = 0
    world_size: int = 1
    cell_key: str = ""
    limits: RunnerLimits = RunnerLimits()
    #: A load cell's settings (dlbench_client.load.LoadSettings), resolved from ``params`` by
    #: ``run`` before ``setup``; None for a cell that steps.
    load: Optional[Any] = None
    #: CONFIGURE's ``serve_more`` (``dlbench run --runner-reuse``, docs/adr/0011-runner-reuse.md):
    #: after this cell's DONE or ERROR the process waits for another CONFIGURE (or the end of the
    #: command pipe) instead of exiting. Sent only to a runner whose HELLO said ``multi_cell``.
    serve_more: bool = False


def _int_field(body: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtocolError("malformed CONFIGURE: %s must be an integer in %d..%d, got %r" % (name, low, high, value))
    return value


def parse_configure(body: Mapping[str, Any]) -> CellConfig:
    """A CellConfig from CONFIGURE's JSON (``ParseConfigure``); ProtocolError when malformed."""
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise ProtocolError("malformed CONFIGURE: params must be an object")
    seed = _int_field(body, "seed", 0, 0, 2**64 - 1)
    rank = _int_field(body, "rank", 0, 0, 2**32 - 1)
    world_size = _int_field(body, "world_size", 1, 1, 2**32 - 1)
    cell_key = body.get("cell_key", "")
    if not isinstance(cell_key, str):
        raise ProtocolError("malformed CONFIGURE: cell_key must be a string")
    limits_body = body.get("limits", {})
    if not isinstance(limits_body, dict):
        raise ProtocolError("malformed CONFIGURE: limits must be an object")
    defaults = RunnerLimits()
    max_steps = _int_field(limits_body, "max_steps", defaults.max_steps, 1, 2**63 - 1)
    max_time_s = limits_body.get("max_time_s", defaults.max_time_s)
    if isinstance(max_time_s, bool) or not isinstance(max_time_s, (int, float)) or not (
            math.isfinite(max_time_s) and max_time_s > 0):
        raise ProtocolError("malformed CONFIGURE: limits.max_time_s must be a number > 0, got %r" % (max_time_s,))
    serve_more = body.get("serve_more", False)
    if not isinstance(serve_more, bool):
        raise ProtocolError("malformed CONFIGURE: serve_more must be true or false, got %r" % (serve_more,))
    return CellConfig(params=params, seed=seed, rank=rank, world_size=world_size, cell_key=cell_key,
                      limits=RunnerLimits(max_steps=max_steps, max_time_s=float(max_time_s)), serve_more=serve_more)


class StepPhases(NamedTuple):
    """What a step may return instead of a plain sample count: the samples and the phase
    durations it knows (None: not known, which is not zero)."""

    samples: int
    data_wait_ns: Optional[int] = None
    compute_ns: Optional[int] = None
    comm_ns: Optional[int] = None


@dataclass(frozen=True)
class Metric:
    """One EXTRAS metric; stored with the cell under ``name``."""

    name: str
    value: float
    unit: str = ""


class LoopResult(NamedTuple):
    """How a step loop ended: ``reason`` is one of DONE_REASONS."""

    reason: str
    steps: int


StepFn = Callable[[], Union[int, StepPhases]]


class RunnerSession:
    """One conversation with the orchestrator over a pipe pair. Not thread-safe: one thread steps
    and sends."""

    #: Records kept before a STEPS frame is sent, and the longest (ns) a record waits to be sent.
    BATCH_RECORDS = 1024
    FLUSH_INTERVAL_NS = 50_000_000

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self._in = fd_in
        self._out = fd_out
        self._reader = FrameReader()
        # The STEPS frame is built in place: header, rank/count, then the records, so recording a
        # step allocates nothing but the integers it is given.
        self._steps_prefix = HEADER.size + STEPS_HEADER.size
        self._steps = bytearray(self._steps_prefix + self.BATCH_RECORDS * STEP_RECORD.size)
        self._count = 0
        # The QUERIES frame of a load cell, built in place the same way.
        self._queries_prefix = HEADER.size + QUERIES_HEADER.size
        self._queries = bytearray(self._queries_prefix + self.BATCH_RECORDS * QUERY_RECORD.size)
        self._query_count = 0
        self._last_flush_ns = now_ns()
        self._last_query_flush_ns = self._last_flush_ns
        self._stop_requested = False
        self._peer_gone = False
        self._rank = 0
        self._stepped_ns = 0  # the summed durations of the steps run_steps timed
        self._loop_ns = 0  # the wall time of run_steps' loops, stamps, records and flushes included
        self._cells_ended = 0  # begin_next_cell calls: cells this process served before the current one

    # -- connection -----------------------------------------------------------------------------
    @classmethod
    def connect(cls) -> "RunnerSession":
        """The session on the fds named by DLBENCH_PROTOCOL_FD_IN/_OUT. Raises ProtocolError when
        they are not set (the program was started by hand, not by ``dlbench run``)."""
        if FD_IN_ENV not in os.environ or FD_OUT_ENV not in os.environ:
            raise ProtocolError("this program is a dlbench runner: start it through 'dlbench run' "
                                "(DLBENCH_PROTOCOL_FD_IN/_OUT are not set)")
        try:
            fd_in, fd_out = int(os.environ[FD_IN_ENV]), int(os.environ[FD_OUT_ENV])
        except ValueError:
            raise ProtocolError("DLBENCH_PROTOCOL_FD_IN/_OUT must be file descriptor numbers") from None
        # A vanished orchestrator must show up as a failed write (BrokenPipeError), not kill the
        # runner mid-report. CPython ignores SIGPIPE already; a host program may not have.
        try:
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread: the interpreter's setting stands
            pass
        return cls(fd_in, fd_out)

    @property
    def stop_requested(self) -> bool:
        """True once STOP arrived, the orchestrator went away, or a write failed."""
        return self._stop_requested

    @property
    def peer_gone(self) -> bool:
        """True once a write failed or the command pipe reached end-of-file."""
        return self._peer_gone

    @property
    def loop_overhead_ns(self) -> int:
        """Wall time run_steps spent outside the timed steps so far (clock reads, recording,
        flushes, STOP checks): the client's own cost, which no step time contains."""
        return self._loop_ns - self._stepped_ns

    @property
    def cells_ended(self) -> int:
        """How many cells this session served before the current one (``begin_next_cell`` calls)."""
        return self._cells_ended

    @property
    def rank(self) -> int:
        """The rank STEPS frames carry (set from CONFIGURE)."""
        return self._rank

    # -- output ---------------------------------------------------------------------------------
    def _write(self, data: Union[bytes, bytearray, memoryview]) -> bool:
        if self._peer_gone:
            return False
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._out, view)
            except OSError:  # EPIPE (BrokenPipeError) or a closed fd: the orchestrator is gone
                self._peer_gone = True
                self._stop_requested = True
                return False
            view = view[n:]
        return True

    def _send(self, msg_type: MessageType, body: Mapping[str, Any]) -> bool:
        return self._write(encode_json_frame(msg_type, body))

    def send_hello(self, runner: str, runner_version: str = "", framework: Optional[Mapping[str, Any]] = None,
                   devices: Optional[Iterable[Mapping[str, Any]]] = None, **extra: Any) -> bool:
        """HELLO, the first message: who the runner is. ``framework`` ({"name", "version", ...})
        and ``devices`` ([{"type": "cpu"}, {"type": "cuda", "index", "name", "uuid", ...}]) and
        any ``extra`` key go into the run's environment fingerprint; ``runner`` and ``framework``
        decide comparability. Returns False when the orchestrator is gone."""
        body: Dict[str, Any] = dict(extra)
        body.update({"protocol": PROTOCOL_VERSION, "pid": os.getpid(), "runner": runner,
                     "runner_version": runner_version, "framework": dict(framework or {}),
                     "devices": [dict(d) for d in (devices or [])]})
        return self._send(MessageType.HELLO, body)

    def send_ready(self, effective: Mapping[str, Any]) -> bool:
        """READY: setup is done; ``effective`` holds the parameters that really apply (resolved
        device, dtype, sizes, ``samples_per_step``, ``device_uuids``: the GPUs in NVML's UUID form,
        [] for none). Must precede the first step."""
        return self._send(MessageType.READY, {"effective": dict(effective)})

    def send_memory(self, label: str, snapshot: Mapping[str, Any]) -> bool:
        """MEMORY: a snapshot labelled ``after_warmup``, ``end`` or another word. Keys ending in
        ``_bytes`` with a number become metrics (``end``'s under their own names, others prefixed
        by the label)."""
        if not isinstance(label, str) or not label:
            raise ValueError("a memory snapshot needs a non-empty label")
        body = dict(snapshot)
        body["label"] = label
        return self._send(MessageType.MEMORY, body)

    def send_extras(self, metrics: Iterable[Union[Metric, Mapping[str, Any]]] = (),
                    info: Optional[Mapping[str, Any]] = None) -> bool:
        """EXTRAS: metrics ({name, value, unit}; a value must be a finite number) stored with the
        cell, and free-form facts under ``info``."""
        out: List[Dict[str, Any]] = []
        for m in metrics:
            item = {"name": m.name, "value": m.value, "unit": m.unit} if isinstance(m, Metric) else dict(m)
            value = item.get("value")
            if not isinstance(item.get("name"), str) or not item["name"]:
                raise ValueError("an extras metric needs a non-empty name: %r" % (item,))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError("extras metric %s: value must be a finite number, got %r" % (item["name"], value))
            out.append(item)
        return self._send(MessageType.EXTRAS, {"metrics": out, "info": dict(info or {})})

    def send_error(self, kind: str, message: str, **details: Any) -> bool:
        """ERROR, which ends the cell: ``oom`` -> outcome oom, ``unsupported`` -> unsupported,
        ``invalid`` (bad parameters) and ``internal`` -> error. Send nothing after it; exit 0."""
        if kind not in ERROR_KINDS:
            raise ValueError("error kind must be one of %s, got %r" % (", ".join(ERROR_KINDS), kind))
        body = dict(details)
        body.update({"kind": kind, "message": message})
        return self._send(MessageType.ERROR, body)

    def send_done(self, reason: str, steps: int) -> bool:
        """DONE, the last message of a cell that ran: ``reason`` is one of DONE_REASONS."""
        if reason not in DONE_REASONS:
            raise ValueError("done reason must be one of %s, got %r" % (", ".join(DONE_REASONS), reason))
        return self._send(MessageType.DONE, {"reason": reason, "steps": int(steps)})

    # -- input ----------------------------------------------------------------------------------
    def _read_some(self) -> int:
        try:
            data = os.read(self._in, 65536)
        except OSError:
            data = b""
        if not data:
            self._peer_gone = True
            self._stop_requested = True
            return 0
        self._reader.feed(data)
        return len(data)

    def receive_configure(self) -> Optional[CellConfig]:
        """Blocks until CONFIGURE. None when the orchestrator closes the pipe first, which is how
        ``dlbench run`` probes a runner's HELLO, and how it ends a process between two cells:
        exit 0 then. ProtocolError on any other frame, but for a STOP after ``begin_next_cell``
        (the previous cell's, which crossed its DONE), which is skipped."""
        while True:
            frame = self._reader.next()
            if frame is not None:
                if frame.type == MessageType.STOP and self._cells_ended > 0:
                    continue
                if frame.type != MessageType.CONFIGURE:
                    raise ProtocolError("expected CONFIGURE, got %s" % frame.type.name)
                cell = parse_configure(decode_json(frame))
                self._rank = cell.rank
                return cell
            if self._read_some() == 0:
                return None

    def begin_next_cell(self) -> None:
        """Between two cells of one process (the ended cell's CONFIGURE said ``serve_more``), before
        the next ``receive_configure``: forgets the previous cell's STOP, unsent records and loop
        times (``loop_overhead_ns`` restarts at 0), so the next cell starts as the first did
        (``RunnerSession::BeginNextCell``). An orchestrator that went away stays gone."""
        self._stop_requested = self._peer_gone
        self._count = 0
        self._query_count = 0
        self._last_flush_ns = now_ns()
        self._last_query_flush_ns = self._last_flush_ns
        self._stepped_ns = 0
        self._loop_ns = 0
        self._cells_ended += 1

    def _poll_commands(self) -> None:
        # Frames may already sit in the reader (read together with CONFIGURE): look there first.
        while not self._stop_requested:
            try:
                frame = self._reader.next()
            except ProtocolError:
                self._stop_requested = True
                return
            if frame is not None:
                if frame.type == MessageType.STOP:
                    self._stop_requested = True
                continue
            try:
                readable, _, _ = select.select([self._in], [], [], 0)
            except (OSError, ValueError):
                readable = [self._in]  # let the read report the broken fd as end-of-file
            if not readable:
                return
            if self._read_some() == 0:
                return

    def poll_stop(self) -> bool:
        """Reads the commands that arrived, without blocking; returns ``stop_requested``."""
        self._poll_commands()
        return self._stop_requested

    # -- queries (inference under load) ---------------------------------------------------------
    def record_query(self, query_id: int, scheduled_ns: int, issued_ns: int, completed_ns: int, samples: int,
                     batch_samples: int = 0, phases: Optional[Any] = None) -> None:
        """Outside every query's stamps: packs one query record (docs/protocol.md "Query record")
        into the pre-sized QUERIES buffer, and sends the buffer when it holds BATCH_RECORDS records
        or FLUSH_INTERVAL_NS has passed since the last send (measured to ``completed_ns``).
        ``phases`` is a dlbench_client.load.QueryPhases (host_pre, h2d, compute, d2h, host_post ns;
        None fields absent) or None. Records go in query-id order, each id once (the orchestrator
        makes the cell ``invalid`` otherwise). ValueError for a record the orchestrator would
        reject (issued before scheduled, completed before issued, no samples, negative durations)."""
        present = 0
        pre = h2d = compute = d2h = post = 0
        if phases is not None:
            try:
                p0, p1, p2, p3, p4 = phases
            except (TypeError, ValueError):
                raise TypeError("query %d: issue() must return None or a QueryPhases, got %r"
                                % (query_id, phases)) from None
            if p0 is not None:
                present |= QUERY_HAS_HOST_PRE
                pre = p0
            if p1 is not None:
                present |= QUERY_HAS_H2D
                h2d = p1
            if p2 is not None:
                present |= QUERY_HAS_COMPUTE
                compute = p2
            if p3 is not None:
                present |= QUERY_HAS_D2H
                d2h = p3
            if p4 is not None:
                present |= QUERY_HAS_HOST_POST
                post = p4
            if pre < 0 or h2d < 0 or compute < 0 or d2h < 0 or post < 0:
                raise ValueError("query %d has a negative decomposition duration" % query_id)
        if issued_ns < scheduled_ns or completed_ns < issued_ns or samples < 1:
            raise ValueError("query %d %s" % (query_id, query_record_problem(
                QueryRecord(query_id, scheduled_ns, issued_ns, completed_ns, samples, batch_samples))))
        try:
            QUERY_RECORD.pack_into(self._queries, self._queries_prefix + self._query_count * QUERY_RECORD.size,
                                   query_id, scheduled_ns, issued_ns, completed_ns, pre, h2d, compute, d2h, post,
                                   samples, batch_samples, present, 0)
        except struct.error:
            problem = query_record_problem(QueryRecord(query_id, scheduled_ns, issued_ns, completed_ns, samples,
                                                       batch_samples, pre, h2d, compute, d2h, post))
            raise ValueError("query %d %s" % (query_id, problem or "does not fit the wire's integer widths")) from None
        self._query_count += 1
        if (self._query_count == self.BATCH_RECORDS
                or completed_ns - self._last_query_flush_ns >= self.FLUSH_INTERVAL_NS):
            self.flush_queries(completed_ns)

    def flush_queries(self, now: Optional[int] = None) -> None:
        """Sends the buffered query records as one QUERIES frame, then looks (without blocking)
        for STOP or a closed pipe."""
        self._last_query_flush_ns = now if now is not None else now_ns()
        if self._query_count and not self._peer_gone:
            payload = QUERIES_HEADER.size + self._query_count * QUERY_RECORD.size
            HEADER.pack_into(self._queries, 0, payload, int(MessageType.QUERIES), 0)
            QUERIES_HEADER.pack_into(self._queries, HEADER.size, self._rank, self._query_count, QUERIES_VERSION,
                                     QUERY_RECORD.size)
            self._write(memoryview(self._queries)[:HEADER.size + payload])
        self._query_count = 0
        self._poll_commands()

    # -- steps ----------------------------------------------------------------------------------
    def record(self, start_ns: int, end_ns: int, samples: int, data_wait_ns: Optional[int] = None,
               compute_ns: Optional[int] = None, comm_ns: Optional[int] = None) -> None:
        """Hot path, outside the timed region (after the end stamp): packs the record into the
        pre-sized STEPS buffer, and sends the buffer when it is full or FLUSH_INTERVAL_NS has
        passed since the last send (measured to the record's end). ValueError for a record the
        orchestrator would reject (end before start, samples outside u32)."""
        present = 0
        if data_wait_ns is not None:
            present |= HAS_DATA_WAIT
        else:
            data_wait_ns = 0
        if compute_ns is not None:
            present |= HAS_COMPUTE
        else:
            compute_ns = 0
        if comm_ns is not None:
            present |= HAS_COMM
        else:
            comm_ns = 0
        if end_ns < start_ns:
            check_step(start_ns, end_ns, samples)
        try:
            STEP_RECORD.pack_into(self._steps, self._steps_prefix + self._count * STEP_RECORD.size, start_ns, end_ns,
                                  data_wait_ns, compute_ns, comm_ns, samples, present)
        except struct.error:
            check_step(start_ns, end_ns, samples, data_wait_ns, compute_ns, comm_ns)
            raise
        self._count += 1
        if self._count == self.BATCH_RECORDS or end_ns - self._last_flush_ns >= self.FLUSH_INTERVAL_NS:
            self.flush(end_ns)

    def flush(self, now: Optional[int] = None) -> None:
        """Sends the buffered records, then looks (without blocking) for STOP or a closed pipe."""
        self._last_flush_ns = now if now is not None else now_ns()
        if self._count and not self._peer_gone:
            payload = STEPS_HEADER.size + self._count * STEP_RECORD.size
            HEADER.pack_into(self._steps, 0, payload, int(MessageType.STEPS), 0)
            STEPS_HEADER.pack_into(self._steps, HEADER.size, self._rank, self._count)
            self._write(memoryview(self._steps)[:HEADER.size + payload])
        self._count = 0
        self._poll_commands()

    def run_steps(self, step: StepFn, limits: RunnerLimits = RunnerLimits()) -> LoopResult:
        """The measured loop (``RunStepLoop``): calls ``step()`` until STOP or a ceiling. ``step``
        does one step's work, leaves the device synchronised, and returns the samples it
        processed (or StepPhases). The loop reads the clock immediately before and after the
        call and nothing else runs between the two stamps. An exception from ``step`` propagates
        after the records so far are sent."""
        begin = now_ns()
        max_time_ns = int(limits.max_time_s * 1e9)
        max_steps = limits.max_steps
        record = self.record
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        steps = 0
        stepped = 0
        try:
            while True:
                t0 = clock(mono)
                result = step()
                t1 = clock(mono)
                stepped += t1 - t0
                if result.__class__ is int:
                    record(t0, t1, result)
                elif isinstance(result, StepPhases):
                    record(t0, t1, result.samples, result.data_wait_ns, result.compute_ns, result.comm_ns)
                else:
                    record(t0, t1, int(result))
                steps += 1
                if self._stop_requested:
                    reason = "stopped"
                    break
                if steps >= max_steps:
                    reason = "max_steps"
                    break
                if t1 - begin >= max_time_ns:
                    reason = "max_time"
                    break
        finally:
            self.flush()
            self._stepped_ns += stepped
            self._loop_ns += now_ns() - begin
        return LoopResult(reason, steps)
