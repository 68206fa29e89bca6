#!/usr/bin/env python3
"""A minimal Python runner on the message-by-message API: each step sleeps step_ms (a stand-in
for framework work). Runners built on dlbench_client.Runner (dlbench_runners/) need less code;
this one shows every message.

Use it from a matrix:  runner: {command: [python3, clients/python/examples/sleep_runner.py]}
"""
import os
import sys
import time

# Runs from a checkout without installing the package.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from dlbench_client import Metric, RunnerSession  # noqa: E402


def main() -> int:
    session = RunnerSession.connect()
    session.send_hello(runner="python-sleep", runner_version="1",
                       framework={"name": "python", "version": sys.version.split()[0]}, devices=[{"type": "cpu"}])
    cell = session.receive_configure()
    if cell is None:
        return 0  # dlbench probed our HELLO
    step_ms = cell.params.get("step_ms", 1.0)
    batch = cell.params.get("batch_size", 1)
    if isinstance(step_ms, bool) or not isinstance(step_ms, (int, float)) or not 0 <= step_ms <= 60_000:
        session.send_error("invalid", "step_ms: expected a number between 0 and 60000 (got %r)" % (step_ms,))
        return 0
    session.send_ready({"step_ms": step_ms, "batch_size": batch, "samples_per_step": batch, "device_uuids": []})

    def step() -> int:
        time.sleep(step_ms / 1000.0)
        return batch

    result = session.run_steps(step, cell.limits)
    session.send_extras(metrics=[Metric("python_steps", result.steps, "steps")])
    session.send_done(result.reason, result.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
