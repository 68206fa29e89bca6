#!/usr/bin/env python3
"""Where the cells of stored runs spent their wall time, by model and scenario.

Reads dlbench SQLite stores (standard library only) and prints, per (model, scenario), the
median of each cell's timeline metrics (docs/measurement.md, "Where a cell's wall time goes")
and the longest first step, which on a GPU is where cuDNN autotuning happens.

Usage: bench/gpu/cell_timeline.py DB [DB...]   (every run in each store)
"""
import collections
import sqlite3
import statistics
import sys

METRICS = ["time_to_hello_s", "setup_s", "warmup_s", "measured_window_s", "cell_wall_s"]


def cells(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for cell_id, params in db.execute("SELECT id, params FROM cells WHERE outcome = 'ok'"):
        values = dict(db.execute(
            f"SELECT name, value FROM metrics WHERE cell_id = ? AND name IN ({','.join('?' * len(METRICS))})",
            (cell_id, *METRICS)).fetchall())
        first = db.execute("SELECT end_ns - start_ns FROM steps WHERE cell_id = ? AND rank = 0 "
                           "ORDER BY start_ns LIMIT 1", (cell_id,)).fetchone()
        values["first_step_s"] = first[0] / 1e9 if first else None
        yield params, values


def main(paths):
    import json
    groups = collections.defaultdict(list)
    for path in paths:
        for params, values in cells(path):
            p = json.loads(params)
            groups[(p.get("model", "?"), p.get("scenario", "?"))].append(values)
    cols = METRICS + ["first_step_s"]
    print(f"{'model':14} {'scenario':8} {'cells':>5} " + " ".join(f"{c[:-2]:>17}" for c in cols))
    print(f"{'':14} {'':8} {'':>5} " + " ".join(f"{'median (max)':>17}" for _ in cols))
    total = 0.0
    for key in sorted(groups):
        rows = groups[key]
        line = f"{key[0]:14} {key[1]:8} {len(rows):5} "
        for c in cols:
            v = [r[c] for r in rows if r.get(c) is not None]
            line += f"{statistics.median(v):8.2f} ({max(v):6.2f}) " if v else f"{'-':>17} "
        total += sum(r.get("cell_wall_s") or 0 for r in rows)
        print(line.rstrip())
    print(f"sum of cell_wall_s over these cells: {total:.0f} s (seconds)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
