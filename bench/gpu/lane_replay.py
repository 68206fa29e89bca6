#!/usr/bin/env python3
"""Replays a caps table's search times through memory-caps.sh's lane scheduler.

bench/gpu/memory-caps.sh runs its capped searches in lanes (a cap and model, or a cap and cell)
that start while the device holds them beside the running ones, each after the same model's (or
cell's) lanes under the smaller caps. Which lane kind finishes first depends on the device's
size and on how long each search takes; this replays the times of a table that ran (its
probes_s + cell_s per search, from memory-caps.tsv or the table printed in its log) through the
same admission rule for a device of another size, without a GPU:

  bench/gpu/lane_replay.py TABLE --device-mib 143771 [--lane-start-s 4]

For each lane kind it prints the replayed wall time of the capped columns, the longest chain of
lanes that wait for each other (a bound no packing beats) and the memory-time bound (the sum over
lanes of memory held x time, over the memory the lanes may share). It assumes that a search takes
as long beside other lanes as it did in the table and that a lane's process start costs
--lane-start-s. The first does not hold across lane counts: processes take turns on a GPU, and the
same 48 searches took 1,156 s of search time on an H100 with four lanes at once (session 28) and
2,005 s on an H200 with up to seven (session 29), so a table replays well only for a device that
runs about as many lanes as the one it came from (docs/benchmarks.md, session 29). Searches missing from
the table (cut by a deadline) take --missing-s. The whole-device column runs alone after the caps
and is not replayed.
"""
import argparse
import sys

CAPPED = ("16GiB", "24GiB", "40GiB")


def read_table(path):
    """{(cap, model, scenario, precision): seconds} from a memory-caps table (tab or space separated)."""
    times = {}
    header = None
    with open(path) as f:
        for line in f:
            cols = line.split()
            if not cols:
                continue
            if cols[0] == "cap" and "probes_s" in cols:
                header = cols
                continue
            if header is None or len(cols) != len(header) or not cols[0].endswith(("GiB", "MiB")):
                continue
            row = dict(zip(header, cols))
            try:
                seconds = float(row["probes_s"]) + float(row["cell_s"])
            except ValueError:
                continue
            times[(row["cap"], row["model"], row["scenario"], row["precision"])] = seconds
    if header is None:
        sys.exit(f"lane_replay: {path}: no table header (a line starting 'cap ... probes_s')")
    return times


def cap_mib(cap):
    return int(cap[:-3]) * 1024 if cap.endswith("GiB") else int(cap[:-3])


def lanes_of(times, caps, models, cells, by, args):
    lanes = []
    for cap in caps:
        for model in models:
            groups = [[c] for c in cells] if by == "cell" else [cells]
            for group in groups:
                seconds = args.lane_start_s
                for scenario, precision in group:
                    seconds += times.get((cap, model, scenario, precision), args.missing_s)
                key = (model,) + (group[0] if by == "cell" else ())
                lanes.append({"key": key, "need": cap_mib(cap) + args.context_mib, "seconds": seconds})
    return lanes


def replay(lanes, share_mib):
    """The scheduler of memory-caps.sh: start in order every lane whose predecessors (same key,
    earlier in the list) ended and that fits beside the running ones; one runs even if it alone
    exceeds the share."""
    now, running, ended, waiting = 0.0, [], set(), list(range(len(lanes)))
    while waiting or running:
        used = sum(lanes[i]["need"] for i, _ in running)
        for i in list(waiting):
            if any(lanes[j]["key"] == lanes[i]["key"] and j not in ended for j in range(i)):
                continue
            if running and used + lanes[i]["need"] > share_mib:
                continue
            running.append((i, now + lanes[i]["seconds"]))
            used += lanes[i]["need"]
            waiting.remove(i)
        running.sort(key=lambda r: r[1])
        i, now = running.pop(0)
        ended.add(i)
    return now


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("table")
    p.add_argument("--device-mib", type=int, required=True, help="the device's memory (nvidia-smi's memory.total)")
    p.add_argument("--share-pct", type=int, default=90, help="LANE_SHARE_PCT (90)")
    p.add_argument("--context-mib", type=int, default=1536, help="LANE_CONTEXT_MIB (1536)")
    p.add_argument("--lane-start-s", type=float, default=4.0, help="a lane's process start and model build (4)")
    p.add_argument("--missing-s", type=float, default=80.0, help="a search missing from the table (80)")
    p.add_argument("--models", default="ssd_mobilenet mobilenet_v2 bert_base resnet50", help="MODELS, in start order")
    args = p.parse_args()
    if not 1 <= args.share_pct <= 100 or args.device_mib <= 0 or args.lane_start_s < 0 or args.missing_s < 0:
        sys.exit("lane_replay: --device-mib > 0, --share-pct in [1, 100], --lane-start-s and --missing-s >= 0")
    times = read_table(args.table)
    caps = [c for c in CAPPED if any(k[0] == c for k in times)]
    models = args.models.split()
    cells = [(s, q) for s in ("train", "infer") for q in ("bf16", "fp32")]
    missing = [(c, m) + x for c in caps for m in models for x in cells if (c, m) + x not in times]
    share = args.device_mib * args.share_pct / 100
    print(f"table {args.table}: {len(times)} searches, caps {' '.join(caps)}; "
          f"{len(missing)} missing (each {args.missing_s:g} s)")
    print(f"device {args.device_mib} MiB, lanes share {share:.0f} MiB, {args.context_mib} MiB context a lane, "
          f"{args.lane_start_s:g} s a lane's start")
    for by in ("model", "cell"):
        lanes = lanes_of(times, caps, models, cells, by, args)
        chain = {}
        for lane in lanes:
            chain[lane["key"]] = chain.get(lane["key"], 0.0) + lane["seconds"]
        bound = sum(lane["need"] * lane["seconds"] for lane in lanes) / share
        print(f"LANE_BY={by}: {len(lanes)} lanes, replayed {replay(lanes, share):.0f} s; "
              f"longest chain {max(chain.values()):.0f} s; memory-time bound {bound:.0f} s")


if __name__ == "__main__":
    main()
