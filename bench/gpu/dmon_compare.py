#!/usr/bin/env python3
"""Checks dlbench's GPU monitoring against `nvidia-smi dmon` run beside it over the same window.

Runs one long training cell (ResNet-50, batch 256, bf16, channels-last) through `dlbench run`
while `nvidia-smi dmon -s pucm -d 1 -o T` samples once a second, then prints, for the cell's
measured window only (warm-up excluded), the means dlbench stored next to dmon's means over the
same wall-clock seconds. Usage (GPU machine, after scripts/build-gpu.sh):
    python3 bench/gpu/dmon_compare.py --dlbench build-gpu/bin/dlbench --workdir /tmp/dmon
"""
import argparse
import datetime
import os
import sqlite3
import subprocess
import sys
import time

MATRIX = """name: dmon-check
runner: torch
matrix:
  model: resnet50
  scenario: train
  batch_size: 256
  device: cuda
  precision: bf16
timeout_s: 300
measure:
  min_steps: 50
  min_time_s: {seconds}
  max_time_s: {max_seconds}
  target_rel_ci: 0.005
  sample_interval_ms: 100
"""

# dlbench metric -> (dmon column, unit)
PAIRS = [("gpu_util_mean_pct", "sm", "%"), ("power_mean_w", "pwr", "W"), ("sm_clock_mean_mhz", "pclk", "MHz")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlbench", required=True)
    ap.add_argument("--workdir", default="/tmp/dlbench-dmon")
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    matrix = os.path.join(args.workdir, "dmon.yaml")
    db = os.path.join(args.workdir, "dmon.db")
    if os.path.exists(db):
        os.remove(db)
    with open(matrix, "w") as f:
        f.write(MATRIX.format(seconds=args.seconds, max_seconds=args.seconds + 10))
    # CLOCK_MONOTONIC -> wall clock, to find dmon's rows for the measured window.
    offset = time.time() - time.monotonic()
    dmon_log = os.path.join(args.workdir, "dmon.log")
    with open(dmon_log, "w") as out:
        dmon = subprocess.Popen(["nvidia-smi", "dmon", "-s", "pucm", "-d", "1", "-o", "T"], stdout=out)
        run = subprocess.run([args.dlbench, "--db", db, "run", matrix, "--out", args.workdir],
                             capture_output=True, text=True)
        dmon.terminate()
        dmon.wait()
    print(run.stdout)
    if run.returncode != 0:
        print(run.stderr, file=sys.stderr)
        return 1
    con = sqlite3.connect(db)
    cell_id, warmup = con.execute("SELECT id, warmup_steps FROM cells").fetchone()
    t0, t1 = con.execute("SELECT MIN(start_ns), MAX(end_ns) FROM steps WHERE cell_id=? AND rank=0 AND idx>=?",
                         (cell_id, warmup)).fetchone()
    ours = dict(con.execute("SELECT name, value FROM metrics WHERE cell_id=?", (cell_id,)).fetchall())
    w0 = t0 / 1e9 + offset
    w1 = t1 / 1e9 + offset
    print("measured window: %.1f s, %s .. %s (wall clock)" % ((t1 - t0) / 1e9,
          datetime.datetime.fromtimestamp(w0).strftime("%H:%M:%S.%f")[:-3],
          datetime.datetime.fromtimestamp(w1).strftime("%H:%M:%S.%f")[:-3]))
    header, rows = None, []
    with open(dmon_log) as f:
        for line in f:
            parts = line.lstrip("#").split()
            if line.startswith("#"):
                # "#Time gpu pwr ..." names the columns; "#HH:MM:SS Idx W ..." gives their units.
                if header is None and parts and parts[0] == "Time":
                    header = parts
                continue
            if header and len(parts) == len(header):
                rows.append(dict(zip(header, parts)))
    day = datetime.datetime.fromtimestamp(w0).date()
    inside = []
    for r in rows:
        t = datetime.datetime.combine(day, datetime.datetime.strptime(r["Time"], "%H:%M:%S").time()).timestamp()
        # A dmon row is stamped with whole seconds and reads NVML's averages over the last sample
        # period: keep rows at least a second inside either edge of the window (seen on the
        # H200: the row stamped in the window's last, partial second already read the idle GPU).
        if w0 + 1 <= t <= w1 - 1:
            inside.append(r)
    print("dmon rows in the window: %d of %d" % (len(inside), len(rows)))
    print("%-22s %12s %12s %8s" % ("metric", "dlbench", "dmon", "diff"))
    worst = 0.0
    for ours_name, col, unit in PAIRS:
        vals = [float(r[col]) for r in inside if r.get(col, "-") not in ("-", "N/A")]
        if ours_name not in ours or not vals:
            print("%-22s %12s %12s" % (ours_name, ours.get(ours_name, "-"), "-"))
            continue
        theirs = sum(vals) / len(vals)
        diff = (ours[ours_name] - theirs) / theirs if theirs else float("nan")
        worst = max(worst, abs(diff))
        print("%-22s %10.1f %s %10.1f %s %+7.2f%%" % (ours_name, ours[ours_name], unit, theirs, unit, 100 * diff))
    for extra in ("energy_per_sample_j", "samples_per_s", "temp_max_c", "power_max_w"):
        if extra in ours:
            print("%-22s %12.4g" % (extra, ours[extra]))
    print("largest difference on means: %.2f%% (target: within 5%%)" % (100 * worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
