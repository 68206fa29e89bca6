#!/usr/bin/env python3
"""Runs each workload through dlbench-torch and through PyTorch eager (torch_eager.py) on the same
GPU in the same call, and prints both throughputs and their ratio.

dlbench-torch is driven directly over its runner protocol (the same frames `dlbench run` sends:
HELLO -> CONFIGURE with a step ceiling -> STEPS ... -> DONE), so both sides get exactly the same
method: W warm-up steps dropped, then N timed steps, each ending with a device synchronise, and
samples/s = batch x N / (sum of the N step times). The sides alternate (C++, Python, C++, Python
for --reps 2) so a slow drift of the GPU's clocks does not favour one of them.

Usage: bench/peers/compare.py [--runner build-gpu/bin/dlbench-torch] [--workloads
       resnet50:train:256:bf16,...] [--warmup 20] [--steps 60] [--reps 2] [--json out.json]

The former method, kept to reproduce the figures recorded with it; the comparison under dlbench's
own method is bench/peers/compare_runs.sh (docs/python-client.md, "The peers").
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Message types of src/protocol/wire.h.
HELLO, CONFIGURE, READY, STEPS, MEMORY, EXTRAS, ERROR, DONE, STOP = range(1, 10)
FRAME = struct.Struct("<IHH")
STEP = struct.Struct("<qqqqqII")  # start, end, data_wait, compute, comm, samples, present

DEFAULT_WORKLOADS = "resnet50:train:256:bf16,resnet50:infer:256:bf16,mobilenet_v2:train:256:bf16,bert_base:train:32:bf16"


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


def run_dlbench(runner, model, scenario, batch, precision, warmup, steps, extra_params):
    """One cell of dlbench-torch; returns (samples_per_s, median step ms, effective params)."""
    cmd_r, cmd_w = os.pipe()
    msg_r, msg_w = os.pipe()
    env = dict(os.environ, DLBENCH_PROTOCOL_FD_IN=str(cmd_r), DLBENCH_PROTOCOL_FD_OUT=str(msg_w))
    proc = subprocess.Popen([runner], env=env, pass_fds=(cmd_r, msg_w))
    os.close(cmd_r)
    os.close(msg_w)
    params = {"model": model, "scenario": scenario, "batch_size": batch, "device": "cuda",
              "precision": precision}
    params.update(extra_params)
    records, effective, error = [], None, None
    try:
        while True:
            header = read_exact(msg_r, FRAME.size)
            if header is None:
                break
            length, mtype, _ = FRAME.unpack(header)
            payload = read_exact(msg_r, length) if length else b""
            if mtype == STEPS:
                _, count = struct.unpack_from("<II", payload)
                for i in range(count):
                    records.append(STEP.unpack_from(payload, 8 + i * STEP.size))
            elif mtype == HELLO:
                send(cmd_w, CONFIGURE, {"params": params, "seed": 1, "rank": 0, "world_size": 1,
                                        "cell_key": "peers", "limits": {"max_steps": warmup + steps,
                                                                        "max_time_s": 300.0}})
            elif mtype == READY:
                effective = json.loads(payload)["effective"]
            elif mtype == ERROR:
                error = json.loads(payload)
            elif mtype == DONE:
                break
    finally:
        os.close(cmd_w)
        os.close(msg_r)
        proc.wait()
    if error:
        raise RuntimeError(f"dlbench-torch: {error.get('kind')}: {error.get('message')}")
    timed = [(r[1] - r[0]) * 1e-9 for r in records[warmup:]]
    if not timed:
        raise RuntimeError("dlbench-torch returned no timed steps")
    return batch * len(timed) / sum(timed), 1e3 * statistics.median(timed), effective


def run_eager(model, scenario, batch, precision, warmup, steps):
    out = subprocess.run([sys.executable, os.path.join(HERE, "torch_eager.py"), "--model", model, "--scenario",
                          scenario, "--batch-size", str(batch), "--precision", precision, "--warmup", str(warmup),
                          "--steps", str(steps)], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["samples_per_s"], result["step_ms_median"], result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runner", default=os.path.join(ROOT, "build-gpu", "bin", "dlbench-torch"))
    ap.add_argument("--workloads", default=DEFAULT_WORKLOADS, help="model:scenario:batch:precision,...")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json", help="also write every figure to this file")
    args = ap.parse_args()

    rows, dump = [], []
    for spec in args.workloads.split(","):
        model, scenario, batch, precision = spec.split(":")
        batch = int(batch)
        cpp, py, notes = [], [], ""
        try:
            for _ in range(args.reps):
                sps, _, eff = run_dlbench(args.runner, model, scenario, batch, precision, args.warmup, args.steps, {})
                cpp.append(sps)
                sps_py, _, peer = run_eager(model, scenario, batch, precision, args.warmup, args.steps)
                py.append(sps_py)
            notes = f"{eff.get('memory_format')}, cudnn_benchmark={eff.get('cudnn_benchmark')}"
        except (RuntimeError, subprocess.CalledProcessError) as e:
            notes = f"failed: {getattr(e, 'stderr', None) or e}".replace("\n", " ")[:200]
        c = statistics.median(cpp) if cpp else float("nan")
        p = statistics.median(py) if py else float("nan")
        rows.append((spec, c, p, c / p if cpp and py else float("nan"), notes))
        dump.append({"workload": spec, "dlbench_torch_samples_per_s": cpp, "pytorch_eager_samples_per_s": py,
                     "notes": notes})

    print(f"{'workload':34} {'dlbench-torch/s':>16} {'pytorch-eager/s':>16} {'ratio':>7}  notes")
    for spec, c, p, r, notes in rows:
        print(f"{spec:34} {c:16.1f} {p:16.1f} {r:7.3f}  {notes}")
    print(f"(median of {args.reps} alternating runs per side; {args.warmup} warm-up + {args.steps} timed steps each; "
          "samples/s over synchronised steps)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dump, f, indent=1)


if __name__ == "__main__":
    main()
