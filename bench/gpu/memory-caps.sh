#!/usr/bin/env bash
# The GPU caps table of issue 13 (docs/memory.md "Boundary search"): for resnet50, mobilenet_v2,
# bert_base and ssd_mobilenet, train and infer, bf16 and fp32, the largest batch that fits on the
# whole device and under memory_cap 16, 24 and 40 GiB (T4, L4/A10, A100-40GB sizes): 64 searches
# through one `dlbench run`, then `dlbench show` and the table (largest batch, first failing, the
# measured peak at the batch found, probes, processes, the cell's wall time).
#
# How it stays within minutes: every search has boundary_probe_process: shared (its probes and
# its measured run go on in one dlbench-torch process, also after a CUDA `oom`, which leaves the
# process usable) and boundary_guide: peak_memory (after two probes that fit, it probes where the
# line through their peaks meets the cap, then each side), and the run has --runner-reuse with
# memory_cap and model as the outer axes, so the searches of one cap and model (train/infer x
# bf16/fp32) share one process: 16 process starts, not one per probe. "The whole device" is
# memory_cap = the device's memory as nvidia-smi reports it (fraction 1), so that search is guided
# too.
#
# Time, measured once (H200, 2026-12-06, docs/evidence/h200-memory-caps-2026-12-06.log): with
# DEADLINE_S=288 two searches finished, ResNet-50 training under 16 GiB in bf16 (77 s, 12 probes) and
# fp32 (198 s, 11 probes): cudnn_benchmark is on, and every new batch size autotunes every convolution
# again, so the estimate below was far too low. Since then the searches run with cudnn_benchmark
# false (CUDNN_BENCHMARK=1 turns autotuning back on): cuDNN's heuristics pick each convolution's
# algorithm without trying them, so a probe costs its steps, not a tuning pass. The largest batch
# found is then the one that fits with the heuristics' workspaces, which may differ by a few
# samples from an autotuned run's (autotuning may pick algorithms with larger workspaces). Measured
# so (H100, 2026-12-06, docs/evidence/h100-memory-caps-2026-12-06.log): 6 searches (71 probes) in
# 216 s, about 36 s a search: the 64 take about 40 minutes, so RESUME across calls is the way.
# The estimate written before it ran (this script had not run on a GPU). From the H200 log of
# 2026-12-02 (docs/evidence/h200-memory-2026-12-02.log): 3.3 s for a runner that starts, builds
# ResNet-50 and ends `oom`, so about 3-5 s per process start (16 here, 50-80 s) and about 1-3 s for a
# probe in a running process (the model built again, PROBE_STEPS 2 steps, the first with cuDNN's
# autotuning at the new shape). A guided search is about 4-6 probes (MIN_BATCH, 2 x MIN_BATCH, the
# line's guess, one each side, perhaps one more), plus a measured run of at most 6 steps or MEASURE_S
# 4 s (at least 1 warm-up and 2 measured steps, or it ends `invalid`, its search still stored):
# about 8-20 s a search, 64 searches 9-21 minutes in the worst case. That is more
# than the budget, so the run has a hard deadline: DEADLINE_S (default 420) for `dlbench run`,
# after which it gets SIGINT (every finished search is stored; the run is marked interrupted and
# `dlbench run --resume` continues it: the command is printed), and the table shows what finished.
# The order (cap outer: 16, 24, 40 GiB, then the whole device) puts the small caps, the quickest
# searches, first. With the build in place the script ends within DEADLINE_S + about 60 s.
#
# Usage (on the GPU machine; builds with scripts/build-gpu.sh when BUILD lacks the programs):
#   bench/gpu/memory-caps.sh
#   env: OUT (default /tmp/dlbench-memory-caps), BUILD (default build-gpu), DEADLINE_S (420),
#   MODELS, SCENARIOS (train infer), PRECISIONS (bf16 fp32), CAPS_GIB (16 24 40), FULL (1: add the
#   whole device), MIN_BATCH (8), MAX_BATCH (4096), MAX_PROBES (14), PROBE_STEPS (2),
#   MEASURE_S (4), TIMEOUT_S (90, a runner's timeout), RESUME (a run id: continue that run),
#   CUDNN_BENCHMARK (0: no autotuning, see above; 1: autotune), RESOLUTION (boundary_resolution,
#   default 0.02: each answer within 2% below the boundary, in fewer probes; 0: exact)
#   DRY=1: the plumbing on a CPU build: device cpu, tiny models (base_width 4, hidden_size 32,
#   heads 2, layers 1, image_size 32, seq_len 16), CAPS_GIB "1 2", no whole-device column, BUILD default
#   build, DEADLINE_S 300; fewer cells with MODELS, SCENARIOS and PRECISIONS.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRY="${DRY:-0}"
if [ "$DRY" = 1 ]; then
  BUILD="${BUILD:-$ROOT/build}"
  DEVICE=cpu
  CAPS_GIB="${CAPS_GIB:-1 2}"
  FULL="${FULL:-0}"
  DEADLINE_S="${DEADLINE_S:-300}"
  SIZE="  base_width: 4
  hidden_size: 32
  heads: 2
  layers: 1
  image_size: 32
  seq_len: 16
  threads: 1"
else
  BUILD="${BUILD:-$ROOT/build-gpu}"
  DEVICE=cuda
  CAPS_GIB="${CAPS_GIB:-16 24 40}"
  FULL="${FULL:-1}"
  DEADLINE_S="${DEADLINE_S:-420}"
  SIZE=""
fi
OUT="${OUT:-/tmp/dlbench-memory-caps}"
MODELS="${MODELS:-resnet50 mobilenet_v2 bert_base ssd_mobilenet}"
SCENARIOS="${SCENARIOS:-train infer}"
PRECISIONS="${PRECISIONS:-bf16 fp32}"
MIN_BATCH="${MIN_BATCH:-8}"
MAX_BATCH="${MAX_BATCH:-4096}"
MAX_PROBES="${MAX_PROBES:-14}"
PROBE_STEPS="${PROBE_STEPS:-2}"
MEASURE_S="${MEASURE_S:-4}"
TIMEOUT_S="${TIMEOUT_S:-90}"
RESUME="${RESUME:-}"
RESOLUTION="${RESOLUTION:-0.02}"
case "$RESOLUTION" in '' | *[!0-9.]* | *.*.*) echo "memory-caps: RESOLUTION is a number in [0, 0.5] (got '$RESOLUTION')" >&2; exit 2 ;; esac
case "${CUDNN_BENCHMARK:-0}" in
  1 | true) CUDNN_BENCHMARK=true ;;
  0 | false) CUDNN_BENCHMARK=false ;;
  *) echo "memory-caps: CUDNN_BENCHMARK is 0 or 1 (got '$CUDNN_BENCHMARK')" >&2; exit 2 ;;
esac
for v in $CAPS_GIB "$DEADLINE_S" "$MIN_BATCH" "$MAX_BATCH" "$MAX_PROBES" "$PROBE_STEPS" "$MEASURE_S" "$TIMEOUT_S"; do
  case "$v" in '' | *[!0-9]*) echo "memory-caps: CAPS_GIB, DEADLINE_S, MIN_BATCH, MAX_BATCH, MAX_PROBES, PROBE_STEPS, MEASURE_S and TIMEOUT_S are whole numbers (got '$v')" >&2; exit 2 ;; esac
done
list() { echo "[$(echo "$1" | xargs | sed 's/ /, /g')]"; }
DL="$BUILD/bin/dlbench"
if [ ! -x "$DL" ] || [ ! -x "$BUILD/bin/dlbench-torch" ]; then
  if [ "$DRY" = 1 ]; then
    echo "memory-caps: $BUILD/bin lacks dlbench or dlbench-torch (cmake --build $BUILD --target dlbench dlbench-torch)" >&2
    exit 2
  fi
  echo "== building dlbench and dlbench-torch into $BUILD (scripts/build-gpu.sh)"
  if ! BUILD_DIR="$BUILD" BUILD_TARGETS="dlbench dlbench-torch" "$ROOT/scripts/build-gpu.sh"; then
    echo "memory-caps: scripts/build-gpu.sh failed" >&2
    exit 2
  fi
fi
mkdir -p "$OUT"
exec > >(tee -a "$OUT/memory-caps.log") 2>&1
echo "== $(date -u +%FT%TZ) memory-caps (DRY=$DRY)"
CAPS=""
for c in $CAPS_GIB; do CAPS="$CAPS ${c}GiB"; done
if [ "$FULL" = 1 ]; then
  nvidia-smi -L || true
  total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' ')
  case "$total_mib" in
    '' | *[!0-9]*) echo "memory-caps: no device memory from nvidia-smi ('$total_mib'): the whole-device column is left out" ;;
    *) CAPS="$CAPS ${total_mib}MiB" ;;
  esac
fi

MATRIX="$OUT/memory-caps.yaml"
DB="$OUT/memory-caps.db"
# Axis order is plan order: memory_cap and model outer, so that --runner-reuse keeps one process for
# the four searches of one cap and model (memory_cap and model are in its process key).
cat > "$MATRIX" <<YAML
name: gpu-memory-caps
runner: torch
matrix:
  memory_cap: $(list "$CAPS")
  model: $(list "$MODELS")
  scenario: $(list "$SCENARIOS")
  precision: $(list "$PRECISIONS")
  device: $DEVICE
$SIZE
  batch_size: max
  boundary_min: $MIN_BATCH
  boundary_max: $MAX_BATCH
  boundary_max_probes: $MAX_PROBES
  boundary_probe_steps: $PROBE_STEPS
  boundary_probe_process: shared
  boundary_guide: peak_memory
  boundary_resolution: $RESOLUTION
  cudnn_benchmark: $CUDNN_BENCHMARK
timeout_s: $TIMEOUT_S
measure:
  max_time_s: $MEASURE_S
  min_time_s: 0
  max_steps: 6
  min_steps: 2
  min_warmup_steps: 1
YAML
"$DL" --db "$DB" plan "$MATRIX" || exit 2
start=$(date +%s)
if [ -n "$RESUME" ]; then
  echo "== dlbench run --resume $RESUME --runner-reuse (at most ${DEADLINE_S} s)"
  timeout -s INT -k 30 "$DEADLINE_S" "$DL" --db "$DB" run "$MATRIX" --resume "$RESUME" --runner-reuse --out "$OUT/run"
else
  echo "== dlbench run $MATRIX --runner-reuse (at most ${DEADLINE_S} s)"
  timeout -s INT -k 30 "$DEADLINE_S" "$DL" --db "$DB" run "$MATRIX" --runner-reuse --out "$OUT/run"
fi
rc=$?
echo "== dlbench run took $(($(date +%s) - start)) s (exit $rc)"
echo "== dlbench show"
"$DL" --db "$DB" show latest
echo "== the table (also $OUT/memory-caps.tsv)"
"$DL" --db "$DB" export latest --format json > "$OUT/memory-caps.json" || exit 1
python3 - "$OUT/memory-caps.json" "$OUT/memory-caps.tsv" <<'PY'
import json, sys

run = json.load(open(sys.argv[1]))
def metric(c, name):
    m = c.get("metrics", {}).get(name)
    return None if m is None else m.get("value")
def gib(b):
    return "-" if b is None else f"{b / 2**30:.2f}"
rows = [["cap", "model", "scenario", "precision", "outcome", "largest", "first_failing", "end",
         "peak_GiB", "reserved_GiB", "probes", "guided", "processes", "cell_s"]]
for c in run["cells"]:
    p, s = c["params"], c.get("extras", {}).get("boundary_search", {})
    probes = s.get("probes", [])
    pids = {json.dumps(q.get("process", {}).get("pid")) for q in probes}
    rp = c.get("extras", {}).get("runner_process", {})
    if "pid" in rp:
        pids.add(json.dumps(rp["pid"]))
    wall = metric(c, "cell_wall_s")
    rows.append([p.get("memory_cap", "-"), p.get("model"), p.get("scenario"), p.get("precision"), c["outcome"],
                 str(s.get("found")), str(s.get("first_failing")), str(s.get("end")),
                 gib(metric(c, "device_allocated_peak_bytes") or metric(c, "host_peak_rss_bytes")),
                 gib(metric(c, "device_reserved_peak_bytes")), str(len(probes)),
                 str(sum(1 for q in probes if q.get("guided"))), str(len(pids)),
                 "-" if wall is None else f"{wall:.1f}"])
with open(sys.argv[2], "w") as f:
    for r in rows:
        f.write("\t".join(r) + "\n")
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for r in rows:
    print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
print(f"{len(rows) - 1} searches stored; {sum(len(c.get('extras', {}).get('boundary_search', {}).get('probes', [])) for c in run['cells'])} probes")
PY
if [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ] || [ "$rc" -eq 137 ]; then
  id=$("$DL" --db "$DB" export latest --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["id"])' 2>/dev/null)
  echo "== not every search finished within ${DEADLINE_S} s: continue with RESUME=$id $0"
fi
echo "== done: $OUT"
