"""The peak search of a server cell with ``target_qps: max`` (``dlbench_client.load``): early
stopping, percentiles and the issue-rate check (src/stats/early_stopping.h, latency.h), the search
(src/stats/peak_search.h) and its probes (src/load/peak_search.h's RunPeakSearch)."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from .load_drivers import _CLOCK_MONOTONIC, IssueFn, LoadResult, _clock_gettime_ns, _ServerRun
from .load_settings import LoadSettings


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
MAX_PEAK_CONFIRMATIONS = 5  # confirmations of the peak found, at most (kMaxPeakConfirmations)


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


def next_confirmation_rate(peak: Optional[float], passing: Sequence[float], runs: Sequence[tuple],
                           rel_tolerance: float, max_confirmations: int = MAX_PEAK_CONFIRMATIONS) -> Optional[float]:
    """``load::NextConfirmationRate`` (docs/load.md "Confirmation"): the rate of the next
    confirmation after ``runs`` ([(rate, result), ...]; a cut one, None, counts for nothing), or
    None when confirming is over. The first confirms ``peak``; after it passes, none. After it
    fails, the bracket is [lo, hi]: hi the lowest failed confirmation, lo the highest passed one,
    or while none passed the highest of ``passing`` (the search's passing rates) below hi. While
    it is wider than ``rel_tolerance`` the next is its geometric mean; but while lo is unconfirmed,
    the last of ``max_confirmations``, or any once the bracket is narrow, confirms lo itself."""
    done = [(rate, result) for rate, result in runs if result is not None]
    if not done:
        return peak
    failed = [rate for rate, result in done if not result]
    if not failed or len(done) >= max_confirmations:
        return None
    hi = min(failed)
    passed = [rate for rate, result in done if result]
    lo = max(passed) if passed else max((r for r in passing if r < hi), default=None)
    if lo is None:
        return None
    wide = hi / lo - 1.0 > rel_tolerance
    if not passed and (not wide or len(done) + 1 == max_confirmations):
        return lo
    return math.sqrt(lo * hi) if wide else None


def confirm_peak(probe: Callable[[float], Optional[bool]], peak: Optional[float], passing: Sequence[float],
                 out_of_time: Callable[[], bool], rel_tolerance: float,
                 max_confirmations: int = MAX_PEAK_CONFIRMATIONS) -> tuple:
    """The confirmation after a search that ended by its own rule (``load::RunPeakSearch``;
    docs/load.md "Confirmation"): ``probe(rate)`` (a longer probe; None when the search's end cut
    it) at the rates ``next_confirmation_rate`` gives, until it gives none or ``out_of_time`` says
    so before one. Returns ([(rate, result), ...], cut), cut when the search's end stopped the
    confirmations before the rule did."""
    runs: List[tuple] = []
    while True:
        rate = next_confirmation_rate(peak, passing, runs, rel_tolerance, max_confirmations)
        if rate is None:
            return runs, False
        if out_of_time():
            return runs, True
        result = probe(rate)
        runs.append((rate, result))
        if result is None:
            return runs, True


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

    def probe(rate: float, min_ns: int) -> Optional[bool]:
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
        for_time = math.ceil(rate * min_ns / 1e9)  # docs/load.md "Probe length"
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
            "cut": cut, "confirmation": False, "passed": passed})
        return None if cut else passed

    end, peak, lowest_failing, _ = search_peak(lambda rate: probe(rate, s.peak_min_probe_ns), s.target_qps,
                                               s.peak_resolution, s.peak_max_probes, out_of_time)
    confirmation_cut = False
    if s.peak_confirm_ns > 0 and end != "stopped":
        confirm_ns = max(s.peak_min_probe_ns, s.peak_confirm_ns)

        def confirmation(rate: float) -> Optional[bool]:
            result = probe(rate, confirm_ns)
            reports[-1]["confirmation"] = True
            return result

        passing = [r["target_qps"] for r in reports if r["passed"]]
        _, confirmation_cut = confirm_peak(confirmation, peak, passing, out_of_time, s.peak_resolution)
    reason = ("stopped" if state["stopped"] else "max_time" if end == "stopped" or confirmation_cut
              else "peak_search")
    report = {"end": end, "peak_qps": _finite_or_none(peak), "lowest_failing_qps": _finite_or_none(lowest_failing),
              "latency_bound_ms": s.latency_bound_ns / 1e6, "latency_percentile": s.latency_percentile,
              "rel_tolerance": s.peak_resolution, "probe_warmup_s": PROBE_WARMUP_NS / 1e9,
              "probe_min_s": s.peak_min_probe_ns / 1e9, "confirm_s": s.peak_confirm_ns / 1e9, "probes": reports}
    return LoadResult(reason, state["issued"], {"peak_search": report})
