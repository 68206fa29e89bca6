#!/usr/bin/env bash
# bench/gpu/lane_replay.py on a hand-made table: one model (resnet50), its four cells under 16 and
# 24 GiB, 10 s each; a lane's start 4 s. Hand-computed:
# - model lanes: 16 GiB = 4 + 4 x 10 = 44 s, then 24 GiB the same: 88 s, chain 88 s; on a 200,000 MiB
#   device (share 180,000 MiB) the memory-time bound is 44 x (17,920 + 26,112) / 180,000 = 11 s;
# - cell lanes (14 s each) on a device whose share holds everything: the four 16 GiB lanes at once,
#   then the four 24 GiB lanes: 28 s, each cell's chain 28 s, bound 4 x 14 x 44,032 / 180,000 = 14 s;
# - on a 20,000 MiB device (share 18,000 MiB: one 16 GiB lane of 17,920 MiB at a time, a 24 GiB lane
#   of 26,112 MiB only alone): the eight one after another, 112 s; memory-time bound
#   (4 x 14 x 17,920 + 4 x 14 x 26,112) / 18,000 = 137 s.
# Usage: lane_replay_test.sh SOURCE_DIR
set -euo pipefail
src=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "lane_replay_test: $*" >&2; exit 1; }
{
  printf 'cap\tmodel\tscenario\tprecision\tprobes_s\tcell_s\n'
  for cap in 16GiB 24GiB; do
    for sc in train infer; do
      for p in bf16 fp32; do printf '%s\tresnet50\t%s\t%s\t7.0\t3.0\n' "$cap" "$sc" "$p"; done
    done
  done
} > "$dir/table.tsv"
replay() { python3 "$src/bench/gpu/lane_replay.py" "$dir/table.tsv" --models resnet50 --device-mib "$1"; }
out=$(replay 200000) || fail "the replay failed"
grep -qx 'LANE_BY=model: 2 lanes, replayed 88 s; longest chain 88 s; memory-time bound 11 s' <<<"$out" ||
  { echo "$out"; fail "model lanes on a large device"; }
grep -qx 'LANE_BY=cell: 8 lanes, replayed 28 s; longest chain 28 s; memory-time bound 14 s' <<<"$out" ||
  { echo "$out"; fail "cell lanes on a large device"; }
out=$(replay 20000) || fail "the replay failed"
grep -qx 'LANE_BY=cell: 8 lanes, replayed 112 s; longest chain 28 s; memory-time bound 137 s' <<<"$out" ||
  { echo "$out"; fail "cell lanes one at a time"; }
grep -q '0 missing' <<<"$out" || { echo "$out"; fail "the table has every search"; }
if python3 "$src/bench/gpu/lane_replay.py" "$dir/table.tsv" --device-mib 0 2> "$dir/err"; then fail "a device of 0 MiB was taken"; fi
grep -q 'device-mib > 0' "$dir/err" || { cat "$dir/err"; fail "the error does not say what is expected"; }
echo "lane_replay_test: ok"
