"""The queries a load run issues (``dlbench_client.load``): ``QuerySchedule`` as
``load::QuerySchedule`` (src/load/schedule.h) and the dynamic batcher's rule ``decide_batch`` as
``load::DecideBatch`` (src/load/batcher.h)."""

from __future__ import annotations

import math
from typing import List, NamedTuple, Optional

from .load_random import Mt19937_64, _llround
from .load_settings import LoadSettings


# -- the schedule ---------------------------------------------------------------------------------
class ScheduledQuery(NamedTuple):
    """One query of the schedule: its id, its due time's offset from the run's start (server,
    multi stream at an interval; 0 for the closed-loop scenarios) and its samples, ``samples``
    consecutive library indices from ``first_sample``, wrapping at the library's size."""

    id: int
    offset_ns: int
    first_sample: int
    samples: int


class QuerySchedule:
    """``load::QuerySchedule``: the queries a run issues and when they are due, the same sequence
    as the C++ schedule for the same settings and library size."""

    def __init__(self, settings: LoadSettings, library_size: int) -> None:
        if library_size < 1:
            raise ValueError("a sample library needs at least one sample")
        if settings.scenario == "server" and not settings.target_qps > 0:
            raise ValueError("a server schedule needs a rate > 0")
        self._scenario = settings.scenario
        self._target_qps = settings.target_qps
        self._interval_ns = settings.query_interval_ns or 0
        self._samples = settings.samples_per_query
        self._library_size = library_size
        self._schedule_rng = Mt19937_64(settings.schedule_seed)
        self._sample_rng = Mt19937_64(settings.sample_seed)
        self._next_id = 0
        self._next_offset_ns = 0
        self._offline_cursor = 0

    def restart(self, target_qps: float) -> None:
        """A schedule for another rate from the current point (``QuerySchedule::Restart``): offsets
        start again at 0; ids and both random streams continue."""
        if self._scenario == "server" and not target_qps > 0:
            raise ValueError("a server schedule needs a rate > 0")
        self._target_qps = target_qps
        self._next_offset_ns = 0

    def _draw_sample(self) -> int:
        # Multiply-shift (Lemire) without the rejection step, as schedule.cc.
        return (self._sample_rng() * self._library_size) >> 64

    def next(self) -> ScheduledQuery:
        qid = self._next_id
        self._next_id += 1
        if self._scenario == "server":
            offset = self._next_offset_ns
            u = (float(self._schedule_rng() >> 11) + 0.5) * 2.0 ** -53
            self._next_offset_ns += _llround(-math.log(u) / self._target_qps * 1e9)
            return ScheduledQuery(qid, offset, self._draw_sample(), self._samples)
        if self._scenario == "multi_stream":
            offset = self._next_offset_ns if self._interval_ns > 0 else 0
            self._next_offset_ns += self._interval_ns
            return ScheduledQuery(qid, offset, self._draw_sample(), self._samples)
        if self._scenario == "single_stream":
            return ScheduledQuery(qid, 0, self._draw_sample(), self._samples)
        first = self._offline_cursor % self._library_size
        self._offline_cursor += self._samples
        return ScheduledQuery(qid, 0, first, self._samples)


def sample_indices(query: ScheduledQuery, library_size: int) -> List[int]:
    """The library indices of a query's samples."""
    first = query.first_sample
    if first + query.samples <= library_size:
        return list(range(first, first + query.samples))
    return [(first + j) % library_size for j in range(query.samples)]


# -- the dynamic batcher's rule -------------------------------------------------------------------
class BatchDecision(NamedTuple):
    """``load::BatchDecision``: run ``queries`` queries of ``samples`` samples now, or wait until
    ``wake_at_ns`` (or an arrival)."""

    dispatch: bool
    queries: int
    samples: int
    wake_at_ns: Optional[int]


_WAIT = BatchDecision(False, 0, 0, None)


def decide_batch(queued: int, fit_queries: int, fit_samples: int, oldest_ns: int, now_ns: int, max_batch: int,
                 batch_timeout_ns: int, flushing: bool) -> BatchDecision:
    """``load::DecideBatch``: whether a free stream runs a batch now. ``fit_queries`` and
    ``fit_samples`` are the longest oldest-first prefix of the queue with at most ``max_batch``
    samples (at least one query); ``oldest_ns`` when the oldest waiting query was queued. Dispatch
    when the prefix is full (``max_batch`` samples, or the next query would not fit), when
    flushing, when the timeout is 0, or when the oldest has waited the timeout."""
    if queued == 0:
        return _WAIT
    full = fit_queries < queued or fit_samples >= max_batch
    due_ns = oldest_ns + batch_timeout_ns
    if full or flushing or batch_timeout_ns == 0 or now_ns >= due_ns:
        return BatchDecision(True, fit_queries, fit_samples, None)
    return BatchDecision(False, 0, 0, due_ns)
