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

The code lives in modules of the package, each named after its concern; this module runs a cell
(``run_load``, ``effective_json``) and re-exports their names:

- ``load_random``: SplitMix64, mt19937_64 and llround as the C++ computes them;
- ``load_settings``: the load keys and ``resolve_load_settings`` (``LoadSettings``);
- ``load_schedule``: ``QuerySchedule`` and ``decide_batch``;
- ``load_drivers``: single stream, multi stream and offline on the calling thread, and the server;
- ``load_peak``: early stopping, percentiles and the peak search (``target_qps: max``).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .load_drivers import (DRAIN_TIMEOUT_NS, FLUSH_INTERVAL_NS, FLUSH_RECORDS, SPIN_NS, IssueFn, LoadResult,
                           QueryPhases, _run_closed, _run_server, current_stream)
from .load_peak import (PEAK_MAX_RATE_PER_S, PEAK_MIN_RATE_PER_S, PROBE_ISSUE_TOLERANCE, PROBE_SEGMENTS,
                        PROBE_WARMUP_NS, _run_peak_search, early_stopping_odds, min_passing_queries,
                        percentile_sorted, search_peak, confirm_peak, next_confirmation_rate)
from .load_random import Mt19937_64, splitmix64
from .load_schedule import BatchDecision, QuerySchedule, ScheduledQuery, decide_batch, sample_indices
from .load_settings import (DEFAULT_CONFIDENCE, DEFAULT_MAX_OUTSTANDING, DEFAULT_OFFLINE_SAMPLES,
                            DEFAULT_PEAK_MAX_PROBES, DEFAULT_PEAK_MIN_PROBE_NS, DEFAULT_PEAK_RESOLUTION,
                            DEFAULT_SAMPLE_LIBRARY_SIZE, DEFAULT_SAMPLES_PER_QUERY, LOAD_KEYS, MAX_PEAK_MIN_PROBE_S,
                            SCENARIOS, LoadSettings, LoadSettingsError, load_requested, resolve_load_settings)


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
           "search_peak", "confirm_peak", "next_confirmation_rate", "splitmix64"]
# Constants and a type that were importable from this module before the split, now from their
# modules; listed so that they stay importable from here.
__all__ += ["DEFAULT_CONFIDENCE", "DEFAULT_OFFLINE_SAMPLES", "DEFAULT_PEAK_MAX_PROBES", "DEFAULT_PEAK_MIN_PROBE_NS",
            "DEFAULT_PEAK_RESOLUTION", "DEFAULT_SAMPLES_PER_QUERY", "DEFAULT_SAMPLE_LIBRARY_SIZE", "DRAIN_TIMEOUT_NS",
            "FLUSH_INTERVAL_NS", "FLUSH_RECORDS", "IssueFn", "MAX_PEAK_MIN_PROBE_S", "PEAK_MAX_RATE_PER_S",
            "PEAK_MIN_RATE_PER_S", "PROBE_ISSUE_TOLERANCE", "PROBE_SEGMENTS", "PROBE_WARMUP_NS", "SPIN_NS"]
