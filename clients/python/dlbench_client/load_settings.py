"""A load cell's settings (``dlbench_client.load``): the load keys, their defaults and bounds,
and ``resolve_load_settings``, which reads them from CONFIGURE as ``load::ResolveLoadSettings``
does (src/load/settings.h)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from .load_random import _MASK64, _llround, splitmix64

SCENARIOS = ("single_stream", "multi_stream", "server", "offline")

#: The load keys of the config registry (docs/config-reference.md, "Inference under load"): a
#: runner built on this client leaves them to ``resolve_load_settings``.
LOAD_KEYS = ("load", "target_qps", "latency_bound_ms", "peak_max_probes", "peak_resolution", "peak_max_time_s",
             "peak_min_probe_s", "peak_confirm_s",
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
#: After the search its peak is run again at least this long at its rate (``peak_confirm_s``; 0: not).
DEFAULT_PEAK_CONFIRM_NS = 15_000_000_000
MAX_PEAK_CONFIRM_S = 3600
#: Queries in flight the server holds at most; further behind, the run ends (LoadGen's "Too many
#: outstanding queries"), with DONE reason ``too_many_outstanding``.
DEFAULT_MAX_OUTSTANDING = 1 << 16


class LoadSettingsError(ValueError):
    """A load key is wrong; the message names it (the runner reports it as ERROR ``invalid``)."""


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
    peak_confirm_ns: int = DEFAULT_PEAK_CONFIRM_NS
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
                j["peak_confirm_s"] = self.peak_confirm_ns / 1e9
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
    ("peak_confirm_s", ("server",)),
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
    confirm_time = _get_number(params, "peak_confirm_s", 0, True, MAX_PEAK_CONFIRM_S, True)
    if not peak_search and (max_probes is not None or resolution is not None or peak_time is not None
                            or probe_time is not None or confirm_time is not None):
        name = ("peak_max_probes" if max_probes is not None else "peak_resolution" if resolution is not None
                else "peak_max_time_s" if peak_time is not None
                else "peak_min_probe_s" if probe_time is not None else "peak_confirm_s")
        raise LoadSettingsError("parameter '%s' applies only with target_qps: max" % name)
    if max_probes is not None:
        s["peak_max_probes"] = max_probes
    if resolution is not None:
        s["peak_resolution"] = resolution
    if peak_time is not None:
        s["peak_max_time_ns"] = _llround(peak_time * 1e9)
    if probe_time is not None:
        s["peak_min_probe_ns"] = _llround(probe_time * 1e9)
    if confirm_time is not None:
        s["peak_confirm_ns"] = _llround(confirm_time * 1e9)

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
