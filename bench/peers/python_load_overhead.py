#!/usr/bin/env python3
"""What the Python client's load driver (dlbench_client.load) costs a query: every scenario run
against a no-op ``issue`` (a system under test that takes no time), so each query's latency is the
driver's own added latency, and the queries per second are the most it can issue and complete.

The driver runs in this process on a real RunnerSession over a pipe pair, as under ``dlbench run``:
a thread reads its QUERIES frames back (only reading: decoding them,
dlbench_client.wire.decode_queries, waits for the run's end, so that it takes no interpreter time
from the driver), so the records measured are the bytes the orchestrator would receive. No STOP arrives; each scenario
ends at its query count (closed loops) or after its duration (server).

Printed per scenario: queries issued, queries/s (queries over the wall time of the run), the added
latency (completed - scheduled) mean, p50, p99 (LoadGen's index rule, sorted[floor(n p)]); for the
server also the issue delay (issued - scheduled: how late the issue thread was for the Poisson
arrival) and the issue rate against the scheduled one.

Usage: bench/peers/python_load_overhead.py [--queries 100000] [--server-s 2] [--rates 1000,10000]
       [--cpu N] (pins this process to CPU N with os.sched_setaffinity; default: unpinned)
"""
import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "clients", "python"))

from dlbench_client import RunnerLimits, RunnerSession  # noqa: E402
from dlbench_client.load import resolve_load_settings, run_load  # noqa: E402
from dlbench_client.wire import FrameReader, MessageType, decode_queries  # noqa: E402


def percentile(sorted_values, p):
    return sorted_values[min(int(len(sorted_values) * p), len(sorted_values) - 1)]


def run(params, limits):
    """One scenario over pipes; returns (result, records, wall_s)."""
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()
    chunks = []

    def drain():  # only reads (os.read releases the GIL); decoding waits for the run's end
        while True:
            data = os.read(out_r, 1 << 20)
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    session = RunnerSession(cmd_r, out_w)
    settings = resolve_load_settings(dict(params, scenario="infer"), seed=1)
    t0 = time.monotonic()
    result = run_load(session, settings, lambda samples: None, limits)
    wall = time.monotonic() - t0
    os.close(out_w)
    reader.join()
    for fd in (cmd_r, cmd_w, out_r):
        os.close(fd)
    frames = FrameReader()
    frames.feed(b"".join(chunks))
    records = [r for frame in frames if frame.type == MessageType.QUERIES for r in decode_queries(frame)[1]]
    return result, records, wall


def report(name, result, records, wall):
    latency = sorted(r.completed_ns - r.scheduled_ns for r in records)
    line = "%-28s %9d %12.0f/s   %8.2f %8.2f %9.2f us" % (
        name, result.queries, result.queries / wall, sum(latency) / len(latency) / 1e3,
        percentile(latency, 0.5) / 1e3, percentile(latency, 0.99) / 1e3)
    assert [r.query_id for r in records] == list(range(result.queries)), "records lost or out of order"
    if records and records[0].scheduled_ns != records[0].issued_ns or name.startswith("server"):
        delay = sorted(r.issued_ns - r.scheduled_ns for r in records)
        span_s = (records[-1].scheduled_ns - records[0].scheduled_ns) / 1e9
        issue_span_s = (max(r.issued_ns for r in records) - min(r.issued_ns for r in records)) / 1e9
        line += "   delay mean %.2f p50 %.2f p99 %.2f us, issued %.4f of the scheduled rate" % (
            sum(delay) / len(delay) / 1e3, percentile(delay, 0.5) / 1e3, percentile(delay, 0.99) / 1e3,
            span_s / issue_span_s if issue_span_s > 0 else float("nan"))
    print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100_000, help="queries of each closed-loop scenario")
    ap.add_argument("--server-s", type=float, default=2.0, help="seconds of each server run")
    ap.add_argument("--rates", default="1000,10000", help="server rates (queries/s), comma-separated")
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    print("python %s, %d CPUs usable, load average %.1f" % (sys.version.split()[0], len(os.sched_getaffinity(0)),
                                                           os.getloadavg()[0]))
    print("%-28s %9s %14s   %8s %8s %9s" % ("scenario (no-op issue)", "queries", "queries/s", "mean", "p50",
                                            "p99 added latency"))
    closed = RunnerLimits(max_steps=args.queries, max_time_s=600)
    for name, params in (("single_stream", {"load": "single_stream"}),
                         ("multi_stream (8 samples)", {"load": "multi_stream"}),
                         ("offline (1024 samples/query)", {"load": "offline", "offline_samples": 1024,
                                                           "batch_size": 1024})):
        report(name, *run(params, closed))
    for rate in (float(r) for r in args.rates.split(",")):
        limits = RunnerLimits(max_steps=10**9, max_time_s=args.server_s)
        report("server %g/s" % rate, *run({"load": "server", "target_qps": rate}, limits))


if __name__ == "__main__":
    main()
