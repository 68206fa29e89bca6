#!/usr/bin/env bash
# bench/gpu/memory-caps.sh's plumbing on the CPU (DRY=1). First the lane lists alone (LIST=1) for
# two models, train and infer, in model lanes (4: a cap and model each, each 2 GiB lane after its
# model's 1 GiB lane) and cell lanes (8: each 2 GiB lane after the same cell's 1 GiB lane). Then a
# run in cell lanes: caps 1 and 2 GiB, models ResNet-50 and MobileNetV2 (base_width 4, training,
# fp32): four lanes. Checked: the two 1 GiB lanes start together, a cell's 2 GiB lane starts only
# after its 1 GiB lane ended, each lane runs its own cap and cell through --only, the 2 GiB lanes'
# stores got the 1 GiB lane of the same cell copied in and their searches started from its fits
# (boundary_seed: other_caps), the table lists the four searches once, and a RESUME=1 after a
# completed table runs nothing again. The GPU table costs device time; a broken script should be
# found here.
# Usage: memory_caps_dry_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The script's own PROBE_STEPS (2); RESOLUTION 0.1 (the GPU table's 0.02 takes three or four more
# probes a search, which only cost time here); a deadline that a loaded 2-core machine meets.
# Session 29's CI and session 30's runs here saw the 2 GiB search find nothing: a probe's first
# step took longer than MEASURE_S under load and the measure block's max_time_s ended the probe
# after one step, so a batch "fit" that the second step could not; the search's probes now run
# their steps whatever max_time_s says (docs/memory.md).
run() {
  DRY=1 MODELS="resnet50 mobilenet_v2" SCENARIOS=train PRECISIONS=fp32 BUILD="$build" OUT="$out" DEADLINE_S=480 \
    RESOLUTION=0.1 LANE_BY=cell bash "$src/bench/gpu/memory-caps.sh" "$@"
}
fail() { echo "memory_caps_dry_test: $*" >&2; exit 1; }

lanes() {  # $1: LANE_BY; the lane lines of LIST=1 for two models, train and infer
  DRY=1 LIST=1 LANE_BY="$1" MODELS="resnet50 mobilenet_v2" SCENARIOS="train infer" PRECISIONS=fp32 BUILD="$build" \
    OUT="$out/list-$1" bash "$src/bench/gpu/memory-caps.sh" | grep '^lane '
}
expected_model="lane 1GiB-resnet50: --only memory_cap=1GiB,model=resnet50; 2560 MiB; after: none
lane 1GiB-mobilenet_v2: --only memory_cap=1GiB,model=mobilenet_v2; 2560 MiB; after: none
lane 2GiB-resnet50: --only memory_cap=2GiB,model=resnet50; 3584 MiB; after: 1GiB-resnet50
lane 2GiB-mobilenet_v2: --only memory_cap=2GiB,model=mobilenet_v2; 3584 MiB; after: 1GiB-mobilenet_v2"
got=$(lanes model) || fail "LIST=1 LANE_BY=model failed"
[ "$got" = "$expected_model" ] || { printf '%s\n' "$got"; fail "model lanes are not as expected"; }
got=$(lanes cell) || fail "LIST=1 LANE_BY=cell failed"
[ "$(printf '%s\n' "$got" | wc -l)" = 8 ] || { printf '%s\n' "$got"; fail "there should be 8 cell lanes"; }
printf '%s\n' "$got" | grep -q -x "lane 2GiB-mobilenet_v2-infer-fp32: --only memory_cap=2GiB,model=mobilenet_v2,scenario=infer,precision=fp32; 3584 MiB; after: 1GiB-mobilenet_v2-infer-fp32" ||
  { printf '%s\n' "$got"; fail "a 2 GiB cell lane should wait for the same cell's 1 GiB lane alone"; }
[ "$(printf '%s\n' "$got" | grep -c 'after: none$')" = 4 ] || { printf '%s\n' "$got"; fail "the four 1 GiB cell lanes wait for none"; }

run > "$out/first.txt" 2>&1 || { cat "$out/first.txt"; fail "the script failed"; }
rows=$(tail -n +2 "$out/memory-caps.tsv" | wc -l)
if [ "$rows" != 4 ]; then
  cat "$out/memory-caps.tsv" "$out/memory-caps.log"
  for f in "$out"/lane-*.log; do echo "--- $f"; tail -n 15 "$f"; done
  fail "the table has $rows searches, not 4"
fi
# The scheduler's order, from its log: both 1 GiB lanes start before any lane ends; each 2 GiB lane
# starts after its cell's 1 GiB lane ended.
order=$(grep -E '^(==|--) \+[0-9]+ s: lane ' "$out/memory-caps.log" | sed -E 's/^.. \+[0-9]+ s: lane ([^ ]+) (starts|ended).*/\1 \2/')
line_of() { printf '%s\n' "$order" | grep -n -x "$1" | cut -d: -f1; }
first_end=$(printf '%s\n' "$order" | grep -n ' ended$' | head -1 | cut -d: -f1)
for m in resnet50 mobilenet_v2; do
  s1=$(line_of "1GiB-$m-train-fp32 starts") e1=$(line_of "1GiB-$m-train-fp32 ended") s2=$(line_of "2GiB-$m-train-fp32 starts")
  if ! { [ -n "$s1" ] && [ -n "$e1" ] && [ -n "$s2" ] && [ "$s1" -lt "$first_end" ] && [ "$e1" -lt "$s2" ]; }; then
    printf '%s\n' "$order"
    fail "lane order for $m: 1 GiB should start before any lane ends and end before 2 GiB starts"
  fi
done
python3 - "$build/bin/dlbench" "$out" <<'PY' || fail "the lanes' records are not as expected"
import json, subprocess, sys
dl, out = sys.argv[1], sys.argv[2]
def latest(db):
    text = subprocess.run([dl, "--db", db, "export", "latest", "--format", "json"], check=True,
                          capture_output=True, text=True).stdout
    return json.loads(text)
for m in ("resnet50", "mobilenet_v2"):
    cell = f"model={m},scenario=train,precision=fp32"
    small, large = latest(f"{out}/cap-1GiB-{m}-train-fp32.db"), latest(f"{out}/cap-2GiB-{m}-train-fp32.db")
    assert small["run"]["selection"]["only"] == [f"memory_cap=1GiB,{cell}"], small["run"]["selection"]
    assert large["run"]["selection"]["only"] == [f"memory_cap=2GiB,{cell}"], large["run"]["selection"]
    s1 = small["cells"][0]["extras"]["boundary_search"]
    s2 = large["cells"][0]["extras"]["boundary_search"]
    assert s1["seeds"]["points"] == 0 and s1["seeds"]["from"] == [], s1["seeds"]
    assert s2["seeds"]["points"] > 0, s2["seeds"]
    assert [f["memory_cap"] for f in s2["seeds"]["from"]] == ["1GiB"], s2["seeds"]
    assert s2["probes"][0]["from_seeds"] is True, s2["probes"][0]
    # On failure, what each search did.
    def said(c, s):
        return json.dumps({"outcome": c["outcome"], "message": c.get("message"), "end": s.get("end"),
                           "probes": [(q.get("batch_size"), q.get("outcome"), q.get("measured", False),
                                       q.get("message")) for q in s["probes"]]})
    assert s1["found"] is not None and s2["found"] is not None and s2["found"] >= s1["found"], (
        s1["found"], s2["found"], said(small["cells"][0], s1), said(large["cells"][0], s2))
    # The 2 GiB store holds the copied 1 GiB run of the same cell and its own: the one before is that.
    runs = subprocess.run([dl, "--db", f"{out}/cap-2GiB-{m}-train-fp32.db", "export", "latest~1", "--format", "json"],
                          check=True, capture_output=True, text=True).stdout
    assert json.loads(runs)["run"]["selection"]["only"] == [f"memory_cap=1GiB,{cell}"]
PY
grep -q "seeded by" "$out/memory-caps.log" || fail "show does not say the 2 GiB search was seeded"

RESUME=1 run > "$out/again.txt" 2>&1 || { cat "$out/again.txt"; fail "RESUME=1 failed"; }
[ "$(grep -c '^== .*: its run has every search stored; nothing to resume' "$out/again.txt")" = 4 ] ||
  { cat "$out/again.txt"; fail "RESUME=1 after a completed table ran a lane again"; }
echo "memory_caps_dry_test: ok"
