"""A fixed amount of work per step, in pure Python: ``python3 -m dlbench_runners.spin``.

Each step runs ``iterations`` rounds of a floating-point recurrence (no allocation, no I/O,
single-threaded), so its time depends on the CPU alone. It serves the harness overhead benchmark
(bench/peers/python_harness_overhead.py: the same loop timed by itself and through dlbench) and
the client's tests. ``fail_at_step`` raises an exception in that step, to show how an exception in
a runner's code ends a cell.
"""

from __future__ import annotations

import platform
from typing import Any, Dict, Mapping, Optional

from dlbench_client import CellConfig, Extras, Hello, Metric, Runner, __version__, main as _client_main

from .host import cpu_device, host_memory, python_facts, reset_peak_rss
from .params import CORE, Param, parse_params, require_single_process

RUNNER = "python-spin"

PARAMS = CORE + (
    Param("iterations", "int", 20000, minimum=0, maximum=10**9, help="Rounds of the recurrence per step."),
    Param("fail_at_step", "int", minimum=0, maximum=10**9,
          help="Raise ZeroDivisionError in this step (0-based); absent: never."),
)


def spin(iterations: int, x: float = 0.5) -> float:
    """The fixed work: ``iterations`` rounds of x = x * 0.999999 + 1e-6 (stays in (0, 1))."""
    for _ in range(iterations):
        x = x * 0.999999 + 1e-6
    return x


class SpinRunner(Runner):
    """Cells of fixed pure-Python work, several in one process under ``dlbench run --runner-reuse``."""

    name = RUNNER
    multi_cell = True

    def __init__(self) -> None:
        self._start_cell_state()

    def _start_cell_state(self) -> None:
        self.iterations = 0
        self.batch = 1
        self.fail_at: Optional[int] = None
        self.steps = 0
        self.x = 0.5

    def hello(self) -> Hello:
        return Hello(RUNNER, __version__, {"name": "python", "version": platform.python_version(), **python_facts()},
                     [cpu_device()])

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        p = parse_params(cell.params, PARAMS, RUNNER)
        require_single_process(p)
        self.iterations, self.batch, self.fail_at = p["iterations"], p["batch_size"], p["fail_at_step"]
        return {"model": p["model"], "scenario": p["scenario"], "iterations": self.iterations,
                "batch_size": self.batch, "samples_per_step": self.batch, "device": "cpu", "device_uuids": [],
                "fail_at_step": self.fail_at}

    def step(self) -> int:
        if self.steps == self.fail_at:
            1 / 0  # noqa: B018 (the injected failure)
        self.steps += 1
        self.x = spin(self.iterations, self.x)
        return self.batch

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        return host_memory("cpu")

    def extras(self) -> Extras:
        info: Dict[str, Any] = {"final_x": self.x}
        return Extras([Metric("spin_steps", float(self.steps), "steps")], info)

    def end_cell(self) -> None:
        # The next cell counts its steps and runs its recurrence from the start, as a fresh process.
        self._start_cell_state()
        reset_peak_rss()


def main() -> None:
    """Entry point: ``python3 -m dlbench_runners.spin``."""
    _client_main(SpinRunner())


if __name__ == "__main__":
    main()
