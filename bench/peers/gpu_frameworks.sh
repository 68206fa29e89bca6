#!/usr/bin/env bash
# The frameworks side by side on the GPU machine, every run through `dlbench run`, compared with
# `dlbench compare` (cells matched by key): LibTorch C++ (runner: torch), PyTorch from Python
# eager and torch.compile'd, JAX jit and op by op (jax.disable_jit), ONNX Runtime's CUDA provider
# on a ResNet-50 exported by bench/peers/export_onnx.py, and Hugging Face's BERT.
#
# Workloads: ResNet-50 training and inference at batch 256 and BERT-Base training at batch 32, in
# bf16 on cuda; ResNet-50 inference in fp32 for ONNX Runtime (an ONNX model runs at the precision
# it was exported with). The Python runners' BERT is the torch.nn one (bert_impl: own, the same
# network as dlbench-torch's and the former bench/peers/torch_eager.py's); one more run measures
# Hugging Face's BertForSequenceClassification.
#
# Usage (on the GPU machine, after scripts/build-gpu.sh): bench/peers/gpu_frameworks.sh
#   env: OUT (default /tmp/dlbench-frameworks: logs, matrices, database, tables), WORK (default
#   /tmp/dlbench-frameworks-work: the exported ONNX model, 100 MB, kept out of OUT), BUILD (default
#   build-gpu), PYTHON (default python3), MAX_TIME_S (per cell, default 5), DEADLINE_S (for all
#   runs, default 420), TOTAL_S (for everything, default 540: what time is left after the runs and
#   the tables goes to the Python harness-overhead benchmark and to the JAX/ONNX Runtime pytest
#   cells, each skipped when too little is left), LANES (default: 2 when the host has >= 2 GPUs,
#   else 1)
# With two GPUs the runs go in two lanes, one per GPU (CUDA_VISIBLE_DEVICES), on one database; a
# run that would pass the deadline is cut (SIGTERM: its finished cells are stored).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
OUT="${OUT:-/tmp/dlbench-frameworks}"
PYTHON="${PYTHON:-python3}"
MAX_TIME_S="${MAX_TIME_S:-5}"
DEADLINE_S="${DEADLINE_S:-420}"
TOTAL_S="${TOTAL_S:-540}"
DL="$BUILD/bin/dlbench"
DB="$OUT/frameworks.db"
WORK="${WORK:-/tmp/dlbench-frameworks-work}"
for v in "$MAX_TIME_S" "$DEADLINE_S" "$TOTAL_S"; do
  case "$v" in '' | *[!0-9]*) echo "gpu_frameworks: MAX_TIME_S, DEADLINE_S and TOTAL_S are whole seconds (got '$v')" >&2; exit 2 ;; esac
done
if [ ! -x "$DL" ]; then
  echo "gpu_frameworks: no dlbench at $DL: run scripts/build-gpu.sh first (or set BUILD)" >&2
  exit 2
fi
mkdir -p "$OUT/matrices" "$OUT/logs" "$WORK"
exec > >(tee "$OUT/gpu_frameworks.log") 2>&1
export PYTHONPATH="$ROOT/clients/python${PYTHONPATH:+:$PYTHONPATH}"
START=$(date +%s)

echo "== versions"
nvidia-smi -L || true
"$PYTHON" - <<'EOF' || true
import importlib
for name in ("torch", "torchvision", "transformers", "jax", "jaxlib", "flax", "onnxruntime", "onnx", "numpy"):
    try:
        m = importlib.import_module(name)
        print("%-13s %s" % (name, getattr(m, "__version__", "?")))
    except Exception as e:  # report and go on: the runner says unsupported for a missing one
        print("%-13s not importable: %s" % (name, e))
EOF
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
LANES="${LANES:-$([ "${GPUS:-0}" -ge 2 ] && echo 2 || echo 1)}"
echo "GPUs: ${GPUS:-0}, lanes: $LANES, deadline ${DEADLINE_S}s, max_time_s $MAX_TIME_S per cell"

echo "== export ResNet-50 to ONNX"
"$PYTHON" "$ROOT/bench/peers/export_onnx.py" --out "$WORK/resnet50.onnx" --model resnet50 || echo "export failed"

# One body for every matrix; each file adds its runner line and its own keys.
runner_py() { printf 'runner:\n  command: [%s, -m, %s]\n' "$PYTHON" "$1"; }
measure() {
  printf 'seed: 1\ntimeout_s: 240\nmeasure:\n  min_steps: 10\n  min_time_s: 1.0\n  max_time_s: %s\n' "$MAX_TIME_S"
  printf '  min_warmup_steps: 5\n  target_rel_ci: 0.02\n'
}
cells() {  # cells EXTRA_AXES: ResNet-50 train/infer bs 256 bf16, BERT train bs 32 bf16, ResNet-50 infer fp32
  cat <<EOF
matrix:
  model: [resnet50, bert_base]
  scenario: [train, infer]
  batch_size: [256, 32]
  precision: [bf16, fp32]
  device: cuda
  memory_format: auto
  cudnn_benchmark: true
  deterministic: false
$1
exclude:
  - {model: resnet50, batch_size: 32}
  - {model: bert_base, batch_size: 256}
  - {model: bert_base, scenario: infer}
  - {model: bert_base, precision: fp32}
  - {model: resnet50, scenario: train, precision: fp32}
EOF
}
M="$OUT/matrices"
{ echo "name: libtorch-cpp"; echo "runner: torch"; cells ""; measure; } > "$M/torch.yaml"
{ echo "name: pytorch-eager"; runner_py dlbench_runners.torch; cells "  bert_impl: own"; measure; } > "$M/py-eager.yaml"
{ echo "name: pytorch-compiled"; runner_py dlbench_runners.torch; cells "  bert_impl: own
  compile: true"; measure; } > "$M/py-compiled.yaml"
{ echo "name: jax-jit"; runner_py dlbench_runners.jax; cells ""; measure; } > "$M/jax.yaml"
{ echo "name: jax-nojit"; runner_py dlbench_runners.jax; cells "  compile: false"; measure; } > "$M/jax-nojit.yaml"
{ echo "name: pytorch-hf-bert"; runner_py dlbench_runners.torch; cat <<EOF; measure; } > "$M/py-hf.yaml"
matrix:
  model: bert_base
  batch_size: 32
  precision: bf16
  device: cuda
  memory_format: auto
  cudnn_benchmark: true
  deterministic: false
  bert_impl: hf
EOF
{ echo "name: onnxruntime-cuda"; runner_py dlbench_runners.onnxruntime; cat <<EOF; measure; } > "$M/ort.yaml"
matrix:
  model: resnet50
  scenario: infer
  batch_size: 256
  precision: fp32
  device: cuda
  model_path: $WORK/resnet50.onnx
EOF

run_matrix() {  # run_matrix TAG GPU: one run, cut at the deadline, tagged
  local tag="$1" gpu="$2" left
  left=$((START + DEADLINE_S - $(date +%s)))
  if [ "$left" -le 20 ]; then
    echo "-- $tag: skipped, deadline reached"
    return
  fi
  echo "-- $tag on GPU $gpu (at most ${left}s)"
  CUDA_VISIBLE_DEVICES="$gpu" timeout -s TERM "$left" "$DL" --db "$DB" run "$M/$tag.yaml" --out "$OUT/logs/$tag" \
    > "$OUT/run-$tag.txt" 2>&1
  echo "-- $tag: exit $? ($(($(date +%s) - START))s since start)"
  # The newest run of this matrix, whatever other lanes stored meanwhile.
  local id
  id=$("$DL" --db "$DB" runs -n 50 2>/dev/null | awk -v n="$(sed -n 's/^name: //p' "$M/$tag.yaml")" '$2 == n {print $1; exit}')
  [ -n "$id" ] && "$DL" --db "$DB" tag "$id" "$tag" > /dev/null
}
lane_a() { for t in torch py-eager jax-nojit ort py-hf; do run_matrix "$t" "$1"; done; }
lane_b() { for t in jax py-compiled; do run_matrix "$t" "$1"; done; }

echo "== runs"
if [ "$LANES" -ge 2 ]; then
  # By pid: a bare `wait` would also wait for the `exec > >(tee ...)` above, which never ends.
  lane_a 0 &
  a=$!
  lane_b 1 &
  b=$!
  wait "$a" "$b"
else
  for t in torch py-eager jax py-compiled ort jax-nojit py-hf; do run_matrix "$t" 0; done
fi
"$DL" --db "$DB" runs -n 20

compare() {  # compare BASE CANDIDATE TITLE [ARGS...]
  local base="$1" cand="$2" title="$3"
  shift 3
  echo
  echo "== $title: base $base, candidate $cand (ratio = candidate / base throughput)"
  "$DL" --db "$DB" compare "$base" "$cand" "$@" | tee "$OUT/compare-$base-vs-$cand.txt" || true
}
TORCH_KEYS=(--ignore-param memory_format --ignore-param cudnn_benchmark --ignore-param deterministic)
compare py-eager torch "LibTorch C++ against PyTorch eager (the peers' figure)" --ignore-param bert_impl
compare py-eager py-compiled "PyTorch torch.compile against eager" --ignore-param compile
compare torch jax "JAX jit against LibTorch C++"
compare py-eager jax "JAX jit against PyTorch eager" --ignore-param bert_impl
compare jax-nojit jax "JAX jit against op by op (XLA off)" --ignore-param compile
compare torch ort "ONNX Runtime CUDA against LibTorch C++ (ResNet-50 fp32 inference)" "${TORCH_KEYS[@]}" \
  --ignore-param model_path --ignore-param compile
compare torch py-hf "Hugging Face BERT (PyTorch eager) against LibTorch C++" --ignore-param bert_impl
for t in torch py-eager py-compiled jax jax-nojit ort py-hf; do
  "$DL" --db "$DB" show "$t" > "$OUT/show-$t.txt" 2>&1 || true
  "$DL" --db "$DB" export "$t" --format csv > "$OUT/cells-$t.csv" 2> /dev/null || true
done

left=$((START + TOTAL_S - $(date +%s)))
if [ "$left" -ge 60 ]; then
  echo
  echo "== the harness's overhead on a Python runner (at most $((left - 30))s)"
  timeout -s TERM $((left - 30)) "$PYTHON" "$ROOT/bench/peers/python_harness_overhead.py" --bin "$BUILD/bin" \
    --rounds 5 --steps 1000 | tee "$OUT/python_harness_overhead.txt" || echo "overhead benchmark cut or failed"
fi
left=$((START + TOTAL_S - $(date +%s)))
if [ "$left" -ge 60 ] && "$PYTHON" -m pytest --version > /dev/null 2>&1; then
  echo
  # -x: the first failure ends the session and its traceback is printed at once, so a later
  # timeout cannot swallow it (session 11 saw only "sFs." when the budget ran out).
  echo "== JAX and ONNX Runtime pytest cells on the CPU (at most ${left}s)"
  (cd "$ROOT/clients/python" && DLBENCH_BIN_DIR="$BUILD/bin" PYTHONDONTWRITEBYTECODE=1 timeout -s TERM "$left" \
    "$PYTHON" -m pytest -q -rs -x --tb=short -p no:cacheprovider tests/test_other_frameworks.py) | tee "$OUT/pytest-other-frameworks.txt" ||
    echo "pytest cut or failed"
fi
echo "gpu_frameworks: done in $(($(date +%s) - START))s; everything is under $OUT"
