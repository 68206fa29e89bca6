#!/usr/bin/env bash
# Installs everything dlbench needs to build and test on Debian 12 (bookworm). Idempotent.
# Usage: scripts/setup-debian.sh [--with-browser-tests]
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git
  # libraries the dlbench binary uses
  libyaml-cpp-dev nlohmann-json3-dev libfmt-dev libcli11-dev libsqlite3-dev libboost-dev sqlite3
  # the PostgreSQL store (libpq), and the server its tests start as a throwaway cluster
  # (scripts/pg-test-cluster.sh; the package also creates the `postgres` user it runs as)
  libpq-dev postgresql
  # `dlbench serve`'s HTTP server (libmicrohttpd), the HTTP client of its tests (cpp-httplib) and
  # the HTML report's chart library, embedded at build time
  libmicrohttpd-dev libcpp-httplib-dev libjs-chart.js
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev python3
  # validating exports against docs/schema (ExportSchema CTest)
  python3-jsonschema
  # the house rules scripts/test.sh enforces: format drift and clang-tidy in changed code
  # (docs/development.md; both are pinned to Debian 12's LLVM 14)
  clang-format clang-tidy
  # the sanitizer and fuzzing stages (docs/testing.md): clang with libFuzzer and the sanitizer
  # runtimes, llvm-symbolizer for readable reports
  clang libclang-rt-14-dev llvm-14
  # the LibTorch runner: Debian's LibTorch 1.13, OpenBLAS so it does not fall back to the
  # reference BLAS (30x slower), Gloo headers for c10d
  libtorch-dev libopenblas0-pthread libgloo-dev
  # the host_allocator axis's preloaded allocators (docs/memory.md "The host allocator")
  libjemalloc2 libtcmalloc-minimal4
  # the input pipeline (docs/input-pipeline.md): libjpeg-turbo's TurboJPEG API, protobuf for
  # tf.train.Example, Intel ISA-L for TFRecord's CRC-32C
  libturbojpeg0-dev libprotobuf-dev protobuf-compiler libisal-dev
  # a real Slurm for the `slurm` CTest label (tests/e2e/slurm_*e2e_test.cc start munged, slurmctld
  # and slurmd in a temporary folder, as root): `srun -n 2 dlbench run --shard auto`
  slurm-wlm munge
  # convergence (docs/convergence.md): zlib for the IDX reader's gzip files, and Fashion-MNIST
  # (60,000 + 10,000 images under /usr/share/datasets/fashion-mnist/)
  zlib1g-dev dataset-fashion-mnist
  # the Python client (clients/python): its pytest suite, a wheel built and installed in a venv,
  # the PyTorch runner on the CPU, and the ONNX export check
  python3-pytest python3-pip python3-setuptools python3-venv python3-torch python3-torchvision python3-onnx
)
extra=()
for arg in "$@"; do
  case "$arg" in
    --with-browser-tests) extra+=(chromium prometheus) ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}" "${extra[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
