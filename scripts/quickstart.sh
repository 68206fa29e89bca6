#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: installs what it needs (apt), builds, runs the
# quickstart matrix on the CPU into ./dlbench.db (SQLite), and shows the stored run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
scripts/build.sh
build/bin/dlbench run examples/quickstart.yaml "$@"
build/bin/dlbench show latest
