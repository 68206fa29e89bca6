#!/usr/bin/env bash
# The sanitizer stages of the test command (docs/testing.md). Builds a sanitized tree and runs the
# tests that stage covers; exit status non-zero when a build, a test or a sanitizer fails.
#
#   scripts/sanitize.sh address   clang, ASan+UBSan (and libFuzzer coverage, so scripts/fuzz.sh
#                                 reuses the tree) in build-asan/, without the LibTorch runner and
#                                 benchmarks: every unit test and every null-runner e2e test
#   scripts/sanitize.sh thread    gcc, TSan in build-tsan/: the monitor, orchestrator and HTTP
#                                 server tests
#
# Extra arguments go to ctest (address) or to each test binary (thread).
# Environment: DLBENCH_JOBS (build parallelism, default nproc), DLBENCH_TEST_JOBS (ctest -j,
# default 2), DLBENCH_SANITIZE_BUILD_ONLY=1 (configure and build the stage's tree, run nothing:
# what scripts/test.sh runs at idle priority while the suite's tests run).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-}"
shift || true
jobs="${DLBENCH_JOBS:-$(nproc)}"
# The suppression files name the issue each entry waits for; empty ones are the goal.
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$PWD/scripts/sanitizers/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

case "$kind" in
  address)
    scripts/configure-asan.sh
    cmake --build build-asan -j "$jobs"
    [ "${DLBENCH_SANITIZE_BUILD_ONLY:-0}" = 1 ] && exit 0
    cd build-asan
    # Unit tests and the null-runner end-to-end tests; the LibTorch runner is not built here, the
    # browser and Prometheus tests exercise those programs rather than dlbench's memory, and the
    # Python client's pytest files (PythonClient.*) test the client, in the normal suite.
    # MemoryE2E runs its runners under memory_cap, an RLIMIT_DATA of a few GiB, and an
    # instrumented dlbench-null cannot start under one (ASan maps terabytes of shadow memory at
    # start: "AddressSanitizer: internal allocator is out of memory"); it runs in the suite stage.
    # BoundaryProcessE2E's three searching tests run every probe under a memory_cap too (session 13's
    # CI; SeedsFromOtherCapsStartAtTheirLine since session 26).
    # So does ReuseE2E.CellsThatDifferAtProcessStartDoNotShare, whose last cell has a memory_cap
    # ("ReserveShadowMemoryRange failed ... Perhaps you're using ulimit -v").
    #
    # A test that fails is run once more (--repeat until-pass:2): under ASan every process runs two
    # to three times slower than in the suite stage, which runs the same tests without a second
    # attempt, and session 21's landing failed here once on CI's machine without a failure
    # anywhere else (the part of the log kept did not name the test). A sanitizer's report in a
    # failed attempt's output still fails the stage, and every test that passed only at its second
    # attempt is named at the end ("sanitize.sh: passed at the second attempt only").
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    status=0
    ctest --output-on-failure --timeout 900 -j "${DLBENCH_TEST_JOBS:-2}" --repeat until-pass:2 \
      -L 'unit|e2e' -LE 'torch|browser|prometheus|gpu' \
      -E '^(PythonClient[.]|MemoryE2E[.]|ReuseE2E[.]CellsThatDifferAtProcessStartDoNotShare$|BoundaryProcessE2E[.](SharedAndGuidedSearchesFindWhatFreshBisectionFinds|UnderRunnerReuseSharedSearchesShareOneProcess|SeedsFromOtherCapsStartAtTheirLine)$)' \
      "$@" 2>&1 | tee "$log" || status=$?
    # With --output-on-failure the log holds the output of failed attempts only.
    if grep -E -q 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
      echo "sanitize.sh: a sanitizer reported an error in a failed attempt (above): the stage fails" >&2
      grep -E -n 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log" | head -20 >&2
      status=1
    fi
    retried=$(awk '/Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception)|Test +#[0-9]+: .*(Exit code|Subprocess aborted|SEGFAULT|Child aborted)/ {
                     sub(/^.*Test +#[0-9]+: /, ""); sub(/ .*$/, ""); print }' "$log" | sort -u)
    if [ -n "$retried" ] && [ "$status" = 0 ]; then
      echo "sanitize.sh: passed at the second attempt only (look at each: a timing flake under ASan, or a fault that shows sometimes):"
      sed 's/^/  /' <<< "$retried"
    fi
    exit "$status"
    ;;
  thread)
    # TSan needs every thread's code instrumented; the tests named here are those with threads of
    # their own (the monitor's sampler thread, the orchestrator's watchdog and readers, serve).
    targets=(monitor_test monitor_analysis_test orchestrator_test report_server_test dlbench-null)
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLBENCH_SANITIZE=thread \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DDLBENCH_WITH_TORCH=OFF -DDLBENCH_BUILD_BENCH=OFF ${DLBENCH_CMAKE_ARGS:-}
    cmake --build build-tsan -j "$jobs" --target "${targets[@]}"
    [ "${DLBENCH_SANITIZE_BUILD_ONLY:-0}" = 1 ] && exit 0
    # A high ASLR entropy (vm.mmap_rnd_bits > 28) breaks TSan's fixed memory layout on some
    # kernels; setarch -R runs the tests without address randomisation.
    run=()
    if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R); fi
    status=0
    for t in monitor_test monitor_analysis_test orchestrator_test report_server_test; do
      echo "== TSan: $t"
      "${run[@]}" "build-tsan/tests/$t" "$@" || status=1
    done
    exit "$status"
    ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [args...]" >&2
    exit 2
    ;;
esac
