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
             "peak_min_probe_s",
             "latency_percentile", "samples_per_query", "query_interval_ms", "max_batch", "batch_timeout_us",
             "streams", "offline_samples", "min_queries", "early_stopping_confidence", "sample_library_size",
             "input_residency")

DEFAULT_SAMPLES_PER_QUERY = 8  # LoadGen's multi_stream default
DEFAULT_OFFLINE_SAMPLES = 24_576  # the rules' offline floor
DEFAULT_SAMPLE_LIBRARY_SIZE = 64
DEFAULT_CONFIDENCE = 0.99
DEFAULT_PEAK_MAX_PROBES = 20
DEFAULT_PEAK_RESOLUTION = 0.05
#: Each peak-search probe measures at least this long at its rate (``peak_min_probe_s``).
DEFAULT_PEAK_MIN_PROBE_NS = 5_000_000_000
MAX_PEAK_MIN_PROBE_S = 3600
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
    peak_min_probe_ns: int = DEFAULT_PEAK_MIN_PROBE_NS
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
                j["peak_min_probe_s"] = self.peak_min_probe_ns / 1e9
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
    ("peak_max_time_s", ("server",)), ("peak_min_probe_s", ("server",)), ("peak_resolution", ("server",)),
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
    probe_time = _get_number(params, "peak_min_probe_s", 0, True, MAX_PEAK_MIN_PROBE_S, True)
    if not peak_search and (max_probes is not None or resolution is not None or peak_time is not None
                            or probe_time is not None):
        name = ("peak_max_probes" if max_probes is not None else "peak_resolution" if resolution is not None
                else "peak_max_time_s" if peak_time is not None else "peak_min_probe_s")
        raise LoadSettingsError("parameter '%s' applies only with target_qps: max" % name)
    if max_probes is not None:
        s["peak_max_probes"] = max_probes
    if resolution is not None:
        s["peak_resolution"] = resolution
    if peak_time is not None:
        s["peak_max_time_ns"] = _llround(peak_time * 1e9)
    if probe_time is not None:
        s["peak_min_probe_ns"] = _llround(probe_time * 1e9)

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
    max_time, too_many_outstanding; peak_search when a peak search ended by its own rule), the
    queries issued (DONE's count), and what EXTRAS carries under ``info.load`` (a peak search's
    report), or None."""

    reason: str
    queries: int
    info: Optional[Dict[str, Any]] = None


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
    size = library_size if library_size is not None else settings.sample_library_size
    if settings.peak_search:
        return _run_peak_search(session, settings, issue, limits, size)
    if settings.scenario == "server":
        return _run_server(session, settings, issue, limits, size)
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

    def __init__(self, session: Any, s: LoadSettings, issue: IssueFn, library_size: int) -> None:
        self.session = session
        self.s = s
        self.issue = issue
        self.schedule = QuerySchedule(s, library_size)
        self.pending: Optional[ScheduledQuery] = None  # drawn, not issued when the last run ended
        self.next_id = 0
        #: When a list: every delivered record's (latency, scheduled, issued) is appended (a probe's).
        self.kept: Optional[List[tuple]] = None
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
            if self.kept is not None:
                self.kept.append((self.done_ns[slot] - self.scheduled[slot], self.scheduled[slot],
                                  self.issued_ns[slot]))
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
    def set_target_qps(self, rate: float) -> None:
        """The Poisson rate of the next run, its offsets restarting at 0 (a peak-search probe); the
        schedule's random streams continue (``QuerySchedule.restart``)."""
        self.schedule.restart(rate)
        self.pending = None

    def run(self, max_queries: int, max_ns: int) -> "_Run":
        """Issues queries from the current id until STOP, ``max_queries`` issued in this run, the
        next arrival ``max_ns`` or more after the run's start, or the ring full of outstanding
        queries; then drains (raising what ``issue`` raised). May be called again: ids continue."""
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        cv, queue, mask, cap = self.cv, self.queue, self.mask, self.cap
        self.flushing = self.quit = False
        self.flush_quit = False
        workers = [threading.Thread(target=self.worker, args=(k,), name="dlbench-load-stream-%d" % k, daemon=True)
                   for k in range(self.s.streams)]
        flusher = threading.Thread(target=self.flusher, name="dlbench-load-flush", daemon=True)
        for t in workers:
            t.start()
        flusher.start()
        stopped = lambda: self.stop  # noqa: E731
        reason = "stopped"
        first = n = self.next_id
        start = clock(mono)
        try:
            while True:
                if self.stop:
                    reason = "stopped"
                    break
                if n - first >= max_queries:
                    reason = "max_steps"
                    break
                if self.pending is None:
                    self.pending = self.schedule.next()
                q = self.pending
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
                self.pending = None
                n += 1
        finally:
            self.next_id = n
            self._drain(n, workers, flusher)
        return _Run(reason, first, n - first)

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


class _Run(NamedTuple):
    end: str  # stopped, max_steps, max_time, too_many_outstanding
    first_id: int
    issued: int


def _run_server(session: Any, s: LoadSettings, issue: IssueFn, limits: Any, library_size: int) -> LoadResult:
    server = _ServerRun(session, s, issue, library_size)
    r = server.run(max(int(limits.max_steps), 1), int(limits.max_time_s * 1e9))
    return LoadResult(r.end, r.issued)


# -- the peak search (target_qps: max) -------------------------------------------------------------
# src/stats/early_stopping.h, latency.h (LoadGenPercentileSorted, CheckIssueRate) and
# peak_search.h, and src/load/peak_search.h's RunPeakSearch: the probes run and are judged here as
# there, since the orchestrator judges every probe again from its records and makes the cell
# `invalid` where its judgement and the runner's differ.
PROBE_WARMUP_NS = 500_000_000  # each probe first runs this long at its rate (kProbeWarmupNs)
PROBE_SEGMENTS = 4  # runs a probe's measurement may take, while early stopping is not met
PEAK_MIN_RATE_PER_S = 1.0
PEAK_MAX_RATE_PER_S = 1e6
PROBE_ISSUE_TOLERANCE = 0.01


def early_stopping_odds(h: int, t: int, percentile: float, tolerance: float = 0.0) -> float:
    """I_{p-d}(h, t + 1) (``EarlyStoppingOdds``): the probability that a system with success
    probability p - d has at most t failures in h + t queries, the binomial CDF summed in log
    space (the C++ side uses Boost's regularized incomplete beta; the two agree to about 1e-9
    relative, far inside the 1% the odds change from one h to the next near the limit)."""
    x = percentile - tolerance
    n = h + t
    log_x, log_fail = math.log(x), math.log1p(-x)
    lg = math.lgamma
    base = lg(n + 1)
    logs = [base - lg(j + 1) - lg(n - j + 1) + j * log_fail + (n - j) * log_x for j in range(t + 1)]
    top = max(logs)
    return math.exp(top) * math.fsum(math.exp(v - top) for v in logs)


def min_passing_queries(t: int, percentile: float, confidence: float) -> int:
    """The smallest h >= 1 with odds(h, t) < 1 - c (``MinPassingQueries``): p 0.99, c 0.99 gives
    h(0) = 459, h(1) = 661."""
    limit = 1.0 - confidence

    def passes(h: int) -> bool:
        return early_stopping_odds(h, t, percentile) < limit

    if passes(1):
        return 1
    lo, hi = 1, 2
    while not passes(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        if passes(mid):
            hi = mid
        else:
            lo = mid
    return hi


def percentile_sorted(values: Sequence[float], p: float) -> float:
    """LoadGen's index rule, ``sorted[floor(n p)]`` (``LoadGenPercentileSorted``); NaN for none."""
    if not values:
        return math.nan
    return values[min(int(len(values) * p), len(values) - 1)]


def _rate_per_s(n: int, first_ns: int, last_ns: int) -> float:
    if n < 2 or last_ns <= first_ns:
        return math.nan
    return (n - 1) / ((last_ns - first_ns) * 1e-9)


class _IssueRate(NamedTuple):
    scheduled_per_s: float
    achieved_per_s: float
    kept_up: bool


def _check_issue_rate(scheduled_ns: Sequence[int], issued_ns: Sequence[int], tolerance: float) -> _IssueRate:
    """``stats::CheckIssueRate``: the issue rate against the schedule's, over the same queries."""
    n = min(len(scheduled_ns), len(issued_ns))
    if n < 2:
        return _IssueRate(math.nan, math.nan, False)
    scheduled = _rate_per_s(n, min(scheduled_ns[:n]), max(scheduled_ns[:n]))
    lo, hi = min(issued_ns[:n]), max(issued_ns[:n])
    achieved = _rate_per_s(n, lo, hi)
    if math.isnan(achieved) and hi == lo:
        achieved = math.inf
    return _IssueRate(scheduled, achieved, not math.isnan(scheduled) and achieved >= (1.0 - tolerance) * scheduled)


class _Bracket:
    """``stats::PeakBracket``: ``lo`` the highest passing rate below every failing one, ``hi`` the
    lowest failing rate."""

    def __init__(self) -> None:
        self.lo: Optional[float] = None
        self.hi: Optional[float] = None

    def add(self, rate: float, passed: bool) -> None:
        if passed:
            if self.hi is None or rate < self.hi:
                self.lo = rate if self.lo is None else max(self.lo, rate)
        elif self.hi is None or rate < self.hi:
            self.hi = rate
            if self.lo is not None and self.lo >= rate:
                self.lo = None


def search_peak(probe: Callable[[float], Optional[bool]], start: float, rel_tolerance: float, max_probes: int,
                stop: Callable[[], bool], growth: float = 2.0, min_rate: float = PEAK_MIN_RATE_PER_S,
                max_rate: float = PEAK_MAX_RATE_PER_S) -> tuple:
    """``stats::SearchPeak`` over ``probe(rate) -> passed``: bracketing by ``growth`` from
    ``start``, then bisection on the geometric mean until hi / lo - 1 <= rel_tolerance, at most
    ``max_probes`` probes; ``stop`` is asked before every probe after the first. ``probe`` returns
    None for a probe the search's end cut before it passed or failed (``stats::Probe::cut``): kept,
    not passed, not in the bracket. Returns (end, peak, lowest failing rate, [(rate, passed), ...]),
    end one of converged, probe_cap, no_passing_rate, rate_cap, stopped."""
    probes: List[tuple] = []
    b = _Bracket()

    def run(rate: float) -> bool:
        result = probe(rate)
        passed = bool(result)
        probes.append((rate, passed))
        if result is not None:
            b.add(rate, passed)
        return passed

    stopped = [False]

    def budget_left() -> bool:
        if len(probes) >= max_probes:
            return False
        stopped[0] = stop()
        return not stopped[0]

    rate = min(max(start, min_rate), max_rate)
    first_passed = run(rate)
    while not (b.lo is not None and b.hi is not None) and budget_left():
        if first_passed:
            if rate >= max_rate:
                break
            rate = min(rate * growth, max_rate)
        else:
            if rate <= min_rate:
                break
            rate = max(rate / growth, min_rate)
        run(rate)
    if b.lo is None or b.hi is None:
        if stopped[0]:
            end = "stopped"
        elif b.lo is None and b.hi is not None and b.hi <= min_rate:
            end = "no_passing_rate"
        elif b.lo is not None and b.hi is None and b.lo >= max_rate:
            end = "rate_cap"
        else:
            end = "probe_cap"
        return end, b.lo, b.hi, probes
    end = "probe_cap"
    while budget_left() and b.lo is not None and b.hi is not None:
        if b.hi / b.lo - 1.0 <= rel_tolerance:
            end = "converged"
            break
        run(math.sqrt(b.lo * b.hi))
    if b.lo is not None and b.hi is not None and b.hi / b.lo - 1.0 <= rel_tolerance:
        end = "converged"
    elif stopped[0]:
        end = "stopped"
    return end, b.lo, b.hi, probes


def _finite_or_none(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def _run_peak_search(session: Any, s: LoadSettings, issue: IssueFn, limits: Any, library_size: int) -> LoadResult:
    """``load::RunPeakSearch``: probes at Poisson rates chosen by ``search_peak``, each a 0.5 s
    warm-up at its rate and then at least the early-stopping minimum of queries and at least
    ``peak_min_probe_s`` at its rate (extended at most
    PROBE_SEGMENTS runs while some are over the bound and early stopping is not met), judged as a
    server cell; within ``limits.max_time_s`` and ``peak_max_time_s``. The report goes to EXTRAS
    as ``info.load.peak_search`` (docs/protocol.md "Peak search report")."""
    assert s.latency_bound_ns is not None
    clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
    server = _ServerRun(session, s, issue, library_size)
    bound_ns = float(s.latency_bound_ns)
    p, c = s.latency_percentile, s.confidence
    floor = max(min_passing_queries(0, p, c), s.min_queries or 1)
    budget_ns = int(limits.max_time_s * 1e9)
    if s.peak_max_time_ns is not None:
        budget_ns = min(budget_ns, s.peak_max_time_ns)
    deadline = clock(mono) + budget_ns
    state = {"stopped": False, "deadline_hit": False, "issued": 0}
    reports: List[Dict[str, Any]] = []

    def time_left() -> int:
        return deadline - clock(mono)

    def out_of_time() -> bool:
        return state["stopped"] or state["deadline_hit"] or time_left() <= 0

    def probe(rate: float) -> Optional[bool]:
        server.set_target_qps(rate)
        warm_ns = min(PROBE_WARMUP_NS, max(time_left(), 1))
        server.kept = None
        warm = server.run(1 << 62, warm_ns)
        state["deadline_hit"] = state["deadline_hit"] or (warm.end == "max_time" and warm_ns < PROBE_WARMUP_NS)
        state["issued"] += warm.issued
        state["stopped"] = state["stopped"] or warm.end == "stopped"
        overloaded = warm.end == "too_many_outstanding"
        kept: List[tuple] = []
        server.kept = kept
        for_time = math.ceil(rate * s.peak_min_probe_ns / 1e9)  # docs/load.md "Probe length"
        needed = max(floor, for_time)
        met, queries_needed = False, 0
        latency = math.inf
        for _ in range(PROBE_SEGMENTS):
            if overloaded or out_of_time():
                break
            server.set_target_qps(rate)  # each run's Poisson schedule starts at the run's start
            r = server.run(needed - len(kept), time_left())
            state["deadline_hit"] = state["deadline_hit"] or r.end == "max_time"
            state["issued"] += r.issued
            state["stopped"] = state["stopped"] or r.end == "stopped"
            overloaded = r.end == "too_many_outstanding"
            if not kept:
                break
            over = sum(1 for k in kept if k[0] > bound_ns)
            queries_needed = min_passing_queries(over, p, c) + over
            met = len(kept) >= queries_needed
            latency = percentile_sorted(sorted(float(k[0]) for k in kept), p)
            if met or not latency <= bound_ns:
                break
            needed = max(queries_needed, for_time)
        server.kept = None
        rate_check = _check_issue_rate([k[1] for k in kept], [k[2] for k in kept], PROBE_ISSUE_TOLERANCE)
        kept_up = rate_check.kept_up and not overloaded
        es_met = met and len(kept) >= floor
        # Cut by the search's end before it could pass or fail (load::RunPeakSearch's rule).
        cut = (out_of_time() and not es_met and not overloaded
               and (not kept or (latency <= bound_ns and rate_check.kept_up)))
        if overloaded:
            latency = math.inf
        passed = not cut and kept_up and es_met and latency <= bound_ns
        reports.append({
            "target_qps": rate, "warmup_first_query": warm.first_id, "warmup_queries": warm.issued,
            "first_query": warm.first_id + warm.issued, "queries": len(kept),
            # No query is dropped here: the drain serves every issued query or raises, STOP or not
            # (load::RunPeakSearch counts what its system under test dropped after STOP).
            "dropped": 0,
            "latency_percentile_ms": latency / 1e6 if math.isfinite(latency) else None,
            "scheduled_per_s": _finite_or_none(rate_check.scheduled_per_s),
            "issued_per_s": _finite_or_none(rate_check.achieved_per_s),
            "too_many_outstanding": overloaded, "early_stopping_met": es_met, "queries_needed": queries_needed,
            "cut": cut, "passed": passed})
        return None if cut else passed

    end, peak, lowest_failing, _ = search_peak(probe, s.target_qps, s.peak_resolution, s.peak_max_probes, out_of_time)
    reason = "stopped" if state["stopped"] else "max_time" if end == "stopped" else "peak_search"
    report = {"end": end, "peak_qps": _finite_or_none(peak), "lowest_failing_qps": _finite_or_none(lowest_failing),
              "latency_bound_ms": s.latency_bound_ns / 1e6, "latency_percentile": s.latency_percentile,
              "rel_tolerance": s.peak_resolution, "probe_warmup_s": PROBE_WARMUP_NS / 1e9,
              "probe_min_s": s.peak_min_probe_ns / 1e9, "probes": reports}
    return LoadResult(reason, state["issued"], {"peak_search": report})


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
           "current_stream", "decide_batch", "early_stopping_odds", "effective_json", "load_requested",
           "min_passing_queries", "percentile_sorted", "resolve_load_settings", "run_load", "sample_indices",
           "search_peak", "splitmix64"]
