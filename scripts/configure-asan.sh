#!/usr/bin/env bash
# Configures build-asan/: clang with ASan+UBSan and libFuzzer coverage, no LibTorch runner and no
# benchmarks. Shared by scripts/sanitize.sh address (tests) and scripts/fuzz.sh (fuzzers), so the
# libraries are compiled once for both. Extra cmake arguments: DLBENCH_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 with line tables only: what ASan's documentation recommends, and about 15% less compile time
# than the build type's -O2 -g; a report still names file and line. The test binaries' own sources
# (DLBENCH_TEST_COMPILE_OPTIONS) at -O0: clang's instrumented -O1 of gtest and JSON templates was
# 978 of the build's 1,878 CPU-seconds on session 15's fresh clone; at -O0 the same 147 sources took
# 622, and the stage's ctest 275 s against 244 (docs/testing.md). What the tests check, the
# libraries and the programs they start, stays at -O1.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DDLBENCH_FUZZ=ON -DDLBENCH_SANITIZE=address,undefined -DDLBENCH_TEST_COMPILE_OPTIONS="-O0;-gline-tables-only" \
  -DDLBENCH_WITH_TORCH=OFF -DDLBENCH_BUILD_BENCH=OFF ${DLBENCH_CMAKE_ARGS:-}
