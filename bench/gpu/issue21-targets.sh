#!/usr/bin/env bash
# Issue 21's H200 targets that are still unmeasured, in one device call (docs/benchmarks.md):
#   1. whole-step CUDA-graph training, ResNet-50 bs64 bf16: dlbench's `cuda_graph: true` against
#      its eager cell (target >= 1.35x) and against Python's whole-step capture measured in the
#      same call (target >= 1.0x): bench/gpu/train-graph.yaml, then bench/gpu/train_graph_peer.py
#      timed over all its steps and again synchronised after each step (as dlbench times a step);
#   2. the launch-bound reference cells with `cuda_graph: true` (each to a 1% CI within 10 s;
#      ResNet-50 bs1 bf16 inference p50 <= 1.0 ms): bench/gpu/launch-bound.yaml;
#   3. the monitor's cost at 10 Hz on this GPU, each option set (target under 1% of a core):
#      dlbench-bench-monitor;
#   4. (part `bert`, not in the default set) BERT-base inference bs64 bf16 against Hugging Face's
#      BertForSequenceClassification in the same call (target >= 1.0x): bench/gpu/bert-parity.yaml,
#      then bench/gpu/bert_profile.py (HF with the all-ones mask and the project's Python model),
#      HF without a mask, and the same again, so each side is measured twice, in turn.
# Each part runs whatever happened to the one before; each prints its wall time. The stores go
# into $OUT/issue21-stores.tar.gz (the device tool brings back few files), the log to
# $OUT/issue21.log.
#
# Usage (on the GPU machine, after scripts/fetch-gpu-debs.sh here and .gpu-deps carried):
#   bench/gpu/issue21-targets.sh [PART...]     PART: graph, launch, monitor, bert (default the first three)
#   env: OUT (default /tmp/dlbench-issue21), BUILD (default build-gpu; built with
#   scripts/build-gpu.sh when its programs are missing), PYTHON (default python3),
#   PEER_STEPS (train_graph_peer.py's timed steps, default 200)
# Bounded: train-graph's 2 cells at most 20 s of steps each plus start-up, the peer twice (about
# 20-30 s each), launch-bound's 12 cells at most 10 s each plus start-up, the monitor benchmark
# about two minutes: about 6-7 minutes of device time after the build (394 s with the build on an
# H200, session 25, before the synchronised peer run was added).
# Run whole (graph launch monitor) on an H200 on 2026-12-07, and `graph` again in a later call
# (docs/benchmarks.md "H200 runs of 2026-12-07 (session 25)"); `graph` again in session 29 (113 s),
# after the monitor benchmark run alone with 10 s windows.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-/tmp/dlbench-issue21}"
PYTHON="${PYTHON:-python3}"
PEER_STEPS="${PEER_STEPS:-200}"
case "$PEER_STEPS" in
  '' | *[!0-9]*) echo "issue21-targets: PEER_STEPS is a whole number (got '$PEER_STEPS')" >&2; exit 2 ;;
esac
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(graph launch monitor)
for part in "${parts[@]}"; do
  case "$part" in
    graph | launch | monitor | bert) ;;
    *) echo "issue21-targets: unknown part '$part' (expected graph, launch, monitor or bert)" >&2; exit 2 ;;
  esac
done
DL="$BUILD/bin/dlbench"
if [ ! -x "$DL" ] || [ ! -x "$BUILD/bin/dlbench-torch" ] || [ ! -x "$BUILD/bin/dlbench-bench-monitor" ]; then
  echo "== building into $BUILD (scripts/build-gpu.sh)"
  if ! BUILD_DIR="$BUILD" PYTHON="$PYTHON" BUILD_TARGETS="dlbench dlbench-torch dlbench-bench-monitor" \
    "$ROOT/scripts/build-gpu.sh"; then
    echo "issue21-targets: scripts/build-gpu.sh failed" >&2
    exit 2
  fi
fi
mkdir -p "$OUT"
exec > >(tee "$OUT/issue21.log") 2>&1
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv || true
"$DL" --version || true

status=0
timed() {
  local name="$1" start rc=0
  shift
  start=$(date +%s)
  echo
  echo "== $name: $*"
  "$@" || rc=$?
  echo "== $name: exit $rc after $(( $(date +%s) - start )) s"
  [ "$rc" = 0 ] || status=1
}
# One run of MATRIX into its own store, then the stored run as `dlbench show` prints it (also
# when the run exited non-zero: a cell that ended unsupported or invalid is still shown).
run_matrix() {
  local matrix="$1" db="$2" rc=0
  "$DL" run "$matrix" --db "$db" --out "$OUT/out-$(basename "$db" .db)" || rc=$?
  "$DL" --db "$db" show latest || true
  return "$rc"
}

for part in "${parts[@]}"; do
  case "$part" in
    graph)
      timed "train-graph (dlbench: eager and cuda_graph)" run_matrix "$ROOT/bench/gpu/train-graph.yaml" "$OUT/train-graph.db"
      timed "train-graph (Python: eager and torch.cuda.graph)" \
        "$PYTHON" "$ROOT/bench/gpu/train_graph_peer.py" --batch-size 64 --steps "$PEER_STEPS"
      # dlbench synchronises the device after every step before it stamps the time; the same loop
      # in Python, so the graph comparison is like for like (0.2-0.3% apart on an H100, session 23).
      timed "train-graph (Python, synchronised after each step as dlbench times it)" \
        "$PYTHON" "$ROOT/bench/gpu/train_graph_peer.py" --batch-size 64 --steps "$PEER_STEPS" --sync-each-step
      ;;
    launch)
      timed "launch-bound cells with cuda_graph" run_matrix "$ROOT/bench/gpu/launch-bound.yaml" "$OUT/launch-bound.db"
      ;;
    monitor)
      timed "monitor at 10 Hz (dlbench-bench-monitor)" "$BUILD/bin/dlbench-bench-monitor"
      ;;
    bert)
      for round in 1 2; do
        timed "bert-parity $round (dlbench)" run_matrix "$ROOT/bench/gpu/bert-parity.yaml" "$OUT/bert-parity-$round.db"
        timed "bert-parity $round (Python: HF with the all-ones mask, the project's model)" \
          "$PYTHON" "$ROOT/bench/gpu/bert_profile.py" --models hf,own --mask ones --profile-steps 5
        timed "bert-parity $round (Python: HF without a mask)" \
          "$PYTHON" "$ROOT/bench/gpu/bert_profile.py" --models hf --mask none --profile-steps 5
      done
      ;;
  esac
done

stores=()
for db in "$OUT"/*.db; do [ -f "$db" ] && stores+=("$(basename "$db")"); done
if [ ${#stores[@]} -gt 0 ]; then
  tar -C "$OUT" -czf "$OUT/issue21-stores.tar.gz" "${stores[@]}" && echo "== stores: $OUT/issue21-stores.tar.gz (${stores[*]})"
fi
exit "$status"
