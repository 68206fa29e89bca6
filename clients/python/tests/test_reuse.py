"""Runner reuse under the real ``dlbench run --runner-reuse`` (docs/adr/0011-runner-reuse.md): a
Python runner that says ``multi_cell`` serves consecutive cells in one process, each measured as a
fresh process would measure it, and a crash ends only its own cell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import metric, python_runner

from dlbench_runners.spin import spin

FIXTURES = str(Path(__file__).resolve().parent / "fixture_runners.py")
MEASURE = "measure:\n  min_steps: 5\n  min_time_s: 0.05\n  max_time_s: 1.0\n  min_warmup_steps: 0\n"
SPIN = python_runner("dlbench_runners.spin") + "matrix:\n  model: spin\n  iterations: [300, 700, 500]\n" + MEASURE


def process(cell: dict) -> dict:
    return cell["extras"].get("runner_process", {})


def test_consecutive_cells_share_one_process_and_measure_as_in_processes_of_their_own(dlbench):
    fresh = dlbench.run_matrix(SPIN, "spin.yaml")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    alone = dlbench.cells()
    shared_run = dlbench.run_matrix(SPIN, "spin.yaml", "--runner-reuse")
    assert shared_run.returncode == 0, shared_run.stdout + shared_run.stderr
    shared = dlbench.cells()

    assert len({cell["runner"]["pid"] for cell in alone}) == 3
    assert [process(c)["pid"] for c in shared] == [shared[0]["runner"]["pid"]] * 3
    assert [process(c)["cell_of_process"] for c in shared] == [1, 2, 3]
    assert [c["effective"]["process_cell"] for c in shared] == [1, 2, 3]
    assert [process(c)["reuse"] for c in shared[:2]] == ["kept for the next cell"] * 2
    assert metric(shared[1], "time_to_hello_s") == 0 and process(shared[1])["startup_not_paid_s"] > 0
    for run_id, cells in ((1, alone), (2, shared)):
        for i, cell in enumerate(cells):
            assert cell["outcome"] == "ok", cell["message"]
            steps = len(dlbench.steps(i, run_id))
            # The runner's own figures start again with each cell: its step count and its recurrence
            # from x = 0.5, as in a process of its own.
            spin_steps = next(e["value"] for e in cell["extras"]["undeclared_metrics"] if e["name"] == "spin_steps")
            assert spin_steps == steps
            assert cell["extras"]["info"]["final_x"] == spin(steps * cell["effective"]["iterations"])
    for a, b in zip(alone, shared):
        assert a["key"] == b["key"]
        assert {k: v for k, v in b["effective"].items() if k != "process_cell"} == a["effective"]


def test_a_crash_ends_its_own_cell_and_peak_rss_is_each_cells_own(dlbench):
    runner = "runner:\n  command: [%s, %s, multi]\n" % (json.dumps(sys.executable), json.dumps(FIXTURES))
    run = dlbench.run_matrix(runner + "matrix:\n  case: [big, small, crash, after]\n" + MEASURE, "m.yaml",
                             "--runner-reuse")
    assert run.returncode == 1, run.stdout + run.stderr  # a cell crashed
    big, small, crashed, after = dlbench.cells()
    assert [c["outcome"] for c in (big, small, crashed, after)] == ["ok", "ok", "crashed", "ok"], crashed["message"]
    assert "SIGSEGV" in crashed["message"]
    # The crash happened in the process the first two cells used; the cell after it got a new one.
    assert process(big)["pid"] == process(small)["pid"] == process(crashed)["pid"]
    assert [process(c)["cell_of_process"] for c in (big, small, crashed, after)] == [1, 2, 3, 1]
    assert process(crashed)["reuse"] == "ended with this cell"
    assert process(after)["pid"] != process(big)["pid"] and after["runner"]["pid"] == process(after)["pid"]
    assert len(dlbench.steps(2)) == 2  # the crashed cell keeps the steps it sent
    # Peak RSS is per process: the client resets it between cells, so the small cell's peak is its
    # own, not the 64 MiB the cell before it held.
    assert metric(big, "host_peak_rss_bytes") >= 64 << 20
    assert metric(small, "host_peak_rss_bytes") < metric(big, "host_peak_rss_bytes") - (32 << 20)
    assert metric(small, "host_peak_rss_bytes") >= metric(small, "host_rss_bytes") > 0
