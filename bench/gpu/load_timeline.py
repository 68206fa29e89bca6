#!/usr/bin/env python3
"""A load cell's queries second by second, from the per-query series dlbench stores.

For each stored load cell (or the cells of one run), prints one line per BUCKET_S seconds of
scheduled time: queries scheduled, median latency and issue delay, the mean serving batch, the
median host pre-processing (the gather) per batch and per sample, and the median compute. It shows
when a server cell's queue builds and what each batch cost while it did (docs/load.md).

Usage: bench/gpu/load_timeline.py DB [RUN_ID] [--bucket-s S]   (standard library only)
"""
import argparse
import collections
import sqlite3
import statistics
import sys

SERIES = ["load.latency_ns", "load.delay_ns", "load.batch", "load.pre_ns", "load.compute_ns"]


def median(values):
    return statistics.median(values) if values else float("nan")


def cell_rows(db, cell_id):
    """{t_ns: {series: value}} of one cell's query series."""
    rows = collections.defaultdict(dict)
    query = (f"SELECT t_ns, series, value FROM series WHERE cell_id = ? AND series IN "
             f"({','.join('?' * len(SERIES))})")
    for t_ns, name, value in db.execute(query, (cell_id, *SERIES)):
        rows[t_ns][name] = value
    return rows


def print_cell(db, cell_id, label, bucket_s):
    rows = cell_rows(db, cell_id)
    if not rows:
        return
    t0 = min(rows)
    buckets = collections.defaultdict(list)
    for t_ns, values in rows.items():
        buckets[int((t_ns - t0) / 1e9 / bucket_s)].append(values)
    print(f"== cell {cell_id}: {label} ({len(rows)} queries)")
    print(f"{'t_s':>6} {'queries':>8} {'lat p50 ms':>11} {'delay p50 ms':>13} {'batch':>6} "
          f"{'pre/batch us':>13} {'pre/sample us':>14} {'compute us':>11}")
    for b in sorted(buckets):
        q = buckets[b]
        lat = [v["load.latency_ns"] / 1e6 for v in q if "load.latency_ns" in v]
        delay = [v["load.delay_ns"] / 1e6 for v in q if "load.delay_ns" in v]
        batch = [v["load.batch"] for v in q if "load.batch" in v]
        pre = [v["load.pre_ns"] / 1e3 for v in q if "load.pre_ns" in v]
        per_sample = [v["load.pre_ns"] / 1e3 / v["load.batch"] for v in q
                      if "load.pre_ns" in v and v.get("load.batch")]
        compute = [v["load.compute_ns"] / 1e3 for v in q if "load.compute_ns" in v]
        mean_batch = sum(batch) / len(batch) if batch else float("nan")
        print(f"{b * bucket_s:>6.1f} {len(q):>8} {median(lat):>11.3f} {median(delay):>13.3f} "
              f"{mean_batch:>6.2f} {median(pre):>13.1f} {median(per_sample):>14.1f} "
              f"{median(compute):>11.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("run_id", nargs="?", type=int)
    parser.add_argument("--bucket-s", type=float, default=1.0)
    args = parser.parse_args()
    if not 0.01 <= args.bucket_s <= 3600:
        sys.exit("--bucket-s must be within [0.01, 3600]")
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    query = "SELECT id, params FROM cells"
    params = ()
    if args.run_id is not None:
        query += " WHERE run_id = ?"
        params = (args.run_id,)
    for cell_id, cell_params in db.execute(query + " ORDER BY id", params):
        print_cell(db, cell_id, cell_params[:160], args.bucket_s)


if __name__ == "__main__":
    main()
