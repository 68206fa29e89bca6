#!/usr/bin/env python3
"""Drives dlbench-torch's load scenarios (docs/load.md) directly over the runner protocol and
summarises the QUERIES records, until `dlbench run` consumes them itself (issue 11, phase 2).

For each cell: HELLO -> CONFIGURE (the cell's params, a query ceiling) -> READY -> QUERIES ... ->
STOP after --queries records -> DONE. The first --warmup queries are dropped (a fixed cut, not the
orchestrator's MSER rule); the rest give LoadGen's figures: latency = completed - scheduled,
percentiles sorted[floor(n p)], rates (n - 1) / (last - first), the mean and p99 of each
decomposition part, and for the server the achieved against the scheduled issue rate. One JSON
line per cell on stdout (and --json FILE), a table on stderr.

Usage: bench/gpu/load_driver.py --runner build-gpu/bin/dlbench-torch [--cells CELLS.json]
       [--queries 2000] [--warmup 200] [--json out.json]
CELLS.json is a list of {"name": ..., "params": {...}}; without it the standard set below runs.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

HELLO, CONFIGURE, READY, STEPS, MEMORY, EXTRAS, ERROR, DONE, STOP, QUERIES = range(1, 11)
FRAME = struct.Struct("<IHH")
QUERIES_HEADER = struct.Struct("<IIII")  # rank, count, version, record_bytes
QUERY = struct.Struct("<Qqqqqqqqq IIII".replace(" ", ""))  # docs/protocol.md, query record v1
PARTS = [("host_pre", 1, 4), ("h2d", 2, 5), ("compute", 4, 6), ("d2h", 8, 7), ("host_post", 16, 8)]

BASE = {"scenario": "infer", "device": "cuda", "precision": "bf16"}
STANDARD = [
    {"name": "resnet50 single_stream host", "params": {"model": "resnet50", "load": "single_stream"}},
    {"name": "resnet50 single_stream device", "params": {"model": "resnet50", "load": "single_stream",
                                                         "input_residency": "device"}},
    {"name": "mobilenet_v2 single_stream", "params": {"model": "mobilenet_v2", "load": "single_stream"}},
    {"name": "bert_base single_stream", "params": {"model": "bert_base", "load": "single_stream"}},
    {"name": "ssd_mobilenet single_stream", "params": {"model": "ssd_mobilenet", "load": "single_stream"}},
    {"name": "resnet50 multi_stream 8", "params": {"model": "resnet50", "load": "multi_stream"}},
    {"name": "resnet50 server 1000/s", "params": {"model": "resnet50", "load": "server", "target_qps": 1000,
                                                  "latency_bound_ms": 10, "max_batch": 8,
                                                  "batch_timeout_us": 500, "streams": 2}},
    {"name": "resnet50 server 4000/s", "params": {"model": "resnet50", "load": "server", "target_qps": 4000,
                                                  "latency_bound_ms": 10, "max_batch": 32,
                                                  "batch_timeout_us": 1000, "streams": 2}},
    {"name": "resnet50 offline bs256", "params": {"model": "resnet50", "load": "offline", "batch_size": 256,
                                                  "offline_samples": 8192}, "queries": 20, "warmup": 2},
    {"name": "resnet50 infer bs256 (back to back)", "params": {"model": "resnet50", "batch_size": 256},
     "steps": 100, "warmup": 20},
]


def read_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def send(fd, mtype, body):
    payload = json.dumps(body).encode()
    os.write(fd, FRAME.pack(len(payload), mtype, 0) + payload)


def percentile(sorted_values, p):
    return sorted_values[min(int(len(sorted_values) * p), len(sorted_values) - 1)] if sorted_values else None


def rate(n, first, last):
    return (n - 1) / ((last - first) * 1e-9) if n >= 2 and last > first else None


def run_cell(runner, params, stop_after, steps_ceiling, timeout_s):
    cmd_r, cmd_w = os.pipe()
    msg_r, msg_w = os.pipe()
    env = dict(os.environ, DLBENCH_PROTOCOL_FD_IN=str(cmd_r), DLBENCH_PROTOCOL_FD_OUT=str(msg_w))
    proc = subprocess.Popen([runner], env=env, pass_fds=(cmd_r, msg_w))
    os.close(cmd_r)
    os.close(msg_w)
    queries, steps, effective, error, done, stop_sent = [], [], None, None, None, False
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            header = read_exact(msg_r, FRAME.size)
            if header is None:
                break
            length, mtype, _ = FRAME.unpack(header)
            payload = read_exact(msg_r, length) if length else b""
            if mtype == QUERIES:
                _, count, version, record_bytes = QUERIES_HEADER.unpack_from(payload)
                assert version == 1 and record_bytes >= QUERY.size, (version, record_bytes)
                for i in range(count):
                    queries.append(QUERY.unpack_from(payload, QUERIES_HEADER.size + i * record_bytes))
                if not stop_sent and len(queries) >= stop_after:
                    send(cmd_w, STOP, {"reason": "enough queries"})
                    stop_sent = True
            elif mtype == STEPS:
                _, count = struct.unpack_from("<II", payload)
                for i in range(count):
                    start, end = struct.unpack_from("<qq", payload, 8 + i * 48)
                    steps.append((end - start) * 1e-9)
            elif mtype == HELLO:
                send(cmd_w, CONFIGURE, {"params": params, "seed": 1, "rank": 0, "world_size": 1,
                                        "cell_key": "load_driver",
                                        "limits": {"max_steps": steps_ceiling, "max_time_s": timeout_s}})
            elif mtype == READY:
                effective = json.loads(payload)["effective"]
            elif mtype == ERROR:
                error = json.loads(payload)
            elif mtype == DONE:
                done = json.loads(payload)
    finally:
        os.close(cmd_w)
        os.close(msg_r)
        proc.wait()
    return queries, steps, effective, error, done


def summarise(name, params, queries, steps, effective, error, done, warmup):
    out = {"name": name, "params": params, "error": error, "done": done,
           "effective_load": (effective or {}).get("load")}
    if steps:
        timed = steps[warmup:]
        out["back_to_back"] = {"steps": len(timed), "samples_per_s": params.get("batch_size", 1) * len(timed) / sum(timed),
                               "step_ms_median": 1e3 * sorted(timed)[len(timed) // 2]}
        return out
    ids = [q[0] for q in queries]
    out["ids_once_in_order"] = ids == list(range(len(ids)))
    q = queries[warmup:]
    if not q:
        return out
    lat = sorted((r[3] - r[1]) * 1e-6 for r in q)  # ms
    n = len(q)
    samples = sum(r[9] for r in q)
    out["queries"] = n
    out["latency_ms"] = {"min": lat[0], "mean": sum(lat) / n, "p50": percentile(lat, 0.5), "p90": percentile(lat, 0.9),
                         "p99": percentile(lat, 0.99), "p999": percentile(lat, 0.999), "max": lat[-1]}
    parts = {}
    for part, bit, field in PARTS:
        values = sorted(r[field] * 1e-6 for r in q if r[11] & bit)
        if values:
            parts[part] = {"mean_ms": sum(values) / len(values), "p99_ms": percentile(values, 0.99)}
    out["decomposition"] = parts
    out["issued_per_s"] = rate(n, q[0][2], q[-1][2])
    out["scheduled_per_s"] = rate(n, q[0][1], q[-1][1])
    out["samples_per_s"] = samples / ((max(r[3] for r in q) - q[0][1]) * 1e-9)
    if params.get("load") == "server":
        bound = params.get("latency_bound_ms")
        out["p99_within_bound"] = bound is not None and out["latency_ms"]["p99"] <= bound
        out["issue_kept_up"] = (out["issued_per_s"] or 0) >= 0.99 * (out["scheduled_per_s"] or float("inf"))
        out["batch_samples_mean"] = sum(r[10] for r in q) / n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runner", default="build-gpu/bin/dlbench-torch")
    ap.add_argument("--cells", help="JSON list of {name, params[, queries, warmup, steps]}")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    cells = json.load(open(args.cells)) if args.cells else STANDARD
    results = []
    for cell in cells:
        params = dict(BASE)
        params.update(cell["params"])
        back_to_back = "load" not in params
        stop_after = cell.get("steps", 0) if back_to_back else cell.get("queries", args.queries)
        warmup = cell.get("warmup", args.warmup)
        ceiling = stop_after if back_to_back else 10 * stop_after + 10_000
        t0 = time.monotonic()
        queries, steps, effective, error, done = run_cell(args.runner, params, stop_after, ceiling, args.timeout)
        result = summarise(cell["name"], params, queries, steps, effective, error, done, warmup)
        result["wall_s"] = time.monotonic() - t0
        results.append(result)
        print(json.dumps(result), flush=True)
        lat = result.get("latency_ms", {})
        line = f"{cell['name']:40s} "
        if error:
            line += f"ERROR {error.get('kind')}: {error.get('message')}"
        elif "back_to_back" in result:
            line += f"samples/s {result['back_to_back']['samples_per_s']:.1f}"
        elif lat:
            line += (f"p50 {lat['p50']:.3f} p90 {lat['p90']:.3f} p99 {lat['p99']:.3f} ms  "
                     f"samples/s {result['samples_per_s']:.1f}  " +
                     " ".join(f"{k} {v['mean_ms']:.3f}" for k, v in result["decomposition"].items()))
        print(line, file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
