#!/usr/bin/env bash
# Issue 11's GPU evidence (docs/load.md): builds the GPU tree (scripts/build-gpu.sh), runs the
# torch runner's load tests, drives dlbench-torch's four load scenarios on cuda:0 through
# bench/gpu/load_driver.py (single_stream p90 for ResNet-50, MobileNetV2, BERT-base and SSD at
# bs1 bf16 with the host-to-device decomposition, ResNet-50 device-resident, multi_stream, the
# server at two rates under a 10 ms bound, offline bs256 next to back-to-back infer bs256), and
# the load generator's overhead benchmark, and the load cells of bench/gpu/load-run.yaml through
# `dlbench run` (phase 2: stored, with the orchestrator's metrics and verdicts). Results go to $OUT
# (or ./load-evidence-out): at most seven files.
# --peak runs only the peak search of bench/gpu/load-peak.yaml through `dlbench run` (ResNet-50
# bf16, target_qps: max under a 10 ms p99; at most 300 s) and writes run-peak.txt (the run and
# `show latest`) and peak.json (the cell's export), then checks the peak: the same cell at fixed
# rates (the peak found, and 4,000/s) for CHECK_S seconds each (default 30), written to
# run-peak-check.txt (session 13's 4,000/s check differed from the search's cell: one stream, not two),
# and those cells second by second (bench/gpu/load_timeline.py) to timeline.txt.
# Usage: bench/gpu/load_scenarios.sh [--skip-build] [--peak]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOGS="${OUT:-$ROOT/load-evidence-out}"
mkdir -p "$LOGS"
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"
export BUILD_DIR="$BUILD"
SKIP_BUILD=0
PEAK_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --skip-build) SKIP_BUILD=1 ;;
    --peak) PEAK_ONLY=1 ;;
    *) echo "usage: $0 [--skip-build] [--peak]" >&2; exit 2 ;;
  esac
done
if [ "$SKIP_BUILD" = 0 ]; then
  "$ROOT/scripts/build-gpu.sh" > "$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; exit 1; }
  tail -3 "$LOGS/build.log"
fi
if [ "$PEAK_ONLY" = 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$LOGS/gpu.txt" 2>&1 || true
  RUN_DIR=$(mktemp -d)
  (cd "$RUN_DIR" && timeout 300 "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" run "$ROOT/bench/gpu/load-peak.yaml"; \
    "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" show latest) > "$LOGS/run-peak.txt" 2>&1
  echo "dlbench run (load-peak.yaml): exit $?"; tail -40 "$LOGS/run-peak.txt"
  "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" export latest --format json > "$LOGS/peak.json" 2>> "$LOGS/run-peak.txt"
  PEAK=$(python3 - "$LOGS/peak.json" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
for cell in doc.get("cells", []) if isinstance(doc, dict) else []:
    m = cell.get("metrics", {}).get("load_peak_qps")
    if m and m.get("value"):
        print(int(m["value"]))
PY
)
  if [ -z "$PEAK" ]; then echo "no peak to check"; exit 0; fi
  CHECK_S="${CHECK_S:-30}"
  case "$CHECK_S" in '' | *[!0-9]*) echo "CHECK_S must be a whole number of seconds" >&2; exit 2 ;; esac
  # The search's cell at fixed rates: target_qps a list, no peak_* keys, CHECK_S seconds each.
  sed -e "s/^  target_qps: max/  target_qps: [$PEAK, 4000]/" -e '/^  peak_/d' -e 's/^name: .*/name: gpu-load-peak-check/' \
      -e "s/^  max_time_s: .*/  min_time_s: $CHECK_S\n  max_time_s: $((CHECK_S + 5))/" \
      "$ROOT/bench/gpu/load-peak.yaml" > "$RUN_DIR/check.yaml"
  echo "== the peak ($PEAK/s) and 4,000/s as fixed-rate cells, $CHECK_S s each"
  (cd "$RUN_DIR" && timeout $((2 * CHECK_S + 120)) "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" run "$RUN_DIR/check.yaml"; \
    "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" show latest) > "$LOGS/run-peak-check.txt" 2>&1
  echo "dlbench run (check): exit $?"; tail -30 "$LOGS/run-peak-check.txt"
  # The fixed-rate cells second by second (run 2 of this fresh store): when a queue builds, and
  # what each batch's gather and compute cost while it does.
  python3 "$ROOT/bench/gpu/load_timeline.py" "$RUN_DIR/r.db" 2 > "$LOGS/timeline.txt" 2>&1
  echo "load_timeline.py: exit $?"; head -60 "$LOGS/timeline.txt"
  exit 0
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv > "$LOGS/gpu.txt" 2>&1 || true
ctest --test-dir "$BUILD" -R 'TorchLoad|LoadGenerator|DynamicBatcher|QueriesWire' --output-on-failure \
  > "$LOGS/ctest-load.log" 2>&1
echo "ctest (load): exit $?"; tail -3 "$LOGS/ctest-load.log"
python3 "$ROOT/bench/gpu/load_driver.py" --runner "$BUILD/bin/dlbench-torch" --json "$LOGS/load-cells.json" \
  2> "$LOGS/load-cells.txt" > /dev/null
echo "load_driver.py: exit $?"; cat "$LOGS/load-cells.txt"
# The store and run folder stay outside $OUT; `show` prints what was stored.
RUN_DIR=$(mktemp -d)
(cd "$RUN_DIR" && timeout 400 "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" run "$ROOT/bench/gpu/load-run.yaml"; \
  "$BUILD/bin/dlbench" --db "$RUN_DIR/r.db" show latest) > "$LOGS/run-load.txt" 2>&1
echo "dlbench run (load-run.yaml): exit $?"; tail -25 "$LOGS/run-load.txt"
if [ -x "$BUILD/bin/dlbench-bench-load" ]; then
  "$BUILD/bin/dlbench-bench-load" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    > "$LOGS/bench-load.txt" 2>&1
  echo "dlbench-bench-load: exit $?"; tail -12 "$LOGS/bench-load.txt"
fi
