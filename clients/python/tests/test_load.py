"""Inference under load in the Python client (dlbench_client.load): the settings, the schedule and
the batching rule against src/load's, the server driver's invariants in process, and every
scenario under the real ``dlbench run`` with runners that need no framework
(fixture_load_runners.py). Outcomes that must be exact do not rest on timings: the schedule is
computed, not measured; the verdicts asserted have margins of an order of magnitude."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import metric, python_runner

from dlbench_client import RunnerLimits
from dlbench_client.load import (LoadSettings, LoadSettingsError, Mt19937_64, QueryPhases, QuerySchedule,
                                 current_stream, decide_batch, min_passing_queries, percentile_sorted,
                                 resolve_load_settings, run_load, search_peak, confirm_peak, next_confirmation_rate,
                                 splitmix64)
from dlbench_client.load_peak import MAX_PEAK_CONFIRMATIONS

FIXTURES = str(Path(__file__).resolve().parent / "fixture_load_runners.py")


def fixture_runner(kind: str) -> str:
    return "runner:\n  command: [%s, %s, %s]\n" % (json.dumps(sys.executable), json.dumps(FIXTURES), kind)


# -- the generators and the schedule against the C++ ones -------------------------------------------
def test_mt19937_64_is_the_standards_generator():
    g = Mt19937_64()  # [rand.predef]: the 10000th output of a default-constructed mt19937_64
    for _ in range(9999):
        g()
    assert g() == 9981545732273789042


def test_splitmix64_matches_common_hash_h():
    # src/common/hash.h: from state 0 the generator's outputs are SplitMix64(0), SplitMix64(gamma), ...
    gamma = 0x9E3779B97F4A7C15
    assert [splitmix64(k * gamma % 2**64) for k in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                                                   0x06C45D188009454F]


# What src/load/schedule.cc's QuerySchedule gives for schedule_seed 12345, sample_seed 678, a library
# of 64 and target_qps 1000 (server), samples_per_query 8 at a 2.5 ms interval (multi stream), 100
# (offline): queries 0, 1, 2 and 1999 as (offset_ns, first_sample), printed by a program linking
# src/load (the same values ScheduleTest.ServerGapsAreTheInverseCdfOfTheSeededStream computes).
CPP_SCHEDULE = {
    "server": [(0, 58), (1028257, 57), (1943442, 57), (2028172001, 49)],
    "multi_stream": [(0, 58), (2500000, 57), (5000000, 57), (4997500000, 49)],
    "single_stream": [(0, 58), (0, 57), (0, 57), (0, 49)],
    "offline": [(0, 0), (0, 36), (0, 8), (0, 28)],
}


@pytest.mark.parametrize("scenario", sorted(CPP_SCHEDULE))
def test_the_schedule_is_src_loads_for_the_same_seeds(scenario):
    settings = LoadSettings(scenario=scenario, target_qps=1000.0, schedule_seed=12345, sample_seed=678,
                            samples_per_query={"multi_stream": 8, "offline": 100}.get(scenario, 1),
                            query_interval_ns=2_500_000 if scenario == "multi_stream" else None)
    schedule = QuerySchedule(settings, 64)
    queries = [schedule.next() for _ in range(2000)]
    assert [(queries[i].offset_ns, queries[i].first_sample) for i in (0, 1, 2, 1999)] == CPP_SCHEDULE[scenario]
    assert [q.id for q in queries] == list(range(2000))


def test_settings_are_resolved_as_load_resolve_load_settings():
    # Seeds derived from the cell's seed as settings.cc does (values printed by ResolveLoadSettings).
    s = resolve_load_settings({"load": "server", "target_qps": 5.0, "scenario": "infer"}, 77)
    assert (s.schedule_seed, s.sample_seed) == (3988020281507134321, 16085857036676352405)
    assert (s.samples_per_query, s.max_batch, s.streams, s.batch_timeout_ns, s.latency_percentile) == (1, 1, 1, 0, 0.99)
    server = resolve_load_settings({"load": "server", "target_qps": 100, "batch_size": 8, "batch_timeout_us": 250,
                                    "streams": 2, "latency_bound_ms": 2.5}, 1)
    assert (server.max_batch, server.batch_timeout_ns, server.streams, server.latency_bound_ns) == (8, 250_000, 2,
                                                                                                     2_500_000)
    assert server.batch_sizes() == list(range(1, 9))
    multi = resolve_load_settings({"load": "multi_stream", "query_interval_ms": 2}, 1)
    assert (multi.samples_per_query, multi.query_interval_ns, multi.latency_percentile) == (8, 2_000_000, 0.99)
    offline = resolve_load_settings({"load": "offline", "batch_size": 100, "offline_samples": 1050}, 1)
    assert offline.batch_sizes() == [50, 100] and offline.to_json()["samples_per_query"] == 1050
    peak = resolve_load_settings({"load": "server", "target_qps": "max", "latency_bound_ms": 10}, 1)
    assert peak.peak_min_probe_ns == 5_000_000_000 and peak.to_json()["peak_min_probe_s"] == 5.0
    bare = resolve_load_settings({"load": "server", "target_qps": "max", "latency_bound_ms": 10,
                                  "peak_min_probe_s": 0}, 1)
    assert bare.peak_min_probe_ns == 0
    assert peak.peak_confirm_ns == 15_000_000_000 and peak.to_json()["peak_confirm_s"] == 15.0
    unconfirmed = resolve_load_settings({"load": "server", "target_qps": "max", "latency_bound_ms": 10,
                                         "peak_confirm_s": 0}, 1)
    assert unconfirmed.peak_confirm_ns == 0 and unconfirmed.to_json()["peak_confirm_s"] == 0.0
    single = resolve_load_settings({"load": "single_stream"}, 1)
    assert single.to_json()["latency_from"].startswith("issue (scheduled = issued")


@pytest.mark.parametrize("params, message", [
    ({"load": "burst"}, "parameter 'load' must be one of single_stream, multi_stream, server, offline, got \"burst\""),
    ({"load": "server"}, "load: server needs target_qps (a rate, or max to search for the peak)"),
    ({"load": "single_stream", "target_qps": 5}, "parameter 'target_qps' applies only with load: server (this cell "
                                                  "is single_stream)"),
    ({"load": "server", "target_qps": 0}, "parameter 'target_qps' must be a number > 0 and <= 1e9 or max, got 0"),
    ({"load": "server", "target_qps": 10, "latency_bound_ms": 0},
     "parameter 'latency_bound_ms' must be a number > 0.0 and <= 10000000.0, got 0"),
    ({"load": "server", "target_qps": "max"}, "target_qps: max needs latency_bound_ms"),
    ({"load": "server", "target_qps": 5, "peak_min_probe_s": 2}, "parameter 'peak_min_probe_s' applies only with "
                                                                "target_qps: max"),
    ({"load": "server", "target_qps": "max", "latency_bound_ms": 5, "peak_min_probe_s": 3601},
     "parameter 'peak_min_probe_s' must be a number >= 0.0 and <= 3600.0, got 3601"),
    ({"load": "server", "target_qps": 5, "peak_confirm_s": 15}, "parameter 'peak_confirm_s' applies only with "
                                                               "target_qps: max"),
    ({"load": "server", "target_qps": "max", "latency_bound_ms": 5, "peak_confirm_s": 3601},
     "parameter 'peak_confirm_s' must be a number >= 0.0 and <= 3600.0, got 3601"),
    ({"load": "server", "target_qps": 10, "streams": 65}, "parameter 'streams' must be an integer between 1 and 64, "
                                                          "got 65"),
    ({"load": "offline", "scenario": "train"}, "load needs scenario: infer (got \"train\")"),
    ({"load": "single_stream", "input_residency": "disk"}, "parameter 'input_residency' must be one of host, device"),
])
def test_bad_load_keys_are_refused_naming_the_key(params, message):
    with pytest.raises(LoadSettingsError) as e:
        resolve_load_settings(params, 1)
    assert str(e.value).startswith(message)


def test_decide_batch_on_hand_cases():
    # DecideBatchTest.TheRuleOnHandCases (src/load/batcher_test.cc): max_batch 8, timeout 1000 ns.
    assert not decide_batch(0, 0, 0, 0, 5, 8, 1000, False).dispatch  # nothing queued
    d = decide_batch(3, 3, 3, 100, 500, 8, 1000, False)  # the oldest queued at 100: wait until 1100
    assert not d.dispatch and d.wake_at_ns == 1100
    assert decide_batch(3, 3, 3, 100, 1100, 8, 1000, False)[:3] == (True, 3, 3)  # it has waited the timeout
    assert decide_batch(8, 8, 8, 400, 400, 8, 1000, False)[:3] == (True, 8, 8)  # full: at once
    assert decide_batch(12, 8, 8, 400, 400, 8, 1000, False)[:3] == (True, 8, 8)  # more queued than fit
    assert decide_batch(2, 1, 5, 400, 400, 8, 1000, False).dispatch  # the next query would not fit
    assert decide_batch(1, 1, 1, 400, 401, 8, 1000, True).dispatch  # flushing
    assert decide_batch(1, 1, 1, 400, 401, 8, 0, False).dispatch  # no timeout


def test_early_stopping_and_the_percentile_are_src_stats():
    # docs/load.md's table (early_stopping_test.cc checks it against the exact binomial CDF): h(t) + t
    # queries at c = 0.99 for t = 0, 1, 2, 5, 10 over the bound.
    assert [min_passing_queries(t, 0.90, 0.99) + t for t in (0, 1, 2, 5, 10)] == [44, 64, 81, 127, 197]
    assert [min_passing_queries(t, 0.99, 0.99) + t for t in (0, 1, 2, 5, 10)] == [459, 662, 838, 1307, 2010]
    assert min_passing_queries(0, 0.5, 0.99) == 7
    # LoadGen's index rule, sorted[floor(n p)]: not type 7's interpolation.
    assert percentile_sorted([1.0, 2.0, 3.0, 4.0], 0.5) == 3.0 and percentile_sorted([1.0, 2.0], 0.99) == 2.0


def test_the_peak_search_brackets_then_bisects_as_stats_search_peak():
    # PeakSearchTest (src/stats/peak_search_test.cc): a system within the bound up to 1000/s.
    end, peak, failing, probes = search_peak(lambda r: r <= 1000.0, 100.0, 0.01, 40, lambda: False)
    assert end == "converged" and [r for r, _ in probes[:5]] == [100.0, 200.0, 400.0, 800.0, 1600.0]
    assert probes[5][0] == (800.0 * 1600.0) ** 0.5
    assert peak <= 1000.0 < failing and failing / peak - 1.0 <= 0.01
    end, _, _, probes = search_peak(lambda r: r <= 1000.0, 5000.0, 0.01, 40, lambda: False)
    assert [r for r, _ in probes[:4]] == [5000.0, 2500.0, 1250.0, 625.0] and probes[3][1]
    assert search_peak(lambda r: r <= 1000.0, 100.0, 0.01, 6, lambda: False)[0] == "probe_cap"
    assert search_peak(lambda r: False, 100.0, 0.05, 40, lambda: False)[:3] == ("no_passing_rate", None, 1.0)
    assert search_peak(lambda r: True, 100.0, 0.05, 40, lambda: False)[:3] == ("rate_cap", 1e6, None)
    calls = []
    assert search_peak(lambda r: calls.append(r) or True, 100.0, 0.05, 40, lambda: len(calls) >= 2)[0] == "stopped"
    # PeakSearchTest.AProbeCutByTheSearchsEndIsKeptButNotInTheBracket: the cut 1131/s (None) is kept,
    # not passed, and the bracket stays 800 to 1600.
    cut = []

    def step_cut(rate: float) -> Optional[bool]:
        if 1100.0 < rate < 1200.0:
            cut.append(rate)
            return None
        return rate <= 1000.0

    end, peak, failing, probes = search_peak(step_cut, 100.0, 0.05, 40, lambda: bool(cut))
    assert (end, peak, failing) == ("stopped", 800.0, 1600.0)
    assert len(probes) == 6 and probes[5] == ((800.0 * 1600.0) ** 0.5, False)


def test_the_peak_is_confirmed_then_bisected_below_as_run_peak_search():
    # load::RunPeakSearch's confirmation (load::NextConfirmationRate, PeakConfirmRuleTest): the peak
    # first; after its failure confirmations bisect between the highest passing rate and the lowest
    # failed confirmation, at most five; the search's end before one stops them (cut).
    assert MAX_PEAK_CONFIRMATIONS == 5
    passing = [100.0, 200.0, 400.0, 800.0]  # the search's passing rates; its peak 835.4/s
    m1 = math.sqrt(400.0 * 800.0)
    m2 = math.sqrt(m1 * 800.0)
    m3 = math.sqrt(m2 * 800.0)
    assert confirm_peak(lambda r: True, 835.4, passing, lambda: False, 0.05) == ([(835.4, True)], False)
    # The M/D/1 server's case (VirtualLoadTest): 835.4 and 800/s fail ([800, 835.4] is narrow, so
    # 800/s itself), then [400, 800] is bisected: 565.7, 672.7 and 733.6/s pass.
    assert confirm_peak(lambda r: r <= 773.5, 835.4, passing, lambda: False, 0.05) == (
        [(835.4, False), (800.0, False), (m1, True), (m2, True), (m3, True)], False)
    # Wide at 1%: the geometric mean of [800, 835.4] (817.5/s) before 800/s; its failure lowers hi,
    # 808.7/s passes and raises lo, 813.1/s fails, and [808.7, 813.1] is within 1%: four in all.
    g1 = math.sqrt(800.0 * 835.4)
    g2 = math.sqrt(800.0 * g1)
    runs, cut = confirm_peak(lambda r: r <= 810.0, 835.4, passing, lambda: False, 0.01)
    assert runs == [(835.4, False), (g1, False), (g2, True), (math.sqrt(g2 * g1), False)] and not cut
    # Every confirmation fails: the last of the five, with none passed, is the unconfirmed lo itself.
    runs, cut = confirm_peak(lambda r: False, 835.4, passing, lambda: False, 0.05)
    assert runs == [(835.4, False), (800.0, False), (m1, False), (math.sqrt(400.0 * m1), False), (400.0, False)]
    assert not cut
    # No lower passing rate left after the peak's failure.
    assert confirm_peak(lambda r: False, 100.0, [100.0], lambda: False, 0.05) == ([(100.0, False)], False)
    # A confirmed lo within the resolution of hi: done, confirmations left.
    assert confirm_peak(lambda r: r <= 800.0, 835.4, passing, lambda: False, 0.05) == (
        [(835.4, False), (800.0, True)], False)
    # The search's end: before the first, after a failure, or a confirmation cut (None).
    assert confirm_peak(lambda r: True, 835.4, passing, lambda: True, 0.05) == ([], True)
    calls: List[float] = []
    assert confirm_peak(lambda r: calls.append(r) or False, 835.4, passing, lambda: bool(calls), 0.05) == (
        [(835.4, False)], True)
    assert confirm_peak(lambda r: None, 835.4, passing, lambda: False, 0.05) == ([(835.4, None)], True)
    assert confirm_peak(lambda r: True, None, [], lambda: False, 0.05) == ([], False)
    # The rule alone, as PeakConfirmRuleTest's table has it.
    assert next_confirmation_rate(835.4, passing, [], 0.05) == 835.4
    assert next_confirmation_rate(835.4, passing, [(835.4, False)], 0.05) == 800.0
    assert next_confirmation_rate(835.4, passing, [(835.4, False), (800.0, False), (m1, True)], 0.05) == m2


# -- the driver in process, against a session that keeps what it is sent ----------------------------
class KeepingSession:
    """What run_load needs of a RunnerSession: records kept in order, STOP after ``stop_after``."""

    def __init__(self, stop_after: Optional[int] = None) -> None:
        self.records: List[tuple] = []
        self.stop_after = stop_after
        self.stop_requested = False
        self.lock = threading.Lock()

    def record_query(self, *record: Any) -> None:
        with self.lock:
            self.records.append(record)
        self.poll_stop()  # as if every record were sent at once (a RunnerSession: every 50 ms)

    def flush_queries(self, now: Optional[int] = None) -> None:
        self.poll_stop()

    def poll_stop(self) -> bool:
        if self.stop_after is not None and len(self.records) >= self.stop_after:
            self.stop_requested = True
        return self.stop_requested


def test_the_server_serves_every_query_once_in_batches_within_max_batch_one_per_stream():
    settings = resolve_load_settings({"load": "server", "target_qps": 4000, "max_batch": 4, "streams": 2,
                                      "batch_timeout_us": 500, "sample_library_size": 16}, 5)
    in_flight = [0, 0]
    overlap: List[int] = []
    batches: List[int] = []

    def issue(samples: List[int]) -> QueryPhases:
        stream = current_stream()
        in_flight[stream] += 1
        if in_flight[stream] > 1:
            overlap.append(stream)
        assert all(0 <= i < 16 for i in samples)
        batches.append(len(samples))
        time.sleep(0.002)  # 2 ms a batch, two streams: at most 4000 samples/s at batches of 4
        in_flight[stream] -= 1
        return QueryPhases(compute_ns=2_000_000)

    session = KeepingSession()
    result = run_load(session, settings, issue, RunnerLimits(max_steps=600, max_time_s=30))
    assert result[:2] == ("max_steps", 600)
    ids = [r[0] for r in session.records]
    assert ids == list(range(600))  # every query once, in id order
    assert not overlap and max(batches) <= 4 and sum(batches) == 600
    for qid, scheduled, issued, completed, samples, batch, phases in session.records:
        assert scheduled <= issued <= completed and samples == 1 and 1 <= batch <= 4
        assert phases == QueryPhases(compute_ns=2_000_000)
    # The arrivals are the seeded schedule's, whatever the timing: scheduled = start + offset.
    schedule = QuerySchedule(settings, 16)
    offsets = [schedule.next().offset_ns for _ in range(600)]
    first = session.records[0][1]
    assert [r[1] - first for r in session.records] == offsets


def test_multi_stream_at_an_interval_is_due_at_its_ticks_and_counts_lateness():
    settings = resolve_load_settings({"load": "multi_stream", "samples_per_query": 3, "query_interval_ms": 2,
                                      "sample_library_size": 4}, 5)
    seen: List[List[int]] = []
    session = KeepingSession()
    result = run_load(session, settings, lambda s: seen.append(s), RunnerLimits(max_steps=20, max_time_s=30))
    assert result[:2] == ("max_steps", 20)
    first = session.records[0][1]
    # Due every 2 ms from the start, computed, whatever the machine: the tick is the scheduled time.
    assert [r[1] - first for r in session.records] == [2_000_000 * k for k in range(20)]
    assert all(scheduled <= issued <= done for _, scheduled, issued, done, *_ in session.records)
    # Three contiguous samples a query, wrapping at the library's end.
    assert all(len(s) == 3 and s[1] == (s[0] + 1) % 4 and s[2] == (s[0] + 2) % 4 for s in seen)


def test_what_issue_returns_is_checked_and_an_error_ends_the_server_run():
    settings = resolve_load_settings({"load": "server", "target_qps": 2000, "streams": 2}, 5)
    with pytest.raises(ValueError, match="has a negative decomposition duration"):
        run_load(KeepingRealSession(), settings, lambda s: QueryPhases(compute_ns=-5), RunnerLimits(100, 30))
    with pytest.raises(TypeError, match=r"issue\(\) must return None or a QueryPhases, got 3"):
        run_load(KeepingRealSession(), resolve_load_settings({"load": "single_stream"}, 5), lambda s: 3,
                 RunnerLimits(100, 30))

    def fails(samples: List[int]) -> None:
        raise RuntimeError("out of cheese")

    with pytest.raises(RuntimeError, match="out of cheese"):
        run_load(KeepingRealSession(), settings, fails, RunnerLimits(100, 30))


class KeepingRealSession:
    """A RunnerSession on pipes nobody reads beyond their buffer: its record checks are the real ones."""

    def __new__(cls):
        import os
        from dlbench_client import RunnerSession
        cmd_r, _ = os.pipe()
        _, out_w = os.pipe()
        return RunnerSession(cmd_r, out_w)


def test_closed_loop_scenarios_stop_at_stop_and_an_exception_propagates_after_the_records():
    settings = resolve_load_settings({"load": "offline", "offline_samples": 10, "batch_size": 4}, 5)
    parts: List[List[int]] = []
    session = KeepingSession(stop_after=3)
    result = run_load(session, settings, lambda s: parts.append(s), RunnerLimits(max_steps=100, max_time_s=30))
    assert result[:2] == ("stopped", 3)
    # Queries of 10 samples walking the library of 64 in order, each served in batches of at most 4.
    assert parts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9], [10, 11, 12, 13], [14, 15, 16, 17], [18, 19],
                     [20, 21, 22, 23], [24, 25, 26, 27], [28, 29]]
    assert [(r[0], r[4], r[5]) for r in session.records] == [(0, 10, 4), (1, 10, 4), (2, 10, 4)]

    def fails(samples: List[int]) -> None:
        if len(calls) == 5:
            raise ValueError("the model gave up")
        calls.append(samples)

    calls: List[List[int]] = []
    session = KeepingSession()
    with pytest.raises(ValueError, match="gave up"):
        run_load(session, resolve_load_settings({"load": "single_stream"}, 5), fails, RunnerLimits(100, 30))
    assert [r[0] for r in session.records] == [0, 1, 2, 3, 4]


# -- under dlbench run ------------------------------------------------------------------------------
MEASURE = "timeout_s: 120\nmeasure:\n  min_time_s: 0.2\n  max_time_s: 5\n"


def by_load(cells: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    return {c["params"]["load"]: c for c in cells}


def test_every_scenario_stores_its_query_records_and_metrics(dlbench):
    run = dlbench.run_matrix(fixture_runner("noop") + MEASURE +
                             "matrix:\n  scenario: infer\n  load: [single_stream, multi_stream, offline]\ninclude:\n"
                             "  - {load: multi_stream, samples_per_query: 4}\n"
                             "  - {load: offline, offline_samples: 1000, batch_size: 100}\n"
                             "  - {scenario: infer, load: server, target_qps: 1000, max_batch: 4}\n")
    cells = dlbench.cells()
    assert len(cells) == 4, run.stdout + run.stderr
    for index, cell in enumerate(cells):
        load = cell["params"]["load"]
        assert cell["outcome"] == "ok", (load, cell["message"])
        info = cell["extras"]["load"]
        assert info["scenario"] == load and info["queries_received"] >= info["measured_queries"] > 0
        assert info["queries_issued"] == info["queries_received"]  # DONE's count: every issued query arrived
        assert metric(cell, "load_queries") == info["measured_queries"] == cell["measured_steps"]
        for name in ("query_latency_p50_ns", "query_latency_p99_ns", "query_latency_mean_ns",
                     "load_completed_samples_per_s", "load_issued_per_s"):
            assert metric(cell, name) > 0, (load, name)
        # Every query's record is stored: its latency and issue delay at its scheduled time.
        latencies = dlbench.series(index, "load.latency_ns")
        assert len(latencies) == info["queries_received"]
        assert len(dlbench.series(index, "load.delay_ns")) == len(latencies)
        effective = cell["effective"]["load"]
        assert effective["scenario"] == load and effective["driver"].startswith("dlbench_client.load")
        assert effective["system_under_test"].startswith("fixture")  # the runner's additions kept
        assert cell["runner"]["runner"] == "fixture-load"
    c = by_load(cells)
    # Closed loops issue the next query at the previous one's completion: scheduled = issued.
    assert {v for _, v in dlbench.series(0, "load.delay_ns")} == {0.0}
    # The estimates of single (p90) and multi stream (p99) need 64 and 662 queries; a no-op system
    # serves thousands in the 0.2 s the cell runs at least.
    for load in ("single_stream", "multi_stream"):
        assert c[load]["verdict"] == "valid", c[load]["verdict_reasons"]
        assert metric(c[load], "query_latency_early_stopping_ns") > 0
    assert metric(c["multi_stream"], "load_completed_samples_per_s") > metric(c["multi_stream"], "load_issued_per_s")
    assert {v for _, v in dlbench.series(1, "load.batch")} == {4.0}
    assert {v for _, v in dlbench.series(2, "load.batch")} == {100.0}  # offline: batch_size
    assert c["offline"]["extras"]["info"]["largest_batch"] == 100
    assert c["offline"]["extras"]["load"]["headline"]["metric"] == "load_samples_per_s"
    server = dlbench.series(3, "load.batch")
    assert server and all(1 <= v <= 4 for _, v in server)
    assert c["server"]["extras"]["load"]["headline"]["metric"] == "load_completed_samples_per_s"
    assert c["server"]["effective"]["load"]["target_qps"] == 1000.0


def scheduled_offsets(dlbench, cell_index: int, run_id: int) -> List[int]:
    times = [t for t, _ in dlbench.series(cell_index, "load.delay_ns", run_id)]
    return [t - times[0] for t in times]


def test_the_server_issues_the_seeded_schedule_of_src_load(dlbench):
    matrix = ("measure:\n  min_time_s: 0.2\n  max_time_s: 5\n  max_steps: 300\nmatrix:\n  scenario: infer\n"
              "  load: server\n  target_qps: 2000\n")
    dlbench.run_matrix(fixture_runner("noop") + matrix, "a.yaml")
    dlbench.run_matrix(fixture_runner("noop") + matrix, "b.yaml")
    dlbench.run_matrix("runner: null\n" + matrix, "n.yaml")
    first, second = scheduled_offsets(dlbench, 0, 1), scheduled_offsets(dlbench, 0, 2)
    assert len(first) >= 100
    # The same matrix, so the same cell seed: the same arrivals (scheduled times are computed from
    # the seed, not measured, so they agree to the nanosecond however the runs were timed).
    n = min(len(first), len(second))
    assert first[:n] == second[:n]
    [python_cell] = dlbench.cells("1")
    load = python_cell["effective"]["load"]
    settings = LoadSettings(scenario="server", target_qps=2000.0, schedule_seed=load["schedule_seed"],
                            sample_seed=load["sample_seed"])
    schedule = QuerySchedule(settings, 64)
    assert first == [schedule.next().offset_ns for _ in first]
    # dlbench-null (src/load's schedule on its virtual clock) draws the arrivals its seeds give here.
    [null_cell] = dlbench.cells("3")
    null_load = null_cell["effective"]["load"]
    null_schedule = QuerySchedule(LoadSettings(scenario="server", target_qps=2000.0,
                                               schedule_seed=null_load["schedule_seed"],
                                               sample_seed=null_load["sample_seed"]), 64)
    null_offsets = scheduled_offsets(dlbench, 0, 3)
    assert len(null_offsets) >= 100 and null_offsets == [null_schedule.next().offset_ns for _ in null_offsets]


@pytest.mark.parametrize("fault, message", [
    ("drop", "the runner's query records are not each issued query once: 1 issued query never arrived (query id 30)"),
    ("duplicate", "the runner's query records are not each issued query once: 1 record repeated a query id already "
                  "received (query id 30)"),
])
def test_a_dropped_or_repeated_query_id_makes_the_cell_invalid_naming_it(dlbench, fault, message):
    dlbench.run_matrix(fixture_runner(fault) + MEASURE + "matrix:\n  scenario: infer\n  load: [single_stream, server]\n"
                       "include:\n  - {load: server, target_qps: 1000}\n")
    cells = dlbench.cells()
    assert len(cells) == 2
    for cell in cells:
        assert (cell["outcome"], cell["message"]) == ("invalid", message), cell["params"]["load"]


def test_a_server_over_its_latency_bound_is_over_bound(dlbench):
    # 10 ms a query at 50 queries/s (half of one stream's capacity) against a 1 ms bound: every query
    # is over it by 10x, however the machine is loaded. The median claim needs no long run; early
    # stopping never passes with every query over, so the cell runs to max_time_s (2 s, 100 queries:
    # an issue lateness of 20 ms would be needed to fall 1% behind).
    dlbench.run_matrix(fixture_runner("sleep") + "measure:\n  min_time_s: 0.2\n  max_time_s: 2\nmatrix:\n"
                       "  scenario: infer\n  load: server\n  target_qps: 50\n  latency_bound_ms: 1\n"
                       "  latency_percentile: 0.5\n  sleep_us: 10000\n")
    [cell] = dlbench.cells()
    assert cell["outcome"] == "ok", cell["message"]
    assert cell["verdict"] == "over_bound", cell["verdict_reasons"]
    reason = cell["verdict_reasons"][0]
    assert reason.startswith("over_bound: p50 ") and " ms > latency_bound_ms 1 (" in reason, reason
    assert metric(cell, "query_latency_at_percentile_ns") > 10e6
    assert metric(cell, "load_latency_bound_met") == 0
    # The fixture's own timing of each batch is the decomposition's compute part.
    assert metric(cell, "query_compute_mean_ns") >= 10e6


def test_a_runner_without_issue_is_unsupported(dlbench):
    dlbench.run_matrix(python_runner("dlbench_runners.spin") + MEASURE +
                       "matrix:\n  model: spin\n  scenario: infer\n  load: single_stream\n", "spin.yaml")
    [spin] = dlbench.cells()
    assert spin["outcome"] == "unsupported"
    assert spin["message"].startswith("runner python-spin does not serve load scenarios (load: single_stream)")


def test_a_peak_search_stores_one_cell_whose_probes_the_orchestrator_judges_as_the_runner_did(dlbench):
    # 2 ms a query on one stream (at most 500/s) under a 20 ms p90 bound, three probes. Which rates
    # pass depends on the machine; what cannot is that dlbench, judging every probe again from its
    # stored queries, agrees with the runner (else the cell is `invalid`), that the probes' query
    # ranges tile the records, and that the search took its steps by its rules.
    dlbench.run_matrix(fixture_runner("sleep") + "timeout_s: 120\nmeasure:\n  max_time_s: 30\nmatrix:\n"
                       "  scenario: infer\n  load: server\n  target_qps: max\n  latency_bound_ms: 20\n"
                       "  latency_percentile: 0.9\n  peak_max_probes: 3\n  peak_min_probe_s: 1\n  sleep_us: 2000\n"
                       "  peak_confirm_s: 2\n")
    [cell] = dlbench.cells()
    assert cell["outcome"] == "ok", cell["message"]
    search = cell["extras"]["load"]["peak_search"]
    probes = [p for p in search["probes"] if not p["confirmation"]]
    confirmations = search["probes"][len(probes):]
    assert len(probes) == 3 and search["end"] in ("probe_cap", "no_passing_rate")
    # The confirmations (3 x 1.5 s of probes and 5 x 2.5 s fit in 30 s): the search's peak first,
    # after the search's probes, at most load::kMaxPeakConfirmations (5) of them as a failed one
    # bisects below it (a loaded CI machine once ran 4); none without a passing rate.
    assert all(p["confirmation"] for p in confirmations) and len(confirmations) <= 5
    if search["search_peak_qps"] is None:
        assert confirmations == [] and search["confirmation"] == "none"
    else:
        assert confirmations[0]["target_qps"] == search["search_peak_qps"]
        assert search["confirmation"] in ("confirmed", "stepped_down", "not_confirmed"), search
    assert probes[0]["target_qps"] == 100.0
    # Bracketing: double after a pass, halve after a failure.
    assert probes[1]["target_qps"] == (200.0 if probes[0]["valid"] else 50.0)
    assert sum(p["queries"] + p["warmup_queries"] for p in search["probes"]) == \
        cell["extras"]["load"]["queries_received"]
    reported = cell["extras"]["info"]["load"]["peak_search"]["probes"]
    assert [p["passed"] for p in reported] == [p["valid"] for p in search["probes"]]
    # The Python driver serves every issued query, after STOP too: no probe dropped any.
    assert [p["dropped"] for p in reported] == [0] * len(reported)
    assert search["queries_dropped_after_stop"] == 0
    assert all(p["queries"] >= 44 for p in reported if p["passed"])  # h(0) at p90
    # peak_min_probe_s: 1 s at each rate (a probe the deadline did not cut: 3 x 1.5 s fit in 30 s).
    assert all(p["queries"] >= p["target_qps"] for p in reported if not p["too_many_outstanding"])
    # peak_confirm_s: 2 s at each confirmation's rate.
    assert all(p["queries"] >= 2 * p["target_qps"] for p in reported
               if p["confirmation"] and not p["too_many_outstanding"])
    assert cell["extras"]["info"]["load"]["peak_search"]["probe_min_s"] == 1.0
    assert cell["verdict"] in ("valid", "too_short", "over_bound", "fell_behind"), cell["verdict_reasons"]
