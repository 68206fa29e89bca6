#!/usr/bin/env bash
# bench/gpu/memory-caps.sh's plumbing on the CPU (DRY=1): two lanes one after another (LANES=1), 1 GiB
# then 2 GiB, one cell each (ResNet-50 at base_width 4 training, fp32). Checked: both lanes run their
# own cap through --only, the 2 GiB lane's store got the 1 GiB lane's run copied in and its search
# started from its fits (boundary_seed: other_caps), the table lists both searches once, and a
# RESUME=1 after a completed table runs nothing again. The GPU table costs device time; a broken
# script should be found here.
# Usage: memory_caps_dry_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {
  DRY=1 LANES=1 MODELS=resnet50 SCENARIOS=train PRECISIONS=fp32 BUILD="$build" OUT="$out" DEADLINE_S=280 \
    bash "$src/bench/gpu/memory-caps.sh" "$@"
}
fail() { echo "memory_caps_dry_test: $*" >&2; exit 1; }

run > "$out/first.txt" 2>&1 || { cat "$out/first.txt"; fail "the script failed"; }
rows=$(tail -n +2 "$out/memory-caps.tsv" | wc -l)
[ "$rows" = 2 ] || { cat "$out/memory-caps.tsv"; fail "the table has $rows searches, not 2"; }
python3 - "$build/bin/dlbench" "$out" <<'PY' || fail "the lanes' records are not as expected"
import json, subprocess, sys
dl, out = sys.argv[1], sys.argv[2]
def latest(db):
    text = subprocess.run([dl, "--db", db, "export", "latest", "--format", "json"], check=True,
                          capture_output=True, text=True).stdout
    return json.loads(text)
small, large = latest(f"{out}/cap-1GiB.db"), latest(f"{out}/cap-2GiB.db")
assert small["run"]["selection"]["only"] == ["memory_cap=1GiB"], small["run"]["selection"]
assert large["run"]["selection"]["only"] == ["memory_cap=2GiB"], large["run"]["selection"]
s1 = small["cells"][0]["extras"]["boundary_search"]
s2 = large["cells"][0]["extras"]["boundary_search"]
assert s1["seeds"]["points"] == 0 and s1["seeds"]["from"] == [], s1["seeds"]
assert s2["seeds"]["points"] > 0, s2["seeds"]
assert [f["memory_cap"] for f in s2["seeds"]["from"]] == ["1GiB"], s2["seeds"]
assert s2["probes"][0]["from_seeds"] is True, s2["probes"][0]
assert s1["found"] is not None and s2["found"] is not None and s2["found"] >= s1["found"], (s1["found"], s2["found"])
# The 2 GiB store holds the copied 1 GiB run and its own; the runs listed are the two.
runs = subprocess.run([dl, "--db", f"{out}/cap-2GiB.db", "export", "latest~1", "--format", "json"], check=True,
                      capture_output=True, text=True).stdout
assert json.loads(runs)["run"]["selection"]["only"] == ["memory_cap=1GiB"]
PY
grep -q "seeded by" "$out/memory-caps.log" || fail "show does not say the 2 GiB search was seeded"

RESUME=1 run > "$out/again.txt" 2>&1 || { cat "$out/again.txt"; fail "RESUME=1 failed"; }
[ "$(grep -c '^== .*: its run has every search stored; nothing to resume' "$out/again.txt")" = 2 ] ||
  { cat "$out/again.txt"; fail "RESUME=1 after a completed table ran a lane again"; }
echo "memory_caps_dry_test: ok"
