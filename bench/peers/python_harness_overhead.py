#!/usr/bin/env python3
"""What the harness adds to a Python runner's step time: the same fixed-work step timed by its own
loop and through `dlbench run` (dlbench_runners.spin: `iterations` rounds of a floating-point
recurrence per step, pure Python, no allocation), alternating the two so that drift of the machine
does not favour one. Target: dlbench's mean step time within 2% of the loop's own (ratio <= 1.02).

Both sides run in a fresh interpreter with the same step function; the self-timed loop reads
CLOCK_MONOTONIC around each step exactly as dlbench_client's loop does, and keeps the times in a
pre-sized list. dlbench's figure is the cell's step_time_mean_ns (after its warm-up cut, with the
monitor sampling unless --no-monitor); the self-timed figure is the mean after dropping the same
share of first steps. The client's own cost per step outside the stamps (recording, flushes, STOP
checks: client_overhead_ns_per_step) is printed too, as a share of the step.

The runner and the self-timed loop run pinned to the same CPU (--cpu, default the last one this
process may use), because unpinned fresh processes land on faster or slower cores: on the H200
machine two levels 1.8x apart. dlbench itself (the orchestrator and its monitor) is pinned to
another CPU (--harness-cpu, default the first other one allowed), as it is on any machine with a
core to spare: what is compared is the runner's step with the client in it against the same step
without. Sharing the runner's CPU with the orchestrator (--harness-cpu equal to --cpu, or a
one-CPU machine) also counts the orchestrator's wake-ups against the step; on the H200 machine that
cost one round in three a 1.68x mean (2026-12-05). When the self-timed side's own rounds spread
more than 2% (max/min - 1), the ratio is printed but not judged: the machine's noise is then larger
than the target.

Usage: bench/peers/python_harness_overhead.py [--bin build/bin] [--iterations 100000] [--steps 2000]
       [--rounds 3] [--no-monitor] [--cpu N] [--harness-cpu M] [--python /usr/bin/python3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLIENT = os.path.join(ROOT, "clients", "python")

SELF_TIMED = r"""
import json, sys, time
from dlbench_runners.spin import spin
iterations, steps, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
clock, mono = time.clock_gettime_ns, time.CLOCK_MONOTONIC
times = [0] * steps
x = 0.5
begin = clock(mono)
for i in range(steps):
    t0 = clock(mono)
    x = spin(iterations, x)
    t1 = clock(mono)
    times[i] = t1 - t0
wall = clock(mono) - begin
kept = sorted(times[warmup:])
n = len(kept)
median = kept[n // 2] if n % 2 else (kept[n // 2 - 1] + kept[n // 2]) / 2
print(json.dumps({"mean_ns": sum(kept) / n, "median_ns": median, "wall_ns_per_step": wall / steps, "x": x}))
"""


def pinned(cpu, argv):
    return ["taskset", "-c", str(cpu)] + argv if cpu is not None else argv


def self_timed(python, iterations, steps, warmup, env, cpu):
    out = subprocess.run(pinned(cpu, [python, "-c", SELF_TIMED, str(iterations), str(steps), str(warmup)]), env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def through_dlbench(bin_dir, python, iterations, steps, no_monitor, work, env, index, cpu, harness_cpu):
    matrix = os.path.join(work, "overhead-%d.yaml" % index)
    # The runner is pinned through its command (taskset execs the interpreter), dlbench apart.
    runner = pinned(cpu, [python, "-m", "dlbench_runners.spin"])
    with open(matrix, "w") as f:
        f.write("name: python-harness-overhead\nrunner:\n  command: %s\n"
                "matrix:\n  model: spin\n  iterations: %d\n"
                # A target no interval meets: every cell runs to max_steps.
                "measure:\n  min_steps: 10\n  max_steps: %d\n  min_time_s: 0\n  max_time_s: 600\n"
                "  target_rel_ci: 0.0001\n" % (json.dumps(runner), iterations, steps))
    db = os.path.join(work, "overhead.db")
    cmd = [os.path.join(bin_dir, "dlbench"), "--db", db, "run", matrix, "--out", os.path.join(work, "logs")]
    if no_monitor:
        cmd.append("--no-monitor")
    subprocess.run(pinned(harness_cpu, cmd), env=env, check=True, capture_output=True, text=True)
    export = json.loads(subprocess.run([os.path.join(bin_dir, "dlbench"), "--db", db, "export", "latest", "--format",
                                        "json"], env=env, check=True, capture_output=True, text=True).stdout)
    cell = export["cells"][0]
    if cell["outcome"] != "ok":
        raise SystemExit("python_harness_overhead: the dlbench cell ended %s: %s" % (cell["outcome"], cell["message"]))
    m = {k: v["value"] for k, v in cell["metrics"].items()}
    return {"mean_ns": m["step_time_mean_ns"], "median_ns": m["step_time_median_ns"], "warmup_steps": cell["warmup_steps"] or 0,
            "measured_steps": m.get("measured_steps"), "client_overhead_ns": m.get("client_overhead_ns_per_step")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"), help="folder of the dlbench binary")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--iterations", type=int, default=100000, help="rounds of the recurrence per step")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-monitor", action="store_true", help="run dlbench without its device/host monitor")
    allowed = sorted(os.sched_getaffinity(0))
    ap.add_argument("--cpu", type=int, default=allowed[-1],
                    help="the CPU the runner and the self-timed loop run on (default: the last one allowed); "
                         "-1: nothing is pinned")
    ap.add_argument("--harness-cpu", type=int, default=None,
                    help="the CPU dlbench and its monitor run on (default: the first allowed one other than --cpu, "
                         "or --cpu itself on a one-CPU machine)")
    args = ap.parse_args()
    cpu = None if args.cpu < 0 else args.cpu
    harness_cpu = args.harness_cpu
    if cpu is None:
        harness_cpu = None
    elif harness_cpu is None:
        harness_cpu = next((c for c in allowed if c != cpu), cpu)
    for name, value in (("--cpu", cpu), ("--harness-cpu", harness_cpu)):
        if value is not None and value not in allowed:
            ap.error("%s %d is not one of the CPUs this process may use (%s)"
                     % (name, value, ",".join(map(str, allowed))))
    if not (1 <= args.iterations <= 10**8 and 10 <= args.steps <= 10**6 and 1 <= args.rounds <= 100):
        ap.error("--iterations 1..1e8, --steps 10..1e6, --rounds 1..100")
    env = dict(os.environ, PYTHONPATH=CLIENT + (os.pathsep + os.environ["PYTHONPATH"]
                                                if os.environ.get("PYTHONPATH") else ""))
    rows = []
    with tempfile.TemporaryDirectory(prefix="dlbench-overhead-") as work:
        for r in range(args.rounds):
            harness = through_dlbench(args.bin, args.python, args.iterations, args.steps, args.no_monitor, work, env, r,
                                      cpu, harness_cpu)
            # The same share of first steps as dlbench's warm-up cut left out of its mean.
            own = self_timed(args.python, args.iterations, args.steps, harness["warmup_steps"], env, cpu)
            rows.append((own, harness))
    print("%5s %12s %12s %8s %12s %12s %8s %14s" % ("round", "self mean", "dlbench mean", "ratio", "self median",
                                                    "dlbench med.", "ratio", "client/step"))
    ratios, median_ratios, costs = [], [], []
    for r, (own, harness) in enumerate(rows):
        ratio = harness["mean_ns"] / own["mean_ns"]
        median_ratio = harness["median_ns"] / own["median_ns"]
        ratios.append(ratio)
        median_ratios.append(median_ratio)
        cost = harness["client_overhead_ns"]
        if cost is not None:
            costs.append(cost / harness["mean_ns"])
        print("%5d %10.1fus %10.1fus %8.4f %10.1fus %10.1fus %8.4f %12s" % (
            r + 1, own["mean_ns"] / 1e3, harness["mean_ns"] / 1e3, ratio, own["median_ns"] / 1e3,
            harness["median_ns"] / 1e3, median_ratio, "%.2fus" % (cost / 1e3) if cost is not None else "-"))
    own_means = [own["mean_ns"] for own, _ in rows]
    spread = max(own_means) / min(own_means) - 1
    judged = spread <= 0.02
    for what, values in (("mean", ratios), ("median", median_ratios)):
        m = statistics.median(values)
        verdict = ("met" if m <= 1.02 else "NOT met") if judged else "not judged"
        print("median over rounds of the %s step-time ratio (dlbench / self-timed): %.4f (target <= 1.02: %s)"
              % (what, m, verdict))
    if not judged:
        print("not judged: the self-timed side alone spread %.1f%% over the rounds (more than the 2%% target)"
              % (100 * spread))
    if costs:
        print("client's own cost outside the stamps: median %.3f%% of a step" % (100 * statistics.median(costs)))
    print("(%d steps of %d iterations per side and round; %s; %s; python %s)"
          % (args.steps, args.iterations, "monitor off" if args.no_monitor else "monitor on",
             ("runner and loop on CPU %d, dlbench on CPU %d%s" % (
                 cpu, harness_cpu, " (shared)" if harness_cpu == cpu else "")) if cpu is not None else "not pinned",
             args.python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
