#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs (apt), builds, and
# runs every CTest test (unit, end-to-end, torch on the CPU, browser and Prometheus tests), then
# the hardening stages (docs/testing.md): ASan+UBSan over the unit and null-runner e2e tests, each
# fuzz target for a bounded time, TSan over the threaded tests. GPU-only tests carry the label
# "gpu" and skip themselves without a GPU. The PostgreSQL tests start a throwaway cluster
# (scripts/pg-test-cluster.sh, the CTest fixture "postgres"); the setup installs the server, so
# here they must run rather than skip (DLBENCH_REQUIRE_POSTGRES=1).
#
# Arguments go to the first stage's ctest. DLBENCH_STAGES picks
# stages; every stage runs even when an earlier one failed, and the exit status is non-zero if any
# did. DLBENCH_FUZZ_SECONDS sets the time per fuzz target (scripts/fuzz.sh). DLBENCH_PRUNE_BUILD=1
# (set by .ci/run) deletes build/'s intermediate files after its build (scripts/prune-build.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --with-browser-tests || exit 1
export DLBENCH_REQUIRE_POSTGRES=1

# Four stages by default (docs/testing.md has each one's time on a fresh 2-core machine; the
# quickstart stage is opt-in, see below);
# DLBENCH_STAGES picks some, e.g. DLBENCH_STAGES=suite for the plain build and suite alone.
stages="${DLBENCH_STAGES:-suite asan fuzz tsan}"
failed=()
summary=()
# Each stage's output also goes to .test-logs/STAGE.log; a failed stage's digest (the failed tests
# and their output, or the lines naming an error: scripts/failure-digest.sh) is printed again at the
# very end, where a CI service that keeps only a long log's tail still shows it.
logs_dir="$PWD/.test-logs"
rm -rf "$logs_dir" && mkdir -p "$logs_dir"
run_stage() {
  local name="$1"
  shift
  local start status=0 tee_pid i
  start=$(date +%s)
  echo "=== stage $name: $*"
  # Process substitution, not a pipe: the stage runs in this shell (start_prebuilds sets
  # prebuild_pid for the later stages).
  "$@" > >(tee "$logs_dir/$name.log") 2>&1 || status=$?
  tee_pid=$!
  # tee ends when every writer has closed the pipe; something a stage left running could hold it,
  # so the wait is bounded (the log is complete up to the stage's end either way).
  for i in $(seq 1 100); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.1; done
  if [ "$status" = 0 ]; then
    summary+=("$name: passed in $(( $(date +%s) - start )) s")
  else
    summary+=("$name: FAILED after $(( $(date +%s) - start )) s (log .test-logs/$name.log)")
    failed+=("$name")
  fi
}
# The sanitizer stages' builds, started once the suite's build is done and run at idle priority
# (SCHED_IDLE, else nice 19) while check-tidy and the suite's tests run: the suite's tests leave
# much of the 2 cores idle (end-to-end tests run one at a time and mostly wait on their runners), and
# a task at idle priority runs only on a core nothing else wants, so the tests keep the CPU they ask
# for (docs/testing.md "The sanitizer builds beside the suite's tests"). Each build writes its log and
# exit status under .prebuild/; the stage that needs a tree waits for its status, then runs
# scripts/sanitize.sh as before, whose own build then has nothing or little left to do (and shows
# the error, where the background build failed). DLBENCH_PREBUILD=0 turns this off.
prebuild_dir="$PWD/.prebuild"
prebuild_pid=""
start_prebuilds() {
  [ "${DLBENCH_PREBUILD:-1}" = 1 ] || return 0
  local kinds=() k
  for k in $stages; do
    case "$k" in
      asan | fuzz) [[ " ${kinds[*]} " == *" address "* ]] || kinds+=(address) ;;
      tsan) kinds+=(thread) ;;
    esac
  done
  [ ${#kinds[@]} -gt 0 ] || return 0
  local idle=(nice -n 19)
  if chrt --idle 0 true 2>/dev/null; then idle=(chrt --idle 0); fi
  rm -rf "$prebuild_dir" && mkdir -p "$prebuild_dir"
  echo "test.sh: building the ${kinds[*]} sanitizer tree(s) at idle priority (${idle[*]}) beside the suite; logs in .prebuild/"
  # Its own output goes to a file, so it holds no stage's log open (run_stage waits for that).
  (
    for k in "${kinds[@]}"; do
      DLBENCH_SANITIZE_BUILD_ONLY=1 "${idle[@]}" scripts/sanitize.sh "$k" > "$prebuild_dir/$k.log" 2>&1
      echo $? > "$prebuild_dir/$k.rc"
    done
  ) > "$prebuild_dir/prebuild.log" 2>&1 &
  prebuild_pid=$!
}
# after_prebuild KIND COMMAND...: waits for the background build of KIND's tree, if one was
# started (the wait counts in the stage's time), says how it ended, then runs COMMAND.
after_prebuild() {
  local kind="$1" start
  shift
  if [ -n "$prebuild_pid" ]; then
    start=$(date +%s)
    while [ ! -e "$prebuild_dir/$kind.rc" ] && kill -0 "$prebuild_pid" 2>/dev/null; do sleep 2; done
    if [ -e "$prebuild_dir/$kind.rc" ]; then
      echo "test.sh: the $kind tree's background build: status $(cat "$prebuild_dir/$kind.rc"), waited $(( $(date +%s) - start )) s for it (log .prebuild/$kind.log)"
    fi
  fi
  "$@"
}
suite() {
  # House rules (docs/development.md): clang-tidy on the lines changed since scripts/tidy-base.txt;
  # clang-format drift is the CTest test SourcesMatchClangFormat.
  # A clone too shallow to hold the base commit cannot be judged (check-tidy exit 2): say so loudly
  # and go on; findings (exit 1) fail the stage.
  scripts/build.sh || return 1
  # CI (.ci/run) builds in build/ once: its object files, archives and precompiled headers (about
  # 3.2 of its 4.9 GB) then only take the disk the sanitizer trees are built on.
  if [ "${DLBENCH_PRUNE_BUILD:-0}" = 1 ]; then scripts/prune-build.sh build || return 1; fi
  start_prebuilds
  local tidy=0
  python3 scripts/check-tidy.py --build build -j "${DLBENCH_JOBS:-$(nproc)}" || tidy=$?
  if [ "$tidy" = 2 ]; then
    echo "test.sh: WARNING: clang-tidy could not check this clone (see the line above); not judged" >&2
  elif [ "$tidy" != 0 ]; then
    return 1
  fi
  (cd build && ctest --output-on-failure --timeout 900 -j "${DLBENCH_TEST_JOBS:-2}" "$@")
}
# The README's claim that the quickstart's 16 cells come out valid on a quiet 2-core machine (issue
# 18): the quickstart alone, every cell required ok and valid, up to three attempts. Opt-in
# (DLBENCH_STAGES=quickstart): on a quiet machine it passed at the first attempt five times out of
# five, but run straight after the suite's ctest the same machine gave 13, 14 and 14 of 16 (cells
# `shifted` 10-15% mid-window with no clock, power or load change the monitor saw), so as a
# default stage it would fail CI on the machine's state, not on the matrix (docs/testing.md). Since
# session 13 the quickstart measures a disturbed cell again (measure.retry_disturbed: 2); with other
# builds beside it, 3 of 5 runs were still not all-valid (cells contended at every attempt), so it
# stays opt-in until it is measured after a CI run with nothing beside it.
quickstart() {
  local bin=build/tests/quickstart_e2e_test attempt
  if [ ! -x "$bin" ]; then
    echo "test.sh: quickstart: $bin was not built (no LibTorch?); nothing to check"
    return 0
  fi
  for attempt in 1 2 3; do
    echo "== quickstart, attempt $attempt of 3: every cell ok and valid"
    if DLBENCH_QUICKSTART_REQUIRE_VALID=1 "$bin"; then return 0; fi
  done
  return 1
}
# The disk: free space before and what the trees took after (session 20's CI ended "No space left
# on device"; docs/testing.md "Disk").
disk_report() {
  local trees=() t
  for t in build build-asan build-tsan; do [ ! -d "$t" ] || trees+=("$t"); done
  local sizes="no build tree yet"
  if [ ${#trees[@]} -gt 0 ]; then
    sizes=$(du -smc "${trees[@]}" 2>/dev/null | awk '{printf "%s%s %s MiB", (NR > 1 ? ", " : ""), $2, $1}')
  fi
  echo "test.sh: disk $1: $(df -Pm . | awk 'NR == 2 {print $4}') MiB free on the clone's filesystem; $sizes"
}
disk_report "at the start"
for stage in $stages; do
  case "$stage" in
    suite) run_stage suite suite "$@" ;;
    quickstart) run_stage quickstart quickstart ;;
    asan) run_stage asan after_prebuild address scripts/sanitize.sh address ;;
    fuzz) run_stage fuzz after_prebuild address scripts/fuzz.sh ;;
    tsan) run_stage tsan after_prebuild thread scripts/sanitize.sh thread ;;
    *) echo "unknown stage '$stage' (expected suite, quickstart, asan, fuzz, tsan)" >&2; exit 2 ;;
  esac
done
[ -z "$prebuild_pid" ] || wait "$prebuild_pid" 2>/dev/null
disk_report "at the end"
# CI's trees are not built in again: leave the disk as little of them as the programs need, in
# case the machine keeps a finished clone.
if [ "${DLBENCH_PRUNE_BUILD:-0}" = 1 ]; then
  for tree in build-asan build-tsan; do
    [ ! -f "$tree/CMakeCache.txt" ] || scripts/prune-build.sh "$tree" || true
  done
fi
# Tests the asan stage passed only at a second attempt (scripts/sanitize.sh), named again here.
for log in "$logs_dir"/*.log; do
  [ -f "$log" ] || continue
  awk '/^sanitize.sh: passed at the second attempt only/ {on = 1; print; next} on && /^  / {print; next} {on = 0}' "$log"
done
for stage in "${failed[@]}"; do
  echo "=== what failed in stage $stage (scripts/failure-digest.sh .test-logs/$stage.log)"
  scripts/failure-digest.sh "$logs_dir/$stage.log" || true
done
printf '%s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ]
