#!/usr/bin/env bash
# Precision evidence on the GPU machine (issue 14; docs/precisions.md): the four reference models
# at batch 1 and 256 in fp32, tf32, bf16 and fp16 on the GPU, and fp32 and int8 (bert_base only;
# the other models end `unsupported`, naming what would work) on its CPU, through `dlbench run`
# (scenario infer, each cell's outputs on the fixed evaluation set recorded); then `dlbench show`,
# whose precision tables set each precision against the fp32 cell of the same model and device:
# weights, step p50/p99, samples/s, top-1 agreement, max/mean |diff|, a warning naming the stage
# most likely at fault below `min_agreement`; then the HTML report with its CPU-GPU table.
#
# Usage (on the GPU machine; builds with scripts/build-gpu.sh when BUILD lacks the programs):
#   bench/gpu/precisions.sh
#   env: OUT (default /tmp/dlbench-precisions: log, matrix, database), BUILD (default build-gpu),
#   PYTHON (default python3), MAX_TIME_S (per cell's measured loop, default 20), CPU_THREADS
#   (default 16), SAMPLES (reference_samples, default 16), ONLY (space-separated `--only` filters
#   of `dlbench run`, e.g. ONLY="device=cpu batch_size=1,precision=fp32": the cells any of them
#   selects; the fp32 cell a precision or device is compared with must be among them)
# Bounded: 4 models x 2 batches x 4 GPU precisions = 32 cells plus 10 CPU cells (batch 1, and
# bert_base at 16: fp32 BERT on a reference BLAS is slow, docs/precisions.md), each at most
# MAX_TIME_S of steps plus its build and evaluation (timeout_s 900 per cell). `dlbench plan` of
# the matrix lists the cells first.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-/tmp/dlbench-precisions}"
PYTHON="${PYTHON:-python3}"
MAX_TIME_S="${MAX_TIME_S:-20}"
CPU_THREADS="${CPU_THREADS:-16}"
SAMPLES="${SAMPLES:-16}"
for v in "$MAX_TIME_S" "$CPU_THREADS" "$SAMPLES"; do
  case "$v" in '' | *[!0-9]*) echo "precisions: MAX_TIME_S, CPU_THREADS and SAMPLES are whole numbers (got '$v')" >&2; exit 2 ;; esac
done
ONLY_ARGS=()
for f in ${ONLY:-}; do ONLY_ARGS+=(--only "$f"); done
DL="$BUILD/bin/dlbench"
if [ ! -x "$DL" ] || [ ! -x "$BUILD/bin/dlbench-torch" ]; then
  echo "== building dlbench and dlbench-torch into $BUILD (scripts/build-gpu.sh)"
  if ! BUILD_DIR="$BUILD" PYTHON="$PYTHON" BUILD_TARGETS="dlbench dlbench-torch" "$ROOT/scripts/build-gpu.sh"; then
    echo "precisions: scripts/build-gpu.sh failed" >&2
    exit 2
  fi
fi
mkdir -p "$OUT"
exec > >(tee "$OUT/precisions.log") 2>&1
echo "== machine"
nvidia-smi -L || true

MATRIX="$OUT/precisions.yaml"
DB="$OUT/precisions.db"
cat > "$MATRIX" <<YAML
name: precisions
runner: torch
matrix:
  model: [resnet50, mobilenet_v2, bert_base, ssd_mobilenet]
  scenario: infer
  device: cuda
  precision: [fp32, tf32, bf16, fp16]
  batch_size: [1, 256]
  reference_samples: $SAMPLES
  # Below these, show warns and the runner names the stage most likely at fault (docs/precisions.md).
  min_agreement: "tf32=1;bf16=0.99;fp16=0.99;int8=0.9"
include:
  - {model: resnet50, device: cpu, precision: fp32, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: resnet50, device: cpu, precision: int8, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: mobilenet_v2, device: cpu, precision: fp32, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: mobilenet_v2, device: cpu, precision: int8, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: ssd_mobilenet, device: cpu, precision: fp32, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: ssd_mobilenet, device: cpu, precision: int8, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: bert_base, device: cpu, precision: fp32, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: bert_base, device: cpu, precision: int8, batch_size: 1, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES, min_agreement: "int8=0.9"}
  - {model: bert_base, device: cpu, precision: fp32, batch_size: 16, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES}
  - {model: bert_base, device: cpu, precision: int8, batch_size: 16, threads: $CPU_THREADS, scenario: infer, reference_samples: $SAMPLES, min_agreement: "int8=0.9"}
timeout_s: 900
measure:
  max_time_s: $MAX_TIME_S
YAML
"$DL" --db "$DB" plan "$MATRIX" "${ONLY_ARGS[@]}" || exit 2
echo "== dlbench run $MATRIX ${ONLY_ARGS[*]}"
"$DL" --db "$DB" run "$MATRIX" --out "$OUT/run" "${ONLY_ARGS[@]}"
echo "== dlbench show"
"$DL" --db "$DB" show latest
echo "== dlbench report (the Precisions section's CPU-GPU consistency table)"
"$DL" --db "$DB" report latest -o "$OUT/precisions-report.html" && echo "report: $OUT/precisions-report.html"
echo "== done: $OUT"
