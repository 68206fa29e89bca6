"""The client under the real ``dlbench run``: what a Python runner sends is stored, and every way a
Python program can fail ends as a recorded outcome with a message that says why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import metric, python_runner

FIXTURES = str(Path(__file__).resolve().parent / "fixture_runners.py")
MEASURE = "measure:\n  min_steps: 5\n  min_time_s: 0.05\n  max_time_s: 1.0\n  min_warmup_steps: 0\n"


def undeclared(cell: dict, name: str):
    """The value of a runner metric that dlbench does not declare, kept in extras.undeclared_metrics."""
    for entry in cell["extras"].get("undeclared_metrics", []):
        if entry["name"] == name:
            return entry["value"]
    return None


def fixture_runner(kind: str) -> str:
    return "runner:\n  command: [%s, %s, %s]\n" % (json.dumps(sys.executable), json.dumps(FIXTURES), kind)


def test_a_spin_cell_stores_steps_memory_and_extras(dlbench):
    run = dlbench.run_matrix(python_runner("dlbench_runners.spin") +
                             "matrix:\n  model: spin\n  iterations: 500\n  batch_size: 4\n" + MEASURE)
    assert run.returncode == 0, run.stdout + run.stderr
    [cell] = dlbench.cells()
    assert cell["outcome"] == "ok", cell["message"]
    assert cell["runner"]["runner"] == "python-spin" and cell["runner"]["protocol"] == 1
    assert cell["effective"]["samples_per_step"] == 4 and cell["effective"]["device_uuids"] == []
    steps = dlbench.steps(0)
    assert len(steps) >= 5 and all(rank == 0 and samples == 4 and end >= start
                                   for rank, start, end, samples, _, _ in steps)
    # spin_steps is the runner's own figure, not a declared metric: dlbench keeps it, in extras, and says so.
    assert undeclared(cell, "spin_steps") == len(steps) and metric(cell, "spin_steps") is None
    assert metric(cell, "client_overhead_ns_per_step") > 0
    assert metric(cell, "host_rss_bytes") > 0 and metric(cell, "after_warmup_host_rss_bytes") > 0
    assert metric(cell, "step_time_mean_ns") > 0


def test_phases_memory_and_extras_of_a_runner_object_are_stored(dlbench):
    run = dlbench.run_matrix(fixture_runner("phases") + "matrix:\n  batch_size: 3\n" + MEASURE)
    assert run.returncode == 0, run.stdout + run.stderr
    [cell] = dlbench.cells()
    assert cell["outcome"] == "ok", cell["message"]
    steps = dlbench.steps(0)
    assert [(s[4], s[5]) for s in steps[:3]] == [(1001, 2001), (1002, 2002), (1003, 2003)]
    assert undeclared(cell, "fixture_metric") == 2.5 and metric(cell, "fixture_metric") is None
    # A memory field that is not a declared memory metric stays in the snapshots, in extras.memory.
    snapshots = {snap["label"]: snap for snap in cell["extras"]["memory"]}
    assert snapshots["end"]["fixture_bytes"] == 4096 and snapshots["after_warmup"]["fixture_bytes"] == 1024
    assert metric(cell, "fixture_bytes") is None
    assert cell["extras"]["info"]["fixture_fact"] == "yes"
    assert cell["runner"]["note"] == "fixture"


def test_an_exception_ends_its_cell_with_the_tracebacks_last_line_and_the_matrix_goes_on(dlbench):
    run = dlbench.run_matrix(python_runner("dlbench_runners.spin") +
                             "matrix:\n  model: spin\n  iterations: 200\n  fail_at_step: [3, 1000000]\n" + MEASURE)
    assert run.returncode == 1, run.stdout + run.stderr  # a cell did not end ok
    failed, fine = dlbench.cells()
    assert failed["outcome"] == "error"
    assert failed["message"].startswith("runner error: ZeroDivisionError: division by zero"), failed["message"]
    assert "Traceback (most recent call last)" in failed["message"]  # the stderr tail follows
    assert len(dlbench.steps(0)) == 3  # the steps before the failure are stored
    assert fine["outcome"] == "ok", fine["message"]


def test_a_bad_parameter_is_an_invalid_configuration_naming_the_key(dlbench):
    dlbench.run_matrix(python_runner("dlbench_runners.spin") + "matrix:\n  model: spin\n  iteratons: 5\n" + MEASURE)
    [cell] = dlbench.cells()
    assert cell["outcome"] == "error"
    assert cell["message"].startswith("invalid configuration: unknown parameter 'iteratons' for runner python-spin "
                                      "(did you mean 'iterations'?)"), cell["message"]


def test_error_kinds_become_their_outcomes(dlbench):
    dlbench.run_matrix(fixture_runner("setup_oom") + "matrix:\n  batch_size: 1\n" + MEASURE, "oom.yaml")
    [oom] = dlbench.cells()
    assert (oom["outcome"], oom["message"]) == ("oom", "CUDA out of memory. Tried to allocate 2.00 GiB")
    assert oom["extras"]["oom_requested_bytes"] == 2 << 30
    dlbench.run_matrix(fixture_runner("setup_unsupported") + "matrix:\n  batch_size: 1\n" + MEASURE, "u.yaml")
    [unsupported] = dlbench.cells()
    assert (unsupported["outcome"], unsupported["message"]) == ("unsupported", "this fixture supports nothing")


def test_a_native_crash_is_crashed_with_the_python_stack_in_the_message(dlbench):
    dlbench.run_matrix(fixture_runner("segfault") + "matrix:\n  batch_size: 1\n" + MEASURE)
    [cell] = dlbench.cells()
    assert cell["outcome"] == "crashed", cell["message"]
    assert "SIGSEGV" in cell["message"]
    assert "Fatal Python error: Segmentation fault" in cell["message"]  # faulthandler's report on stderr


def test_an_exit_status_is_an_error_with_the_stderr_tail(dlbench):
    dlbench.run_matrix(fixture_runner("exit_code") + "matrix:\n  batch_size: 1\n" + MEASURE)
    [cell] = dlbench.cells()
    assert cell["outcome"] == "error"
    assert cell["message"].startswith("runner ended with exit code 3"), cell["message"]
    assert "fixture: giving up with exit status 3" in cell["message"]


def test_plan_passes_unknown_keys_to_the_python_runner_unvalidated(dlbench):
    path = dlbench.work / "p.yaml"
    path.write_text(python_runner("dlbench_runners.spin") + "matrix:\n  model: spin\n  iterations: [1, 2]\n")
    plan = json.loads(dlbench("plan", str(path), "--json", check=True).stdout)
    cells = plan["cells"] if isinstance(plan, dict) else plan
    keys = [c["key"] for c in cells]
    assert keys == ["batch_size=1,device=cpu,iterations=1,model=spin,precision=fp32,scenario=train,strategy=none,"
                    "world_size=1",
                    "batch_size=1,device=cpu,iterations=2,model=spin,precision=fp32,scenario=train,strategy=none,"
                    "world_size=1"]
