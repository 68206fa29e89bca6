#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan+UBSan, in build-asan/) and runs each for a
# bounded time over its seed corpus (docs/testing.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   SECONDS per target (default $DLBENCH_FUZZ_SECONDS or 45),
#                                           TARGETs among matrix frames progress http (default all)
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
[ ${#targets[@]} -gt 0 ] || targets=(matrix frames progress http)
jobs="${DLBENCH_JOBS:-$(nproc)}"

scripts/configure-asan.sh >/dev/null
cmake --build build-asan -j "$jobs" --target fuzzers

export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
status=0
for target in "${targets[@]}"; do
  corpus="build-asan/fuzz-corpus/$target"
  artifacts="build-asan/fuzz-artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  echo "== fuzz $target for ${seconds} s"
  # -max_len: a matrix file or an HTTP request of 64 KiB exercises every path a larger one does.
  # -timeout: one input taking longer is a hang. -rss_limit_mb: a leak or a runaway allocation.
  # The outer SIGKILL bound: a fuzzer that hit its memory limit was seen never to exit.
  if ! timeout -s KILL "$((seconds + 120))" "build-asan/bin/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=25 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$corpus" "fuzz/corpus/$target" "fuzz/regressions/$target"; then
    echo "fuzz $target FAILED: the input is in $artifacts/; copy it to fuzz/regressions/$target/ and fix" >&2
    status=1
  fi
done
exit "$status"
