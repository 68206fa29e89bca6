"""Inference under load for Python runners: the four LoadGen scenarios of docs/load.md, driven
here against a user's ``issue(samples)`` and streamed as QUERIES records.

The Python twin of src/load (settings.h, schedule.h, batcher.h, load_generator.h):

- ``resolve_load_settings(params, seed)`` reads a load cell's keys from CONFIGURE, as
  ``load::ResolveLoadSettings`` does (the same defaults, bounds, scenario rules and messages, and
  the same schedule and sample seeds);
- ``QuerySchedule`` issues the same queries in the same order as the C++ schedule for the same
  seeds: mt19937_64 (written out here, since Python's ``random`` is the 32-bit generator) with the
  distributions written out as in schedule.cc, so a Python runner's server cell and dlbench-torch's
  draw identical Poisson arrivals and samples;
- ``decide_batch`` is ``load::DecideBatch``, the dynamic batcher's rule;
- ``run_load(session, settings, issue, limits)`` runs the scenario until STOP or a ceiling and
  sends every query's record (scheduled, issued, completed; CLOCK_MONOTONIC) in QUERIES frames.

``issue(samples)`` runs the model on the samples of the sample library named by ``samples`` (a
list of indices in ``[0, sample_library_size)``) and returns when their outputs are ready: the
framework's synchronisation is the caller's, as a step's is. It may return a ``QueryPhases``
with the durations it measured (host pre-processing, compute, ...), or None.

Where the time goes (docs/python-client.md, "Load scenarios"): single stream, multi stream and
offline run ``issue`` on the calling thread, stamping the issue right before the call and the
completion right after it; records are packed and sent between queries, never between a query's
stamps. The server runs an issue thread (the caller's) that sleeps until each Poisson arrival and
queues the query, ``streams`` worker threads that take batches by ``decide_batch`` and call
``issue``, and a flush thread that sends the completed records in id order every 50 ms and polls
for STOP; no encoding or I/O happens on the issue thread during the run.
"""

from __future__ import annotations

import collections
import json
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence

_clock_gettime_ns = time.clock_gettime_ns
_CLOCK_MONOTONIC = time.CLOCK_MONOTONIC
_MASK64 = (1 << 64) - 1

SCENARIOS = ("single_stream", "multi_stream", "server", "offline")

#: The load keys of the config registry (docs/config-reference.md, "Inference under load"): a
#: runner built on this client leaves them to ``resolve_load_settings``.
LOAD_KEYS = ("load", "target_qps", "latency_bound_ms", "peak_max_probes", "peak_resolution", "peak_max_time_s",
             "latency_percentile", "samples_per_query", "query_interval_ms", "max_batch", "batch_timeout_us",
             "streams", "offline_samples", "min_queries", "early_stopping_confidence", "sample_library_size",
             "input_residency")

DEFAULT_SAMPLES_PER_QUERY = 8  # LoadGen's multi_stream default
DEFAULT_OFFLINE_SAMPLES = 24_576  # the rules' offline floor
DEFAULT_SAMPLE_LIBRARY_SIZE = 64
DEFAULT_CONFIDENCE = 0.99
DEFAULT_PEAK_MAX_PROBES = 20
DEFAULT_PEAK_RESOLUTION = 0.05
#: Queries in flight the server holds at most; further behind, the run ends (LoadGen's "Too many
#: outstanding queries"), with DONE reason ``too_many_outstanding``.
DEFAULT_MAX_OUTSTANDING = 1 << 16

#: Records are sent every FLUSH_RECORDS records or FLUSH_INTERVAL_NS, as STEPS are.
FLUSH_RECORDS = 1024
FLUSH_INTERVAL_NS = 50_000_000
#: The last stretch of a wait for a scheduled time is spun rather than slept: a timed wake-up is
#: tens of microseconds late, and lateness counts against the server (MonotonicLoadClock's 100 us).
SPIN_NS = 100_000
#: After the last issue, how long the server's outstanding queries may take to complete.
DRAIN_TIMEOUT_NS = 10_000_000_000


class LoadSettingsError(ValueError):
    """A load key is wrong; the message names it (the runner reports it as ERROR ``invalid``)."""


# -- generators -----------------------------------------------------------------------------------
def splitmix64(x: int) -> int:
    """SplitMix64's finaliser of ``x + gamma`` (src/common/hash.h)."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


class Mt19937_64:
    """std::mt19937_64 ([rand.predef]: the 10000th output from the default seed 5489 is
    9981545732273789042), so that schedules match the C++ generator's for the same seed."""

    _N, _M = 312, 156
    _MATRIX_A = 0xB5026F5AA96619E9
    _UPPER, _LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed: int = 5489) -> None:
        mt = [0] * self._N
        mt[0] = seed & _MASK64
        for i in range(1, self._N):
            prev = mt[i - 1]
            mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & _MASK64
        self._mt = mt
        self._index = self._N

    def _twist(self) -> None:
        mt, n, m = self._mt, self._N, self._M
        upper, lower, matrix_a = self._UPPER, self._LOWER, self._MATRIX_A
        for k in range(n):
            x = (mt[k] & upper) | (mt[(k + 1) % n] & lower)
            xa = x >> 1
            if x & 1:
                xa ^= matrix_a
            mt[k] = mt[(k + m) % n] ^ xa
        self._index = 0

    def __call__(self) -> int:
        if self._index >= self._N:
            self._twist()
        y = self._mt[self._index]
        self._index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & _MASK64


def _llround(x: float) -> int:
    """std::llround for x >= 0: halves away from zero (Python's round() would round them to even)."""
    r = math.floor(x)
    return int(r) + (1 if x - r >= 0.5 else 0)


# -- settings -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadSettings:
    """A load cell's normalised settings (``load::EffectiveLoadSettings``): every default applied,
    every unit converted, the seeds derived."""

    scenario: str = "single_stream"
    target_qps: float = 0.0
    peak_search: bool = False
    peak_max_probes: int = DEFAULT_PEAK_MAX_PROBES
    peak_resolution: float = DEFAULT_PEAK_RESOLUTION
    peak_max_time_ns: Optional[int] = None
    latency_bound_ns: Optional[int] = None
    latency_percentile: float = 0.9
    confidence: float = DEFAULT_CONFIDENCE
    samples_per_query: int = 1
    query_interval_ns: Optional[int] = None
    max_batch: int = 1
    batch_timeout_ns: int = 0
    streams: int = 1
    min_queries: Optional[int] = None
    sample_library_size: int = DEFAULT_SAMPLE_LIBRARY_SIZE
    input_residency: str = "host"
    max_outstanding: int = DEFAULT_MAX_OUTSTANDING
    schedule_seed: int = 0
    sample_seed: int = 0

    @property
    def closed_loop(self) -> bool:
        """The next query goes when the previous completes (no schedule of arrival times)."""
        return self.scenario in ("single_stream", "offline") or (
            self.scenario == "multi_stream" and self.query_interval_ns is None)

    def batch_sizes(self) -> List[int]:
        """Every batch size ``issue`` can be called with, for a warm-up before READY: 1..max_batch
        (server), the query (single and multi stream), the offline batch and its remainder."""
        if self.scenario == "server":
            return list(range(1, self.max_batch + 1))
        if self.scenario == "offline":
            sizes = {min(self.max_batch, self.samples_per_query)}
            if self.samples_per_query % self.max_batch and self.samples_per_query > self.max_batch:
                sizes.add(self.samples_per_query % self.max_batch)
            return sorted(sizes)
        return [self.samples_per_query]

    def to_json(self) -> Dict[str, Any]:
        """The ``load`` part of the effective cell (READY), as ``EffectiveLoadSettings::ToJson``."""
        j: Dict[str, Any] = {
            "scenario": self.scenario, "samples_per_query": self.samples_per_query,
            "latency_percentile": self.latency_percentile, "early_stopping_confidence": self.confidence,
            "sample_library_size": self.sample_library_size, "input_residency": self.input_residency,
            "max_batch": self.max_batch, "max_outstanding": self.max_outstanding,
            "schedule_seed": self.schedule_seed, "sample_seed": self.sample_seed,
            "latency_from": ("scheduled arrival (queueing and issue lateness count)"
                             if self.scenario == "server" or self.query_interval_ns is not None
                             else "issue (scheduled = issued: the next query goes when the previous completes)"),
        }
        if self.scenario == "server":
            j["target_qps"] = "max" if self.peak_search else self.target_qps
            if self.peak_search:
                j["peak_search_start_qps"] = self.target_qps
                j["peak_max_probes"] = self.peak_max_probes
                j["peak_resolution"] = self.peak_resolution
                if self.peak_max_time_ns is not None:
                    j["peak_max_time_s"] = self.peak_max_time_ns / 1e9
            j["arrivals"] = "Poisson (exponential gaps from mt19937_64(schedule_seed), inverse CDF)"
            j["batch_timeout_us"] = self.batch_timeout_ns / 1e3
            j["streams"] = self.streams
        if self.latency_bound_ns is not None:
            j["latency_bound_ms"] = self.latency_bound_ns / 1e6
        if self.query_interval_ns is not None:
            j["query_interval_ms"] = self.query_interval_ns / 1e6
        if self.min_queries is not None:
            j["min_queries"] = self.min_queries
        return j


# Which keys apply to which scenarios (load::KeyScopes; config/load_rules.cc says the same).
_KEY_SCOPES = (
    ("target_qps", ("server",)), ("latency_bound_ms", ("server",)), ("max_batch", ("server",)),
    ("batch_timeout_us", ("server",)), ("streams", ("server",)), ("samples_per_query", ("multi_stream",)),
    ("query_interval_ms", ("multi_stream",)), ("offline_samples", ("offline",)),
    ("latency_percentile", ("single_stream", "multi_stream", "server")), ("peak_max_probes", ("server",)),
    ("peak_max_time_s", ("server",)), ("peak_resolution", ("server",)),
)


def _has(params: Mapping[str, Any], key: str) -> bool:
    return params.get(key) is not None


def _dump(value: Any) -> str:
    return json.dumps(value)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _get_int(params: Mapping[str, Any], key: str, lo: int, hi: int) -> Optional[int]:
    if not _has(params, key):
        return None
    v = params[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise LoadSettingsError("parameter '%s' must be an integer between %d and %d, got %s" % (key, lo, hi, _dump(v)))
    return v


def _num_text(x: float) -> str:
    return _dump(float(x))  # as nlohmann::json(double).dump(): 0.0, 10000000.0, 0.001


def _get_number(params: Mapping[str, Any], key: str, lo: float, lo_inclusive: bool, hi: float,
                hi_inclusive: bool) -> Optional[float]:
    if not _has(params, key):
        return None
    v = params[key]
    ok = _is_number(v) and math.isfinite(v) and (v >= lo if lo_inclusive else v > lo) and (
        v <= hi if hi_inclusive else v < hi)
    if not ok:
        raise LoadSettingsError("parameter '%s' must be a number %s%s and %s%s, got %s"
                                % (key, ">= " if lo_inclusive else "> ", _num_text(lo), "<= " if hi_inclusive else "< ",
                                   _num_text(hi), _dump(v)))
    return float(v)


def load_requested(params: Mapping[str, Any]) -> bool:
    """Whether the cell asks for inference under load (a ``load`` key that is not null)."""
    return _has(params, "load")


def resolve_load_settings(params: Mapping[str, Any], seed: int) -> LoadSettings:
    """The cell's load settings from CONFIGURE's params (``load::ResolveLoadSettings``);
    LoadSettingsError naming the key and what it accepts. The rules across keys are checked
    again here, since a matrix may reach a runner from another orchestrator."""
    if not load_requested(params):
        raise LoadSettingsError("no 'load' parameter: the cell is not inference under load")
    load = params["load"]
    if not isinstance(load, str) or load not in SCENARIOS:
        raise LoadSettingsError("parameter 'load' must be one of single_stream, multi_stream, server, offline, got "
                                + _dump(load))
    scenario = load
    if _has(params, "scenario") and params["scenario"] != "infer":
        raise LoadSettingsError("load needs scenario: infer (got %s)" % _dump(params["scenario"]))
    for key, scenarios in _KEY_SCOPES:
        if _has(params, key) and scenario not in scenarios:
            raise LoadSettingsError("parameter '%s' applies only with load: %s (this cell is %s)"
                                    % (key, " or ".join(scenarios), scenario))
    s: Dict[str, Any] = {"scenario": scenario}
    peak_search = False
    if _has(params, "target_qps"):
        q = params["target_qps"]
        if q == "max":
            peak_search = True
        elif _is_number(q) and math.isfinite(q) and 0 < q <= 1e9:
            s["target_qps"] = float(q)
        else:
            raise LoadSettingsError("parameter 'target_qps' must be a number > 0 and <= 1e9 or max, got " + _dump(q))
    elif scenario == "server":
        raise LoadSettingsError("load: server needs target_qps (a rate, or max to search for the peak)")
    s["peak_search"] = peak_search
    bound = _get_number(params, "latency_bound_ms", 0, False, 1e7, True)
    if bound is not None:
        s["latency_bound_ns"] = _llround(bound * 1e6)
    if peak_search and bound is None:
        raise LoadSettingsError("target_qps: max needs latency_bound_ms (the bound the peak must stay within)")
    if peak_search:
        s["target_qps"] = 100.0  # the search's first probe
    max_probes = _get_int(params, "peak_max_probes", 1, 100)
    resolution = _get_number(params, "peak_resolution", 0.001, True, 1, True)
    peak_time = _get_number(params, "peak_max_time_s", 0, False, 86400, True)
    if not peak_search and (max_probes is not None or resolution is not None or peak_time is not None):
        name = ("peak_max_probes" if max_probes is not None else "peak_resolution" if resolution is not None
                else "peak_max_time_s")
        raise LoadSettingsError("parameter '%s' applies only with target_qps: max" % name)
    if max_probes is not None:
        s["peak_max_probes"] = max_probes
    if resolution is not None:
        s["peak_resolution"] = resolution
    if peak_time is not None:
        s["peak_max_time_ns"] = _llround(peak_time * 1e9)

    percentile = _get_number(params, "latency_percentile", 0, False, 1, False)
    s["latency_percentile"] = percentile if percentile is not None else (0.9 if scenario == "single_stream" else 0.99)
    confidence = _get_number(params, "early_stopping_confidence", 0.5, False, 1, False)
    s["confidence"] = confidence if confidence is not None else DEFAULT_CONFIDENCE

    batch_size = _get_int(params, "batch_size", 1, 1 << 20)
    samples_per_query = _get_int(params, "samples_per_query", 1, 1 << 16)
    interval = _get_number(params, "query_interval_ms", 0, False, 1e7, True)
    max_batch = _get_int(params, "max_batch", 1, 1 << 16)
    timeout = _get_int(params, "batch_timeout_us", 0, 1_000_000_000)
    streams = _get_int(params, "streams", 1, 64)
    offline = _get_int(params, "offline_samples", 1, 100_000_000)
    s["min_queries"] = _get_int(params, "min_queries", 1, 1_000_000_000)
    library = _get_int(params, "sample_library_size", 1, 1 << 20)
    s["sample_library_size"] = library if library is not None else DEFAULT_SAMPLE_LIBRARY_SIZE
    if _has(params, "input_residency"):
        r = params["input_residency"]
        if r not in ("host", "device"):
            raise LoadSettingsError("parameter 'input_residency' must be one of host, device, got " + _dump(r))
        s["input_residency"] = r

    batch = batch_size if batch_size is not None else 1
    if scenario == "single_stream":
        s.update(samples_per_query=1, max_batch=1)
    elif scenario == "multi_stream":
        spq = samples_per_query if samples_per_query is not None else DEFAULT_SAMPLES_PER_QUERY
        s.update(samples_per_query=spq, max_batch=spq)
        if interval is not None:
            s["query_interval_ns"] = _llround(interval * 1e6)
    elif scenario == "server":
        s.update(samples_per_query=1, max_batch=max_batch if max_batch is not None else batch,
                 batch_timeout_ns=(timeout or 0) * 1000, streams=streams if streams is not None else 1)
    else:
        s.update(samples_per_query=offline if offline is not None else DEFAULT_OFFLINE_SAMPLES, max_batch=batch)
    s["schedule_seed"] = splitmix64((seed ^ 0x5343484544554C45) & _MASK64)  # "SCHEDULE"
    s["sample_seed"] = splitmix64((seed ^ 0x53414D504C455321) & _MASK64)  # "SAMPLES!"
    return LoadSettings(**s)


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


# -- the driver -----------------------------------------------------------------------------------
class QueryPhases(NamedTuple):
    """What ``issue`` may return: the durations (ns) of the work that served the batch, as far as
    it measured them; None is absent (not zero). They fill the query records' decomposition
    (docs/load.md, "Latency decomposition"): for a query served in several batches (offline) the
    sums over its batches."""

    host_pre_ns: Optional[int] = None
    h2d_ns: Optional[int] = None
    compute_ns: Optional[int] = None
    d2h_ns: Optional[int] = None
    host_post_ns: Optional[int] = None


class LoadResult(NamedTuple):
    """How a load run ended: ``reason`` for DONE (stopped, max_steps: ``limits.max_steps`` queries,
    max_time, too_many_outstanding) and the queries issued (DONE's count)."""

    reason: str
    queries: int


IssueFn = Callable[[List[int]], Optional[QueryPhases]]

_local = threading.local()


def current_stream() -> int:
    """The server stream (0 .. streams - 1) whose worker thread is calling ``issue``; 0 in the other
    scenarios. A GPU runner picks its CUDA stream by it."""
    return getattr(_local, "stream", 0)


def _add_phases(total: Optional[QueryPhases], part: Optional[QueryPhases]) -> Optional[QueryPhases]:
    if part is None:
        return total
    if total is None:
        return part
    return QueryPhases(*(None if a is None and b is None else (a or 0) + (b or 0) for a, b in zip(total, part)))


def _sleep_until(due_ns: int, stopped: Callable[[], bool]) -> bool:
    """Waits until CLOCK_MONOTONIC reaches ``due_ns``: sleeps in slices of at most the flush
    interval (asking ``stopped`` after each), spins the last SPIN_NS. False when stopped."""
    clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
    sleep = time.sleep
    while True:
        left = due_ns - clock(mono)
        if left <= 0:
            return True
        if left > SPIN_NS:
            sleep(min(left - SPIN_NS, FLUSH_INTERVAL_NS) * 1e-9)
            if stopped():
                return False


def run_load(session: Any, settings: LoadSettings, issue: IssueFn, limits: Any,
             library_size: Optional[int] = None) -> LoadResult:
    """Runs the cell's scenario against ``issue`` until STOP or a ceiling (``limits.max_steps``
    queries, ``limits.max_time_s`` from the start) and sends every query's record through
    ``session.record_query`` / ``session.flush_queries`` (a RunnerSession). An exception from
    ``issue`` propagates after the records of the queries completed before it are sent.
    ``library_size`` defaults to the settings' ``sample_library_size``."""
    if settings.peak_search:
        raise LoadSettingsError("target_qps: max (the peak search) is not implemented in the Python client")
    size = library_size if library_size is not None else settings.sample_library_size
    if settings.scenario == "server":
        return _ServerRun(session, settings, issue, limits, size).run()
    return _run_closed(session, settings, issue, limits, size)


def _run_closed(session: Any, s: LoadSettings, issue: IssueFn, limits: Any, library_size: int) -> LoadResult:
    """Single stream, multi stream and offline, on the calling thread."""
    schedule = QuerySchedule(s, library_size)
    clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
    record = session.record_query
    max_queries = max(int(limits.max_steps), 1)
    max_ns = int(limits.max_time_s * 1e9)
    interval = s.query_interval_ns
    offline = s.scenario == "offline"
    batch = s.max_batch
    batch_samples = min(batch, s.samples_per_query)

    def stopped() -> bool:
        session.poll_stop()
        return bool(session.stop_requested)

    n = 0
    reason = "stopped"
    start = clock(mono)
    try:
        while True:
            # Everything the query needs is made before its stamps.
            q = schedule.next()
            samples = sample_indices(q, library_size)
            parts = [samples[i:i + batch] for i in range(0, len(samples), batch)] if offline else None
            if interval is not None:
                due = start + q.offset_ns
                if due - start >= max_ns:
                    reason = "max_time"
                    break
                if not _sleep_until(due, stopped):
                    reason = "stopped"
                    break
                issued = clock(mono)
                scheduled = due
            else:
                issued = clock(mono)
                scheduled = issued
            if parts is None:
                phases = issue(samples)
                done = clock(mono)
            else:
                phases = None
                for part in parts:
                    phases = _add_phases(phases, issue(part))
                done = clock(mono)
            record(n, scheduled, issued, done, q.samples, batch_samples, phases)
            n += 1
            if session.stop_requested:
                reason = "stopped"
                break
            if n >= max_queries:
                reason = "max_steps"
                break
            if done - start >= max_ns:
                reason = "max_time"
                break
    finally:
        session.flush_queries()
    return LoadResult(reason, n)


class _ServerRun:
    """The server scenario: Poisson arrivals on the calling thread, ``streams`` batching workers,
    a flush thread. Per-query state lives in pre-sized lists indexed by ``id & mask`` (a ring of
    max_outstanding slots), written by one thread at a time."""

    def __init__(self, session: Any, s: LoadSettings, issue: IssueFn, limits: Any, library_size: int) -> None:
        self.session = session
        self.s = s
        self.issue = issue
        self.limits = limits
        self.library_size = library_size
        cap = 1
        while cap < max(s.max_outstanding, 2):
            cap <<= 1
        self.cap = cap
        self.mask = cap - 1
        self.sample = [0] * cap
        self.scheduled = [0] * cap
        self.issued_ns = [0] * cap
        self.done_ns = [0] * cap
        self.done_id = [-1] * cap  # the id whose record the slot holds once complete
        self.batch = [0] * cap
        self.phases: List[Optional[QueryPhases]] = [None] * cap
        self.queue: "collections.deque[int]" = collections.deque()
        self.cv = threading.Condition()
        self.flushing = False
        self.quit = False
        self.stop = False
        self.failure: Optional[BaseException] = None
        self.issued = 0  # ids below this were issued
        self.flushed = 0  # ids below this were sent
        self.completed = [0] * s.streams  # per worker, so that each counter has one writer
        self.flush_wake = threading.Event()
        self.flush_quit = False

    # The stream workers -------------------------------------------------------------------------
    def worker(self, stream: int) -> None:
        _local.stream = stream
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        s, cv, queue, mask = self.s, self.cv, self.queue, self.mask
        max_batch, timeout = s.max_batch, s.batch_timeout_ns
        issued_ns, sample = self.issued_ns, self.sample
        done_ns, done_id, batch_of, phases_of = self.done_ns, self.done_id, self.batch, self.phases
        issue = self.issue
        cv.acquire()
        try:
            while True:
                if not queue:
                    if self.quit:
                        return
                    cv.wait()
                    continue
                queued = len(queue)
                fit = queued if queued < max_batch else max_batch  # server queries have one sample each
                now = clock(mono)
                d = decide_batch(queued, fit, fit, issued_ns[queue[0] & mask], now, max_batch, timeout,
                                 self.flushing or self.quit or self.failure is not None)
                if not d.dispatch:
                    cv.wait(max(d.wake_at_ns - now, 1000) * 1e-9)
                    continue
                ids = [queue.popleft() for _ in range(d.queries)]
                skip = self.failure is not None
                cv.release()
                try:
                    phases = None
                    if not skip:
                        try:
                            phases = issue([sample[i & mask] for i in ids])
                        except BaseException as e:  # reported by the issue thread after the drain
                            with cv:
                                if self.failure is None:
                                    self.failure = e
                                self.stop = True
                    t = clock(mono)
                    for i in ids:
                        slot = i & mask
                        done_ns[slot] = t
                        batch_of[slot] = d.samples
                        phases_of[slot] = phases
                        done_id[slot] = i
                    self.completed[stream] += len(ids)
                finally:
                    cv.acquire()
        finally:
            cv.release()

    # The flush thread ---------------------------------------------------------------------------
    def deliver(self) -> None:
        """Sends the completed prefix of records not yet sent (one thread at a time)."""
        record, mask = self.session.record_query, self.mask
        i, issued = self.flushed, self.issued
        while i < issued:
            slot = i & mask
            if self.done_id[slot] != i:
                break
            record(i, self.scheduled[slot], self.issued_ns[slot], self.done_ns[slot], 1, self.batch[slot],
                   self.phases[slot])
            i += 1
        self.flushed = i
        self.session.flush_queries()
        if self.session.stop_requested:
            self.stop = True

    def flusher(self) -> None:
        while not self.flush_quit:
            self.flush_wake.wait(FLUSH_INTERVAL_NS * 1e-9)
            self.flush_wake.clear()
            if self.flush_quit:
                return
            try:
                self.deliver()
            except BaseException as e:  # a record the session refused: the run ends, the issue thread raises it
                with self.cv:
                    if self.failure is None:
                        self.failure = e
                    self.stop = True
                return

    # The issue thread ---------------------------------------------------------------------------
    def run(self) -> LoadResult:
        s, limits = self.s, self.limits
        schedule = QuerySchedule(s, self.library_size)
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        max_queries = max(int(limits.max_steps), 1)
        max_ns = int(limits.max_time_s * 1e9)
        cv, queue, mask, cap = self.cv, self.queue, self.mask, self.cap
        workers = [threading.Thread(target=self.worker, args=(k,), name="dlbench-load-stream-%d" % k, daemon=True)
                   for k in range(s.streams)]
        flusher = threading.Thread(target=self.flusher, name="dlbench-load-flush", daemon=True)
        for t in workers:
            t.start()
        flusher.start()
        stopped = lambda: self.stop  # noqa: E731
        reason = "stopped"
        n = 0
        start = clock(mono)
        try:
            while True:
                if self.stop:
                    reason = "stopped"
                    break
                if n >= max_queries:
                    reason = "max_steps"
                    break
                q = schedule.next()
                due = start + q.offset_ns
                if due - start >= max_ns:
                    reason = "max_time"
                    break
                # A free slot: the one `cap` queries back must have been sent.
                while n - self.flushed >= cap and not self.stop:
                    if n - sum(self.completed) >= cap:
                        reason = "too_many_outstanding"
                        break
                    self.flush_wake.set()
                    time.sleep(0.0005)
                if reason == "too_many_outstanding":
                    break
                if self.stop:
                    reason = "stopped"
                    break
                slot = n & mask
                self.sample[slot] = q.first_sample
                self.scheduled[slot] = due
                if not _sleep_until(due, stopped):
                    reason = "stopped"
                    break
                # The query's timed path: the issue stamp, then into the batcher's queue.
                self.issued_ns[slot] = clock(mono)
                with cv:
                    self.issued = n + 1
                    queue.append(n)
                    cv.notify()
                n += 1
        finally:
            self._drain(n, workers, flusher)
        return LoadResult(reason, n)

    def _drain(self, issued: int, workers: Sequence[threading.Thread], flusher: threading.Thread) -> None:
        """Runs what is queued without waiting for the timeout, waits (at most DRAIN_TIMEOUT_NS) for
        every issued query, stops the threads and sends the last records. Raises what ``issue``
        raised, or RuntimeError naming the first query that never completed."""
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        with self.cv:
            self.flushing = True
            self.cv.notify_all()
        deadline = clock(mono) + DRAIN_TIMEOUT_NS
        while sum(self.completed) < issued and clock(mono) < deadline:
            time.sleep(0.001)
        with self.cv:
            self.quit = True
            self.cv.notify_all()
        for t in workers:
            t.join(timeout=1.0)
        self.flush_quit = True
        self.flush_wake.set()
        flusher.join()
        try:
            self.deliver()
        except BaseException as e:
            if self.failure is None:
                self.failure = e
        if self.failure is not None:
            raise self.failure
        completed = sum(self.completed)
        if completed < issued:
            raise RuntimeError("query %d was issued and never completed (%d outstanding after a drain of %d ms)"
                               % (self.flushed, issued - completed, DRAIN_TIMEOUT_NS // 1_000_000))


def effective_json(settings: LoadSettings, extra: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The effective cell's ``load`` section: the settings, then what the runner adds."""
    j = settings.to_json()
    j["driver"] = "dlbench_client.load (Python; issue thread, %s)" % (
        "%d stream worker thread(s) and a flush thread" % settings.streams if settings.scenario == "server"
        else "issue() on the issue thread; records sent between queries")
    if extra:
        j.update(extra)
    return j


__all__ = ["BatchDecision", "DEFAULT_MAX_OUTSTANDING", "LOAD_KEYS", "LoadResult", "LoadSettings", "LoadSettingsError",
           "Mt19937_64", "QueryPhases", "QuerySchedule", "SCENARIOS", "ScheduledQuery",
           "current_stream", "decide_batch", "effective_json", "load_requested", "resolve_load_settings", "run_load",
           "sample_indices", "splitmix64"]
