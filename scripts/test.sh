#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs (apt), builds,
# and runs every CTest test (unit, end-to-end, torch on the CPU, browser and Prometheus tests).
# GPU-only tests carry the label "gpu" and skip themselves without a GPU. The PostgreSQL tests
# start a throwaway cluster (scripts/pg-test-cluster.sh, the CTest fixture "postgres"); the setup
# installs the server, so here they must run rather than skip.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh --with-browser-tests
scripts/build.sh
export DLBENCH_REQUIRE_POSTGRES=1
cd build
ctest --output-on-failure --timeout 900 -j "${DLBENCH_TEST_JOBS:-2}" "$@"
