#!/usr/bin/env bash
# Deletes a build tree's intermediate files once its programs are linked: object files, static
# archives and precompiled headers. On the suite's tree (build/) that is about two thirds of its
# size (docs/testing.md "Disk"); the programs, CTest's files and compile_commands.json (which
# check-tidy reads) stay. Whatever builds in the tree afterwards compiles everything again, so
# scripts/test.sh runs it only when DLBENCH_PRUNE_BUILD=1, which .ci/run sets: a CI run builds in
# build/ once, and its sanitizer trees are built beside the suite's tests on the same disk.
set -euo pipefail
tree="${1:-}"
if [ -z "$tree" ] || [ ! -f "$tree/CMakeCache.txt" ]; then
  echo "usage: scripts/prune-build.sh BUILD_DIR (a CMake build tree: '$tree' has no CMakeCache.txt)" >&2
  exit 2
fi
before=$(du -sm "$tree" | cut -f1)
# Regular files only (-type f): a link or anything else of that name is left as it is.
find "$tree" -type f \( -name '*.o' -o -name '*.a' -o -name '*.gch' \) -delete
after=$(du -sm "$tree" | cut -f1)
echo "prune-build.sh: $tree: $before MiB -> $after MiB (object files, static archives and precompiled headers deleted)"
