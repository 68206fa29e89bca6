#!/usr/bin/env python3
"""A minimal Python runner: each step sleeps step_ms (a stand-in for framework work).

Use it from a matrix:  runner: {command: [python3, clients/python/examples/sleep_runner.py]}
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from dlbench_client import RunnerSession  # noqa: E402


def main():
    session = RunnerSession.connect()
    session.send_hello(runner="python-sleep", runner_version="1",
                       framework={"name": "python", "version": sys.version.split()[0]},
                       devices=[{"type": "cpu"}])
    cell = session.receive_configure()
    if cell is None:
        return 0
    params = cell["params"]
    step_ms = float(params.get("step_ms", 1.0))
    batch = int(params.get("batch_size", 1))
    if step_ms < 0:
        session.send_error("invalid", "step_ms must be >= 0, got %g" % step_ms)
        return 0
    session.send_ready({"step_ms": step_ms, "batch_size": batch, "samples_per_step": batch})

    def step():
        time.sleep(step_ms / 1000.0)
        return batch

    reason = session.run_steps(step, limits=cell.get("limits", {}))
    session.send_extras(metrics=[{"name": "python_steps", "value": session.steps, "unit": "steps"}])
    session.send_done(reason, session.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
