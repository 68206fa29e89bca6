"""The client against an orchestrator played by the test over a real pipe pair: the conversation,
the runner's own ceilings, STOP, end-of-file and a vanished orchestrator, errors with their kinds.
Step counts and reasons are asserted, never durations."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import CLIENT_DIR, spawn_runner

from dlbench_client import wire
from dlbench_client.session import RunnerSession, parse_configure
from dlbench_client.wire import FrameReader, MessageType, ProtocolError

FIXTURES = str(Path(__file__).resolve().parent / "fixture_runners.py")
SPIN = [sys.executable, "-m", "dlbench_runners.spin"]


class FakeOrchestrator:
    """Plays the orchestrator's side of docs/protocol.md against one runner process."""

    def __init__(self, argv: List[str]) -> None:
        self.proc, self.to_runner, self.from_runner = spawn_runner(argv)
        self.reader = FrameReader()
        self.frames: List[wire.Frame] = []

    def send(self, msg_type: MessageType, body: Dict[str, Any]) -> None:
        os.write(self.to_runner, wire.encode_json_frame(msg_type, body))

    def configure(self, params: Dict[str, Any], max_steps: int = 1000, max_time_s: float = 60.0,
                  serve_more: bool = False) -> None:
        body = {"params": params, "seed": 7, "rank": 0, "world_size": 1, "cell_key": "k",
                "limits": {"max_steps": max_steps, "max_time_s": max_time_s}}
        if serve_more:
            body["serve_more"] = True
        self.send(MessageType.CONFIGURE, body)

    def next(self, timeout: float = 60.0) -> Optional[wire.Frame]:
        """The next frame, or None at end-of-file."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.reader.next()
            if frame is not None:
                self.frames.append(frame)
                return frame
            left = deadline - time.monotonic()
            assert left > 0, "no frame within %g s" % timeout
            ready, _, _ = select.select([self.from_runner], [], [], left)
            if ready:
                data = os.read(self.from_runner, 65536)
                if not data:
                    return None
                self.reader.feed(data)

    def expect(self, msg_type: MessageType) -> Dict[str, Any]:
        frame = self.next()
        assert frame is not None, "end-of-file while waiting for %s" % msg_type.name
        assert frame.type == msg_type, "expected %s, got %s" % (msg_type.name, frame.type.name)
        return wire.decode_json(frame)

    def collect_until(self, last: Tuple[MessageType, ...]) -> Tuple[List[wire.StepRecord], Dict[MessageType, List]]:
        """Steps and the other frames until one of ``last`` arrives."""
        steps: List[wire.StepRecord] = []
        others: Dict[MessageType, List] = {}
        while True:
            frame = self.next()
            assert frame is not None, "end-of-file before %s" % [t.name for t in last]
            if frame.type == MessageType.STEPS:
                steps.extend(wire.decode_steps(frame)[1])
                continue
            others.setdefault(frame.type, []).append(wire.decode_json(frame))
            if frame.type in last:
                return steps, others

    def finish(self, timeout: float = 30.0) -> Tuple[int, str]:
        os.close(self.to_runner)
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            os.close(self.from_runner)
        return self.proc.returncode, err.decode()


def test_a_cell_runs_to_the_runners_own_step_ceiling():
    orch = FakeOrchestrator(SPIN)
    hello = orch.expect(MessageType.HELLO)
    assert hello["protocol"] == wire.PROTOCOL_VERSION and hello["runner"] == "python-spin"
    assert hello["pid"] == orch.proc.pid
    orch.configure({"model": "spin", "batch_size": 3, "iterations": 10}, max_steps=2500)
    ready = orch.expect(MessageType.READY)
    assert ready["effective"]["samples_per_step"] == 3
    steps, others = orch.collect_until((MessageType.DONE,))
    assert others[MessageType.DONE] == [{"reason": "max_steps", "steps": 2500}]
    assert len(steps) == 2500  # more than two full batches of 1024: buffering loses nothing
    assert all(s.samples == 3 and s.end_ns >= s.start_ns for s in steps)
    assert all(a.start_ns >= b.end_ns for a, b in zip(steps[1:], steps))  # step order, no overlap
    assert all(s.data_wait_ns is None and s.compute_ns is None and s.comm_ns is None for s in steps)
    labels = [m["label"] for m in others[MessageType.MEMORY]]
    assert labels == ["after_warmup", "end"]
    assert others[MessageType.MEMORY][1]["host_rss_bytes"] > 0
    extras = others[MessageType.EXTRAS][0]
    names = {m["name"]: m["value"] for m in extras["metrics"]}
    assert names["spin_steps"] == 2500
    assert names["client_overhead_ns_per_step"] > 0
    assert orch.finish() == (0, "")


def test_a_multi_cell_runner_serves_cells_until_the_pipe_ends_and_starts_each_as_a_fresh_process():
    """docs/protocol.md "Several cells in one process": HELLO says multi_cell; after a DONE under
    serve_more the runner waits, skips the STOP that crossed its DONE, and serves the next
    CONFIGURE as a fresh process would (its step count, recurrence and loop overhead from 0)."""
    orch = FakeOrchestrator(SPIN)
    assert orch.expect(MessageType.HELLO)["multi_cell"] is True
    served = []
    for cell, steps in enumerate((1500, 700)):
        orch.configure({"model": "spin", "iterations": 10}, max_steps=steps, serve_more=True)
        assert orch.expect(MessageType.READY)["effective"]["process_cell"] == cell + 1
        records, others = orch.collect_until((MessageType.DONE,))
        assert others[MessageType.DONE] == [{"reason": "max_steps", "steps": steps}] and len(records) == steps
        served.append({m["name"]: m["value"] for m in others[MessageType.EXTRAS][0]["metrics"]})
        served[-1]["final_x"] = others[MessageType.EXTRAS][0]["info"]["final_x"]
        orch.send(MessageType.STOP, {"reason": "ci_reached"})  # late: the cell ended by its own ceiling
    from dlbench_runners.spin import spin
    assert [s["spin_steps"] for s in served] == [1500, 700]
    assert [s["final_x"] for s in served] == [spin(1500 * 10), spin(700 * 10)]
    assert all(s["client_overhead_ns_per_step"] > 0 for s in served)
    assert orch.finish() == (0, "")  # the end of the command pipe between cells ends it


def test_a_configure_without_serve_more_ends_a_multi_cell_runner_after_its_cell():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    orch.configure({"iterations": 10}, max_steps=5)
    assert "process_cell" not in orch.expect(MessageType.READY)["effective"]
    orch.collect_until((MessageType.DONE,))
    assert orch.next() is None  # it exits after DONE without waiting for the pipe's end
    assert orch.proc.wait(timeout=30) == 0


def test_begin_next_cell_forgets_the_stop_steps_and_loop_time_of_the_cell_that_ended():
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        session = RunnerSession(r, out_w)
        os.write(w, wire.encode_json_frame(MessageType.CONFIGURE, {"serve_more": True}))
        assert session.receive_configure().serve_more is True
        os.write(w, wire.encode_json_frame(MessageType.STOP, {}))
        assert session.run_steps(lambda: 1).reason == "stopped"
        assert session.stop_requested and session.loop_overhead_ns > 0
        session.begin_next_cell()
        assert not session.stop_requested and session.loop_overhead_ns == 0 and session.cells_ended == 1
        os.write(w, wire.encode_json_frame(MessageType.STOP, {}) + wire.encode_json_frame(MessageType.CONFIGURE, {}))
        assert session.receive_configure().serve_more is False  # the stale STOP skipped
        with pytest.raises(ProtocolError, match="serve_more must be true or false"):
            parse_configure({"serve_more": 1})
    finally:
        for fd in (r, w, out_r, out_w):
            os.close(fd)


def test_stop_ends_the_loop_with_reason_stopped():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    # Ceilings out of reach: only STOP can end this loop.
    orch.configure({"model": "spin", "iterations": 1000}, max_steps=10**12, max_time_s=3600)
    orch.expect(MessageType.READY)
    assert orch.next().type == MessageType.STEPS
    orch.send(MessageType.STOP, {"reason": "ci_reached"})
    steps, others = orch.collect_until((MessageType.DONE,))
    assert others[MessageType.DONE][0]["reason"] == "stopped"
    assert orch.finish()[0] == 0


def test_stop_read_together_with_configure_takes_effect_at_the_first_flush():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    configure = wire.encode_json_frame(MessageType.CONFIGURE, {"params": {"iterations": 0}, "limits": {}})
    os.write(orch.to_runner, configure + wire.encode_json_frame(MessageType.STOP, {"reason": "x"}))
    orch.expect(MessageType.READY)
    steps, others = orch.collect_until((MessageType.DONE,))
    done = others[MessageType.DONE][0]
    assert done["reason"] == "stopped"
    # STOP is seen at the first flush: within the first snapshot part (3 steps) or the first
    # STEPS frame after it (at most 1024 records), never the default ceiling of 1e6 steps.
    assert 1 <= done["steps"] <= 3 + 1024
    assert orch.finish()[0] == 0


def test_the_time_ceiling_ends_the_loop_with_max_time():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    orch.configure({"iterations": 100}, max_steps=10**9, max_time_s=0.3)
    orch.expect(MessageType.READY)
    _, others = orch.collect_until((MessageType.DONE,))
    assert others[MessageType.DONE][0]["reason"] == "max_time"
    assert orch.finish()[0] == 0


def test_end_of_file_before_configure_is_a_probe_and_exits_zero():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    code, err = orch.finish()
    assert (code, err) == (0, "")


def test_a_vanished_orchestrator_stops_the_runner_by_itself():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    orch.configure({"iterations": 100}, max_steps=10**9, max_time_s=600)
    orch.expect(MessageType.READY)
    orch.next()
    # Both pipes closed: the runner's next flush sees EPIPE (SIGPIPE is ignored) or EOF.
    os.close(orch.to_runner)
    os.close(orch.from_runner)
    orch.proc.wait(timeout=30)
    assert orch.proc.returncode in (0, 1)
    assert b"Traceback" not in orch.proc.stderr.read()


def test_an_unknown_parameter_is_error_invalid_naming_the_nearest_key():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    orch.configure({"iteratons": 5})
    error = orch.expect(MessageType.ERROR)
    assert error["kind"] == "invalid"
    assert "unknown parameter 'iteratons'" in error["message"] and "did you mean 'iterations'" in error["message"]
    assert orch.next() is None  # nothing after ERROR
    assert orch.finish()[0] == 0


@pytest.mark.parametrize("params, expected", [
    ({"iterations": -1}, "iterations: expected an integer >= 0 and <= 1000000000 (got -1)"),
    ({"iterations": 2.5}, "iterations: expected an integer >= 0 and <= 1000000000 (got 2.5)"),
    ({"iterations": True}, "iterations: expected an integer"),
    ({"scenario": "fly"}, "scenario: expected one of train, infer (got 'fly')"),
    ({"device": "tpu"}, "device: expected cpu, cuda or cuda:N (got 'tpu')"),
])
def test_bad_values_name_the_key_and_what_it_accepts(params, expected):
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    orch.configure(params)
    error = orch.expect(MessageType.ERROR)
    assert error["kind"] == "invalid" and expected in error["message"], error
    assert orch.finish()[0] == 0


def test_an_exception_in_a_step_is_error_internal_with_the_tracebacks_last_line():
    orch = FakeOrchestrator(SPIN)
    orch.expect(MessageType.HELLO)
    orch.configure({"iterations": 10, "fail_at_step": 5})
    orch.expect(MessageType.READY)
    steps, others = orch.collect_until((MessageType.ERROR,))
    assert len(steps) == 5  # the steps before the failure are sent
    assert others[MessageType.ERROR][0] == {"kind": "internal", "message": "ZeroDivisionError: division by zero"}
    assert MessageType.DONE not in others
    code, err = orch.finish()
    assert code == 0
    assert "Traceback (most recent call last)" in err and err.rstrip().endswith("ZeroDivisionError: division by zero")


def test_steps_carry_their_phases_and_present_bits():
    orch = FakeOrchestrator([sys.executable, FIXTURES, "phases"])
    assert orch.expect(MessageType.HELLO)["note"] == "fixture"
    orch.configure({"batch_size": 2}, max_steps=6)
    orch.expect(MessageType.READY)
    steps, others = orch.collect_until((MessageType.DONE,))
    assert [(s.data_wait_ns, s.compute_ns, s.comm_ns) for s in steps] == [(1000 + i, 2000 + i, None)
                                                                         for i in range(1, 7)]
    assert others[MessageType.MEMORY] == [{"fixture_bytes": 1024, "label": "after_warmup"},
                                          {"fixture_bytes": 4096, "label": "end"}]
    extras = others[MessageType.EXTRAS][0]
    assert {"name": "fixture_metric", "value": 2.5, "unit": "widgets"} in extras["metrics"]
    assert extras["info"] == {"fixture_fact": "yes"}
    assert others[MessageType.DONE] == [{"reason": "max_steps", "steps": 6}]
    assert orch.finish()[0] == 0


def test_a_failing_hello_still_says_hello_then_reports_the_error():
    orch = FakeOrchestrator([sys.executable, FIXTURES, "hello_fails"])
    hello = orch.expect(MessageType.HELLO)
    assert hello["runner"] == "fixture-hello-fails"
    assert hello["hello_error"] == "RuntimeError: no framework here"
    orch.configure({})
    assert orch.expect(MessageType.ERROR) == {"kind": "internal", "message": "RuntimeError: no framework here"}
    assert orch.finish()[0] == 0


def test_runner_errors_keep_their_kind_and_details():
    orch = FakeOrchestrator([sys.executable, FIXTURES, "setup_oom"])
    orch.expect(MessageType.HELLO)
    orch.configure({})
    assert orch.expect(MessageType.ERROR) == {"kind": "oom", "requested_bytes": 2 << 30,
                                              "message": "CUDA out of memory. Tried to allocate 2.00 GiB"}
    assert orch.finish()[0] == 0


def test_started_by_hand_the_runner_says_how_to_start_it():
    import subprocess
    from conftest import runner_env
    env = runner_env()
    env.pop("DLBENCH_PROTOCOL_FD_IN", None)
    env.pop("DLBENCH_PROTOCOL_FD_OUT", None)
    proc = subprocess.run(SPIN, env=env, capture_output=True, text=True, timeout=60, cwd=CLIENT_DIR)
    assert proc.returncode == 2
    assert "start it through 'dlbench run'" in proc.stderr


def test_configure_is_checked_for_types_and_bounds():
    cell = parse_configure({"params": {"a": 1}, "seed": 2**64 - 1, "rank": 3, "world_size": 4, "cell_key": "a=1",
                            "limits": {"max_steps": 5, "max_time_s": 2}})
    assert (cell.seed, cell.rank, cell.world_size, cell.limits.max_steps, cell.limits.max_time_s) == (
        2**64 - 1, 3, 4, 5, 2.0)
    assert parse_configure({}).limits.max_steps == 1_000_000  # runner_session.h's defaults
    for bad in ({"params": []}, {"seed": -1}, {"rank": "0"}, {"limits": {"max_steps": 0}},
                {"limits": {"max_time_s": float("inf")}}, {"limits": {"max_time_s": True}}, {"world_size": 0}):
        with pytest.raises(ProtocolError, match="malformed CONFIGURE"):
            parse_configure(bad)


def test_a_frame_other_than_configure_first_is_a_protocol_error():
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        session = RunnerSession(r, out_w)
        os.write(w, wire.encode_json_frame(MessageType.STOP, {}))
        with pytest.raises(ProtocolError, match="expected CONFIGURE, got STOP"):
            session.receive_configure()
    finally:
        for fd in (r, w, out_r, out_w):
            os.close(fd)


def test_record_refuses_a_step_that_ends_before_it_starts_and_oversized_samples():
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        session = RunnerSession(r, out_w)
        with pytest.raises(ValueError, match="before it starts"):
            session.record(10, 5, 1)
        with pytest.raises(ValueError, match="samples"):
            session.record(1, 5, 2**32)
        with pytest.raises(ValueError, match="error kind"):
            session.send_error("fatal", "x")
        with pytest.raises(ValueError, match="done reason"):
            session.send_done("finished", 1)
        with pytest.raises(ValueError, match="finite"):
            session.send_extras([{"name": "x", "value": float("nan")}])
    finally:
        for fd in (r, w, out_r, out_w):
            os.close(fd)


def test_a_write_to_a_closed_pipe_marks_the_peer_gone_instead_of_raising():
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    os.close(out_r)
    try:
        session = RunnerSession(r, out_w)
        assert session.send_ready({}) is False
        assert session.peer_gone and session.stop_requested
    finally:
        for fd in (r, w, out_w):
            os.close(fd)
