"""A runner as an object with four calls, and the harness that drives it (``run``).

``run(runner)`` speaks the whole protocol: HELLO from ``runner.hello()``; CONFIGURE; READY with
what ``runner.setup(cell)`` returns; the measured loop over ``runner.step()`` with a MEMORY
snapshot after the first ``warmup_snapshot_steps`` steps; MEMORY ``end``, EXTRAS, DONE. A cell
with ``load`` (inference under load, docs/load.md) runs the scenario over ``runner.issue(samples)``
instead of the step loop (dlbench_client.load), and sends QUERIES instead of STEPS. Any
exception that escapes the runner's code ends the cell as ERROR: a RunnerError with its own kind,
anything else as ``internal`` with the traceback's last line as the message (the whole traceback
goes to stderr, whose last lines the orchestrator appends to the cell's message). The process
then exits 0, so the matrix goes on.

A runner whose class sets ``multi_cell = True`` may serve several cells in one process
(``dlbench run --runner-reuse``, docs/adr/0011-runner-reuse.md): HELLO says ``multi_cell``, and
while CONFIGURE says ``serve_more`` ``serve`` calls ``runner.end_cell()`` after each cell (DONE or
ERROR) and waits for the next CONFIGURE; the end of the command pipe there ends the process (0).
"""

from __future__ import annotations

import abc
import dataclasses
import faulthandler
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import load as _load
from .session import CellConfig, LoopResult, Metric, RunnerLimits, RunnerSession, StepPhases, now_ns
from .wire import ProtocolError


class RunnerError(Exception):
    """An expected failure with a protocol error kind; ``details`` travel in the ERROR frame."""

    kind = "internal"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidParameter(RunnerError):
    """A cell parameter is wrong (outcome ``error``, message "invalid configuration: ...")."""

    kind = "invalid"


class Unsupported(RunnerError):
    """A valid request this program, framework version or machine cannot do (outcome
    ``unsupported``); the message should say what would work."""

    kind = "unsupported"


class OutOfMemory(RunnerError):
    """An allocation failed (outcome ``oom``); pass ``requested_bytes`` when known."""

    kind = "oom"


@dataclass
class Hello:
    """What HELLO says about the runner (``RunnerSession.send_hello``)."""

    runner: str
    runner_version: str = ""
    framework: Dict[str, Any] = field(default_factory=dict)
    devices: List[Dict[str, Any]] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Extras:
    """What EXTRAS reports after the loop."""

    metrics: List[Metric] = field(default_factory=list)
    info: Dict[str, Any] = field(default_factory=dict)


class Runner(abc.ABC):
    """The program under measurement, called by ``run`` in this order, from one thread:

    1. ``hello()`` once, first (also when dlbench only probes the runner: keep it cheap, and
       never let it fail for a missing framework: report that from ``setup``);
    2. ``setup(cell)`` once per cell: validate ``cell.params``, build the model and inputs; raise
       InvalidParameter / Unsupported / OutOfMemory for expected failures;
    3. ``step()`` many times, each between two clock reads: do one step's work, synchronise the
       device, return the samples processed (or StepPhases); nothing else;
       or, for a cell with ``load`` (``cell.load`` is set), ``issue(samples)`` for each query or
       batch of queries the scenario runs (dlbench_client.load: on this thread, or on the server's
       ``streams`` worker threads, concurrently);
    4. ``memory(label)`` between steps ("after_warmup") and after the loop ("end"; a load cell
       only "end");
    5. ``extras()`` once after the loop;
    6. with ``multi_cell`` and a CONFIGURE that said ``serve_more``: ``end_cell()`` after the cell
       ended (DONE or ERROR), then 2-6 again for the next cell of the same process.
    """

    #: Serve several cells in one process when dlbench offers it (``dlbench run --runner-reuse``):
    #: HELLO then says ``multi_cell``. An opt-in, because a Python object keeps its attributes
    #: between cells: set it only when ``setup`` builds everything a cell uses from its CellConfig
    #: (its seed included) and ``end_cell`` drops or resets what a cell left behind.
    multi_cell = False

    #: Steps before the ``after_warmup`` memory snapshot (0: no such snapshot). By then a model's
    #: weights, optimizer state and one step's activations are allocated.
    warmup_snapshot_steps = 3

    #: The name HELLO carries if ``hello()`` itself fails.
    name = "python"

    @abc.abstractmethod
    def hello(self) -> Hello:
        """Who the runner is: its name, version, framework versions and devices."""

    @abc.abstractmethod
    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        """Builds everything the steps use; returns the effective parameters for READY."""

    def step(self) -> Union[int, StepPhases]:
        """One step, device synchronised before returning; the samples it processed. A runner
        that serves load cells only need not override it: a cell without ``load`` then ends
        ``unsupported``."""
        raise Unsupported("runner %s serves load cells only (it implements no Runner.step); give the cell a load"
                          % self.name)

    def issue(self, samples: List[int]) -> Optional[_load.QueryPhases]:
        """A load cell's work (docs/load.md): run the model on the sample library's entries
        ``samples`` (indices in ``[0, cell.load.sample_library_size)``) and return when their
        outputs are ready (synchronise the device, as ``step`` does); optionally the durations it
        measured as a QueryPhases. In the server scenario it is called from the ``streams`` worker
        threads at once (``dlbench_client.load.current_stream()`` says which). A runner that does
        not override it answers a load cell with ``unsupported``."""
        raise Unsupported("runner %s does not serve load scenarios (it implements no Runner.issue)" % self.name)

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        """A memory snapshot (``<name>_bytes`` fields), or None for none."""
        return None

    def extras(self) -> Extras:
        """Metrics and facts for EXTRAS."""
        return Extras()

    def end_cell(self) -> None:
        """After a cell of a ``multi_cell`` runner ended (DONE or ERROR, ``setup`` may not have
        finished), when the process may serve another: drop the cell's model, inputs and
        optimizer, reset counters and accumulated figures, and reset per-process peaks that the
        next cell reports as its own (``dlbench_runners.host.reset_peak_rss``; a framework's
        device peaks). Not called after a cell without ``serve_more``. An exception here ends the
        process (exit 1) before the next cell's CONFIGURE is read: dlbench then starts a fresh
        process for that cell."""

    def classify(self, error: BaseException) -> Optional[RunnerError]:
        """A framework's own exceptions as RunnerErrors (an allocator's out-of-memory as
        OutOfMemory); None leaves the error ``internal``."""
        return None


def last_traceback_line(error: BaseException) -> str:
    """The traceback's last line, "ZeroDivisionError: division by zero"."""
    lines = traceback.format_exception_only(type(error), error)
    text = lines[-1].strip() if lines else type(error).__name__
    return text or type(error).__name__


def report_exception(session: RunnerSession, runner: Optional[Runner], error: BaseException) -> None:
    """Sends ERROR for an exception: RunnerErrors (possibly by ``runner.classify``) with their
    kind, everything else as ``internal``; the whole traceback goes to stderr."""
    classified: Optional[RunnerError] = error if isinstance(error, RunnerError) else None
    if classified is None and runner is not None:
        try:
            classified = runner.classify(error)
        except Exception:  # a broken classifier must not hide the original error
            classified = None
    if classified is None:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
        session.send_error("internal", last_traceback_line(error))
    else:
        print("%s: %s: %s" % (runner.name if runner else "runner", classified.kind, classified.message),
              file=sys.stderr)
        session.send_error(classified.kind, classified.message, **classified.details)
    sys.stderr.flush()


def _snapshot(session: RunnerSession, runner: Runner, label: str) -> None:
    snapshot = runner.memory(label)
    if snapshot is not None:
        session.send_memory(label, snapshot)


def serve(session: RunnerSession, runner: Runner) -> int:
    """The whole conversation over ``session`` (see the module's docstring): HELLO, then one cell,
    or, for a ``multi_cell`` runner whose CONFIGURE says ``serve_more``, cells until dlbench closes
    the command pipe. Returns the process's exit status."""
    try:
        hello = runner.hello()
    except Exception as e:  # HELLO must come first whatever happens: report the failure later
        hello_error: Optional[BaseException] = e
        hello = Hello(runner=runner.name, extra={"hello_error": last_traceback_line(e)})
    else:
        hello_error = None
    extra = dict(hello.extra)
    if runner.multi_cell:
        extra["multi_cell"] = True
    if not session.send_hello(hello.runner, hello.runner_version, hello.framework, hello.devices, **extra):
        print("%s: the orchestrator is gone before HELLO" % hello.runner, file=sys.stderr)
        return 1
    while True:
        try:
            cell = session.receive_configure()
        except ProtocolError as e:
            print("%s: %s" % (hello.runner, e), file=sys.stderr)
            return 1
        if cell is None:
            return 0  # dlbench probed our HELLO, or ended the process after a served cell
        if hello_error is not None:
            report_exception(session, runner, hello_error)
            code = 0
        else:
            code = serve_cell(session, runner, cell)
        if code != 0 or not cell.serve_more:
            return code
        try:
            runner.end_cell()
        except Exception:
            traceback.print_exc(file=sys.stderr)
            print("%s: end_cell failed; ending the process (the next cell gets a fresh one)" % hello.runner,
                  file=sys.stderr)
            return 1
        session.begin_next_cell()


#: The former name of ``serve``, which drives the conversation (one cell or several).
run_cell = serve


def serve_cell(session: RunnerSession, runner: Runner, cell: CellConfig) -> int:
    """One cell, from its CONFIGURE (``cell``) to its DONE or ERROR: ``setup``, READY, the
    measured loop or the load scenario, MEMORY ``end``, EXTRAS, DONE. Returns 0, or 1 when the
    orchestrator went away. In a process serving several cells, READY's effective gets
    ``process_cell`` (1, 2, ...: which cell of the process this is), as dlbench-torch's does."""
    try:
        cell = _resolve_load(runner, cell)
        effective = runner.setup(cell)
        if cell.load is not None:
            effective = dict(effective)
            effective["load"] = _load.effective_json(cell.load, effective.get("load"))
    except Exception as e:
        report_exception(session, runner, e)
        return 0
    if cell.serve_more:
        effective = dict(effective)
        effective["process_cell"] = session.cells_ended + 1
    if not session.send_ready(effective):
        return 1
    if cell.load is not None:
        return _run_load_cell(session, runner, cell)
    try:
        loop = _measured_loop(session, runner, cell.limits)
        _snapshot(session, runner, "end")
        extras = runner.extras()
        metrics = list(extras.metrics)
        if loop.steps > 0:
            # The client's own cost per step, outside the stamps (docs/python-client.md).
            metrics.append(Metric("client_overhead_ns_per_step", session.loop_overhead_ns / loop.steps, "ns"))
        session.send_extras(metrics, extras.info)
    except Exception as e:
        report_exception(session, runner, e)
        return 0
    return 0 if session.send_done(loop.reason, loop.steps) else 1


def supports_load(runner: Runner) -> bool:
    """Whether the runner serves load scenarios (it overrides Runner.issue)."""
    return getattr(type(runner), "issue", Runner.issue) is not Runner.issue


def _resolve_load(runner: Runner, cell: CellConfig) -> CellConfig:
    """The cell with its load settings resolved, for a cell with ``load``: Unsupported when the
    runner has no ``issue``, InvalidParameter for a bad load key."""
    if not _load.load_requested(cell.params):
        return cell
    if not supports_load(runner):
        raise Unsupported("runner %s does not serve load scenarios (load: %s); it implements no Runner.issue"
                          % (runner.name, cell.params.get("load")))
    try:
        settings = _load.resolve_load_settings(cell.params, cell.seed)
    except _load.LoadSettingsError as e:
        raise InvalidParameter(str(e)) from None
    return dataclasses.replace(cell, load=settings)


def _run_load_cell(session: RunnerSession, runner: Runner, cell: CellConfig) -> int:
    """A load cell's measured part: the scenario over ``runner.issue``, then MEMORY ``end``,
    EXTRAS and DONE with the queries issued."""
    try:
        result = _load.run_load(session, cell.load, runner.issue, cell.limits)
        _snapshot(session, runner, "end")
        extras = runner.extras()
        info = dict(extras.info)
        info["queries_issued"] = result.queries
        if result.info:
            info["load"] = result.info  # a peak search's report (info.load.peak_search)
        session.send_extras(list(extras.metrics), info)
    except Exception as e:
        report_exception(session, runner, e)
        return 0
    return 0 if session.send_done(result.reason, result.queries) else 1


def _measured_loop(session: RunnerSession, runner: Runner, limits: RunnerLimits) -> LoopResult:
    """The loop in two parts with the ``after_warmup`` snapshot between them, outside any timed
    step; the parts share the cell's ceilings."""
    warmup = runner.warmup_snapshot_steps
    if warmup <= 0 or limits.max_steps <= warmup:
        return session.run_steps(runner.step, limits)
    begin = now_ns()
    first = session.run_steps(runner.step, RunnerLimits(warmup, limits.max_time_s))
    if first.reason != "max_steps":
        return first
    _snapshot(session, runner, "after_warmup")
    left_s = limits.max_time_s - (now_ns() - begin) * 1e-9
    if left_s <= 0:
        return LoopResult("max_time", first.steps)
    second = session.run_steps(runner.step, RunnerLimits(limits.max_steps - first.steps, left_s))
    return LoopResult(second.reason, first.steps + second.steps)


def run(runner: Runner) -> int:
    """Connects to the orchestrator and drives ``runner`` through its cell (or, with ``multi_cell``,
    the cells dlbench gives this process); returns the process's exit status (0 also after an
    ERROR, so the matrix goes on; 2 when not started by dlbench)."""
    faulthandler.enable()  # a native crash prints the Python stack to stderr, into the cell's message
    try:
        session = RunnerSession.connect()
    except ProtocolError as e:
        print("%s: %s" % (runner.name, e), file=sys.stderr)
        return 2
    return serve(session, runner)


def main(runner: Runner, argv: Optional[Sequence[str]] = None) -> None:
    """``sys.exit(run(runner))``, for a runner module's ``if __name__ == "__main__"``."""
    del argv  # runners take their parameters from CONFIGURE, not from the command line
    sys.exit(run(runner))
