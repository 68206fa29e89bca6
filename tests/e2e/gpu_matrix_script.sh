#!/usr/bin/env bash
# scripts/gpu-matrix.sh on a machine without GPUs: GPUS names two pretend GPUs and the null runner
# does the work, so what is checked is the script's own logic: one shard per GPU, each its own
# database and run, the two together the whole matrix, and the same command again resuming each
# shard (here: nothing left to run) instead of starting new runs.
# Usage: gpu_matrix_script.sh REPO_ROOT BUILD_DIR
set -euo pipefail
ROOT=$1
export BUILD_DIR=$2
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
cat > "$DIR/m.yaml" <<'Y'
name: gpu-matrix-script
runner: null
matrix:
  model: [a, b, c, d, e]
  step_ms: [0.3]
measure:
  min_steps: 20
  min_time_s: 0.1
  max_time_s: 0.5
Y
fail() { echo "FAIL: $*" >&2; exit 1; }
count_cells() { "$BUILD_DIR/bin/dlbench" --db "$1" export 1 --format csv | tail -n +2 | wc -l; }

GPUS="0 1" "$ROOT/scripts/gpu-matrix.sh" "$DIR/m.yaml" "$DIR/out" > "$DIR/first.log" 2>&1 || { cat "$DIR/first.log"; fail "first pass"; }
[ -s "$DIR/out/shard-1-of-2.db" ] && [ -s "$DIR/out/shard-2-of-2.db" ] || fail "one database per shard"
a=$(count_cells "$DIR/out/shard-1-of-2.db"); b=$(count_cells "$DIR/out/shard-2-of-2.db")
[ "$a" -eq 3 ] && [ "$b" -eq 2 ] || fail "shards hold $a and $b cells, expected 3 and 2 (round robin over 5)"

GPUS="0 1" "$ROOT/scripts/gpu-matrix.sh" "$DIR/m.yaml" "$DIR/out" > "$DIR/second.log" 2>&1 || { cat "$DIR/second.log"; fail "second pass"; }
grep -q -- "--resume 1" "$DIR/second.log" || { cat "$DIR/second.log"; fail "the second pass did not resume"; }
for k in 1 2; do
  runs=$("$BUILD_DIR/bin/dlbench" --db "$DIR/out/shard-$k-of-2.db" runs | grep -cE '^ *[0-9]+ ' || true)
  [ "$runs" -eq 1 ] || fail "shard $k has $runs runs after resuming, expected 1"
done
[ "$(count_cells "$DIR/out/shard-1-of-2.db")" -eq 3 ] || fail "resuming changed shard 1's cells"

# A binary that cannot start is named, with what to do.
mkdir -p "$DIR/broken/bin"
printf '#!/bin/sh\necho "error while loading shared libraries: libx.so" >&2\nexit 127\n' > "$DIR/broken/bin/dlbench"
chmod +x "$DIR/broken/bin/dlbench"
if BUILD_DIR="$DIR/broken" GPUS=0 "$ROOT/scripts/gpu-matrix.sh" "$DIR/m.yaml" "$DIR/out2" > "$DIR/broken.log" 2>&1; then
  fail "a binary that cannot start was run"
fi
grep -q "run scripts/build-gpu.sh again" "$DIR/broken.log" || { cat "$DIR/broken.log"; fail "no hint"; }
echo "gpu-matrix.sh: shards, databases, resume and the broken-binary hint all as expected"
