#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs (apt), builds,
# and runs every CTest test (unit, end-to-end, torch on the CPU, browser and Prometheus tests).
# GPU-only tests carry the label "gpu" and skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --with-browser-tests
scripts/build.sh
cd build
ctest --output-on-failure --timeout 900 -j "${DLBENCH_TEST_JOBS:-2}" "$@"
