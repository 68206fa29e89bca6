#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs (apt), builds,
# checks clang-tidy on changed code, and runs every CTest test (unit, end-to-end, torch on the
# CPU, browser and Prometheus tests, clang-format drift).
# GPU-only tests carry the label "gpu" and skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --with-browser-tests
scripts/build.sh
# House rules (docs/development.md): clang-tidy on the lines changed since scripts/tidy-base.txt;
# clang-format drift is the CTest test SourcesMatchClangFormat below.
python3 scripts/check-tidy.py --build build -j "${DLBENCH_JOBS:-$(nproc)}"
cd build
ctest --output-on-failure --timeout 900 -j "${DLBENCH_TEST_JOBS:-2}" "$@"
