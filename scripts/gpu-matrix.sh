#!/usr/bin/env bash
# Runs one matrix on every GPU of this host at once: one `dlbench run --shard K/N` per GPU, pinned
# with CUDA_VISIBLE_DEVICES. Each shard is its own run in its own database, DIR/shard-K-of-N.db,
# so an interrupted shard resumes on its own; run the same command again and each shard whose
# database already holds a run continues it (--resume 1), a finished one says so and stops.
# Cells see only their GPU, and the monitor counts only that GPU's power and energy for them
# (the runner names it by UUID: docs/monitoring.md).
#
# Usage: scripts/gpu-matrix.sh MATRIX.yaml DIR [extra `dlbench run` arguments...]
# Env:   BUILD_DIR (default build-gpu), GPUS (default: every GPU nvidia-smi lists, e.g. "0 1"),
#        DEADLINE_S (optional: each shard gets SIGTERM after this many seconds, which marks its
#        run interrupted and resumable; for time-limited sessions).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 2 ]; then
  echo "usage: $0 MATRIX.yaml DIR [extra dlbench run arguments...]" >&2
  exit 2
fi
MATRIX=$1
DIR=$2
shift 2
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"
DLBENCH="$BUILD/bin/dlbench"
[ -x "$DLBENCH" ] || { echo "gpu-matrix: $DLBENCH not built (scripts/build-gpu.sh)" >&2; exit 2; }
# The binaries link libraries build-gpu.sh unpacked into .gpu-deps/root; carrying .gpu-deps to the
# machine again replaces that folder, and only build-gpu.sh (quick when nothing changed) restores it.
if ! "$DLBENCH" --version > /dev/null 2>&1; then
  echo "gpu-matrix: $DLBENCH does not start:" >&2
  "$DLBENCH" --version 2>&1 | head -3 >&2
  echo "gpu-matrix: run scripts/build-gpu.sh again (it unpacks the .gpu-deps libraries the binaries use)" >&2
  exit 2
fi
if [ -z "${GPUS:-}" ]; then
  GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr '\n' ' ')
fi
read -r -a gpus <<< "$GPUS"
n=${#gpus[@]}
[ "$n" -gt 0 ] || { echo "gpu-matrix: no GPU found (nvidia-smi lists none; set GPUS)" >&2; exit 2; }
mkdir -p "$DIR"
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on these machines

pids=()
for k in $(seq 1 "$n"); do
  gpu=${gpus[$((k - 1))]}
  db="$DIR/shard-$k-of-$n.db"
  resume=()
  if [ -s "$db" ] && "$DLBENCH" --db "$db" runs 2>/dev/null | grep -qE '^ *1 '; then resume=(--resume 1); fi
  cmd=("$DLBENCH" --db "$db" run "$MATRIX" --shard "$k/$n" --out "$DIR/cells-$k" "${resume[@]}" "$@")
  if [ -n "${DEADLINE_S:-}" ]; then cmd=(timeout -s TERM "$DEADLINE_S" "${cmd[@]}"); fi
  echo "gpu-matrix: GPU $gpu: ${cmd[*]}"
  CUDA_VISIBLE_DEVICES=$gpu "${cmd[@]}" > "$DIR/shard-$k-of-$n.log" 2>&1 &
  pids+=($!)
done
status=0
for k in $(seq 1 "$n"); do
  wait "${pids[$((k - 1))]}"
  rc=$?
  echo "gpu-matrix: shard $k/$n exit $rc (log $DIR/shard-$k-of-$n.log)"
  tail -3 "$DIR/shard-$k-of-$n.log"
  [ "$rc" -eq 0 ] || status=$rc
done
exit "$status"
