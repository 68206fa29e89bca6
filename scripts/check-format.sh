#!/usr/bin/env bash
# Fails when a tracked C++ file (.cc, .h) differs from what clang-format makes of it with the
# repository's .clang-format. Lists the files; `scripts/check-format.sh --fix` rewrites them.
# The clang-format major version is pinned (Debian 12's 14): another version formats some
# constructs differently, and a check that depends on the machine is no check.
# Usage: scripts/check-format.sh [--fix] [REPO_ROOT]
set -euo pipefail
fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
cd "${1:-$(dirname "$0")/..}"
readonly want_major=14
format="${CLANG_FORMAT:-clang-format}"
if ! command -v "$format" >/dev/null; then
  echo "check-format: $format not found (apt-get install clang-format; scripts/setup-debian.sh does)" >&2
  exit 2
fi
version="$("$format" --version)"
major="$(sed -n 's/.*clang-format version \([0-9]*\).*/\1/p' <<<"$version")"
if [ "$major" != "$want_major" ]; then
  echo "check-format: need clang-format $want_major, found: $version (set CLANG_FORMAT)" >&2
  exit 2
fi
# Tracked files only: build outputs and generated sources are not ours to format.
files=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] && files+=("$f")  # a tracked file deleted in the work tree is not there to format
done < <(git ls-files -z -- '*.cc' '*.h')
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no tracked .cc/.h files (not a git checkout?)" >&2
  exit 2
fi
if [ $fix -eq 1 ]; then
  "$format" -i --style=file "${files[@]}"
  exit 0
fi
# One process for all files: --dry-run reports each difference as "FILE:LINE:COL: error: ...".
mapfile -t drift < <("$format" --style=file --dry-run -Werror "${files[@]}" 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ ${#drift[@]} -gt 0 ]; then
  echo "check-format: ${#drift[@]} file(s) differ from .clang-format (fix: scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${drift[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files match .clang-format"
