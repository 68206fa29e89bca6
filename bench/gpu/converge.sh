#!/usr/bin/env bash
# Convergence evidence on the GPU machine (issue 22; docs/convergence.md): Fashion-MNIST's
# reference CNN (fashion_cnn) trained to 0.91 test accuracy at batch 64, 256 and 1,024 in fp32,
# bf16 and fp16 (loss scaling), five seeds each (repetitions: 5), through `dlbench run`; then
# `dlbench show` (the olympic means) and the TensorBoard export opened with TensorBoard's own
# event reader (EventAccumulator), its scalar counts checked against dlbench's reader.
#
# Usage (on the GPU machine; builds with scripts/build-gpu.sh when BUILD lacks the programs):
#   bench/gpu/converge.sh
#   env: OUT (default /tmp/dlbench-converge: logs, matrix, database, export), BUILD (default
#   build-gpu), PYTHON (default python3), TARGET (default 0.91), REPS (default 5), MAX_TIME_S
#   (per cell, default 600), LR_64 / LR_256 / LR_1024 (the learning rate per batch size; defaults
#   0.05, 0.1, 0.2: the reference's 0.001 at batch 400 needs about 200,000 steps), DATASET (default
#   /usr/share/datasets/fashion-mnist; the .deb travels with the other packages), DEADLINE_S
#   (seconds for `dlbench run`, default 0 = none: past it the run is stopped with SIGTERM, its
#   finished cells stay stored, and the script exits 3 without the tables), RESUME_ELSEWHERE (1:
#   resume on a machine that differs in what decides comparability, docs/cli.md)
# Resumable: when OUT already holds the database of an interrupted run, the same command continues
# it (`dlbench run --resume latest`) instead of starting again, so 45 cells can be spread over
# several device calls of 10 minutes.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-/tmp/dlbench-converge}"
PYTHON="${PYTHON:-python3}"
TARGET="${TARGET:-0.91}"
REPS="${REPS:-5}"
MAX_TIME_S="${MAX_TIME_S:-600}"
LR_64="${LR_64:-0.05}"
LR_256="${LR_256:-0.1}"
LR_1024="${LR_1024:-0.2}"
DATASET="${DATASET:-/usr/share/datasets/fashion-mnist}"
DEADLINE_S="${DEADLINE_S:-0}"
for v in "$REPS" "$MAX_TIME_S" "$DEADLINE_S"; do
  case "$v" in '' | *[!0-9]*) echo "converge: REPS, MAX_TIME_S and DEADLINE_S are whole numbers (got '$v')" >&2; exit 2 ;; esac
done
if [ ! -f "$DATASET/t10k-labels-idx1-ubyte.gz" ]; then
  echo "converge: no Fashion-MNIST under $DATASET (install dataset-fashion-mnist)" >&2
  exit 2
fi
DL="$BUILD/bin/dlbench"
if [ ! -x "$DL" ] || [ ! -x "$BUILD/bin/dlbench-torch" ]; then
  echo "== building dlbench and dlbench-torch into $BUILD (scripts/build-gpu.sh)"
  if ! BUILD_DIR="$BUILD" PYTHON="$PYTHON" BUILD_TARGETS="dlbench dlbench-torch" "$ROOT/scripts/build-gpu.sh"; then
    echo "converge: scripts/build-gpu.sh failed" >&2
    exit 2
  fi
fi
mkdir -p "$OUT"
exec > >(tee -a "$OUT/converge.log") 2>&1
echo "== machine"
nvidia-smi -L || true

MATRIX="$OUT/converge.yaml"
DB="$OUT/converge.db"
cat > "$MATRIX" <<YAML
name: converge-fashion-mnist
runner: torch
matrix:
  model: fashion_cnn
  scenario: converge
  target_accuracy: $TARGET
  device: cuda
  precision: [fp32, bf16, fp16]
  batch_size: [64, 256, 1024]
  eval_every: 100
  max_epochs: 100
  max_train_time_s: $MAX_TIME_S
  dataset_dir: $DATASET
include:
  - {batch_size: 64, lr: $LR_64}
  - {batch_size: 256, lr: $LR_256}
  - {batch_size: 1024, lr: $LR_1024}
repetitions: $REPS
ordering: interleaved
timeout_s: $(( MAX_TIME_S + 120 ))
YAML
resume=()
if [ -f "$DB" ]; then
  resume=(--resume latest)
  # Another machine of another kind (driver, GPU model) is refused unless RESUME_ELSEWHERE=1
  # (docs/cli.md "Resuming on another machine").
  [ "${RESUME_ELSEWHERE:-0}" = 1 ] && resume+=(--resume-elsewhere)
  echo "== dlbench run $MATRIX --resume latest (OUT holds an earlier run's database)"
else
  echo "== dlbench run $MATRIX"
fi
deadline=()
[ "$DEADLINE_S" -gt 0 ] && deadline=(timeout -s TERM "$DEADLINE_S")
"${deadline[@]}" "$DL" --db "$DB" run "$MATRIX" --out "$OUT/logs" "${resume[@]}"
rc=$?
if [ "$rc" = 124 ]; then
  echo "converge: stopped at DEADLINE_S=${DEADLINE_S}s; the finished cells are stored. Run the same command again to resume."
  exit 3
fi
echo "== dlbench show"
"$DL" --db "$DB" show latest
echo "== TensorBoard export"
rm -rf "$OUT/tb"
"$DL" --db "$DB" export latest --format tensorboard -o "$OUT/tb"
"$PYTHON" - "$OUT/tb" <<'PY'
import os, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
root = sys.argv[1]
for cell in sorted(os.listdir(root)):
    acc = EventAccumulator(os.path.join(root, cell), size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    counts = {t: len(acc.Scalars(t)) for t in tags}
    last = acc.Scalars("eval/accuracy")[-1].value if "eval/accuracy" in tags else None
    print(f"{cell}: {counts} last eval/accuracy {last}")
PY
