#!/usr/bin/env bash
# Issue 21's "a third of the matrix time", a part of it per call: the cells of examples/gpu.yaml
# (MATRIX) that ONLY keeps, run today's way (a runner process per cell) and with --runner-reuse, one
# after the other into one store; then bench/reuse/summarize.py's tables (per cell: samples/s and
# verdict in each mode; per run: the sums of time_to_hello_s, setup_s, warmup_s, measured_window_s
# and cell_wall_s, and the runner processes started) and each cell's samples/s ratio reuse/plain,
# with the largest deviation among the cells valid in both (the issue asks within 1%).
# Two more modes cut the first steps' cuDNN autotuning (docs/benchmarks.md "cuDNN autotuning"):
# `heuristics` runs the same cells with `cudnn_benchmark: false` (cuDNN's heuristics pick each
# convolution's algorithm; a copy of MATRIX with that one line changed), each in its own process,
# and `fast` does both (heuristics and --runner-reuse). `limitN` (limit3, limit1, ...) keeps autotuning
# but lets it time only cuDNN's first N candidates per convolution (`cudnn_benchmark_limit: N` added
# below the `cudnn_benchmark: true` line; PyTorch's default is 10), each cell in its own process.
# Every mode after plain gets its ratio to plain.
#
# Usage (on the GPU machine, after scripts/build-gpu.sh):
#   bench/gpu/matrix-time.sh
#   env: MATRIX (examples/gpu.yaml), ONLY (the --only filter, default "model=resnet50,scenario=infer":
#   12 of the 96 cells), BIN (build-gpu/bin), OUT (/tmp/dlbench-matrix-time), ORDER ("plain reuse";
#   "reuse plain" runs the reuse side first; modes: plain, reuse, heuristics, fast, limitN).
# Run on an H100 (2026-12-06, docs/benchmarks.md "H100 runs of 2026-12-06 (session 20)"); limitN and
# fast on an H200 (2026-12-07, "H200 runs of 2026-12-07 (session 25)").
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MATRIX="${MATRIX:-$ROOT/examples/gpu.yaml}"
ONLY="${ONLY:-model=resnet50,scenario=infer}"
BIN="${BIN:-$ROOT/build-gpu/bin}"
OUT="${OUT:-/tmp/dlbench-matrix-time}"
ORDER="${ORDER:-plain reuse}"
mkdir -p "$OUT"
DB="$OUT/m.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
# MATRIX with its one `cudnn_benchmark: true` line set to false, for the heuristics modes.
HEUR="$OUT/matrix-heuristics.yaml"
if [[ " $ORDER " == *" heuristics "* || " $ORDER " == *" fast "* || " $ORDER " == *" limit"* ]]; then
  if [ "$(grep -cE '^[[:space:]]*cudnn_benchmark:[[:space:]]*true[[:space:]]*$' "$MATRIX")" != 1 ]; then
    echo "matrix-time.sh: $MATRIX needs exactly one 'cudnn_benchmark: true' line for the heuristics modes" >&2
    exit 2
  fi
  sed -E 's/^([[:space:]]*cudnn_benchmark:[[:space:]]*)true[[:space:]]*$/\1false/' "$MATRIX" > "$HEUR"
fi
runs=()
modes=()
run=0
for mode in $ORDER; do
  extra=()
  matrix="$MATRIX"
  case "$mode" in
    plain) ;;
    reuse) extra=(--runner-reuse) ;;
    heuristics) matrix="$HEUR" ;;
    fast) matrix="$HEUR" extra=(--runner-reuse) ;;
    limit[1-9] | limit[1-9][0-9])
      matrix="$OUT/matrix-$mode.yaml"
      sed -E "s/^([[:space:]]*)(cudnn_benchmark:[[:space:]]*true)[[:space:]]*\$/\\1\\2\\n\\1cudnn_benchmark_limit: ${mode#limit}/" \
        "$MATRIX" > "$matrix" ;;
    *) echo "matrix-time.sh: ORDER holds '$mode' (expected plain, reuse, heuristics, fast or limitN, N 1-99)" >&2; exit 2 ;;
  esac
  run=$((run + 1))
  echo "== $mode: $(date -u +%FT%TZ), $(uptime)"
  start=$(date +%s.%N)
  "$BIN/dlbench" --db "$DB" run "$matrix" --only "$ONLY" --out "$OUT/logs" "${extra[@]}" > "$OUT/$mode.out" 2>&1
  rc=$?
  end=$(date +%s.%N)
  echo "== $mode: rc $rc, wall $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
  tail -2 "$OUT/$mode.out"
  runs+=("$run")
  modes+=("$mode")
done
ids=$(IFS=,; echo "${runs[*]}")
names=$(IFS=,; echo "${modes[*]}")
python3 "$ROOT/bench/reuse/summarize.py" "$BIN/dlbench" "$DB" "$ids" "$names" | tee "$OUT/summary.md"
# MODE/plain per cell for every mode after plain, from the summary's first table.
python3 - "$OUT/summary.md" "$names" <<'PY'
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| ") and "/s " in l]
modes = sys.argv[2].split(",")
if "plain" not in modes:
    sys.exit(0)
p = modes.index("plain")
for r, mode in enumerate(modes):
    if r == p:
        continue
    worst = 0.0
    for row in rows:
        cols = [c.strip() for c in row.strip().strip("|").split("|")]
        vals = [re.match(r"([0-9.]+)/s (\S+)", c) for c in cols[1:]]
        if not all(vals):
            continue
        a, b = float(vals[p].group(1)), float(vals[r].group(1))
        both_valid = vals[p].group(2) == "valid" and vals[r].group(2) == "valid"
        ratio = b / a if a > 0 else float("nan")
        if both_valid and a > 0:
            worst = max(worst, abs(ratio - 1))
        print(f"{cols[0]}: {mode}/plain {ratio:.4f}{'' if both_valid else ' (not valid in both)'}")
    print(f"largest |{mode}/plain - 1| among cells valid in both: {100 * worst:.2f}%")
PY
