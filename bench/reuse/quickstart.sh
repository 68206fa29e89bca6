#!/bin/bash
# examples/quickstart.yaml with and without `dlbench run --runner-reuse`, alternating (reuse, plain,
# reuse, plain), into a fresh database; then the per-cell table and the timeline sums
# (docs/benchmarks.md "One runner process for several cells").
# Usage: bench/reuse/quickstart.sh [OUT_DIR]   (default /tmp/dlbench-reuse-bench; BIN=build/bin)
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$here/build/bin}
out=${1:-/tmp/dlbench-reuse-bench}
mkdir -p "$out"
db=$out/q.db
rm -f "$db"
for mode in reuse plain reuse plain; do
  extra=""
  [ "$mode" = reuse ] && extra="--runner-reuse"
  echo "== $mode start: $(uptime)"
  s=$(date +%s.%N)
  "$bin/dlbench" --db "$db" run "$here/examples/quickstart.yaml" --out "$out/logs" $extra >"$out/$mode.$s.out" 2>&1
  rc=$?
  e=$(date +%s.%N)
  echo "== $mode rc=$rc wall_s=$(echo "$e - $s" | bc) end: $(uptime)"
done
python3 "$here/bench/reuse/summarize.py" "$bin/dlbench" "$db" 1,2,3,4 reuse,plain,reuse,plain
