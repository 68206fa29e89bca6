#!/usr/bin/env bash
# On the GPU machine: builds everything (scripts/build-gpu.sh), runs the GPU tests, the standard
# GPU matrix through `dlbench run examples/gpu.yaml`, and the peer comparison against PyTorch
# eager (bench/peers/compare.py). Logs go to $OUT when it is set (the device tool's output
# folder), else to ./gpu-evidence-out; at most 8 files land there (the device tool's limit), so
# the matrix's databases and per-cell runner logs go to $MATRIX_DIR (default /tmp/dlbench-gpu-matrix).
# Usage: scripts/gpu-evidence.sh [--skip-matrix] [--skip-tests]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOGS="${OUT:-$ROOT/gpu-evidence-out}"
mkdir -p "$LOGS"
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"
export BUILD_DIR="$BUILD"
skip_matrix=0
skip_tests=0
for arg in "$@"; do
  case "$arg" in
    --skip-matrix) skip_matrix=1 ;;
    --skip-tests) skip_tests=1 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done

nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$LOGS/gpu.txt" 2>&1 || true
"$ROOT/scripts/build-gpu.sh" > "$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; exit 1; }
tail -5 "$LOGS/build.log"

if [ "$skip_tests" = 0 ]; then
  ctest --test-dir "$BUILD" -L torch --output-on-failure > "$LOGS/ctest-torch.log" 2>&1
  echo "ctest -L torch: exit $?"; tail -4 "$LOGS/ctest-torch.log"
fi
if [ "$skip_matrix" = 0 ]; then
  # Every GPU of the host at once, one shard each (scripts/gpu-matrix.sh); run again to resume.
  "$ROOT/scripts/gpu-matrix.sh" "$ROOT/examples/gpu.yaml" "${MATRIX_DIR:-/tmp/dlbench-gpu-matrix}" > "$LOGS/matrix.log" 2>&1
  echo "scripts/gpu-matrix.sh examples/gpu.yaml: exit $?"; tail -20 "$LOGS/matrix.log"
  python3 "$ROOT/bench/gpu/cell_timeline.py" "${MATRIX_DIR:-/tmp/dlbench-gpu-matrix}"/shard-*.db | tee "$LOGS/timeline.txt"
fi
python3 "$ROOT/bench/peers/compare.py" --runner "$BUILD/bin/dlbench-torch" --json "$LOGS/peers.json" \
  2> "$LOGS/peers.err" | tee "$LOGS/peers.txt"
