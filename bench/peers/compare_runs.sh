#!/usr/bin/env bash
# dlbench-torch (LibTorch C++) against PyTorch eager from Python, both through `dlbench run`:
# the same matrix with `runner: torch` (examples/peers-torch.yaml) and with the Python runner
# (examples/peers-python.yaml), then `dlbench compare` of the two runs. The ratio is
# dlbench-torch / PyTorch-eager throughput, as in the figures of docs/benchmarks.md.
#
# Usage: bench/peers/compare_runs.sh [ROUNDS]
#   env: BUILD (default build-gpu), DB (default $OUT/peers.db or /tmp/dlbench-peers.db),
#        PYTHON (default python3), TORCH_MATRIX / PYTHON_MATRIX (default the examples above),
#        COMPARE_ARGS (extra arguments for dlbench compare, e.g. "--ignore-param bert_impl")
# ROUNDS (default 1) runs the pair that many times, alternating the sides (torch, python, torch,
# python, ...) so that a slow drift of the machine does not favour one; each round is compared.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
ROUNDS="${1:-1}"
OUTDIR="${OUT:-/tmp}"
DB="${DB:-$OUTDIR/dlbench-peers.db}"
PYTHON="${PYTHON:-python3}"
TORCH_MATRIX="${TORCH_MATRIX:-$ROOT/examples/peers-torch.yaml}"
PYTHON_MATRIX="${PYTHON_MATRIX:-$ROOT/examples/peers-python.yaml}"
DLBENCH="$BUILD/bin/dlbench"
case "$ROUNDS" in '' | *[!0-9]*) echo "compare_runs: ROUNDS must be a whole number (got '$ROUNDS')" >&2; exit 2 ;; esac
if [ ! -x "$DLBENCH" ]; then
  echo "compare_runs: no dlbench at $DLBENCH; build it first (scripts/build-gpu.sh, or BUILD=build)" >&2
  exit 2
fi
# The Python runner comes from the checkout, with the interpreter the matrix names (python3).
export PYTHONPATH="$ROOT/clients/python${PYTHONPATH:+:$PYTHONPATH}"
if [ "$PYTHON" != python3 ]; then
  sed "s|command: \[python3,|command: [$PYTHON,|" "$PYTHON_MATRIX" > "$OUTDIR/peers-python.yaml"
  PYTHON_MATRIX="$OUTDIR/peers-python.yaml"
fi

run_side() {  # run_side TAG MATRIX: runs the matrix, tags the run, prints nothing but errors
  local tag="$1" matrix="$2"
  # Exit 1 means a cell did not end ok: the run is still stored and compared (the table says which).
  "$DLBENCH" --db "$DB" run "$matrix" --out "$OUTDIR/peers-logs" || [ $? -eq 1 ]
  "$DLBENCH" --db "$DB" tag latest "$tag" > /dev/null
}

for ((r = 1; r <= ROUNDS; r++)); do
  run_side "peers-torch-r$r" "$TORCH_MATRIX"
  run_side "peers-python-r$r" "$PYTHON_MATRIX"
done
for ((r = 1; r <= ROUNDS; r++)); do
  echo "== round $r: base PyTorch eager from Python, candidate dlbench-torch (ratio = C++ / Python) =="
  # shellcheck disable=SC2086
  "$DLBENCH" --db "$DB" compare "peers-python-r$r" "peers-torch-r$r" ${COMPARE_ARGS:-} || [ $? -eq 1 ]
done
echo "database: $DB (dlbench --db $DB show peers-torch-r1)"
