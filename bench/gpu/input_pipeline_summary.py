#!/usr/bin/env python3
"""Summarises an input-pipeline run (bench/gpu/input_pipeline.sh) from its dlbench database.

For each cell: outcome, samples/s, its speed against the data: device control of the same run,
the step split over the measured window (waiting for data, copying = the rest of the step, as the
torch runner declares in step_phases, computing), and the runner's pipeline metrics (workers' CPU
use, one busy worker's samples/s, decode's share). Prints a Markdown table.

Usage: input_pipeline_summary.py DB [RUN_ID]   (default: the last run)
"""
import json
import sqlite3
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    run = int(sys.argv[2]) if len(sys.argv) > 2 else db.execute("SELECT max(id) FROM runs").fetchone()[0]
    cells = db.execute(
        "SELECT id, label, params, effective, outcome, message, warmup_steps, measured_steps FROM cells "
        "WHERE run_id = ? ORDER BY idx", (run,)).fetchall()

    def metric(cell_id, name):
        row = db.execute("SELECT value FROM metrics WHERE cell_id = ? AND name = ?", (cell_id, name)).fetchone()
        return row[0] if row else None

    control = None
    rows = []
    for cid, label, params, effective, outcome, message, warmup, measured in cells:
        params = json.loads(params)
        sps = metric(cid, "samples_per_s")
        if params.get("data", "device") == "device" and outcome == "ok":
            control = sps
        split = None
        if warmup is not None and measured:
            steps = db.execute(
                "SELECT start_ns, end_ns, data_wait_ns, compute_ns FROM steps WHERE cell_id = ? AND rank = 0 "
                "ORDER BY start_ns LIMIT ? OFFSET ?", (cid, measured, warmup)).fetchall()
            total = sum(e - s for s, e, _, _ in steps)
            wait = sum(w or 0 for _, _, w, _ in steps)
            compute = sum(c or 0 for _, _, _, c in steps if c is not None)
            has_compute = all(c is not None for _, _, _, c in steps)
            if total > 0:
                copy = max(0, total - wait - compute) if has_compute else total - wait
                split = (wait / total, copy / total, compute / total if has_compute else None)
        rows.append((label, params, outcome, message, sps, split, cid))

    print("| cell | outcome | samples/s | vs device | wait | copy | compute | workers' CPU | per-worker samples/s "
          "| decode share |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, params, outcome, message, sps, split, cid in rows:
        def pct(x):
            return "" if x is None else "%.0f%%" % (100 * x)
        vs = "%.2fx" % (sps / control) if sps and control else ""
        cpu = metric(cid, "data_worker_cpu_util_pct")
        per = metric(cid, "data_samples_per_worker_s")
        dec = metric(cid, "data_decode_pct")
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, outcome if outcome == "ok" else "%s: %s" % (outcome, message[:80]),
            "%.0f" % sps if sps else "", vs,
            pct(split[0]) if split else "", pct(split[1]) if split else "", pct(split[2]) if split else "",
            "%.0f%%" % cpu if cpu is not None else "", "%.0f" % per if per is not None else "",
            "%.0f%%" % dec if dec is not None else ""))


if __name__ == "__main__":
    main()
