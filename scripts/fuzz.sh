#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan, in build-asan/) and runs each for a
# bounded time over its seed corpus (docs/testing.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   SECONDS per target (default $DLBENCH_FUZZ_SECONDS or 45),
#                                           TARGETs among matrix frames progress http tfrecord
#                                           procfs
#                                           (default all)
#
# Targets run DLBENCH_JOBS (default nproc) at a time, each fuzzer single-threaded, so on 2 cores
# six targets of 45 s take about 3 x 45 s.
#
# New inputs a run finds go to build-asan/fuzz-corpus/<target>/ (not the tree); a crash is saved as
# build-asan/fuzz-artifacts/<target>/crash-* and fails the script: copy it to
# fuzz/regressions/<target>/ (fuzz_regression_test then replays it forever) and fix the bug.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${DLBENCH_FUZZ_SECONDS:-45}"
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(matrix frames progress http tfrecord procfs)
jobs="${DLBENCH_JOBS:-$(nproc)}"

scripts/configure-asan.sh >/dev/null
cmake --build build-asan -j "$jobs" --target fuzzers

export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# One target: its corpus and artifacts folders, its log in build-asan/fuzz-logs/; exit status 1 on
# a finding (or a fuzzer that had to be killed).
fuzz_one() {
  local target="$1"
  local corpus="build-asan/fuzz-corpus/$target"
  local artifacts="build-asan/fuzz-artifacts/$target"
  mkdir -p "$corpus" "$artifacts" build-asan/fuzz-logs
  # -max_len: a matrix file or an HTTP request of 64 KiB exercises every path a larger one does.
  # -timeout: one input taking longer is a hang. -rss_limit_mb: a leak or a runaway allocation.
  # The outer SIGKILL bound: a fuzzer that hit its memory limit was seen never to exit.
  timeout -s KILL "$((seconds + 120))" "build-asan/bin/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "fuzz/corpus/$target" "fuzz/regressions/$target" > "build-asan/fuzz-logs/$target.log" 2>&1
}

status=0
pids=()
names=()
# Wait for the oldest running target, print its log's tail and record its result.
reap() {
  local target="${names[0]}"
  if wait "${pids[0]}"; then
    echo "== fuzz $target: passed ($(grep -ho 'stat::number_of_executed_units: *[0-9]*' "build-asan/fuzz-logs/$target.log" | grep -o '[0-9]*$' || echo '?') inputs)"
  else
    tail -40 "build-asan/fuzz-logs/$target.log"
    echo "fuzz $target FAILED: the input is in build-asan/fuzz-artifacts/$target/; copy it to fuzz/regressions/$target/ and fix" >&2
    status=1
  fi
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
}
for target in "${targets[@]}"; do
  [ "${#pids[@]}" -lt "$jobs" ] || reap
  echo "== fuzz $target for ${seconds} s"
  fuzz_one "$target" &
  pids+=("$!")
  names+=("$target")
done
while [ "${#pids[@]}" -gt 0 ]; do reap; done
exit "$status"
