#!/usr/bin/env bash
# scripts/check-deps.py fails on what it exists to catch: a module reaching upward (monitor
# including store), production code including a test fake, a module directory the table does not
# list; and passes the same tree without them. Runs on a small tree made here, not on the repo.
# Usage: check_deps_test.sh REPO_ROOT
set -euo pipefail
script="$1/scripts/check-deps.py"
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/src/common" "$tree/src/store" "$tree/src/monitor" "$tree/runners" "$tree/clients"
cat >"$tree/docs/architecture.md" <<'MD'
# Architecture
## Modules
| module | what it does | depends on |
|---|---|---|
| `src/common` | helpers | std |
| `src/monitor` | samplers | common |
| `src/store` | results | common, fmt |
## Next
MD
echo '#include "common/text.h"' >"$tree/src/monitor/sampler.cc"
echo '#include "monitor/sampler.h"' >"$tree/src/monitor/sampler_test.cc"
echo '#include "common/text.h"' >"$tree/src/store/store.cc"
expect() {
  local want="$1" pattern="$2" out rc=0
  out="$(python3 "$script" "$tree" 2>&1)" || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: want exit $want and '$pattern', got exit $rc:"
    echo "$out"
    exit 1
  fi
}
expect 0 "module dependencies follow"
echo '#include "store/store.h"' >>"$tree/src/monitor/sampler.cc"
expect 1 'src/monitor/sampler.cc:2: src/monitor includes "store/store.h" but may not use src/store'
sed -i '$d' "$tree/src/monitor/sampler.cc"
echo '#include "monitor/fake_nvml.h"' >>"$tree/src/monitor/sampler.cc"
expect 1 'production code includes the test double "monitor/fake_nvml.h"'
sed -i '$d' "$tree/src/monitor/sampler.cc"
echo '#include "monitor/fake_nvml.h"' >>"$tree/src/monitor/sampler_test.cc"
expect 0 "module dependencies follow"
mkdir "$tree/src/orphan"
expect 1 "src/orphan: a module directory that docs/architecture.md's module table does not list"
rmdir "$tree/src/orphan"
sed -i 's/| `src\/common` | helpers | std |/| `src\/common` | helpers | store |/' "$tree/docs/architecture.md"
sed -i 's/| `src\/store` | results | common, fmt |/| `src\/store` | results | common, monitor |/' "$tree/docs/architecture.md"
expect 1 "the declared dependencies have a cycle"
echo "check-deps catches upward includes, fakes in production, unlisted modules and cycles"
