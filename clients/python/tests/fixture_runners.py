"""Runners the tests start: ``python3 fixture_runners.py KIND``. Each exercises one part of the
client that the shipped runners do not (phases, a failing HELLO, a native crash, exit codes, a
process serving several cells)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Mapping, Optional

from dlbench_client import (CellConfig, Extras, Hello, Metric, OutOfMemory, Runner, StepPhases, Unsupported, main,
                            now_ns)
from dlbench_runners.host import host_memory, reset_peak_rss


class Phases(Runner):
    """Steps with data-wait and compute (no comm), a memory snapshot, metrics and facts."""

    name = "fixture-phases"
    warmup_snapshot_steps = 2

    def hello(self) -> Hello:
        return Hello("fixture-phases", "0", {"name": "python"}, [{"type": "cpu"}], {"note": "fixture"})

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        self.n = 0
        self.batch = cell.params.get("batch_size", 1)
        return {"batch_size": self.batch, "samples_per_step": self.batch, "device_uuids": []}

    def step(self) -> StepPhases:
        t0 = now_ns()
        while now_ns() - t0 < 200_000:  # 0.2 ms of "work"
            pass
        self.n += 1
        return StepPhases(self.batch, data_wait_ns=1000 + self.n, compute_ns=2000 + self.n)

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        return {"fixture_bytes": 4096 if label == "end" else 1024}

    def extras(self) -> Extras:
        return Extras([Metric("fixture_metric", 2.5, "widgets")], {"fixture_fact": "yes"})


class HelloFails(Phases):
    """hello() raises: a minimal HELLO goes out, then ERROR internal after CONFIGURE."""

    name = "fixture-hello-fails"

    def hello(self) -> Hello:
        raise RuntimeError("no framework here")


class SetupOom(Phases):
    """setup() runs out of memory."""

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        raise OutOfMemory("CUDA out of memory. Tried to allocate 2.00 GiB", requested_bytes=2 << 30)


class SetupUnsupported(Phases):
    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        raise Unsupported("this fixture supports nothing")


class Segfault(Phases):
    """The process dies of SIGSEGV in its third step (faulthandler prints the Python stack)."""

    def step(self) -> StepPhases:
        if self.n == 2:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().step()


class ExitCode(Phases):
    """sys.exit(3) in setup: not an exception the harness reports (SystemExit is not an Exception)."""

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        print("fixture: giving up with exit status 3", file=sys.stderr)
        sys.exit(3)


class Multi(Phases):
    """Serves several cells in one process (``multi_cell``). Its ``case`` parameter: ``big`` holds
    64 MiB written through during its steps, ``crash`` dies of SIGSEGV in its third step, anything
    else holds nothing. Memory snapshots are dlbench_runners.host's."""

    name = "fixture-multi"
    multi_cell = True

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        effective = dict(super().setup(cell))
        self.case = cell.params.get("case", "")
        self.held = bytearray(b"\x01") * ((64 << 20) if self.case == "big" else 0)
        effective["case"] = self.case
        return effective

    def step(self) -> StepPhases:
        if self.case == "crash" and self.n == 2:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().step()

    def memory(self, label: str) -> Optional[Mapping[str, Any]]:
        return host_memory("cpu")

    def end_cell(self) -> None:
        self.held = bytearray()
        reset_peak_rss()


KINDS = {"phases": Phases, "multi": Multi, "hello_fails": HelloFails, "setup_oom": SetupOom, "setup_unsupported": SetupUnsupported,
         "segfault": Segfault, "exit_code": ExitCode}

if __name__ == "__main__":
    main(KINDS[sys.argv[1]]())
