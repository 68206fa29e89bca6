#!/usr/bin/env bash
# Memory-limit evidence on the GPU machine (issue 13; docs/memory.md): ResNet-50 training, bf16,
# channels_last (auto), under `memory_cap: CAP` (the caching allocator's fraction) with
# `batch_size: max` (doubling then bisection, each probe a fresh runner), plus one fixed batch far
# over the cap (it must end `oom`), through `dlbench run`; then what a user would write instead:
# PyTorch from Python, torch.cuda.set_per_process_memory_fraction at the same cap and the same
# doubling and bisection in one process (catching torch.OutOfMemoryError), so the two answers can
# be set side by side.
#
# Time (it must fit a few minutes of H200 time): the search
# starts at MIN_BATCH 16 and probes at most up to MAX_BATCH 512, so by stats::MaxBoundaryProbes it
# runs at most 6 doubling probes (16 .. 512) + 8 bisecting the widest bracket (256 .. 512) = 14,
# capped at MAX_PROBES 12. At the default 4 GiB cap, where PyTorch from Python found 83 on the
# H200 (docs/evidence/h200-memory-2026-12-02.log), it is 10: 16, 32, 64, 128 (oom), then 96, 80,
# 88, 84, 82, 83. Each probe is a fresh runner of PROBE_STEPS 3 steps (the Python search's 3); the
# same log shows 3.3 s for a runner that starts, builds ResNet-50 and ends oom, and 18.5 s before
# the second cell for the first probe with the run's start, so about 10 x 5-10 s of probes, the
# measured run at the batch found (max_time_s 5) and the oom cell: 1.5-2.5 minutes expected.
# Measured on an H100 (2026-12-06, session 23, docs/benchmarks.md): 70 s for the whole script with
# the build in place (the `dlbench run` 59.5 s; 86 fits, 87 does not, in 10 probes: 16, 32, 64, 128,
# 96, 80, 88, 84, 86, 87; Python: 83 in 2.8 s).
# Bounds: timeout_s 60 a runner, and RUN_LIMIT_S (default 240) for the whole `dlbench run`, after
# which it gets SIGINT (finished cells stored, the run marked interrupted); the Python search is
# stopped after 90 s. With the build already in BUILD, the script ends within about 6 minutes
# whatever happens.
#
# Usage (on the GPU machine; builds with scripts/build-gpu.sh when BUILD lacks the programs):
#   bench/gpu/memory.sh
#   env: OUT (default /tmp/dlbench-memory: log, matrix, database), BUILD (default build-gpu),
#   PYTHON (default python3), CAP_GIB (default 4), MIN_BATCH (default 16), MAX_BATCH (default 512),
#   MAX_PROBES (default 12), PROBE_STEPS (default 3), OVER_BATCH (the fixed batch that must not
#   fit, default 1024), RUN_LIMIT_S (default 240)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD="${BUILD:-$ROOT/build-gpu}"
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-/tmp/dlbench-memory}"
CAP_GIB="${CAP_GIB:-4}"
MIN_BATCH="${MIN_BATCH:-16}"
MAX_BATCH="${MAX_BATCH:-512}"
MAX_PROBES="${MAX_PROBES:-12}"
PROBE_STEPS="${PROBE_STEPS:-3}"
OVER_BATCH="${OVER_BATCH:-1024}"
RUN_LIMIT_S="${RUN_LIMIT_S:-240}"
for v in "$CAP_GIB" "$MIN_BATCH" "$MAX_BATCH" "$MAX_PROBES" "$PROBE_STEPS" "$OVER_BATCH" "$RUN_LIMIT_S"; do
  case "$v" in '' | *[!0-9]*) echo "memory: CAP_GIB, MIN_BATCH, MAX_BATCH, MAX_PROBES, PROBE_STEPS, OVER_BATCH and RUN_LIMIT_S are whole numbers (got '$v')" >&2; exit 2 ;; esac
done
DL="$BUILD/bin/dlbench"
if [ ! -x "$DL" ] || [ ! -x "$BUILD/bin/dlbench-torch" ]; then
  echo "== building dlbench and dlbench-torch into $BUILD (scripts/build-gpu.sh)"
  if ! BUILD_DIR="$BUILD" PYTHON="$PYTHON" BUILD_TARGETS="dlbench dlbench-torch" "$ROOT/scripts/build-gpu.sh"; then
    echo "memory: scripts/build-gpu.sh failed" >&2
    exit 2
  fi
fi
mkdir -p "$OUT"
exec > >(tee "$OUT/memory.log") 2>&1
echo "== machine"
nvidia-smi -L || true

MATRIX="$OUT/memory.yaml"
DB="$OUT/memory.db"
cat > "$MATRIX" <<YAML
name: gpu-memory
runner: torch
matrix:
  model: resnet50
  scenario: train
  device: cuda
  precision: bf16
  memory_cap: ${CAP_GIB}GiB
  batch_size: max
  boundary_min: $MIN_BATCH
  boundary_max: $MAX_BATCH
  boundary_max_probes: $MAX_PROBES
  boundary_probe_steps: $PROBE_STEPS
include:
  - {model: resnet50, scenario: train, device: cuda, precision: bf16, memory_cap: ${CAP_GIB}GiB, batch_size: $OVER_BATCH}
timeout_s: 60
measure:
  max_time_s: 5
YAML
"$DL" --db "$DB" plan "$MATRIX" || exit 2
echo "== dlbench run $MATRIX (at most ${RUN_LIMIT_S} s)"
start=$(date +%s)
timeout -s INT -k 30 "$RUN_LIMIT_S" "$DL" --db "$DB" run "$MATRIX" --out "$OUT/run"
rc=$?
echo "== dlbench run took $(($(date +%s) - start)) s (exit $rc)"
echo "== dlbench show"
"$DL" --db "$DB" show latest

echo "== PyTorch from Python: set_per_process_memory_fraction at ${CAP_GIB} GiB, doubling then bisection"
timeout -k 10 90 "$PYTHON" - "$CAP_GIB" <<'PY'
import sys, time
import torch, torchvision

cap = int(sys.argv[1]) << 30
total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total), 0)
model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def fits(bs):
    ok = True
    torch.cuda.reset_peak_memory_stats()
    try:
        x = torch.randn(bs, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (bs,), device="cuda")
        for _ in range(3):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        ok = False
    x = y = loss = None
    peak = torch.cuda.max_memory_allocated()
    opt.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()
    print(f"  batch {bs:5d}: {'fits' if ok else 'oom '}  peak allocated {peak / 2**20:9.1f} MiB", flush=True)
    return ok


t0 = time.monotonic()
lo, hi, bs = 0, None, 1
while bs <= 1 << 20:
    if fits(bs):
        lo, bs = bs, bs * 2
    else:
        hi = bs
        break
while hi is not None and hi - lo > 1:
    mid = (lo + hi) // 2
    if fits(mid):
        lo = mid
    else:
        hi = mid
print(f"python: largest batch that fits in {cap >> 30} GiB: {lo} (first failing {hi}); {time.monotonic() - t0:.1f} s")
PY
echo "== done: $OUT"
