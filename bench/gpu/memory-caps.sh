#!/usr/bin/env bash
# The GPU caps table of issue 13 (docs/memory.md "Boundary search"): for resnet50, mobilenet_v2,
# bert_base and ssd_mobilenet, train and infer, bf16 and fp32, the largest batch that fits on the
# whole device and under memory_cap 16, 24 and 40 GiB (T4, L4/A10, A100-40GB sizes): 64 searches
# through one `dlbench run`, then `dlbench show` and the table (largest batch, first failing, the
# measured peak at the batch found, probes, processes, the probes' wall and setup time (each
# probe's `times`), the measured cell's wall time).
#
# How it stays within minutes: every search has boundary_probe_process: shared (its probes and
# its measured run go on in one dlbench-torch process, also after a CUDA `oom`, which leaves the
# process usable) and boundary_guide: peak_memory (after two probes that fit, it probes where the
# line through their peaks meets the cap, then each side), and each cap and model (on a device that
# holds six 16 GiB lanes at once: each cap and cell) is a run of its own with --runner-reuse (a
# lane), so a lane's searches share one process: 16 process starts (52 with cell lanes), not one
# per probe. A cap is a per-process limit, so lanes
# whose caps fit in the device together run at once, each model's (cell's) lanes from the smallest cap up
# (its later lanes seeded by the earlier ones' fits), the whole device alone at the end; see
# "Lanes" below. "The whole device" is memory_cap = the device's memory
# as nvidia-smi reports it (fraction 1), so that search is guided too. cudnn_benchmark is false:
# every new batch size would autotune every convolution again (the H200 run of 2026-12-06 took 77
# and 198 s for two ResNet-50 training searches with it); cuDNN's heuristics pick each
# convolution's algorithm without trying them, so a probe costs its steps, not a tuning pass. The
# largest batch found is then the one that fits with the heuristics' workspaces, which may differ
# by a few samples from an autotuned run's (CUDNN_BENCHMARK=1 turns autotuning back on).
#
# Time, measured: H100, 2026-12-06 (docs/evidence/h100-memory-caps-2026-12-06.log), one lane,
# boundary_resolution 0: 6 searches (71 probes) in 216 s, about 3 s a probe and 36 s a search, so
# the 64 searches one after another would take about 40 minutes. boundary_resolution 0.02 (the
# default here) stops a search once its bracket is within 2%, and the lanes run three columns at
# once on an H200. The run has a hard deadline: DEADLINE_S (default 420) for all the lanes, after
# which each gets SIGINT (every finished search is stored; its run is marked interrupted), and
# RESUME=1 with the same OUT continues each lane's run (a lane whose run completed runs nothing;
# a search the deadline cut starts from the probes it had finished, docs/memory.md "An interrupted
# search", since 79d55f8).
# The table shows what finished. With the build in place the script ends within DEADLINE_S + about
# 60 s.
# Measured again on an H100 (2026-12-06, session 23, docs/benchmarks.md): the whole-device column
# alone (CAPS_GIB= FULL=1), 16 searches and 121 probes, in 471 + 132 s (one search cut by the
# deadline and redone on RESUME=1); SSD's two inference searches under 40 GiB in 128 s.
# On an H200 (2026-12-07, session 25): the whole-device column (143,771 MiB), 16 searches and 80
# probes, in 421 + 171 + 70 s (DEADLINE_S 420, then RESUME=1 twice).
# On an H100 (2026-12-07, session 26, seeds): CAPS_GIB=40 FULL=1 SCENARIOS=train, the 40 GiB lane in
# 376 s, then the whole-device lane seeded by it in 55 + 197 s (DEADLINE_S 430, then RESUME=1): 44
# probes and 175 s of probing where session 23's unseeded training searches took 85 and 273 s.
# On an H100 (2026-12-07, session 27, lanes per cap and model, seeds): the three capped columns, 47
# of 48 searches in 395 + 471 s (DEADLINE_S 394, then RESUME=1 with 470); SSD-MobileNet's lanes the
# longest (334 s under 16 GiB); the whole-device lanes did not start.
# On an H100 (2026-12-07, session 28, the search of fef9385, model lanes): every capped search (48) in
# 393 + 208 s (DEADLINE_S 391, then RESUME=1 with 215), 2.4 probes a seeded search; SSD-MobileNet's
# chain again the longest (601 s). bench/gpu/lane_replay.py puts that table's cell lanes on an H200
# at 305 s.
# On an H200 (2026-12-07, session 29, cell lanes, up to seven at once): every capped search (48) in
# 89 + 418 s (DEADLINE_S 89, then RESUME=1 with 500; call 1's cut lanes started again): not 305 s,
# because the searches took 1.6-2.2x as long beside more lanes (processes take turns on the GPU).
# The whole-device SSD-MobileNet lane then ran out of time twice (82 and 74 s) in its measured run.
#
# Usage (on the GPU machine; builds with scripts/build-gpu.sh when BUILD lacks the programs):
#   bench/gpu/memory-caps.sh
#   env: OUT (default /tmp/dlbench-memory-caps), BUILD (default build-gpu), DEADLINE_S (420),
#   MODELS (ssd_mobilenet mobilenet_v2 bert_base resnet50: the order lanes start in under each cap,
#   the slowest first, so that the longest chains of lanes begin early), SCENARIOS (train infer),
#   PRECISIONS (bf16 fp32), CAPS_GIB (16 24 40; set but empty:
#   no caps, the whole device alone), FULL (1: add the whole device), MIN_BATCH (8), MAX_BATCH (4096), MAX_PROBES (14), PROBE_STEPS (2),
#   MEASURE_S (15: the measured run at the batch found stops at 4 steps or this many seconds,
#   whichever comes first; SSD-MobileNet's inference steps at thousands of samples take 3-6 s, and
#   with 4 s its cells ended `invalid`, one measured step), TIMEOUT_S (90, a runner's timeout),
#   CUDNN_BENCHMARK (0: no autotuning, see above; 1: autotune), RESOLUTION (boundary_resolution,
#   default 0.02: each answer within 2% below the boundary, in fewer probes; 0: exact),
#   LANES (auto: lanes that fit together run at once; 1: one after another), LANE_SHARE_PCT (90: the
#   share of the device's memory the running lanes' caps may sum to), LANE_CONTEXT_MIB (1536: added
#   per lane for its CUDA context and library workspaces, which the cap does not cover).
#   SEED (boundary_seed: other_caps, the default, or none): a lane's searches start from the fits of
#   the same cells in the same model's lanes under the smaller caps, which end before it starts (its
#   store gets theirs copied in with `dlbench db copy`), so the whole-device column starts where the
#   caps' peaks say. With none, lanes wait only for room on the device.
#   RESUME: any non-empty value (1): continue the lanes' runs stored under OUT.
#   LANE_BY (auto, cell or model; see "Lanes" below). LIST=1: print the lanes (each one's --only,
#   the memory it is counted for, the lanes it waits for) and exit without running any.
#   Output: OUT/memory-caps.yaml (every cap; a lane runs its own with --only
#   memory_cap=CAP,model=MODEL[,scenario=S,precision=P]), OUT/cap-LANE.db (one store per lane),
#   OUT/lane-LANE.log,
#   OUT/memory-caps.tsv and .log (the scheduler's log: when each lane started and ended).
#   DRY=1: the plumbing on a CPU build: device cpu, tiny models (base_width 4, hidden_size 32,
#   heads 2, layers 1, image_size 32, seq_len 16), CAPS_GIB "1 2", no whole-device column, BUILD default
#   build, DEADLINE_S 300; fewer cells with MODELS, SCENARIOS and PRECISIONS.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DRY="${DRY:-0}"
if [ "$DRY" = 1 ]; then
  BUILD="${BUILD:-$ROOT/build}"
  DEVICE=cpu
  CAPS_GIB="${CAPS_GIB-1 2}"
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
  CAPS_GIB="${CAPS_GIB-16 24 40}"
  FULL="${FULL:-1}"
  DEADLINE_S="${DEADLINE_S:-420}"
  SIZE=""
fi
OUT="${OUT:-/tmp/dlbench-memory-caps}"
MODELS="${MODELS:-ssd_mobilenet mobilenet_v2 bert_base resnet50}"
SCENARIOS="${SCENARIOS:-train infer}"
PRECISIONS="${PRECISIONS:-bf16 fp32}"
MIN_BATCH="${MIN_BATCH:-8}"
MAX_BATCH="${MAX_BATCH:-4096}"
MAX_PROBES="${MAX_PROBES:-14}"
PROBE_STEPS="${PROBE_STEPS:-2}"
MEASURE_S="${MEASURE_S:-15}"
TIMEOUT_S="${TIMEOUT_S:-90}"
RESUME="${RESUME:-}"
RESOLUTION="${RESOLUTION:-0.02}"
SEED="${SEED:-other_caps}"
case "$SEED" in none | other_caps) ;; *) echo "memory-caps: SEED is none or other_caps (got '$SEED')" >&2; exit 2 ;; esac
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
mkdir -p "$OUT"
exec > >(tee -a "$OUT/memory-caps.log") 2>&1
echo "== $(date -u +%FT%TZ) memory-caps (DRY=$DRY)"
CAPS=""
for c in $CAPS_GIB; do CAPS="$CAPS ${c}GiB"; done
FULL_CAP=""
total_mib=""
if [ "$DEVICE" = cuda ]; then
  nvidia-smi -L || true
  total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -d ' ')
  case "$total_mib" in
    '' | *[!0-9]*)
      echo "memory-caps: no device memory from nvidia-smi ('$total_mib'): the whole-device column is left out and the caps run one at a time"
      total_mib="" ;;
    *) [ "$FULL" = 1 ] && FULL_CAP="${total_mib}MiB" ;;
  esac
fi

# Lanes: each cap and model (or each cap and cell, LANE_BY below) is a `dlbench run` of its own
# (`--only memory_cap=CAP,model=MODEL[,scenario=S,precision=P]`, its store $OUT/cap-LANE.db, LANE
# being CAP-MODEL[-S-P]), and lanes run at the same time while the device holds them. A
# cap is a per-process limit (the caching allocator's fraction, docs/memory.md), so a search's
# answer does not depend on its neighbours as long as the device holds all of them: a lane is
# admitted while the sum of the running lanes' caps plus LANE_CONTEXT_MIB per lane (a CUDA context
# and cuDNN/cuBLAS workspaces outside the cap) stays under LANE_SHARE_PCT % of the device's memory.
# A lane under a cap starts once the same model's (or cell's) lanes under the smaller caps have ended
# (with SEED=other_caps: their fits seed its searches), and the whole-device lanes each run alone, last.
# The scheduler starts a lane as soon as one ends (no waves to wait out): the probes' cost is
# mostly host work (process start, CUDA and cuDNN set-up, per-shape work), which 16 cores share
# well. What sharing does change is speed: the measured run at the batch found is slower than
# alone (the throughput columns of this table are not figures to quote), and each cell's warnings
# name the other processes on the GPU (the sharing check). LANES=1 runs the lanes one after another.
#
# LANE_BY: how much a capped lane holds. `model`: a cap and model (its four searches one after
# another in one process); `cell`: a cap, model, scenario and precision (`--only` names all four),
# so that a model's searches under one cap run side by side: SSD-MobileNet's and MobileNetV2's
# probes cost seconds of host work each whatever the batch (docs/memory.md), and their four
# searches one after another were the table's longest chain (session 27: 334 s under 16 GiB). A cell
# lane pays its own process start, and its seeds are that cell's lanes under the smaller caps.
# `auto` (the default): cell lanes where the device holds at least six of the smallest cap's lanes at
# once (an H200: seven 16 GiB lanes), else model lanes (an 80 GiB device holds four, which model
# lanes already fill). The whole-device lanes are per model whatever LANE_BY says: they run alone,
# so finer lanes would only add process starts.
LANES="${LANES:-auto}"
LANE_BY="${LANE_BY:-auto}"
LANE_SHARE_PCT="${LANE_SHARE_PCT:-90}"
LANE_CONTEXT_MIB="${LANE_CONTEXT_MIB:-1536}"
case "$LANES" in auto | 1) ;; *) echo "memory-caps: LANES is auto or 1 (got '$LANES')" >&2; exit 2 ;; esac
case "$LANE_BY" in auto | cell | model) ;; *) echo "memory-caps: LANE_BY is auto, cell or model (got '$LANE_BY')" >&2; exit 2 ;; esac
for v in "$LANE_SHARE_PCT" "$LANE_CONTEXT_MIB"; do
  case "$v" in '' | *[!0-9]*) echo "memory-caps: LANE_SHARE_PCT and LANE_CONTEXT_MIB are whole numbers (got '$v')" >&2; exit 2 ;; esac
done
cap_mib() {
  case "$1" in
    *GiB) echo $(( ${1%GiB} * 1024 )) ;;
    *MiB) echo "${1%MiB}" ;;
  esac
}
# The lanes in the order they are started: caps from the smallest, models in MODELS' order, the
# whole device last. LANE_ALONE: runs with no other lane (the whole device).
ALL_CAPS=$(echo "$CAPS $FULL_CAP" | xargs)
if [ -z "$ALL_CAPS" ]; then
  echo "memory-caps: nothing to search: CAPS_GIB is empty and there is no whole-device column (FULL=$FULL)" >&2
  exit 2
fi
share_mib=$(( ${total_mib:-0} * LANE_SHARE_PCT / 100 ))
if [ "$LANE_BY" = auto ]; then
  LANE_BY=model
  smallest=$(for cap in $CAPS; do cap_mib "$cap"; done | sort -n | head -1)
  [ -n "$smallest" ] && [ "$share_mib" -ge $(( 6 * (smallest + LANE_CONTEXT_MIB) )) ] && LANE_BY=cell
fi
# LANE_CELL: the lane's scenario and precision (a cell lane), empty for a model lane; LANE_GROUP:
# what a lane's seeds share with it (the cell, or the model).
LANE_ID=() LANE_CAP=() LANE_MODEL=() LANE_CELL=() LANE_GROUP=() LANE_NEED=() LANE_ALONE=()
add_lane() {  # $1: cap, $2: model, $3: scenario and precision as "S P", or empty
  local cap=$1 model=$2 sp=${3:-}
  if [ -n "$sp" ]; then
    set -- $sp
    LANE_ID+=("$cap-$model-$1-$2") LANE_CELL+=("scenario=$1,precision=$2") LANE_GROUP+=("$model-$1-$2")
  else
    LANE_ID+=("$cap-$model") LANE_CELL+=("") LANE_GROUP+=("$model")
  fi
  LANE_CAP+=("$cap") LANE_MODEL+=("$model")
  LANE_NEED+=($(( $(cap_mib "$cap") + LANE_CONTEXT_MIB )))
  if [ "$cap" = "$FULL_CAP" ]; then LANE_ALONE+=(1); else LANE_ALONE+=(0); fi
}
for cap in $ALL_CAPS; do
  for model in $MODELS; do
    if [ "$LANE_BY" = cell ] && [ "$cap" != "$FULL_CAP" ]; then
      for scenario in $SCENARIOS; do
        for precision in $PRECISIONS; do add_lane "$cap" "$model" "$scenario $precision"; done
      done
    else
      add_lane "$cap" "$model"
    fi
  done
done

# One matrix holds every cap (so boundary_seed: other_caps finds the same cell under the others);
# each lane runs its cap and model with --only memory_cap=CAP,model=MODEL.
write_matrix() {  # $1: the file
  cat > "$1" <<YAML
name: gpu-memory-caps
runner: torch
matrix:
  memory_cap: $(list "$ALL_CAPS")
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
  boundary_seed: $SEED
  cudnn_benchmark: $CUDNN_BENCHMARK
timeout_s: $TIMEOUT_S
measure:
  max_time_s: $MEASURE_S
  min_time_s: 0
  max_steps: 4
  min_steps: 2
  min_warmup_steps: 1
YAML
}

# One lane: a fresh run, or with RESUME the rest of the lane's interrupted run (a lane whose run
# finished runs nothing again). Its output goes to $OUT/lane-ID.log, its exit code to .rc.
# The lane's own run in its store: the latest run whose selection is its --only (a store may also
# hold the other lanes' runs, copied in as seeds). Prints its status; nothing when the lane has not
# begun a run.
lane_status() {  # $1: the lane's --only, $2: the store
  "$DL" --db "$2" export latest --format json 2>/dev/null | python3 -c '
import json, sys
run = json.load(sys.stdin)["run"]
if run.get("selection", {}).get("only") == [sys.argv[1]]:
    print(run.get("status", ""))' "$1"
}
lane_only() { echo "memory_cap=${LANE_CAP[$1]},model=${LANE_MODEL[$1]}${LANE_CELL[$1]:+,${LANE_CELL[$1]}}"; }
# Whether lane $2's searches may seed lane $1's: the same cell (or model) under another cap; a
# model lane (the whole device) takes every lane of its model.
seeds_lane() {  # $1, $2: lanes' indexes
  [ "$1" != "$2" ] && [ "${LANE_MODEL[$1]}" = "${LANE_MODEL[$2]}" ] &&
    { [ -z "${LANE_CELL[$1]}" ] || [ "${LANE_GROUP[$1]}" = "${LANE_GROUP[$2]}" ]; }
}

run_lane() {  # $1: the lane's index, $2: seconds left
  local i=$1 left=$2 matrix="$OUT/memory-caps.yaml" id=${LANE_ID[$1]}
  local db="$OUT/cap-$id.db" log="$OUT/lane-$id.log" only
  only=$(lane_only "$i")
  local status=""
  [ -n "$RESUME" ] && [ -f "$db" ] && status=$(lane_status "$only" "$db")
  if [ "$status" = completed ]; then
    echo "== $id: its run has every search stored; nothing to resume" | tee "$log"
    echo 0 > "$log.rc"
    return
  fi
  # boundary_seed: other_caps reads this store: the lanes of the same cell (or model) under the
  # other caps that have ended, copied in (`dlbench db copy` is idempotent, so a resumed lane copies
  # only what is new).
  : > "$log"
  if [ "$SEED" = other_caps ]; then
    local j
    for j in "${!LANE_ID[@]}"; do
      seeds_lane "$i" "$j" || continue
      [ -f "$OUT/cap-${LANE_ID[$j]}.db" ] && [ -f "$OUT/lane-${LANE_ID[$j]}.log.done" ] &&
        "$DL" --db "$db" db copy "$OUT/cap-${LANE_ID[$j]}.db" "$db" >> "$log" 2>&1
    done
  fi
  if [ -n "$status" ]; then
    echo "== $id: dlbench run --resume latest --runner-reuse (at most $left s)" >> "$log"
    timeout -s INT -k 30 "$left" "$DL" --db "$db" run "$matrix" --resume latest --runner-reuse --out "$OUT/run-$id" >> "$log" 2>&1
  else
    echo "== $id: dlbench run --only $only --runner-reuse (at most $left s)" >> "$log"
    "$DL" --db "$db" plan "$matrix" --only "$only" >> "$log" 2>&1 || { echo 2 > "$log.rc"; return; }
    timeout -s INT -k 30 "$left" "$DL" --db "$db" run "$matrix" --only "$only" --runner-reuse --out "$OUT/run-$id" >> "$log" 2>&1
  fi
  echo $? > "$log.rc"
}
echo "== ${#LANE_ID[@]} lanes (device memory ${total_mib:-unknown} MiB, lanes share at most $share_mib MiB; LANES=$LANES, LANE_BY=$LANE_BY):"
echo "   ${LANE_ID[*]}"
if [ "${LIST:-0}" = 1 ]; then
  for i in "${!LANE_ID[@]}"; do
    after=""
    for (( j = 0; j < i; j++ )); do seeds_lane "$i" "$j" && after="$after ${LANE_ID[$j]}"; done
    alone=""
    [ "${LANE_ALONE[$i]}" = 1 ] && alone=" alone"
    echo "lane ${LANE_ID[$i]}: --only $(lane_only "$i"); ${LANE_NEED[$i]} MiB$alone; after:${after:- none}"
  done
  exit 0
fi
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
write_matrix "$OUT/memory-caps.yaml"

# The scheduler: start every waiting lane that may start (its lanes under smaller caps ended, when
# seeds are on; the device holds it beside the running ones; a whole-device lane or LANES=1:
# nothing else running), then wait for any lane to end, until none waits or runs.
may_start() {  # $1: the lane's index; uses state, used_mib, running
  local i=$1 j
  if [ "$SEED" = other_caps ]; then
    for (( j = 0; j < i; j++ )); do
      seeds_lane "$i" "$j" && [ "${state[$j]}" != ended ] && return 1
    done
  fi
  [ "$running" = 0 ] && return 0
  [ "$LANES" = 1 ] || [ "${LANE_ALONE[$i]}" = 1 ] && return 1
  [ "$DEVICE" = cpu ] && return 0
  [ -n "$total_mib" ] && [ $(( used_mib + LANE_NEED[i] )) -le "$share_mib" ]
}
start=$(date +%s)
rc=0
interrupted=0
state=() used_mib=0 running=0
declare -A PID_LANE=()
for i in "${!LANE_ID[@]}"; do state[i]=waiting; done
while :; do
  # A whole-device lane waits while any capped lane waits or runs.
  for i in "${!LANE_ID[@]}"; do
    [ "${state[$i]}" = waiting ] || continue
    if [ "${LANE_ALONE[$i]}" = 1 ]; then
      for j in "${!LANE_ID[@]}"; do
        [ "${LANE_ALONE[$j]}" = 0 ] && [ "${state[$j]}" != ended ] && continue 2
      done
    fi
    may_start "$i" || continue
    left=$(( DEADLINE_S - ($(date +%s) - start) ))
    if [ "$left" -le 5 ]; then
      echo "== the deadline (${DEADLINE_S} s) came before lane ${LANE_ID[$i]}"
      state[i]=ended interrupted=1
      continue
    fi
    echo "== +$(( $(date +%s) - start )) s: lane ${LANE_ID[$i]} starts (at most $left s; $(( running + 1 )) running)"
    run_lane "$i" "$left" &
    PID_LANE[$!]=$i
    state[i]=running used_mib=$(( used_mib + LANE_NEED[i] )) running=$(( running + 1 ))
  done
  [ "$running" = 0 ] && break
  # wait names the lanes: a bare wait would also wait for the log's tee (a process substitution).
  ended_pid=""
  wait -n -p ended_pid "${!PID_LANE[@]}"
  [ -n "$ended_pid" ] || continue
  i=${PID_LANE[$ended_pid]}
  unset "PID_LANE[$ended_pid]"
  state[i]=ended used_mib=$(( used_mib - LANE_NEED[i] )) running=$(( running - 1 ))
  id=${LANE_ID[$i]}
  lrc=$(cat "$OUT/lane-$id.log.rc" 2>/dev/null || echo 2)
  echo "-- +$(( $(date +%s) - start )) s: lane $id ended, exit $lrc"
  tail -4 "$OUT/lane-$id.log" | sed 's/^/   /' | cut -c1-220
  case "$lrc" in 0) ;; 124 | 130 | 137) interrupted=1; rc=$lrc ;; *) [ "$rc" = 0 ] && rc=$lrc ;; esac
  # Its searches may seed the same model's later lanes (run_lane copies its store into theirs).
  touch "$OUT/lane-$id.log.done"
done
echo "== the searches took $(($(date +%s) - start)) s in all (exit $rc)"
echo "== dlbench show, lane by lane"
: > "$OUT/memory-caps.json.list"
for i in "${!LANE_ID[@]}"; do
  id=${LANE_ID[$i]} db="$OUT/cap-${LANE_ID[$i]}.db"
  [ -f "$db" ] || continue
  [ -n "$(lane_status "$(lane_only "$i")" "$db")" ] || continue
  "$DL" --db "$db" show latest
  "$DL" --db "$db" export latest --format json > "$OUT/memory-caps-$id.json" && echo "$OUT/memory-caps-$id.json" >> "$OUT/memory-caps.json.list"
done
echo "== the table (also $OUT/memory-caps.tsv)"
python3 - "$OUT/memory-caps.json.list" "$OUT/memory-caps.tsv" <<'PY'
import json, sys

cells = []
for path in open(sys.argv[1]).read().split():
    cells += json.load(open(path))["cells"]
def metric(c, name):
    m = c.get("metrics", {}).get(name)
    return None if m is None else m.get("value")
def gib(b):
    return "-" if b is None else f"{b / 2**30:.2f}"
rows = [["cap", "model", "scenario", "precision", "outcome", "largest", "first_failing", "end",
         "peak_GiB", "reserved_GiB", "probes", "guided", "measured_oom", "processes", "probes_s", "probe_setup_s",
         "cell_s"]]
def probe_sum(probes, name):
    # The probes' own times (each probe's `times`, since session 19); "-" for older stores.
    vals = [q.get("times", {}).get(name) for q in probes]
    return "-" if not vals or any(v is None for v in vals) else f"{sum(vals):.1f}"
for c in cells:
    p, s = c["params"], c.get("extras", {}).get("boundary_search", {})
    probes = s.get("probes", [])
    # The search's own probes; a measured run at the value found that ended oom (and stepped down)
    # is a row of the list too, counted apart.
    searched = [q for q in probes if not q.get("measured")]
    pids = {json.dumps(q.get("process", {}).get("pid")) for q in probes}
    rp = c.get("extras", {}).get("runner_process", {})
    if "pid" in rp:
        pids.add(json.dumps(rp["pid"]))
    wall = metric(c, "cell_wall_s")
    rows.append([p.get("memory_cap", "-"), p.get("model"), p.get("scenario"), p.get("precision"), c["outcome"],
                 str(s.get("found")), str(s.get("first_failing")), str(s.get("end")),
                 gib(metric(c, "device_allocated_peak_bytes") or metric(c, "host_peak_rss_bytes")),
                 gib(metric(c, "device_reserved_peak_bytes")), str(len(searched)),
                 str(sum(1 for q in searched if q.get("guided"))), str(len(probes) - len(searched)), str(len(pids)),
                 probe_sum(probes, "wall_s"), probe_sum(probes, "setup_s"),
                 "-" if wall is None else f"{wall:.1f}"])
with open(sys.argv[2], "w") as f:
    for r in rows:
        f.write("\t".join(r) + "\n")
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for r in rows:
    print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
all_probes = [q for c in cells for q in c.get("extras", {}).get("boundary_search", {}).get("probes", [])]
measured = sum(1 for q in all_probes if q.get("measured"))
print(f"{len(rows) - 1} searches stored; {len(all_probes) - measured} probes; {measured} measured runs ended oom")
PY
if [ "$interrupted" = 1 ]; then
  echo "== not every search finished within ${DEADLINE_S} s: continue with RESUME=1 OUT=$OUT $0 (each lane resumes its own run)"
fi
echo "== done: $OUT"
