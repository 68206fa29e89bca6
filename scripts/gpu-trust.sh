#!/usr/bin/env bash
# On the GPU machine: the evidence runs of the measurement-trust work (issue 17) and the MFU fix
# (issue 10), resumable across device calls. Stages, each skipped when already done:
#   build   scripts/build-gpu.sh (once)
#   cuda    the OnCuda tests (ctest -R OnCuda)
#   mfu     one ResNet-50 bf16 training cell; prints its mfu_ratio, achieved and peak FLOP/s
#   runA    examples/gpu-repetitions.yaml (resumed when an earlier call was cut short)
#   runB    the same matrix again, back to back
#   report  dlbench noise (run A), compare A B --threshold 1, selftest
# Usage: [RUNB_ONLY=FILTER] scripts/gpu-trust.sh DEADLINE_S   (stops starting work DEADLINE_S seconds after its start;
# a run cut by the deadline is interrupted and resumed by the next call). State in $STATE
# (default build-gpu/trust); logs to $OUT.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEADLINE_S="${1:-540}"
T0=$(date +%s)
LOGS="${OUT:-$ROOT/gpu-trust-out}"
mkdir -p "$LOGS"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
STATE="${STATE:-$BUILD_DIR/trust}"
DB="$STATE/trust.db"
BIN="$BUILD_DIR/bin/dlbench"
left() { echo $(( DEADLINE_S - ($(date +%s) - T0) )); }
done_mark() { [ -e "$STATE/$1.done" ]; }
mark() { touch "$STATE/$1.done"; }

# build-gpu.sh is incremental: it also (re)unpacks the .gpu-deps libraries the binaries load.
if true; then
  "$ROOT/scripts/build-gpu.sh" > "$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; exit 1; }
  tail -3 "$LOGS/build.log"
fi
mkdir -p "$STATE"
echo "gpu-trust: built; $(left) s left"

if ! done_mark cuda; then
  ctest --test-dir "$BUILD_DIR" -R OnCuda --output-on-failure > "$LOGS/ctest-cuda.log" 2>&1
  echo "ctest -R OnCuda: exit $?"; tail -4 "$LOGS/ctest-cuda.log"; mark cuda
fi

if ! done_mark mfu; then
  cat > "$STATE/mfu.yaml" <<'YAML'
name: mfu-check
runner: torch
matrix: {model: resnet50, scenario: train, batch_size: 256, device: cuda, precision: bf16, memory_format: auto, cudnn_benchmark: true}
measure: {min_time_s: 2.0, max_time_s: 8.0, min_warmup_steps: 5}
YAML
  "$BIN" --db "$STATE/mfu.db" run "$STATE/mfu.yaml" --out "$STATE/out" > "$LOGS/mfu.log" 2>&1
  echo "mfu run: exit $?"
  "$BIN" --db "$STATE/mfu.db" export latest --format json > "$STATE/mfu.json"
  python3 - "$STATE/mfu.json" <<'PY' | tee -a "$LOGS/mfu.log"
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cells"]:
    m = {x["name"]: x["value"] for x in c["metrics"]} if isinstance(c["metrics"], list) else {k: v["value"] for k, v in c["metrics"].items()}
    print(c["label"], c["outcome"], c["verdict"], {k: m.get(k) for k in ("mfu_ratio", "achieved_flops_per_s", "peak_flops_per_s", "samples_per_s", "step_time_mean_ns")})
PY
  mark mfu
fi

run_matrix() {  # name
  local name=$1 budget
  done_mark "$name" && return 0
  budget=$(( $(left) - 20 ))
  [ "$budget" -lt 30 ] && { echo "$name: no time left in this call"; return 1; }
  local resume=()
  [ -e "$STATE/$name.id" ] && resume=(--resume "$(cat "$STATE/$name.id")")
  # RUNB_ONLY (an --only filter) runs a part of the matrix as run B when time is short.
  [ "$name" = runB ] && [ -n "${RUNB_ONLY:-}" ] && [ ! -e "$STATE/$name.id" ] && resume=(--only "$RUNB_ONLY")
  timeout -s INT "$budget" "$BIN" --db "$DB" run "$ROOT/examples/gpu-repetitions.yaml" --out "$STATE/out" "${resume[@]}" \
    > "$LOGS/$name.log" 2> "$LOGS/$name.err"
  local rc=$?
  [ -e "$STATE/$name.id" ] || "$BIN" --db "$DB" runs -n 1 | awk 'NR==2 {print $1}' > "$STATE/$name.id"
  echo "$name (run $(cat "$STATE/$name.id")): exit $rc"; tail -3 "$LOGS/$name.err"
  "$BIN" --db "$DB" tag "$(cat "$STATE/$name.id")" "$name" > /dev/null 2>&1  # a part-done run B still compares
  if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then mark "$name"; fi
}
run_matrix runA || exit 0
run_matrix runB || [ -e "$STATE/runB.id" ] || exit 0

{
  echo "== dlbench noise runA"; "$BIN" --db "$DB" noise runA
  echo "== dlbench compare runA runB --threshold 1"; "$BIN" --db "$DB" compare runA runB --threshold 1 --fail-on-regression --min-matched "${MIN_MATCHED:-50}"; echo "exit $?"
  echo "== dlbench compare runA runB (default threshold)"; "$BIN" --db "$DB" compare runA runB | tail -4
  echo "== dlbench show runA (verdicts)"; "$BIN" --db "$DB" show runA | head -70
  echo "== dlbench selftest"; "$BIN" selftest
} > "$LOGS/report.txt" 2>&1
cp "$DB" "$LOGS/trust.db" 2>/dev/null || true
cat "$LOGS/report.txt" | head -150
