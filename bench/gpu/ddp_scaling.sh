#!/usr/bin/env bash
# Data-parallel scaling on the GPU machine (issue 23; docs/distributed.md): ResNet-50 training,
# bf16, batch 256 per GPU, channels_last (auto), as dlbench ddp cells of world_size 1 and 2 (NCCL,
# ddp_mode overlap and serial), then PyTorch's own DDP (bench/gpu/ddp_peer.py under torchrun) at
# world_size 1 and 2 in the same call. Needs a machine with two GPUs for the world_size 2 figures
# (nvidia-h200-x2); with one GPU the world_size 2 cells end `unsupported` (ranks would share a GPU)
# and the peer runs at world_size 1 only.
#
# Usage: bench/gpu/ddp_scaling.sh
#   env: OUT (default /tmp/dlbench-ddp-scaling: logs, matrix, database, exports), BUILD (default
#   build-gpu), PYTHON (default python3), MAX_TIME_S (per cell, default 20)
# NCCL_NVLS_ENABLE=0: NVLink multicast stays off on these machines (the device notes say why).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-/tmp/dlbench-ddp-scaling}"
PYTHON="${PYTHON:-python3}"
MAX_TIME_S="${MAX_TIME_S:-20}"
case "$MAX_TIME_S" in '' | *[!0-9]*) echo "ddp_scaling: MAX_TIME_S is a whole number (got '$MAX_TIME_S')" >&2; exit 2 ;; esac
export NCCL_NVLS_ENABLE=0
DL="$BUILD/bin/dlbench"
if [ ! -x "$DL" ] || [ ! -x "$BUILD/bin/dlbench-torch" ]; then
  echo "== building dlbench and dlbench-torch into $BUILD (scripts/build-gpu.sh)"
  BUILD_DIR="$BUILD" PYTHON="$PYTHON" BUILD_TARGETS="dlbench dlbench-torch" "$ROOT/scripts/build-gpu.sh" || {
    echo "ddp_scaling: scripts/build-gpu.sh failed" >&2
    exit 2
  }
fi
mkdir -p "$OUT"
exec > >(tee "$OUT/ddp_scaling.log") 2>&1
echo "== machine"
nvidia-smi -L || true
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
"$PYTHON" -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' || true

cat > "$OUT/ddp.yaml" <<YAML
name: ddp-scaling
runner: torch
matrix:
  model: resnet50
  batch_size: 256
  precision: bf16
  device: cuda
  strategy: ddp
  backend: nccl
  world_size: [1, 2]
  ddp_mode: [overlap, serial]
timeout_s: 600
measure:
  min_steps: 30
  max_time_s: $MAX_TIME_S
YAML
echo "== dlbench ddp cells"
"$DL" --db "$OUT/ddp.db" run "$OUT/ddp.yaml" --out "$OUT/run" || echo "dlbench run exited $?"
"$DL" --db "$OUT/ddp.db" show 1 || true
"$DL" --db "$OUT/ddp.db" export 1 --format json > "$OUT/ddp-export.json" || true

echo "== PyTorch DDP (the peer)"
for n in 1 2; do
  if [ "$n" -gt "$GPUS" ]; then
    echo "peer world_size $n: skipped, $GPUS GPU(s)"
    continue
  fi
  "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node "$n" "$ROOT/bench/gpu/ddp_peer.py" \
    | tee "$OUT/peer-ws$n.json" || echo "peer world_size $n exited $?"
done
