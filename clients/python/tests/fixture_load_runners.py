"""Load-scenario runners the tests start: ``python3 fixture_load_runners.py KIND``. They need no
framework: ``issue`` does nothing (``noop``) or sleeps ``sleep_us`` per batch (``sleep``, which
releases the GIL as a framework's kernel does); ``drop`` and ``duplicate`` leave query
``fault_query`` out of the QUERIES stream or send it twice, as dlbench-null's ``inject:
drop_query`` / ``duplicate_query`` do."""

from __future__ import annotations

import sys
import time
from typing import Any, List, Mapping, Optional

from dlbench_client import CellConfig, Hello, InvalidParameter, QueryPhases, Runner, RunnerSession, run_cell
from dlbench_client.load import current_stream


class NoopLoad(Runner):
    """A system under test that takes no time: what the client itself adds to a query."""

    name = "fixture-load"

    def hello(self) -> Hello:
        return Hello("fixture-load", "0", {"name": "python"}, [{"type": "cpu"}])

    def setup(self, cell: CellConfig) -> Mapping[str, Any]:
        if cell.load is None:
            raise InvalidParameter("this fixture serves load cells only")
        extra = cell.params.get("sleep_us", 0)
        if isinstance(extra, bool) or not isinstance(extra, (int, float)) or not 0 <= extra <= 1e6:
            raise InvalidParameter("sleep_us: expected a number of microseconds in [0, 1000000] (got %r)" % (extra,))
        self.sleep_s = extra * 1e-6
        self.library = cell.load.sample_library_size
        self.batches: List[int] = []
        self.streams_seen = set()
        return {"batch_size": cell.params.get("batch_size", 1), "samples_per_step": 1, "device_uuids": [],
                "load": {"system_under_test": "fixture: issue() sleeps sleep_us per batch"}}

    def issue(self, samples: List[int]) -> Optional[QueryPhases]:
        if not samples or any(not 0 <= i < self.library for i in samples):
            raise ValueError("samples outside the library: %r" % samples)
        self.batches.append(len(samples))
        self.streams_seen.add(current_stream())
        if self.sleep_s:
            t0 = time.monotonic_ns()
            time.sleep(self.sleep_s)
            return QueryPhases(compute_ns=time.monotonic_ns() - t0)
        return None

    def extras(self):
        from dlbench_client import Extras
        return Extras([], {"batches": len(self.batches), "largest_batch": max(self.batches, default=0),
                           "samples_served": sum(self.batches), "streams_seen": sorted(self.streams_seen)})


class FaultySession(RunnerSession):
    """Drops or repeats one query record on its way to the orchestrator."""

    fault = ""
    fault_query = 30

    def record_query(self, query_id: int, *args: Any, **kwargs: Any) -> None:
        if query_id == self.fault_query and self.fault == "drop":
            return
        super().record_query(query_id, *args, **kwargs)
        if query_id == self.fault_query and self.fault == "duplicate":
            super().record_query(query_id, *args, **kwargs)


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind in ("noop", "sleep"):
        session = RunnerSession.connect()
    elif kind in ("drop", "duplicate"):
        FaultySession.fault = kind
        session = FaultySession.connect()
    else:
        raise SystemExit("unknown fixture kind %s" % kind)
    sys.exit(run_cell(session, NoopLoad()))
