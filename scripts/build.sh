#!/usr/bin/env bash
# Configures and builds dlbench into build/ (binaries in build/bin). Usage: scripts/build.sh [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${DLBENCH_JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
cmake --build build -j "$jobs"
